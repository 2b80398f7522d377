// libFuzzer target: bytes -> the PDF / image input path that `folio ocr` and the server's OcrJob
// use: the bytes are written to a file, opened with OcrPages::open (PDF by signature, PNG / JPEG
// decoded and checked), the first page rendered, then preprocessed as the models do (padded
// global view, Gundam tile grid and tiles, CHW normalisation; the mini model's gray page).
//
// The first three bytes steer, the rest is the file:
//   byte 0: the file name's extension (.pdf, .png, .jpg: content decides the format, as in folio);
//   byte 1: the PDF render DPI, 20..51 (low, to keep each run fast);
//   byte 2: the page range ("", "1", "1-", "2") and whether to run the full-size preprocess_page.
// Images whose header says they exceed kMaxPixels are skipped, and so are PDF pages that would
// render larger: large sizes are legal but only make runs slow (the size limits themselves are
// tested in tests/doc). folio::Error is the expected outcome for bad input; a crash, a sanitizer
// report, a hang, any other exception escaping, or a broken promise (checked below) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "doc/gray_page.h"
#include "doc/jpeg_guard.h"
#include "doc/preprocess.h"
#include "doc/stb_image_impl.h"
#include "runtime/ocr_pages.h"

namespace {

constexpr int64_t kMaxPixels = 1 << 20;

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "document_fuzz: %s\n", why);
  std::abort();
}

const std::string& work_dir() {
  static const std::string dir = [] {
    const std::filesystem::path d = std::filesystem::temp_directory_path() / ("folio-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

void check_image(const folio::RgbImage& img, int want_w, int want_h) {
  if (img.width != want_w || img.height != want_h) fail("render() size differs from the size open() reported");
  if (img.width < folio::kMinImageSide || img.height < folio::kMinImageSide || img.width > folio::kMaxImageSide ||
      img.height > folio::kMaxImageSide)
    fail("a page outside the image size limits was accepted");
  if (img.pixels.size() != static_cast<size_t>(img.width) * img.height * 3) fail("pixel buffer size is not w * h * 3");
}

void preprocess(const folio::RgbImage& img, bool full_size) {
  // The building blocks of preprocess_page at small sides (the code paths are the same; sides of
  // 1024 / 640 only cost time), then the full-size call when asked.
  const folio::RgbImage global = folio::pad_to_square(img, 48);
  if (global.width != 48 || global.height != 48) fail("pad_to_square did not produce a square");
  std::vector<float> chw(size_t(3) * 48 * 48);
  folio::normalize_to_chw(global, chw.data());
  for (float v : chw)
    if (!(v >= -1.f && v <= 1.f)) fail("a normalised value is outside [-1, 1]");
  const folio::TileGrid grid = folio::select_tile_grid(img.width, img.height);
  if (grid.cols < 1 || grid.rows < 1 || grid.cols * grid.rows > 32) fail("tile grid out of range");
  if (grid.has_tiles()) {
    const std::vector<folio::RgbImage> tiles = folio::cut_tiles(img, grid, 8);
    if (tiles.size() != static_cast<size_t>(grid.cols * grid.rows)) fail("cut_tiles produced the wrong number of tiles");
  }
  const std::vector<float> gray = folio::gray_page(img, 24, 32);
  if (gray.size() != size_t(24) * 32) fail("gray_page produced the wrong size");
  for (float v : gray)
    if (!(v >= 0.f && v <= 1.f)) fail("a gray value is outside [0, 1]");
  if (full_size) {
    const folio::PagePixels px = folio::preprocess_page(img, folio::VisionMode::Gundam);
    if (px.global.size() != size_t(3) * folio::kGlobalViewSide * folio::kGlobalViewSide) fail("global view has the wrong size");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static const char* const kExt[] = {".pdf", ".png", ".jpg"};
  static const char* const kRange[] = {"", "1", "1-", "2"};
  const std::string path = work_dir() + "/input" + kExt[data[0] % 3];
  const double dpi = 20 + data[1] % 32;
  const char* range = kRange[data[2] % 4];
  const bool full_size = (data[2] & 0x80) != 0;
  const uint8_t* file = data + 3;
  const size_t file_size = size - 3;

  // Skip images too large to fuzz quickly (decode_image would accept up to 16384 a side). Their
  // size is read with stb_image, behind the guard decode_image puts in front of it.
  bool stb_safe = true;
  try {
    folio::check_jpeg_for_stb({file, file_size}, "input");
  } catch (const folio::Error&) {
    stb_safe = false;  // decode_image refuses it the same way below
  }
  int w = 0, h = 0, comp = 0;
  if (stb_safe && file_size > 0 && file_size < INT32_MAX &&
      stbi_info_from_memory(file, static_cast<int>(file_size), &w, &h, &comp) && int64_t(w) * h > kMaxPixels)
    return -1;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(file), static_cast<std::streamsize>(file_size));
    if (!f) fail("cannot write the input file");
  }
  try {
    const folio::OcrPages pages = folio::OcrPages::open({path}, range, dpi);
    if (pages.size() == 0) fail("open() accepted an input with no pages");
    const folio::OcrPageRef& p = pages.page(0);
    if (int64_t(p.width) * p.height > kMaxPixels) return -1;
    const folio::RgbImage img = pages.render(0);
    check_image(img, p.width, p.height);
    preprocess(img, full_size && int64_t(img.width) * img.height <= 256 * 256);
  } catch (const folio::Error& e) {
    if (e.kind() == folio::Error::Kind::Internal) fail("bad input was reported as an internal error");
  }
  return 0;
}
