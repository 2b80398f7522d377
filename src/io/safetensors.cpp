#include "io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "io/atomic_file.h"

namespace folio {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The Rust reference implementation refuses headers above 100 MB; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

std::optional<DType> safetensors_dtype(const std::string& s) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  return std::nullopt;
}

// Bytes per element of the integer and boolean dtypes: buffers some checkpoints carry
// (position_ids, attention masks) that no folio model reads. They are checked like any tensor and
// then left out of the tensor map.
std::optional<uint64_t> skipped_dtype_bytes(const std::string& s) {
  if (s == "I64" || s == "U64") return 8;
  if (s == "I32" || s == "U32") return 4;
  if (s == "I16" || s == "U16") return 2;
  if (s == "I8" || s == "U8" || s == "BOOL") return 1;
  return std::nullopt;
}

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    default: break;  // block formats exist only in GGUF
  }
  return nullptr;
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

[[noreturn]] void bad_tensor(const std::string& path, const std::string& name, const std::string& what) {
  throw_invalid("safetensors file '" + path + "': tensor '" + name + "' " + what);
}

// A header entry after its own checks, before the checks against the data section.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
  bool skipped = false;  // an integer / boolean buffer: checked, not offered as a tensor
};

Entry parse_entry(const std::string& path, const std::string& name, const json& v) {
  if (!v.is_object()) bad_tensor(path, name, "has a header entry that is not a JSON object");
  auto dt = v.find("dtype");
  auto sh = v.find("shape");
  auto off = v.find("data_offsets");
  if (dt == v.end() || !dt->is_string()) bad_tensor(path, name, "has no string \"dtype\"");
  if (sh == v.end() || !sh->is_array()) bad_tensor(path, name, "has no array \"shape\"");
  if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    bad_tensor(path, name, "has no valid \"data_offsets\" (want [begin, end] of non-negative integers)");

  Entry e;
  e.name = name;
  std::string dtype_str = dt->get<std::string>();
  std::optional<DType> dtype = safetensors_dtype(dtype_str);
  const std::optional<uint64_t> skipped_bytes = skipped_dtype_bytes(dtype_str);
  if (!dtype && !skipped_bytes)
    bad_tensor(path, name, "has unsupported dtype " + dtype_str + " (supported: F32, F16, BF16; integer buffers are skipped)");
  e.dtype = dtype.value_or(DType::F32);
  e.skipped = !dtype;

  uint64_t numel = 1;
  for (const json& d : *sh) {
    if (!d.is_number_unsigned()) bad_tensor(path, name, "has a shape entry that is not a non-negative integer: " + d.dump());
    uint64_t dim = d.get<uint64_t>();
    if (dim > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, dim, &numel))
      bad_tensor(path, name, "has a shape whose element count overflows: " + sh->dump());
    e.shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;
  const uint64_t elem_bytes = e.skipped ? *skipped_bytes : static_cast<uint64_t>(dtype_block_bytes(e.dtype));
  if (__builtin_mul_overflow(numel, elem_bytes, &nbytes))
    bad_tensor(path, name, "has a shape whose byte size overflows: " + sh->dump());

  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  if (e.end < e.begin)
    bad_tensor(path, name, "has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] with end before begin");
  if (e.end - e.begin != nbytes)
    bad_tensor(path, name, "has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] spanning " +
        std::to_string(e.end - e.begin) + " bytes, but " + dtype_str + " " + shape_to_string(e.shape) + " needs " +
        std::to_string(nbytes));
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path, Residency residency) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->file_ = MappedFile::open(path, residency);
  const uint8_t* base = f->file_->data();
  const uint64_t size = f->file_->size();

  FOLIO_CHECK_INPUT(size >= 8, "safetensors file '" + path + "' is too short (" + std::to_string(size) +
                                   " bytes) to hold the 8-byte header length");
  const uint64_t header_len = read_u64_le(base);
  FOLIO_CHECK_INPUT(header_len <= size - 8, "safetensors file '" + path + "' declares a " + std::to_string(header_len) +
                                                "-byte header but only " + std::to_string(size - 8) +
                                                " bytes follow the length field (truncated or not safetensors)");
  FOLIO_CHECK_INPUT(header_len <= kMaxHeaderBytes, "safetensors file '" + path + "' declares a " +
                                                       std::to_string(header_len) + "-byte header (limit 100 MB)");

  // The header may be padded with spaces (the format) or, from some writers, NULs: trim both.
  const char* hbegin = reinterpret_cast<const char*>(base + 8);
  const char* hend = hbegin + header_len;
  while (hend > hbegin && (hend[-1] == ' ' || hend[-1] == '\0')) --hend;
  json header;
  try {
    header = json::parse(hbegin, hend);
  } catch (const json::exception& e) {
    throw_invalid("safetensors file '" + path + "' has an invalid JSON header: " + e.what());
  }
  FOLIO_CHECK_INPUT(header.is_object(), "safetensors file '" + path + "' has a JSON header that is not an object");

  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      FOLIO_CHECK_INPUT(it->is_object() || it->is_null(),
                        "safetensors file '" + path + "': \"__metadata__\" is not an object");
      if (it->is_null()) continue;
      for (auto m = it->begin(); m != it->end(); ++m) {
        FOLIO_CHECK_INPUT(m->is_string(), "safetensors file '" + path + "': metadata value for '" + m.key() +
                                              "' is not a string");
        f->metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), *it));
  }

  // Check placement in file order so a truncated file blames the first tensor that is cut off.
  const uint64_t data_size = size - 8 - header_len;
  const uint8_t* data = base + 8 + header_len;
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.end > data_size)
      throw_invalid("safetensors file '" + path + "' is truncated: tensor '" + e.name + "' needs data bytes [" +
                    std::to_string(e.begin) + ", " + std::to_string(e.end) + ") but the data section has only " +
                    std::to_string(data_size) + " bytes");
    if (prev && e.begin < prev->end && e.begin != e.end)
      throw_invalid("safetensors file '" + path + "': tensors '" + prev->name + "' and '" + e.name +
                    "' overlap in the data section");
    if (e.begin != e.end) prev = &e;
    if (e.skipped) continue;
    TensorView v;
    v.name = e.name;
    v.dtype = e.dtype;
    v.shape = e.shape;
    v.data = data + e.begin;
    f->tensors_.emplace(e.name, std::move(v));
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// SafetensorsCheckpoint

std::unique_ptr<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& path_or_dir, Residency residency) {
  std::unique_ptr<SafetensorsCheckpoint> c(new SafetensorsCheckpoint());
  c->description_ = path_or_dir;
  std::error_code ec;
  const fs::path root(path_or_dir);

  auto add_shard = [&](std::unique_ptr<SafetensorsFile> shard) -> const SafetensorsFile* {
    for (const std::string& name : shard->names()) {
      const TensorView* v = shard->find(name);
      auto [it, inserted] = c->tensors_.emplace(name, v);
      if (!inserted) {
        std::string other;
        for (const auto& s : c->shards_)
          if (s->find(name) == it->second) other = s->description();
        throw_invalid("tensor '" + name + "' appears in two shards of " + path_or_dir + ": '" + other + "' and '" +
                      shard->description() + "'");
      }
    }
    c->shards_.push_back(std::move(shard));
    return c->shards_.back().get();
  };

  if (fs::is_regular_file(root, ec)) {
    add_shard(SafetensorsFile::open(path_or_dir, residency));
    return c;
  }
  FOLIO_CHECK_INPUT(fs::exists(root, ec), "checkpoint path '" + path_or_dir + "' does not exist");
  FOLIO_CHECK_INPUT(fs::is_directory(root, ec),
                    "checkpoint path '" + path_or_dir + "' is neither a .safetensors file nor a directory");

  const fs::path index_path = root / "model.safetensors.index.json";
  if (fs::exists(index_path, ec)) {
    auto index_file = MappedFile::open(index_path.string());
    json index;
    try {
      const char* p = reinterpret_cast<const char*>(index_file->data());
      index = json::parse(p, p + index_file->size());
    } catch (const json::exception& e) {
      throw_invalid("invalid JSON in '" + index_path.string() + "': " + e.what());
    }
    FOLIO_CHECK_INPUT(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(),
                      "'" + index_path.string() + "' has no \"weight_map\" object");
    // Shard file -> tensors the index places there, in a stable order.
    std::map<std::string, std::vector<std::string>> by_shard;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      FOLIO_CHECK_INPUT(it->is_string(), "'" + index_path.string() + "': weight_map entry for tensor '" + it.key() +
                                             "' is not a file name");
      by_shard[it->get<std::string>()].push_back(it.key());
    }
    FOLIO_CHECK_INPUT(!by_shard.empty(), "'" + index_path.string() + "' has an empty weight_map");
    for (const auto& [shard_name, listed] : by_shard) {
      FOLIO_CHECK_INPUT(!fs::path(shard_name).is_absolute(), "'" + index_path.string() + "' names shard '" +
                                                                 shard_name + "' by absolute path; expected a file "
                                                                 "next to the index");
      const SafetensorsFile* shard = add_shard(SafetensorsFile::open((root / shard_name).string(), residency));
      for (const std::string& name : listed)
        FOLIO_CHECK_INPUT(shard->find(name), "tensor '" + name + "' is listed in '" + index_path.string() +
                                                 "' but missing from its shard '" + shard->description() + "'");
    }
    return c;
  }

  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.path().extension() == ".safetensors" && entry.is_regular_file(ec)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.size() != 1) {
    std::string msg = "directory '" + path_or_dir + "' has no model.safetensors.index.json and ";
    if (files.empty()) {
      msg += "no *.safetensors file";
    } else {
      msg += std::to_string(files.size()) + " *.safetensors files (expected exactly one):";
      for (const auto& f : files) msg += " '" + fs::path(f).filename().string() + "'";
    }
    throw_invalid(msg);
  }
  add_shard(SafetensorsFile::open(files[0], residency));
  return c;
}

const TensorView* SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, _] : tensors_) out.push_back(name);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writer

void write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Widest element first keeps every tensor aligned to its element size (the header is padded to 8).
  std::vector<const TensorView*> order;
  order.reserve(tensors.size());
  for (const TensorView& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
    return dtype_block_bytes(a->dtype) > dtype_block_bytes(b->dtype);
  });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorView* t : order) {
    const char* dt = safetensors_dtype_name(t->dtype);
    FOLIO_CHECK_INPUT(dt, "cannot write tensor '" + t->name + "' to safetensors '" + path + "': dtype " +
                              dtype_name(t->dtype) + " is not supported (F32, F16, BF16 only)");
    FOLIO_CHECK_INPUT(t->name != "__metadata__", "cannot write a tensor named '__metadata__' to '" + path + "'");
    FOLIO_CHECK_INPUT(!header.contains(t->name), "duplicate tensor '" + t->name + "' written to '" + path + "'");
    for (int64_t d : t->shape)
      FOLIO_CHECK_INPUT(d >= 0, "tensor '" + t->name + "' has a negative dimension: " + shape_to_string(t->shape));
    const uint64_t n = t->nbytes();
    FOLIO_CHECK_INPUT(n == 0 || t->data, "tensor '" + t->name + "' has no data");
    header[t->name] = {{"dtype", dt}, {"shape", t->shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');

  AtomicFileWriter out(path);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  out.write(len, 8);
  out.write(h.data(), h.size());
  for (const TensorView* t : order) out.write(t->data, t->nbytes());
  out.commit();
}

}  // namespace folio
