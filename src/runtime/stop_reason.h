// StopReason: why a sequence ended. Code switches on the kind; what leaves the process (JSON,
// /metrics labels, access logs, the CLI's summary) uses its name, so the names are part of the
// interface and never change: eos, length, context, stop_string, stopped, cancelled, timeout, error.
//
// It compares equal to its name (r.stop_reason == "eos") for callers that hold names, e.g. a JSON
// field; a name that is not one of the kinds compares unequal to every reason.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace folio {

class StopReason {
 public:
  enum Kind : uint8_t {
    None,        // not ended
    Eos,         // the model wrote its end token
    Length,      // the request's token limit
    Context,     // the model's context is full
    StopString,  // a stop string was found (the server cancels the sequence for it)
    Stopped,     // the caller's on_token asked to stop (Generator)
    Cancelled,   // cancelled: by the client, or the scheduler is stopping
    Timeout,     // the request's deadline passed
    Error,       // generation failed (SequenceResult::error says why)
  };

  constexpr StopReason(Kind k = None) : kind_(k) {}
  constexpr operator Kind() const { return kind_; }
  std::string_view name() const {
    static constexpr std::string_view names[] = {"",        "eos",       "length",  "context", "stop_string",
                                                 "stopped", "cancelled", "timeout", "error"};
    return names[kind_];
  }
  friend bool operator==(StopReason r, std::string_view name) { return r.name() == name; }
  friend bool operator==(StopReason r, const char* name) { return r.name() == std::string_view(name); }
  friend std::ostream& operator<<(std::ostream& os, StopReason r) { return os << r.name(); }

 private:
  Kind kind_;
};

}  // namespace folio
