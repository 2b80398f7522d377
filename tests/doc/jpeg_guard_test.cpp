// The JPEG checks made before stb_image sees the bytes (jpeg_guard.h), and the fuzzer-found file
// that needed them: a DHT segment with more than 256 codes (stb_image 2.27 wrote past its tables).
#include "doc/jpeg_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "doc/image.h"
#include "doc_test_util.h"

namespace folio {
namespace {

using doc_test::expect_invalid;
using doc_test::fixture;
using Bytes = std::vector<uint8_t>;

// A marker segment: FF m, big-endian length (payload + 2), payload.
Bytes segment(uint8_t m, const Bytes& payload) {
  Bytes s(payload.size() + 4);
  s[0] = 0xFF;
  s[1] = m;
  s[2] = static_cast<uint8_t>((payload.size() + 2) >> 8);
  s[3] = static_cast<uint8_t>(payload.size() + 2);
  std::copy(payload.begin(), payload.end(), s.begin() + 4);
  return s;
}

// A DHT payload: class/id byte, 16 counts, then sum(counts) symbol values.
Bytes dht(const std::vector<int>& counts) {
  Bytes p = {0x00};
  int sum = 0;
  for (int c : counts) {
    p.push_back(static_cast<uint8_t>(c));
    sum += c;
  }
  p.insert(p.end(), static_cast<size_t>(sum), 0x01);
  return p;
}

Bytes jpeg(std::initializer_list<Bytes> parts) {
  Bytes b = {0xFF, 0xD8};
  for (const Bytes& p : parts) b.insert(b.end(), p.begin(), p.end());
  b.push_back(0xFF);
  b.push_back(0xD9);
  return b;
}

const std::vector<int> k256 = {0, 0, 0, 0, 0, 0, 0, 0, 1, 255, 0, 0, 0, 0, 0, 0};  // 256 codes: allowed
const std::vector<int> k257 = {0, 0, 0, 0, 0, 0, 0, 0, 2, 255, 0, 0, 0, 0, 0, 0};  // 257: one too many

TEST(JpegGuard, RefusesAHuffmanTableWithMoreThan256CodesNamingTheFile) {
  EXPECT_NO_THROW(check_jpeg_for_stb(jpeg({segment(0xC4, dht(k256))}), "ok.jpg"));
  expect_invalid([&] { check_jpeg_for_stb(jpeg({segment(0xC4, dht(k257))}), "scan.jpg"); },
                 {"scan.jpg", "Huffman table", "257 codes", "at most 256"});
}

TEST(JpegGuard, ChecksEveryTableOfASegmentAndTablesAfterScanData) {
  // The second table of one DHT segment.
  Bytes two = dht(k256);
  const Bytes bad = dht(k257);
  two.insert(two.end(), bad.begin(), bad.end());
  expect_invalid([&] { check_jpeg_for_stb(jpeg({segment(0xC4, two)}), "two.jpg"); }, {"257 codes"});
  // A progressive JPEG defines tables between scans: one after entropy-coded data that holds a
  // stuffed byte (FF 00) and a restart marker (FF D0), which do not end the scan.
  const Bytes scan = {0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56};
  Bytes after_scan = segment(0xDA, {0x01, 0x01, 0x00, 0x00, 0x3F, 0x00});
  after_scan.insert(after_scan.end(), scan.begin(), scan.end());
  expect_invalid([&] { check_jpeg_for_stb(jpeg({after_scan, segment(0xC4, dht(k257))}), "prog.jpg"); }, {"257 codes"});
}

TEST(JpegGuard, LeavesOtherSegmentsAndNonJpegBytesAlone) {
  // The bytes of a bad table inside an APP1 segment (e.g. an EXIF thumbnail) are not a marker.
  Bytes app = {0xFF, 0xC4, 0x00, 0x20};
  const Bytes bad = dht(k257);
  app.insert(app.end(), bad.begin(), bad.end());
  EXPECT_NO_THROW(check_jpeg_for_stb(jpeg({segment(0xE1, app)}), "app.jpg"));
  // Nothing after EOI is read, and a PNG is not a JPEG.
  Bytes trailing = jpeg({});
  const Bytes dht_seg = segment(0xC4, dht(k257));
  trailing.insert(trailing.end(), dht_seg.begin(), dht_seg.end());
  EXPECT_NO_THROW(check_jpeg_for_stb(trailing, "trailing.jpg"));
  EXPECT_NO_THROW(check_jpeg_for_stb(Bytes{0x89, 'P', 'N', 'G'}, "x.png"));
  // Real JPEGs pass.
  std::ifstream f(fixture("quadrants.jpg"), std::ios::binary);
  const Bytes q{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  ASSERT_GT(q.size(), 100u);
  EXPECT_NO_THROW(check_jpeg_for_stb(q, "quadrants.jpg"));
}

// The 718-byte file document_fuzz found (fuzz/corpus/document_fuzz/regress-dht-overflow.jpg): a
// valid-looking baseline JPEG whose first DHT counts add up to 257. Before the guard, decoding it wrote
// past stb_image's Huffman tables (UBSan: index 257 out of bounds for stbi_uc[257]).
TEST(JpegGuard, FuzzerFoundDhtOverflowIsAClearError) {
  expect_invalid([] { load_image(fixture("dht_overflow.jpg")); }, {"dht_overflow.jpg", "is corrupt", "Huffman table", "at most 256"});
}

// The next file it found (fuzz/corpus/document_fuzz/regress-dht-overflow-fill.jpg): the same kind of
// table, but the file opens with 0xFF fill bytes before its SOI. stb_image skips fill bytes before
// every marker, the first included, so it decoded the file as a JPEG while the guard, which wanted
// FF D8 as the first two bytes, had let it through unchecked.
TEST(JpegGuard, FillBytesBeforeTheSoiDoNotHideTheFile) {
  Bytes filled = {0xFF, 0xFF, 0xFF};
  const Bytes bad = jpeg({segment(0xC4, dht(k257))});
  filled.insert(filled.end(), bad.begin(), bad.end());
  expect_invalid([&] { check_jpeg_for_stb(filled, "fill.jpg"); }, {"fill.jpg", "257 codes"});
  // Only fill bytes, or fill bytes then another marker: not a JPEG, nothing to check.
  EXPECT_NO_THROW(check_jpeg_for_stb(Bytes{0xFF, 0xFF, 0xFF}, "ff.bin"));
  EXPECT_NO_THROW(check_jpeg_for_stb(Bytes{0xFF, 0xFF, 0xD9, 0xFF, 0xC4}, "eoi.bin"));
  expect_invalid([] { load_image(fixture("dht_overflow_fill.jpg")); },
                 {"dht_overflow_fill.jpg", "is corrupt", "Huffman table", "at most 256"});
}

}  // namespace
}  // namespace folio
