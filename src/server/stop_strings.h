// StopStrings: OpenAI's `stop` for generated text. Text is pushed as it is decoded; what comes back
// is safe to send: never any part of a stop string, and nothing after the first one. Text that may
// be the start of a stop string is held back until the next push shows it is not (or finish()
// returns it when the output ends without a stop).
//
// Single-threaded (one per request). Preconditions: every stop string is non-empty.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace folio {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);

  bool empty() const { return stops_.empty(); }
  // Adds decoded text; returns the part that can be sent now. After a stop string is found it
  // returns the text before it (once) and stopped() turns true; later pushes return "".
  std::string push(std::string_view text);
  bool stopped() const { return stopped_; }
  // The text still held back (a partial match that the output ended in); "" once stopped.
  std::string finish();

 private:
  std::vector<std::string> stops_;
  std::string held_;  // pushed, not yet returned: a suffix that may begin a stop string
  bool stopped_ = false;
};

}  // namespace folio
