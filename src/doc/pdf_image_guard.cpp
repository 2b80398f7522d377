#include "doc/pdf_image_guard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/error.h"

namespace folio {

namespace {

// An image dictionary ends at its stream; no real one is longer than this.
constexpr size_t kMaxDictionaryBytes = 1 << 16;

bool pdf_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\0'; }

// The direct integer after `key` in `dict` (the key not followed by a name character), or nullopt
// when the key is missing or its value is not a plain integer (an indirect reference, a real).
std::optional<int64_t> integer_value(std::string_view dict, std::string_view key) {
  for (size_t at = dict.find(key); at != std::string_view::npos; at = dict.find(key, at + 1)) {
    size_t i = at + key.size();
    if (i < dict.size() && std::isalnum(static_cast<unsigned char>(dict[i]))) continue;  // /Widths
    while (i < dict.size() && pdf_space(dict[i])) ++i;
    int64_t v = 0;
    size_t digits = 0;
    for (; i < dict.size() && std::isdigit(static_cast<unsigned char>(dict[i])) && digits < 18; ++i, ++digits)
      v = v * 10 + (dict[i] - '0');
    if (digits == 0) return std::nullopt;
    size_t j = i;  // "N G R" is a reference to an object, not a size
    while (j < dict.size() && pdf_space(dict[j])) ++j;
    const size_t g = j;
    while (j < dict.size() && std::isdigit(static_cast<unsigned char>(dict[j]))) ++j;
    if (j > g) {
      while (j < dict.size() && pdf_space(dict[j])) ++j;
      if (j < dict.size() && dict[j] == 'R') return std::nullopt;
    }
    return v;
  }
  return std::nullopt;
}

}  // namespace

void check_pdf_images(std::string_view bytes, const std::string& source) {
  constexpr std::string_view kSubtype = "/Subtype";
  for (size_t at = bytes.find(kSubtype); at != std::string_view::npos; at = bytes.find(kSubtype, at + 1)) {
    size_t i = at + kSubtype.size();
    while (i < bytes.size() && pdf_space(bytes[i])) ++i;
    if (bytes.substr(i, 6) != "/Image" || (i + 6 < bytes.size() && std::isalnum(static_cast<unsigned char>(bytes[i + 6]))))
      continue;
    // The dictionary: from its object's start to its stream, each looked for within reach only (a
    // file of many /Subtype keys and no object costs no more than its length times the reach).
    const size_t reach_back = std::min(at, kMaxDictionaryBytes);
    const std::string_view before = bytes.substr(at - reach_back, reach_back);
    const size_t obj = before.rfind("obj");
    const std::string_view after = bytes.substr(at, kMaxDictionaryBytes);
    const size_t begin = at - reach_back + (obj == std::string_view::npos ? 0 : obj);
    const size_t end = at + std::min(after.find("stream"), after.size());
    const std::string_view dict = bytes.substr(begin, end - begin);
    const auto w = integer_value(dict, "/Width"), h = integer_value(dict, "/Height");
    if (!w || !h) continue;
    const bool too_many = *w > 0 && *h > 0 && *w > kMaxPdfImagePixels / *h;
    FOLIO_CHECK_INPUT(!too_many, "PDF '" + source + "' holds an image of " + std::to_string(*w) + " x " + std::to_string(*h) +
                                     " pixels: beyond the " + std::to_string(kMaxPdfImagePixels) + " pixels folio renders");
  }
}

void check_pdf_file_images(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  void* map = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) map = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return;
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size_t(st.st_size)};
  check_pdf_images(std::string_view(static_cast<const char*>(map), size_t(st.st_size)), path);
}

}  // namespace folio
