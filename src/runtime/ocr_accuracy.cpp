#include "runtime/ocr_accuracy.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace folio {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> split_text_pages(std::string_view text, std::string_view marker) {
  std::vector<std::string> pages;
  while (true) {
    const size_t cut = marker.empty() ? std::string_view::npos : text.find(marker);
    std::string_view p = text.substr(0, cut);
    while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.remove_suffix(1);
    pages.emplace_back(p);
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + marker.size());
  }
  return pages;
}

CerCount text_cer(std::string_view hypothesis, std::string_view reference, std::string_view page_marker) {
  const auto hyp = split_text_pages(hypothesis, page_marker), ref = split_text_pages(reference, page_marker);
  CerCount c;
  for (size_t i = 0; i < std::max(hyp.size(), ref.size()); ++i) {
    const std::string_view h = i < hyp.size() ? std::string_view(hyp[i]) : std::string_view();
    const std::string_view r = i < ref.size() ? std::string_view(ref[i]) : std::string_view();
    c.errors += edit_distance(h, r);
    c.chars += r.size();
  }
  return c;
}

double token_agreement(std::span<const int32_t> run, std::span<const int32_t> baseline) {
  const size_t n = std::max(run.size(), baseline.size());
  if (n == 0) return 1.0;
  size_t same = 0;
  for (size_t i = 0; i < std::min(run.size(), baseline.size()); ++i) same += run[i] == baseline[i];
  return static_cast<double>(same) / static_cast<double>(n);
}

namespace {

// Whether the sets under root compare normalised text (root/set.json, "compare").
bool compares_normalised_text(const std::filesystem::path& root) {
  const std::filesystem::path file = root / "set.json";
  if (!std::filesystem::exists(file)) return false;
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  FOLIO_CHECK_INPUT(!j.is_discarded() && j.is_object(), "'" + file.string() + "' is not a JSON object");
  const std::string compare = j.value("compare", "exact");
  FOLIO_CHECK_INPUT(compare == "exact" || compare == "normalised-text",
                    "'" + file.string() + "': \"compare\" must be \"exact\" or \"normalised-text\", not \"" + compare + "\"");
  return compare == "normalised-text";
}

}  // namespace

std::vector<HeldoutDoc> heldout_docs(const std::string& root, int pages, int docs) {
  namespace fs = std::filesystem;
  const bool normalised = compares_normalised_text(root);
  std::string set_name = "p";  // (not "p" + to_string: GCC 12 warns falsely on it, -Wrestrict)
  set_name += std::to_string(pages);
  const fs::path dir = fs::path(root) / set_name;
  FOLIO_CHECK_INPUT(fs::is_directory(dir), "no held-out set of " + std::to_string(pages) + "-page documents: '" +
                                               dir.string() + "' is not a directory");
  std::vector<fs::path> pdfs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".pdf") pdfs.push_back(e.path());
  std::sort(pdfs.begin(), pdfs.end());
  FOLIO_CHECK_INPUT(docs >= 1 && static_cast<size_t>(docs) <= pdfs.size(),
                    "'" + dir.string() + "' holds " + std::to_string(pdfs.size()) + " documents, " + std::to_string(docs) +
                        " asked for");
  std::vector<HeldoutDoc> out;
  for (int i = 0; i < docs; ++i) {
    fs::path txt = pdfs[static_cast<size_t>(i)];
    txt.replace_extension(".txt");
    std::ifstream in(txt, std::ios::binary);
    FOLIO_CHECK_INPUT(in.good(), "held-out document '" + pdfs[static_cast<size_t>(i)].string() + "' has no " + txt.filename().string());
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back({pdfs[static_cast<size_t>(i)].string(), ss.str(), normalised, {}, ""});
  }
  return out;
}

HeldoutDoc composed_heldout_doc(const std::string& root, int pages) {
  FOLIO_CHECK_INPUT(pages >= 1, "a composed document needs at least one page, got " + std::to_string(pages));
  // The cycle: every document of p20 then every document of p1, each with its pages' texts.
  struct Source {
    std::string pdf;
    std::vector<std::string> page_texts;
  };
  std::vector<Source> cycle;
  for (int set : {20, 1}) {
    std::string name = "p";
    name += std::to_string(set);
    const auto dir = std::filesystem::path(root) / name;
    if (!std::filesystem::is_directory(dir)) continue;
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".pdf";
    for (HeldoutDoc& d : heldout_docs(root, set, static_cast<int>(n)))
      cycle.push_back({d.pdf, split_text_pages(d.text, "<page>")});
  }
  FOLIO_CHECK_INPUT(!cycle.empty(), "no held-out documents under '" + root + "' (p20/ or p1/) to compose from");
  HeldoutDoc out;
  out.pdf = "composed-" + std::to_string(pages) + "-pages";
  out.normalised = compares_normalised_text(root);
  int have = 0;
  for (size_t i = 0; have < pages; ++i) {
    const Source& s = cycle[i % cycle.size()];
    out.files.push_back(s.pdf);
    for (const std::string& t : s.page_texts) {
      if (have == pages) break;
      if (have > 0) out.text += "<page>";
      out.text += t;
      ++have;
    }
  }
  out.page_range = "1-" + std::to_string(pages);
  return out;
}

}  // namespace folio
