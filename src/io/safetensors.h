// Hugging Face safetensors checkpoints, read in place from an mmap and written in the standard format.
//
// File layout: u64 little-endian header length N, N bytes of JSON header, then the data section.
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end)} (offsets
// relative to the data section) plus an optional "__metadata__" string->string map.
// Supported dtypes: F32, F16, BF16.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "io/mapped_file.h"
#include "io/tensor_source.h"

namespace folio {

// One .safetensors file. Every structural problem (header length beyond the file, invalid JSON,
// inconsistent offsets, a truncated data section, an unsupported dtype) throws InvalidInput naming
// the file and, where one is to blame, the tensor.
class SafetensorsFile : public TensorMapSource {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::string& path, Residency residency = Residency::kMapped);

  std::string description() const override { return file_->path(); }

  // The "__metadata__" map (empty if the file has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::shared_ptr<MappedFile>& file() const { return file_; }

 private:
  SafetensorsFile() = default;

  std::shared_ptr<MappedFile> file_;
  std::map<std::string, std::string> metadata_;
};

// A whole checkpoint, which is one of:
//   - a path to a .safetensors file;
//   - a directory with model.safetensors.index.json ({"weight_map": {tensor: shard file}}); every
//     shard named there is opened once, and each tensor listed must be in its shard;
//   - a directory with exactly one *.safetensors file.
// Tensor names are the union over shards; a name found in two shards is an error.
class SafetensorsCheckpoint : public TensorSource {
 public:
  // `residency`: how every shard's bytes are held (mapped_file.h).
  static std::unique_ptr<SafetensorsCheckpoint> open(const std::string& path_or_dir, Residency residency = Residency::kMapped);

  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string description() const override { return description_; }

  const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }

 private:
  SafetensorsCheckpoint() = default;

  std::string description_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const TensorView*, std::less<>> tensors_;
};

// Writes `tensors` (F32, F16 or BF16; TensorView::nbytes() bytes at data) as a standard safetensors
// file readable by the Python `safetensors` package. Data is laid out widest dtype first so every
// tensor is aligned to its element size; the header is padded with spaces to a multiple of 8.
// Writes path + ".tmp" and renames it over path, so readers never see a half-written file.
// Throws InvalidInput for bad tensors (duplicate name, Q8_0, null data), Error(Io) if writing fails.
void write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace folio
