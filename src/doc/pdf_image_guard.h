// pdf_image_guard: a check on the sizes a PDF's image XObjects declare, run before poppler renders
// any page.
//
// Found by fuzzing (docs/fuzzing.md): poppler scales an image to the page row by row over the
// height its dictionary declares, whatever the stream holds, so an 11 KB file declaring a
// 448 x 444,444,352-pixel image kept a renderer busy for minutes (and a server worker with it).
// An image XObject is a stream, and a stream's dictionary is never inside a compressed object
// stream, so its /Width and /Height stand in the file's bytes as written.
//
// Promises: check_pdf_images() refuses, with InvalidInput naming `source`, a file holding an image
// XObject (a dictionary with /Subtype /Image before its `stream` keyword) whose direct integer
// /Width times /Height exceeds kMaxPdfImagePixels (16384 squared, the largest page folio renders).
// Sizes given as indirect references, and inline images inside (compressed) content streams, are
// not seen. Reads the file through a read-only mapping; the file must not change meanwhile. Pure
// but for that read; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace folio {

inline constexpr int64_t kMaxPdfImagePixels = int64_t(16384) * 16384;

// `bytes`: the whole file.
void check_pdf_images(std::string_view bytes, const std::string& source);
// The same on the file at `path` (mapped, not read into memory). A file that cannot be mapped is
// left to the PDF reader's own errors.
void check_pdf_file_images(const std::string& path);

}  // namespace folio
