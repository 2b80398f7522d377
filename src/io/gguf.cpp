#include "io/gguf.h"

#include "core/row_interleave.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "io/atomic_file.h"

namespace folio {

namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS: llama.cpp cannot hold more
constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxArrayNesting = 8;

// GGUF metadata value types.
enum GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// ggml tensor types folio reads.
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ5_0 = 6, kGgmlQ5_1 = 7, kGgmlQ8_0 = 8, kGgmlQ4_K = 12, kGgmlQ5_K = 13,
                   kGgmlQ6_K = 14, kGgmlBF16 = 30;

// GgufValue scalar alternative index (0..11) -> GGUF type; array alternative i is 12 + i.
constexpr uint32_t kScalarIndexToType[12] = {kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF32, kF64, kBool, kString};
constexpr size_t kNumScalars = 12;

const char* gguf_type_name(uint32_t t) {
  switch (t) {
    case kU8: return "u8";
    case kI8: return "i8";
    case kU16: return "u16";
    case kI16: return "i16";
    case kU32: return "u32";
    case kI32: return "i32";
    case kF32: return "f32";
    case kBool: return "bool";
    case kString: return "string";
    case kArray: return "array";
    case kU64: return "u64";
    case kI64: return "i64";
    case kF64: return "f64";
  }
  return "unknown";
}

// Names of the common ggml types, so an unsupported-type error says more than a number.
const char* ggml_type_name(uint32_t t) {
  switch (t) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 6: return "Q5_0";
    case 7: return "Q5_1";
    case 8: return "Q8_0";
    case 9: return "Q8_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 12: return "Q4_K";
    case 13: return "Q5_K";
    case 14: return "Q6_K";
    case 15: return "Q8_K";
    case 24: return "I8";
    case 25: return "I16";
    case 26: return "I32";
    case 27: return "I64";
    case 28: return "F64";
    case 30: return "BF16";
  }
  return nullptr;
}

// Bounds-checked little-endian reader over the mapped file.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* data, uint64_t size) : path_(path), data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining())
      throw_invalid("GGUF file '" + path_ + "' is truncated: " + what + " at byte " + std::to_string(pos_) +
                    " needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
  }

  template <typename T>
  T read(const std::string& what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const std::string& what) {
    uint64_t n = read<uint64_t>(what + " (length)");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

  template <typename T>
  std::vector<T> read_array(uint64_t count, const std::string& what) {
    uint64_t bytes;
    if (__builtin_mul_overflow(count, uint64_t{sizeof(T)}, &bytes)) need(std::numeric_limits<uint64_t>::max(), what);
    need(bytes, what);
    std::vector<T> v(count);
    if (count) std::memcpy(v.data(), data_ + pos_, bytes);
    pos_ += bytes;
    return v;
  }

  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

GgufValue read_scalar(Cursor& c, uint32_t type, const std::string& what) {
  switch (type) {
    case kU8: return c.read<uint8_t>(what);
    case kI8: return c.read<int8_t>(what);
    case kU16: return c.read<uint16_t>(what);
    case kI16: return c.read<int16_t>(what);
    case kU32: return c.read<uint32_t>(what);
    case kI32: return c.read<int32_t>(what);
    case kU64: return c.read<uint64_t>(what);
    case kI64: return c.read<int64_t>(what);
    case kF32: return c.read<float>(what);
    case kF64: return c.read<double>(what);
    case kBool: return c.read<uint8_t>(what) != 0;
    case kString: return c.read_string(what);
  }
  throw_invalid("GGUF file '" + c.path() + "': " + what + " has unknown value type " + std::to_string(type));
}

// Reads (or, for nested arrays, which folio never needs, skips) an array body. Returns nullopt if
// the array was skipped.
std::optional<GgufValue> read_array_value(Cursor& c, const std::string& what, int depth) {
  uint32_t type = c.read<uint32_t>(what + " (element type)");
  uint64_t n = c.read<uint64_t>(what + " (element count)");
  switch (type) {
    case kU8: return c.read_array<uint8_t>(n, what);
    case kI8: return c.read_array<int8_t>(n, what);
    case kU16: return c.read_array<uint16_t>(n, what);
    case kI16: return c.read_array<int16_t>(n, what);
    case kU32: return c.read_array<uint32_t>(n, what);
    case kI32: return c.read_array<int32_t>(n, what);
    case kU64: return c.read_array<uint64_t>(n, what);
    case kI64: return c.read_array<int64_t>(n, what);
    case kF32: return c.read_array<float>(n, what);
    case kF64: return c.read_array<double>(n, what);
    case kBool: {
      std::vector<uint8_t> raw = c.read_array<uint8_t>(n, what);
      return std::vector<bool>(raw.begin(), raw.end());
    }
    case kString: {
      // Each string takes at least its 8-byte length: reject absurd counts before reserving.
      c.need(n > c.remaining() / 8 ? std::numeric_limits<uint64_t>::max() : 0, what);
      std::vector<std::string> v;
      v.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v.push_back(c.read_string(what));
      return v;
    }
    case kArray:
      if (depth >= kMaxArrayNesting)
        throw_invalid("GGUF file '" + c.path() + "': " + what + " nests arrays too deeply");
      c.need(n > c.remaining() / 12 ? std::numeric_limits<uint64_t>::max() : 0, what);
      for (uint64_t i = 0; i < n; ++i) read_array_value(c, what, depth + 1);
      return std::nullopt;
  }
  throw_invalid("GGUF file '" + c.path() + "': " + what + " has unknown array element type " + std::to_string(type));
}

[[noreturn]] void wrong_type(const std::string& path, std::string_view key, const GgufValue& v, const char* want) {
  throw_invalid("GGUF key '" + std::string(key) + "' in '" + path + "' has type " + gguf_value_type_name(v) +
                ", expected " + want);
}

template <typename T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

bool is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

std::string gguf_value_type_name(const GgufValue& v) {
  size_t i = v.index();
  if (i < kNumScalars) return gguf_type_name(kScalarIndexToType[i]);
  return std::string("array<") + gguf_type_name(kScalarIndexToType[i - kNumScalars]) + ">";
}

// ---------------------------------------------------------------------------------------------
// GgufFile

namespace {

// One entry of the tensor table, before its data are placed.
struct TensorInfo {
  TensorView view;
  uint64_t offset = 0, nbytes = 0;
};

using Metadata = std::map<std::string, GgufValue, std::less<>>;

// The magic and version; returns the version.
uint32_t read_preamble(Cursor& c, const std::string& path, const uint8_t* base, uint64_t size) {
  FOLIO_CHECK_INPUT(size >= 4 && std::memcmp(base, "GGUF", 4) == 0,
                    "'" + path + "' is not a GGUF file (bad magic; expected \"GGUF\")");
  c.read<uint32_t>("magic");
  const uint32_t version = c.read<uint32_t>("version");
  FOLIO_CHECK_INPUT(version == 2 || version == 3,
                    "GGUF file '" + path + "' has version " + std::to_string(version) +
                        "; only versions 2 and 3 (little-endian) are supported");
  return version;
}

void read_metadata(Cursor& c, const std::string& path, uint64_t n_kv, Metadata& kv) {
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    const std::string what = "metadata '" + key + "'";
    const uint32_t type = c.read<uint32_t>(what + " (type)");
    std::optional<GgufValue> value = type == kArray ? read_array_value(c, what, 0) : read_scalar(c, type, what);
    if (!value) continue;  // nested array, skipped
    FOLIO_CHECK_INPUT(!kv.count(key), "GGUF file '" + path + "' has duplicate metadata key '" + key + "'");
    kv.emplace(std::move(key), std::move(*value));
  }
}

DType dtype_of_ggml_type(uint32_t type, const std::string& path, const std::string& name) {
  switch (type) {
    case kGgmlF32: return DType::F32;
    case kGgmlF16: return DType::F16;
    case kGgmlBF16: return DType::BF16;
    case kGgmlQ8_0: return DType::Q8_0;
    case kGgmlQ4_0: return DType::Q4_0;
    case kGgmlQ5_0: return DType::Q5_0;
    case kGgmlQ5_1: return DType::Q5_1;
    case kGgmlQ4_K: return DType::Q4_K;
    case kGgmlQ5_K: return DType::Q5_K;
    case kGgmlQ6_K: return DType::Q6_K;
  }
  const char* tn = ggml_type_name(type);
  throw_invalid("GGUF file '" + path + "': tensor '" + name + "' has ggml type " + std::to_string(type) +
                (tn ? std::string(" (") + tn + ")" : std::string()) +
                ", which folio does not support (supported: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
}

// Entry i of the tensor table: name, shape (outermost first), type, offset and byte size, checked.
TensorInfo read_tensor_info(Cursor& c, const std::string& path, uint64_t i, uint64_t alignment) {
  TensorInfo info;
  info.view.name = c.read_string("tensor name #" + std::to_string(i));
  const std::string& name = info.view.name;
  const std::string what = "tensor '" + name + "'";
  const uint32_t n_dims = c.read<uint32_t>(what + " (dimension count)");
  FOLIO_CHECK_INPUT(n_dims <= kMaxDims, "GGUF file '" + path + "': tensor '" + name + "' has " +
                                            std::to_string(n_dims) + " dimensions (at most 4 allowed)");
  const std::vector<uint64_t> ne = c.read_array<uint64_t>(n_dims, what + " (dimensions)");
  const uint32_t type = c.read<uint32_t>(what + " (type)");
  info.offset = c.read<uint64_t>(what + " (offset)");

  uint64_t numel = 1;
  for (uint64_t d : ne)
    FOLIO_CHECK_INPUT(d <= static_cast<uint64_t>(INT64_MAX) && !__builtin_mul_overflow(numel, d, &numel) &&
                          numel <= static_cast<uint64_t>(INT64_MAX),
                      "GGUF file '" + path + "': tensor '" + name + "' has an element count that overflows");
  // ne is innermost first; folio's shapes are outermost first.
  for (auto it = ne.rbegin(); it != ne.rend(); ++it) info.view.shape.push_back(static_cast<int64_t>(*it));
  info.view.dtype = dtype_of_ggml_type(type, path, name);
  const uint64_t inner = ne.empty() ? 1 : ne[0];
  const auto block = static_cast<uint64_t>(dtype_block_elems(info.view.dtype));
  FOLIO_CHECK_INPUT(inner % block == 0, "GGUF file '" + path + "': tensor '" + name + "' is " + dtype_name(info.view.dtype) +
                                            " but its row length " + std::to_string(inner) +
                                            " is not a multiple of the block size " + std::to_string(block));
  info.nbytes = numel / block * dtype_block_bytes(info.view.dtype);
  FOLIO_CHECK_INPUT(info.offset % alignment == 0, "GGUF file '" + path + "': tensor '" + name + "' has offset " +
                                                      std::to_string(info.offset) + ", not a multiple of the alignment " +
                                                      std::to_string(alignment));
  return info;
}

// Points every tensor at its data (data_start..data_start + data_size of `base`), checking in file
// order so that a truncated file blames the first tensor that is cut off.
void place_tensors(std::vector<TensorInfo>& infos, const std::string& path, const uint8_t* base, uint64_t data_start,
                   uint64_t data_size, std::map<std::string, TensorView, std::less<>>& tensors) {
  std::vector<TensorInfo*> order;
  for (TensorInfo& i : infos) order.push_back(&i);
  std::stable_sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  const TensorInfo* prev = nullptr;
  for (TensorInfo* i : order) {
    const std::string& name = i->view.name;
    if (i->offset > data_size || i->nbytes > data_size - i->offset)
      throw_invalid("GGUF file '" + path + "' is truncated: tensor '" + name + "' needs data bytes [" +
                    std::to_string(i->offset) + ", " + std::to_string(i->offset + i->nbytes) +
                    ") but the data section has only " + std::to_string(data_size) + " bytes");
    if (prev && i->offset < prev->offset + prev->nbytes && i->nbytes > 0)
      throw_invalid("GGUF file '" + path + "': tensors '" + prev->view.name + "' and '" + name +
                    "' overlap in the data section");
    if (i->nbytes > 0) prev = i;
    i->view.data = base + data_start + i->offset;
    FOLIO_CHECK_INPUT(!tensors.count(name), "GGUF file '" + path + "' has duplicate tensor '" + name + "'");
    tensors.emplace(name, std::move(i->view));
  }
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path, Residency residency) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->file_ = MappedFile::open(path, residency);
  const uint8_t* base = f->file_->data();
  const uint64_t size = f->file_->size();
  Cursor c(path, base, size);
  f->version_ = read_preamble(c, path, base, size);
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // Every kv needs >= 13 bytes and every tensor >= 24: reject impossible counts before looping.
  FOLIO_CHECK_INPUT(n_kv <= c.remaining() / 13 && n_tensors <= c.remaining() / 24,
                    "GGUF file '" + path + "' is truncated or corrupt: it declares " + std::to_string(n_kv) +
                        " metadata entries and " + std::to_string(n_tensors) + " tensors in " +
                        std::to_string(size) + " bytes");
  read_metadata(c, path, n_kv, f->kv_);
  if (f->kv_.count("general.alignment")) {
    const int64_t a = *f->get_int("general.alignment");
    FOLIO_CHECK_INPUT(a > 0 && is_power_of_two(static_cast<uint64_t>(a)),
                      "GGUF file '" + path + "' has general.alignment " + std::to_string(a) +
                          ", which is not a positive power of two");
    f->alignment_ = static_cast<uint64_t>(a);
  }
  std::vector<TensorInfo> infos;
  infos.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) infos.push_back(read_tensor_info(c, path, i, f->alignment_));
  const uint64_t data_start = align_up(c.pos(), f->alignment_);
  place_tensors(infos, path, base, data_start, data_start <= size ? size - data_start : 0, f->tensors_);
  return f;
}

int GgufFile::interleave_rows() {
  std::vector<TensorView*> chosen;
  for (auto& [name, t] : tensors_) {
    if (!interleaved_dtype(t.dtype) || name == "token_embd.weight" || t.shape.size() < 2) continue;
    if (t.shape[t.shape.size() - 2] % kGroupRows == 0) chosen.push_back(&t);
  }
  if (chosen.empty()) return 0;
  const uint8_t* base = file_->data();
  const bool edited = file_->edit_resident([&](uint8_t* bytes) {
    for (const TensorView* t : chosen) {
      uint8_t* at = bytes + (static_cast<const uint8_t*>(t->data) - base);
      // Slices are whole groups: so is the stack.
      ::folio::interleave_rows(t->dtype, at, t->numel() / t->cols(), t->cols(), at);
    }
  });
  if (!edited) return 0;
  for (TensorView* t : chosen) t->dtype = *interleaved_dtype(t->dtype);
  return static_cast<int>(chosen.size());
}

const GgufValue* GgufFile::get(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  out.reserve(kv_.size());
  for (const auto& [key, _] : kv_) out.push_back(key);
  return out;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  wrong_type(description(), key, *v, "string");
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (is_int_v<T>) {
          if constexpr (std::is_same_v<T, uint64_t>)
            FOLIO_CHECK_INPUT(x <= static_cast<uint64_t>(INT64_MAX),
                              "GGUF key '" + std::string(key) + "' in '" + description() + "' is too large: " +
                                  std::to_string(x));
          return static_cast<int64_t>(x);
        } else {
          wrong_type(description(), key, *v, "an integer");
        }
      },
      *v);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  return std::visit(
      [&](const auto& x) -> double {
        using T = std::decay_t<decltype(x)>;
        if constexpr (is_int_v<T> || std::is_floating_point_v<T>) {
          return static_cast<double>(x);
        } else {
          wrong_type(description(), key, *v, "a number");
        }
      },
      *v);
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return {};
  if (const auto* a = std::get_if<std::vector<std::string>>(v)) return *a;
  wrong_type(description(), key, *v, "array<string>");
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return {};
  if (const auto* a = std::get_if<std::vector<float>>(v)) return *a;
  if (const auto* a = std::get_if<std::vector<double>>(v)) return std::vector<float>(a->begin(), a->end());
  wrong_type(description(), key, *v, "array<f32>");
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return {};
  return std::visit(
      [&](const auto& x) -> std::vector<int32_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
          using E = typename T::value_type;
          if constexpr (is_int_v<E>) {
            std::vector<int32_t> out;
            out.reserve(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
              FOLIO_CHECK_INPUT(std::in_range<int32_t>(x[i]), "GGUF key '" + std::string(key) + "' in '" +
                                                                  description() + "': element " + std::to_string(i) +
                                                                  " (" + std::to_string(x[i]) +
                                                                  ") does not fit in int32");
              out.push_back(static_cast<int32_t>(x[i]));
            }
            return out;
          } else {
            wrong_type(description(), key, *v, "an integer array");
          }
        } else {
          wrong_type(description(), key, *v, "an integer array");
        }
      },
      *v);
}

// ---------------------------------------------------------------------------------------------
// GgufWriter

namespace {

void put_bytes(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

template <typename T>
void put(std::string& out, T v) {
  put_bytes(out, &v, sizeof v);
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

template <typename T>
void put_scalar_value(std::string& out, const T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    put<uint8_t>(out, x ? 1 : 0);
  } else if constexpr (std::is_same_v<T, std::string>) {
    put_string(out, x);
  } else {
    put<T>(out, x);
  }
}

void put_value(std::string& out, const GgufValue& v) {
  const size_t i = v.index();
  if (i < kNumScalars) {
    put<uint32_t>(out, kScalarIndexToType[i]);
  } else {
    put<uint32_t>(out, kArray);
    put<uint32_t>(out, kScalarIndexToType[i - kNumScalars]);
  }
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
          put<uint64_t>(out, x.size());
          for (const auto& e : x) put_scalar_value<typename T::value_type>(out, e);
        } else {
          put_scalar_value<T>(out, x);
        }
      },
      v);
}

uint32_t ggml_type_of(DType t) {
  switch (t) {
    case DType::F32: return kGgmlF32;
    case DType::F16: return kGgmlF16;
    case DType::BF16: return kGgmlBF16;
    case DType::Q8_0: return kGgmlQ8_0;
    case DType::Q4_0: return kGgmlQ4_0;
    case DType::Q5_0: return kGgmlQ5_0;
    case DType::Q5_1: return kGgmlQ5_1;
    case DType::Q4_K: return kGgmlQ4_K;
    case DType::Q5_K: return kGgmlQ5_K;
    case DType::Q6_K: return kGgmlQ6_K;
    case DType::Q4_K_X16:
    case DType::Q6_K_X16:
    case DType::Q8_0_X16:
    case DType::Q5_0_X16: break;
  }
  throw_invalid(std::string("GGUF writer: ") + dtype_name(t) + " is an in-memory layout, no file's type (write its rows)");
}

}  // namespace

void GgufWriter::set(std::string key, GgufValue v) {
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(std::move(key), std::move(v));
}

void GgufWriter::add_tensor(const TensorView& t) {
  for (const TensorView& o : tensors_)
    FOLIO_CHECK_INPUT(o.name != t.name, "duplicate tensor '" + t.name + "' added to GGUF writer");
  FOLIO_CHECK_INPUT(t.shape.size() <= kMaxDims, "tensor '" + t.name + "' has shape " + shape_to_string(t.shape) +
                                                    "; GGUF allows at most 4 dimensions");
  for (int64_t d : t.shape)
    FOLIO_CHECK_INPUT(d >= 0, "tensor '" + t.name + "' has a negative dimension: " + shape_to_string(t.shape));
  const int64_t inner = t.shape.empty() ? 1 : t.shape.back();
  FOLIO_CHECK_INPUT(inner % dtype_block_elems(t.dtype) == 0,
                    "tensor '" + t.name + "' is " + dtype_name(t.dtype) + " but its row length " +
                        std::to_string(inner) + " is not a multiple of the block size " +
                        std::to_string(dtype_block_elems(t.dtype)));
  FOLIO_CHECK_INPUT(t.nbytes() == 0 || t.data, "tensor '" + t.name + "' has no data");
  tensors_.push_back(t);
}

void GgufWriter::write(const std::string& path) const {
  uint64_t alignment = kDefaultAlignment;
  std::string header;
  header += "GGUF";
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, kv_.size());
  for (const auto& [key, value] : kv_) {
    if (key == "general.alignment") {
      uint64_t a = std::visit(
          [&](const auto& x) -> uint64_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (is_int_v<T>) {
              return x > 0 ? static_cast<uint64_t>(x) : 0;
            } else {
              return 0;
            }
          },
          value);
      FOLIO_CHECK_INPUT(is_power_of_two(a), "GGUF writer: general.alignment must be a positive power-of-two integer");
      alignment = a;
    }
    put_string(header, key);
    put_value(header, value);
  }
  std::vector<uint64_t> offsets;
  uint64_t offset = 0;
  for (const TensorView& t : tensors_) {
    put_string(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<uint64_t>(header, static_cast<uint64_t>(*it));
    put<uint32_t>(header, ggml_type_of(t.dtype));
    put<uint64_t>(header, offset);
    offsets.push_back(offset);
    offset = align_up(offset + t.nbytes(), alignment);
  }
  header.append(align_up(header.size(), alignment) - header.size(), '\0');

  AtomicFileWriter out(path);
  out.write(header.data(), header.size());
  uint64_t written = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.write_zeros(offsets[i] - written);
    const size_t n = tensors_[i].nbytes();
    out.write(tensors_[i].data, n);
    written = offsets[i] + n;
  }
  // Pad the last tensor too, as llama.cpp's writer does, so the data section is a whole number of
  // alignment units.
  out.write_zeros(offset - written);
  out.commit();
}

}  // namespace folio
