#include "text/utf8.h"

namespace folio {
namespace {

// Length of the sequence a lead byte announces, or 0 if it cannot start one.
int sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `b` may follow `lead` as the second byte; this is where overlongs, surrogates and
// code points past U+10FFFF are rejected.
bool valid_second(uint8_t lead, uint8_t b) {
  if ((b & 0xC0) != 0x80) return false;
  switch (lead) {
    case 0xE0: return b >= 0xA0;
    case 0xED: return b <= 0x9F;
    case 0xF0: return b >= 0x90;
    case 0xF4: return b <= 0x8F;
    default: return true;
  }
}

// Number of bytes of a valid sequence starting at s[i] that are present (may be fewer than its
// announced length when the text ends); 0 if s[i] cannot start a sequence, -1 if a later byte
// breaks it.
int valid_prefix_at(std::string_view s, size_t i, int* announced) {
  const uint8_t lead = static_cast<uint8_t>(s[i]);
  const int len = sequence_length(lead);
  *announced = len;
  if (len == 0) return 0;
  int have = 1;
  for (; have < len && i + have < s.size(); ++have) {
    const uint8_t b = static_cast<uint8_t>(s[i + have]);
    const bool ok = have == 1 ? valid_second(lead, b) : (b & 0xC0) == 0x80;
    if (!ok) return -1;
  }
  return have;
}

}  // namespace

DecodedText decode_utf8(std::string_view text) {
  DecodedText out;
  out.cps.reserve(text.size());
  out.offsets.reserve(text.size() + 1);
  size_t i = 0;
  while (i < text.size()) {
    int len = 0;
    const int have = valid_prefix_at(text, i, &len);
    out.offsets.push_back(i);
    if (have == len && len > 0) {
      const auto* p = reinterpret_cast<const uint8_t*>(text.data() + i);
      char32_t cp;
      switch (len) {
        case 1: cp = p[0]; break;
        case 2: cp = (char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F); break;
        case 3: cp = (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F); break;
        default:
          cp = (char32_t(p[0] & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) |
               (p[3] & 0x3F);
      }
      out.cps.push_back(cp);
      i += len;
    } else {
      // Invalid or truncated: only the first byte is consumed, the rest is examined afresh.
      out.cps.push_back(kInvalidUtf8Base + static_cast<uint8_t>(text[i]));
      ++i;
    }
  }
  out.offsets.push_back(text.size());
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t utf8_complete_prefix(std::string_view bytes) {
  // Only the last 3 bytes can belong to an unfinished sequence; find its lead, if any.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    const uint8_t b = static_cast<uint8_t>(bytes[i]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    int len = 0;
    const int have = valid_prefix_at(bytes, i, &len);
    // Hold back only a sequence that is valid so far and still missing bytes.
    if (len > 1 && have == static_cast<int>(back) && have < len) return i;
    return n;
  }
  return n;
}

}  // namespace folio
