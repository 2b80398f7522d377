// Error::mapping: one table from error kind to the CLI's exit code and the server's answer.
#include <gtest/gtest.h>

#include "core/error.h"

namespace folio {
namespace {

TEST(ErrorMapping, EveryKindHasItsExitCodeAndStatus) {
  using K = Error::Kind;
  EXPECT_EQ(Error(K::InvalidInput, "x").exit_code(), 2);
  EXPECT_EQ(Error::mapping(K::InvalidInput).http_status, 400);
  EXPECT_EQ(Error::mapping(K::Io).http_status, 400);
  EXPECT_STREQ(Error::mapping(K::Unsupported).code, "unsupported");
  EXPECT_EQ(Error::mapping(K::OutOfMemory).http_status, 503) << "the server's state: the client may retry";
  EXPECT_EQ(Error(K::OutOfMemory, "x").exit_code(), 2);
  EXPECT_EQ(Error(K::Internal, "x").exit_code(), 1);
  EXPECT_EQ(Error::mapping(K::Internal).http_status, 500);
  for (K k : {K::InvalidInput, K::Io, K::Unsupported, K::OutOfMemory, K::Internal}) {
    const Error::Mapping& m = Error::mapping(k);
    EXPECT_EQ(m.http_status >= 500, std::string(m.type) == "server_error");
  }
}

}  // namespace
}  // namespace folio
