// libFuzzer target: bytes -> POST /v1/chat/completions body parsing, as Service::chat does it
// (parse_chat_request over json_body.h, then the prompt text built from the messages).
//
// A refused body is an ApiError (400); anything else escaping, a crash or a sanitizer report is a
// finding. The properties below are what the server relies on after a successful parse.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include "server/chat_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    const folio::ChatRequest r = folio::parse_chat_request(body);
    // What a parse promises: at least one message with a known role, max_tokens >= 1, sampling
    // parameters in range, every image recognised as a PDF, PNG or JPEG.
    bool ok = !r.messages.empty() && (!r.max_tokens || *r.max_tokens >= 1) && r.temperature >= 0.f &&
              r.temperature <= 2.f && r.top_p > 0.f && r.top_p <= 1.f;
    for (const folio::ChatMessage& m : r.messages) ok = ok && (m.role == "system" || m.role == "user" || m.role == "assistant");
    for (const folio::UploadedFile& f : r.images)
      ok = ok && !f.bytes.empty() && (f.type == "pdf" || f.type == "png" || f.type == "jpeg") && folio::sniff_file_type(f.bytes) == f.type;
    if (!ok) {
      std::fprintf(stderr, "chat_request_fuzz: a parsed request breaks the parser's promises\n");
      std::abort();
    }
    const std::string prompt = folio::chat_prompt_text(r.messages);
    if (prompt.size() < r.messages.size()) std::abort();
  } catch (const folio::ApiError& e) {
    if (e.status != 400 || e.code.empty()) {
      std::fprintf(stderr, "chat_request_fuzz: ApiError %d '%s' for a malformed body\n", e.status, e.code.c_str());
      std::abort();
    }
  }
  return 0;
}
