#include "doc/jpeg_guard.h"

#include "core/error.h"

namespace folio {
namespace {

// One DHT segment whose payload starts at `p` and whose length field (itself included) is `len`,
// read as stb_image reads it: tables one after another while the remaining length is positive, the
// counts and values read even past the segment (stb_image notices the overrun only afterwards).
void check_dht(std::span<const uint8_t> b, size_t p, long len, const std::string& source) {
  auto get8 = [&]() -> unsigned { return p < b.size() ? b[p++] : 0u; };  // stb_image reads 0 at EOF
  long left = len - 2;
  while (left > 0) {
    const unsigned q = get8();
    if ((q >> 4) > 1 || (q & 15) > 3) return;  // stb_image refuses the header itself
    long codes = 0;
    for (int i = 0; i < 16; ++i) codes += get8();
    if (codes > 256)
      throw_invalid("image '" + source + "' is corrupt: a JPEG Huffman table (DHT) defines " + std::to_string(codes) +
                    " codes; a table holds at most 256");
    p += static_cast<size_t>(codes);
    left -= 17 + codes;
  }
}

}  // namespace

void check_jpeg_for_stb(std::span<const uint8_t> b, const std::string& source) {
  // stb_image finds the SOI as it finds every marker: 0xFF, any number of 0xFF fill bytes, then
  // D8. A file that opens with fill bytes is a JPEG to it, so it must be one here too.
  if (b.empty() || b[0] != 0xFF) return;
  size_t p = 1;
  while (p < b.size() && b[p] == 0xFF) ++p;
  if (p >= b.size() || b[p] != 0xD8) return;
  ++p;
  while (p < b.size()) {
    if (b[p] != 0xFF) {  // entropy-coded data, or junk stb_image skips while looking for a marker
      ++p;
      continue;
    }
    size_t q = p + 1;
    while (q < b.size() && b[q] == 0xFF) ++q;  // fill bytes
    if (q >= b.size()) return;
    const uint8_t m = b[q];
    p = q + 1;
    if (m == 0x00 || m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7)) continue;  // stuffed byte, TEM, SOI, RSTn: no length
    if (m == 0xD9) return;                                                          // EOI: stb_image stops reading
    if (p + 2 > b.size()) return;
    const long len = (long(b[p]) << 8) | b[p + 1];
    if (len < 2) return;  // stb_image skips to the end of the data
    if (m == 0xC4) check_dht(b, p + 2, len, source);
    p += static_cast<size_t>(len);  // SOS included: its scan data follows and is skipped above
  }
}

}  // namespace folio
