// GGUF (llama.cpp's single-file format), versions 2 and 3: a typed key/value header, tensor
// descriptors, then aligned tensor data. Read in place from an mmap; written by GgufWriter.
//
// Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64 kv count; each kv is
// string key, u32 value type, value; each tensor is string name, u32 n_dims, u64 ne[n_dims]
// (innermost first), u32 ggml type, u64 offset into the data section; padding to
// general.alignment (default 32); the data section. Strings are u64 length + bytes.
//
// The reader reverses ne so TensorView::shape is row-major PyTorch order: a weight with
// ne = [in, out] comes out as [out, in]. Supported tensor types: F32, F16, Q8_0, BF16.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "io/mapped_file.h"
#include "io/tensor_source.h"

namespace folio {

// One metadata value. The alternative's type is the GGUF type: a uint32_t value is written as
// GGUF UINT32, a std::vector<float> as an ARRAY of FLOAT32, and so on.
using GgufValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t, float,
                               double, bool, std::string,
                               std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                               std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                               std::vector<uint64_t>, std::vector<int64_t>, std::vector<float>,
                               std::vector<double>, std::vector<bool>, std::vector<std::string>>;

// "u32", "array<string>", ... for messages.
std::string gguf_value_type_name(const GgufValue& v);

class GgufFile : public TensorMapSource {
 public:
  // Throws InvalidInput naming the file (and the key or tensor at fault) for a bad magic, an
  // unsupported version, a truncated header or data section, or an unsupported tensor type.
  // `residency`: how the bytes are held (mapped_file.h).
  static std::unique_ptr<GgufFile> open(const std::string& path, Residency residency = Residency::kMapped);

  std::string description() const override { return file_->path(); }

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::shared_ptr<MappedFile>& file() const { return file_; }

  // Stores every q4_k, q6_k, q8_0 and q5_0 tensor but the token embedding (the one tensor read row by row) whose
  // slices [rows, cols] have whole groups of 16 rows interleaved (core/row_interleave.h) in place:
  // their views become Q4_K_X16, ... (a 3-D stack of experts: each expert's slice). Only for a
  // resident file (MappedFile::edit_resident); on a mapped one nothing changes. Call before handing
  // out views. Returns how many tensors were interleaved.
  int interleave_rows();

  // Tensors. NOTE: on a GgufFile, get(key) with one argument is the metadata lookup below, which
  // hides TensorSource::get(name); use tensor(name), get(name, shape), or a TensorSource&.
  using TensorSource::get;
  const TensorView& tensor(std::string_view name) const { return TensorSource::get(name); }

  // Metadata. get() returns nullptr if the key is absent. The typed getters return nullopt / an
  // empty vector if the key is absent, and throw InvalidInput naming the key if it has another type.
  const GgufValue* get(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;    // any integer type
  std::optional<double> get_float(std::string_view key) const;   // f32, f64 or any integer type
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;     // f32 or f64 array
  std::vector<int32_t> get_i32_array(std::string_view key) const;   // any integer array within int32 range
  std::vector<std::string> keys() const;  // sorted

 private:
  GgufFile() = default;

  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue, std::less<>> kv_;
};

// Builds a GGUF v3 file. Keys keep their insertion order (set() on an existing key replaces the
// value in place). Tensors are referenced, not copied: their data must stay valid until write().
class GgufWriter {
 public:
  void set(std::string key, GgufValue v);
  // t.shape is row-major (PyTorch order) as everywhere in folio; the writer reverses it into ne.
  // Throws InvalidInput on a duplicate name, missing data, or a Q8_0 row not a multiple of 32.
  void add_tensor(const TensorView& t);
  // Writes path + ".tmp" and renames it over path. Alignment is general.alignment if set (must be a
  // power of two), else 32. Throws Error(Io) if writing fails.
  void write(const std::string& path) const;

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<TensorView> tensors_;
};

}  // namespace folio
