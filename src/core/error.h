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

  // What each kind means at an entry point, from one table (error.cpp): the CLI's exit code (2 for
  // anything the user can fix, 1 for a bug), and the HTTP status, OpenAI error type and code the
  // server answers with.
  struct Mapping {
    int exit_code;
    int http_status;
    const char* type;
    const char* code;
  };
  static const Mapping& mapping(Kind kind);
  const Mapping& mapping() const { return mapping(kind_); }
  int exit_code() const { return mapping().exit_code; }

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
