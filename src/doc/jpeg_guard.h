// jpeg_guard: checks on a JPEG's marker segments that stb_image (Debian's v2.27 snapshot) does not
// make itself, run before the bytes reach it.
//
// Found by fuzzing (docs/fuzzing.md): stb_image builds a Huffman table from a DHT segment without
// checking that its 16 code counts add up to at most 256, and writes past its fixed-size tables when
// they do (heap corruption from a 700-byte file; fixed upstream in stb_image 2.28). A JPEG may hold
// at most 256 symbols per table, so such a file is corrupt and is refused here.
//
// Promises: check_jpeg_for_stb() walks the markers the way stb_image reads them (segments skipped by
// their length, bytes outside segments and entropy-coded scan data skipped up to the next marker,
// stuffed 0xFF00 bytes and RSTn markers passed over, stopping at EOI), so every DHT segment
// stb_image would parse is seen, and refuses one whose table counts exceed 256 with InvalidInput
// naming `source`. Bytes that are not a JPEG to stb_image (no SOI, which it accepts after any
// number of 0xFF fill bytes) pass unchecked.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace folio {

void check_jpeg_for_stb(std::span<const uint8_t> bytes, const std::string& source);

}  // namespace folio
