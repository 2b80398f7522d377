#include "runtime/ocr_figure_files.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "core/error.h"
#include "doc/image_write.h"

namespace folio {

namespace fs = std::filesystem;

OcrFigureFiles::OcrFigureFiles(const std::vector<std::string>& inputs, const std::string& page_range, double dpi, std::string dir,
                               std::string link_prefix)
    : pages_(OcrPages::open(inputs, page_range, dpi)), dir_(std::move(dir)), link_prefix_(std::move(link_prefix)) {}

namespace {

RgbImage crop(const RgbImage& page, const OcrBox& px) {
  const int x0 = std::clamp(px[0], 0, page.width - 1), y0 = std::clamp(px[1], 0, page.height - 1);
  const int x1 = std::clamp(px[2], x0 + 1, page.width), y1 = std::clamp(px[3], y0 + 1, page.height);
  RgbImage out(x1 - x0, y1 - y0);
  for (int y = y0; y < y1; ++y)
    std::copy_n(page.pixels.begin() + (static_cast<std::ptrdiff_t>(y) * page.width + x0) * 3, size_t(x1 - x0) * 3,
                out.pixels.begin() + static_cast<std::ptrdiff_t>(y - y0) * out.width * 3);
  return out;
}

}  // namespace

std::string figure_caption(const std::string& text) {
  static const std::regex caption(R"(^(?:Figure|Fig\.|FIGURE)\s*\d+[\w.\-]*\s*[:.]?[^\n]*)");
  // (a caption the model wrote as a heading or in bold starts with its marks)
  const std::string plain = text.substr(std::min(text.size(), text.find_first_not_of("#*_ ")));
  std::smatch m;
  if (!std::regex_search(plain, m, caption)) return "";
  std::string s = m.str();
  if (s.size() > 200) s = s.substr(0, 200);
  std::replace(s.begin(), s.end(), ']', ')');
  std::replace(s.begin(), s.end(), '[', '(');
  return s;
}

bool has_figures(const OcrPage& page) {
  return std::any_of(page.blocks.begin(), page.blocks.end(), [](const OcrBlock& b) { return b.label == "image" && !b.boxes.empty(); });
}

std::vector<OcrFigureCrop> crop_figures(const RgbImage& rendered, size_t index, OcrPage& page, const std::string& link_prefix,
                                        size_t& numbered) {
  std::vector<OcrFigureCrop> out;
  for (size_t b = 0; b < page.blocks.size(); ++b) {
    OcrBlock& block = page.blocks[b];
    if (block.label != "image" || block.boxes.empty()) continue;
    OcrFigureCrop c;
    c.name = "page-" + std::to_string(index + 1) + "-figure-" + std::to_string(out.size() + 1) + ".png";
    c.box = box_to_pixels(block.boxes[0], rendered.width, rendered.height);
    c.image = crop(rendered, c.box);
    ++numbered;
    block.image_file = link_prefix + c.name;
    size_t next = b + 1;  // figures side by side share the caption under them
    while (next < page.blocks.size() && page.blocks[next].label == "image") ++next;
    std::string alt = next < page.blocks.size() ? figure_caption(page.blocks[next].text) : "";
    if (alt.empty() && b > 0) alt = figure_caption(page.blocks[b - 1].text);
    block.image_alt = alt.empty() ? "Figure " + std::to_string(numbered) : alt;
    out.push_back(std::move(c));
  }
  return out;
}

void OcrFigureFiles::write(size_t index, OcrPage& page) {
  if (!has_figures(page)) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error(Error::Kind::Io, "cannot create the figure folder " + dir_ + ": " + ec.message());
  for (const OcrFigureCrop& c : crop_figures(pages_.render(index), index, page, link_prefix_, figures_))
    write_png(c.image, (fs::path(dir_) / c.name).string());
}

std::string figure_dir_for(const std::string& markdown_path) {
  fs::path p(markdown_path);
  return (p.parent_path() / (p.stem().string() + "_files")).string();
}

}  // namespace folio
