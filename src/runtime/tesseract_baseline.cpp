#include "runtime/tesseract_baseline.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "doc/image_write.h"

namespace folio {

namespace {

// Runs a shell command and returns its stdout; throws Io if it exits non-zero.
std::string capture(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error(Error::Kind::Io, "cannot run: " + cmd);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  if (rc != 0) throw Error(Error::Kind::Io, "command failed (status " + std::to_string(rc) + "): " + cmd);
  return out;
}

}  // namespace

bool tesseract_available() { return std::system("tesseract --version > /dev/null 2>&1") == 0; }

std::string tesseract_read(const OcrPages& pages, const std::string& page_marker, size_t threads) {
  if (!tesseract_available())
    throw Error(Error::Kind::Unsupported, "tesseract is not installed (Debian package tesseract-ocr)");
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "folio-tesseract-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw Error(Error::Kind::Io, "cannot create a temporary directory for tesseract");
  const fs::path dir(tmpl);
  std::string text;
  try {
    for (size_t i = 0; i < pages.size(); ++i) {
      const fs::path png = dir / ("page-" + std::to_string(i + 1) + ".png");
      write_png(pages.render(i), png.string());
      if (i > 0) text += page_marker;
      text += capture("OMP_THREAD_LIMIT=" + std::to_string(std::max<size_t>(threads, 1)) + " tesseract '" + png.string() +
                      "' stdout -l eng --psm 6 2>/dev/null");
      fs::remove(png);
    }
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  return text;
}

}  // namespace folio
