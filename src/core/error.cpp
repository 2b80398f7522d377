#include "core/error.h"

namespace folio {

const Error::Mapping& Error::mapping(Kind kind) {
  // Indexed by Kind. A bad request (input, a file it names, a feature this model lacks) is the
  // client's to fix: 400. A full KV pool is the server's state, not the request's fault: 503, which
  // a client may retry. A bug is 500 and exit 1.
  static const Mapping table[] = {
      {2, 400, "invalid_request_error", "invalid_request"},  // InvalidInput
      {2, 400, "invalid_request_error", "invalid_request"},  // Io
      {2, 400, "invalid_request_error", "unsupported"},      // Unsupported
      {2, 503, "server_error", "out_of_memory"},             // OutOfMemory
      {1, 500, "server_error", "internal_error"},            // Internal
  };
  return table[static_cast<int>(kind)];
}

}  // namespace folio
