// folio::Error: the one exception type that crosses module boundaries.
//
// Code that finds bad input (a truncated checkpoint, a window of 0, an empty prompt) throws
// Error with Kind::InvalidInput and a message that names the culprit. Entry points (CLI, server)
// catch it and turn it into exit code 2 or a 4xx response; anything else is a bug (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace folio {

class Error : public std::runtime_error {
 public:
  enum class Kind { InvalidInput, Io, Unsupported, OutOfMemory, Internal };

  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  Kind kind() const { return kind_; }

  // Exit code a CLI should use for this error: 2 for anything the user can fix.
  int exit_code() const { return kind_ == Kind::Internal ? 1 : 2; }

 private:
  Kind kind_;
};

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw Error(Error::Kind::InvalidInput, message);
}

}  // namespace folio

// Checks a condition on user-controlled input; throws InvalidInput with the message otherwise.
#define FOLIO_CHECK_INPUT(cond, msg)   \
  do {                                 \
    if (!(cond)) ::folio::throw_invalid(msg); \
  } while (0)
