// OcrDocumentWriter: `folio ocr`'s two documents, the markdown and the JSON, written page by page
// as pages are read, so memory holds one page of them, not the document.
//
// Promises:
//  - the markdown file holds document_markdown() of all pages plus a final "\n" when it is not
//    empty and does not end with one; the JSON file holds dump(2) of the object made of
//    `json_head`'s members, "pages" (the entries given to page(), in order) and `json_tail`'s
//    members, plus "\n": byte for byte what the whole document written at once would be;
//  - files are written through AtomicFileWriter (io/atomic_file.h): under a temporary name next to
//    the destination until finish() renames them, so a run that fails (a write error, a full disk,
//    an error while reading pages) leaves neither a destination file nor a temporary, only the
//    destination as it was before; the error names the option (OcrOutputTargets' labels), the
//    path and the reason;
//  - markdown to a FILE* (stdout) is written as pages come, and cannot be taken back: a run that
//    fails leaves the pages before the failure there (and the exit status says it failed);
//  - page(i, ...) must come for i = 0, 1, ... in order and finish() once, after the last page:
//    Error(Internal) otherwise, before anything is written;
//  - finish() closes both files, then renames them: a write that fails (at the close, for a full
//    disk) leaves neither; only a failing rename of the JSON can leave the markdown alone.
// Not thread-safe: one thread hands the pages in.
#pragma once

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "doc/ocr_output.h"
#include "io/atomic_file.h"
#include "io/json_object_stream.h"

namespace folio {

struct OcrOutputTargets {
  std::string markdown_path;             // empty: to markdown_stream, if any
  std::FILE* markdown_stream = nullptr;  // e.g. stdout; not closed here
  std::string json_path;                 // empty: no JSON
  std::string markdown_label = "--out", json_label = "--json";  // named in errors
};

class OcrDocumentWriter {
 public:
  // Opens the temporaries and writes the JSON up to its "pages" array. `pages`: how many pages the
  // document has (the markdown marks pages only when there are several).
  OcrDocumentWriter(const OcrOutputTargets& targets, size_t pages, const nlohmann::json& json_head);
  OcrDocumentWriter(const OcrDocumentWriter&) = delete;
  OcrDocumentWriter& operator=(const OcrDocumentWriter&) = delete;

  // Page `index` and its entry of the JSON's "pages" (ignored without a JSON target).
  void page(size_t index, const OcrPage& page, const nlohmann::json& json_entry);
  // Closes the JSON with `json_tail`'s members and commits both files.
  void finish(const nlohmann::json& json_tail);

 private:
  void write_markdown(std::string_view s);

  OcrOutputTargets targets_;
  size_t pages_, next_ = 0;
  std::unique_ptr<AtomicFileWriter> markdown_file_, json_file_;
  std::optional<JsonObjectStream> json_;
  char markdown_last_ = '\n';  // the last markdown byte written ('\n' before any)
  bool markdown_written_ = false, finished_ = false;
};

}  // namespace folio
