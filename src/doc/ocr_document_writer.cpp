#include "doc/ocr_document_writer.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "doc/ocr_markdown.h"

namespace folio {

namespace {

[[noreturn]] void stream_failed() {
  throw Error(Error::Kind::Io, std::string("cannot write the markdown to standard output: ") + std::strerror(errno));
}

}  // namespace

OcrDocumentWriter::OcrDocumentWriter(const OcrOutputTargets& targets, size_t pages, const nlohmann::json& json_head)
    : targets_(targets), pages_(pages) {
  // Both files are opened before any page is read: a destination that cannot be written fails
  // the run at once, not after the whole document.
  if (!targets_.markdown_path.empty())
    markdown_file_ = std::make_unique<AtomicFileWriter>(targets_.markdown_path, targets_.markdown_label);
  if (targets_.json_path.empty()) return;
  json_file_ = std::make_unique<AtomicFileWriter>(targets_.json_path, targets_.json_label);
  json_.emplace("pages", [this](std::string_view s) { json_file_->write(s); });
  json_->begin(json_head);
}

void OcrDocumentWriter::page(size_t index, const OcrPage& page, const nlohmann::json& json_entry) {
  if (finished_ || index != next_ || index >= pages_)
    throw Error(Error::Kind::Internal, "OcrDocumentWriter: page " + std::to_string(index) + " given when page " +
                                           std::to_string(next_) + " of " + std::to_string(pages_) + " was due");
  write_markdown(document_markdown_piece(page, index, pages_));
  if (json_) json_->element(json_entry);
  ++next_;
}

void OcrDocumentWriter::finish(const nlohmann::json& json_tail) {
  if (finished_ || next_ != pages_)
    throw Error(Error::Kind::Internal, "OcrDocumentWriter: finished after " + std::to_string(next_) + " of " +
                                           std::to_string(pages_) + " pages");
  finished_ = true;
  if (markdown_written_ && markdown_last_ != '\n') write_markdown("\n");
  if (json_) {
    json_->end(json_tail);
    json_file_->write("\n");
  }
  // Both closed before either is renamed: a failed write (a full disk shows at the close) leaves
  // neither file.
  if (markdown_file_) markdown_file_->close();
  else if (targets_.markdown_stream && std::fflush(targets_.markdown_stream) != 0) stream_failed();
  if (json_file_) json_file_->close();
  if (markdown_file_) markdown_file_->commit();
  if (json_file_) json_file_->commit();
}

void OcrDocumentWriter::write_markdown(std::string_view s) {
  if (s.empty()) return;
  if (markdown_file_) markdown_file_->write(s);
  else if (!targets_.markdown_stream) return;
  else if (std::fwrite(s.data(), 1, s.size(), targets_.markdown_stream) != s.size()) stream_failed();
  markdown_last_ = s.back();
  markdown_written_ = true;
}

}  // namespace folio
