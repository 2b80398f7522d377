// Accuracy measures of `folio bench accuracy` (definitions in docs/benchmarks.md).
//
//  - CER: the text is cut into pages at a marker ("<page>"); each page loses its trailing newlines
//    and spaces; CER = sum over pages of the character edit distance (Levenshtein, unit costs, on
//    bytes) between hypothesis and reference page / sum of reference page lengths. Missing
//    hypothesis pages count as empty (every reference character an error); extra ones count all
//    their characters as errors. Newlines inside a page are characters like any other.
//  - token agreement with a baseline run: matching ids at equal positions / the longer run's length
//    (1.0 = identical output; a run that stops early or diverges loses the rest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct CerCount {
  size_t errors = 0;
  size_t chars = 0;  // reference characters
  double cer() const { return chars ? static_cast<double>(errors) / static_cast<double>(chars) : (errors ? 1.0 : 0.0); }
  CerCount& operator+=(const CerCount& o) {
    errors += o.errors;
    chars += o.chars;
    return *this;
  }
};

size_t edit_distance(std::string_view a, std::string_view b);

// Pages of a text cut at `marker`, each without trailing newlines and spaces.
std::vector<std::string> split_text_pages(std::string_view text, std::string_view marker);

CerCount text_cer(std::string_view hypothesis, std::string_view reference, std::string_view page_marker);

// `text` with `fn` applied to each page (pages cut at `marker`, trailing newlines and spaces
// dropped as split_text_pages does), joined by the marker again.
template <class Fn>
std::string map_pages(std::string_view text, std::string_view marker, Fn fn) {
  std::string out;
  const std::vector<std::string> pages = split_text_pages(text, marker);
  for (size_t i = 0; i < pages.size(); ++i) {
    if (i > 0) out += marker;
    out += fn(pages[i]);
  }
  return out;
}

double token_agreement(std::span<const int32_t> run, std::span<const int32_t> baseline);

// A held-out document: a PDF and its expected text (NAME.pdf + NAME.txt).
struct HeldoutDoc {
  std::string pdf;                 // the document (its name, for a composed one)
  std::string text;                // expected text, pages separated by "<page>"
  // The truth is plain text to compare after scoring_text() (markdown_as_text() on the model's
  // output first): the set's set.json says "compare": "normalised-text". Otherwise exact.
  bool normalised = false;
  std::vector<std::string> files;  // composed documents: the PDFs read in order (may repeat) ...
  std::string page_range;          // ... and the pages of them to read ("" = all)
  std::vector<std::string> sources() const { return files.empty() ? std::vector<std::string>{pdf} : files; }
};

// The first `docs` documents (by name) of the held-out set of `pages`-page documents under `root`
// (root/p<pages>/*.pdf), compared as root/set.json says (exact text when there is none).
// InvalidInput naming the directory if it has fewer, or naming set.json if it cannot be read or
// names an unknown comparison.
std::vector<HeldoutDoc> heldout_docs(const std::string& root, int pages, int docs);

// A `pages`-page document composed of held-out pages in a fixed cycle (the documents of root/p20,
// then those of root/p1, again and again), for page counts without a set of their own (100, 500).
// Pages repeat past the cycle's length (80 pages with the shipped sets).
HeldoutDoc composed_heldout_doc(const std::string& root, int pages);

}  // namespace folio
