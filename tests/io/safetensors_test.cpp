#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "io/mapped_file.h"

namespace folio {
namespace {

using testing::fixture_path;
using testing::invalid_input_message;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;


// A raw safetensors file from a header string and data bytes (the header is used verbatim).
std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

// A loader may rearrange a resident copy in place (the q4_k interleaving): the edit is seen through
// data() and the file on disk is untouched; a mapped file's pages are the page cache's, so it refuses
// and nothing changes; an edit that throws leaves what it wrote and the file still readable.
TEST(MappedFile, ResidentCopiesCanBeEditedMappedOnesCannot) {
  TempDir dir;
  write_bytes(dir.file("a.bin"), "hello");
  auto resident = MappedFile::open(dir.file("a.bin"), Residency::kResident);
  ASSERT_EQ(resident->residency(), Residency::kResident);
  EXPECT_TRUE(resident->edit_resident([](uint8_t* b) { b[0] = 'j'; }));
  EXPECT_EQ(std::memcmp(resident->data(), "jello", 5), 0);
  EXPECT_THROW(resident->edit_resident([](uint8_t* b) {
    b[1] = 'a';
    throw std::runtime_error("stop");
  }),
               std::runtime_error);
  EXPECT_EQ(std::memcmp(resident->data(), "jallo", 5), 0);
  auto mapped = MappedFile::open(dir.file("a.bin"), Residency::kMapped);
  bool ran = false;
  EXPECT_FALSE(mapped->edit_resident([&](uint8_t*) { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(std::memcmp(mapped->data(), "hello", 5), 0);  // the file itself never changed
}

TEST(MappedFile, MapsContentsAndNamesMissingPath) {
  TempDir dir;
  write_bytes(dir.file("a.bin"), "hello");
  auto f = MappedFile::open(dir.file("a.bin"));
  ASSERT_EQ(f->size(), 5u);
  EXPECT_EQ(std::memcmp(f->data(), "hello", 5), 0);
  EXPECT_EQ(f->path(), dir.file("a.bin"));
  f->prefetch(0, 100);  // clipped, harmless

  write_bytes(dir.file("empty.bin"), "");
  EXPECT_EQ(MappedFile::open(dir.file("empty.bin"))->size(), 0u);

  std::string msg = invalid_input_message([&] { MappedFile::open(dir.file("nope.bin")); });
  EXPECT_CONTAINS(msg, dir.file("nope.bin"));
  msg = invalid_input_message([&] { MappedFile::open(dir.path().string()); });
  EXPECT_CONTAINS(msg, "not a regular file");
}

// A resident file is a copy: it holds the bytes read at open, 2 MiB-aligned for huge pages, and a
// later write to the file does not reach it; the mapping of the same file sees that write (so the
// comparison can tell a copy from a mapping).
TEST(MappedFile, ResidentHoldsACopyAlignedForHugePages) {
  TempDir dir;
  std::string bytes((size_t{3} << 20) + 5, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 12));
  write_bytes(dir.file("w.bin"), bytes);
  auto resident = MappedFile::open(dir.file("w.bin"), Residency::kResident);
  auto mapped = MappedFile::open(dir.file("w.bin"), Residency::kMapped);
  EXPECT_EQ(resident->residency(), Residency::kResident);
  EXPECT_EQ(mapped->residency(), Residency::kMapped);
  ASSERT_EQ(resident->size(), bytes.size());
  EXPECT_EQ(std::memcmp(resident->data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(resident->data()) % (uintptr_t{2} << 20), 0u);
  // The mapping starts on a huge page too (the page cache may then map its 2 MiB folios whole).
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped->data()) % (uintptr_t{2} << 20), 0u);
  EXPECT_EQ(std::memcmp(mapped->data(), bytes.data(), bytes.size()), 0);

  std::string changed = bytes;
  changed[(size_t{2} << 20) + 7] = static_cast<char>(~changed[(size_t{2} << 20) + 7]);
  {
    std::FILE* f = std::fopen(dir.file("w.bin").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(changed.data(), 1, changed.size(), f), changed.size());
    std::fclose(f);
  }
  EXPECT_EQ(std::memcmp(resident->data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(std::memcmp(mapped->data(), changed.data(), changed.size()), 0);

  write_bytes(dir.file("empty.bin"), "");
  EXPECT_EQ(MappedFile::open(dir.file("empty.bin"), Residency::kResident)->data(), nullptr);
  EXPECT_CONTAINS(invalid_input_message([&] { MappedFile::open(dir.file("nope.bin"), Residency::kResident); }),
                  dir.file("nope.bin"));
}

// A resident copy is read in parts of 16 MiB (each part's pages touched first, to see whether huge
// pages come cheaply): a file a little over one part arrives whole, its last partial page too.
TEST(MappedFile, ResidentReadsAFileOfSeveralPartsWhole) {
  TempDir dir;
  std::string bytes((size_t{16} << 20) + 4097, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  write_bytes(dir.file("big.bin"), bytes);
  auto resident = MappedFile::open(dir.file("big.bin"), Residency::kResident);
  ASSERT_EQ(resident->residency(), Residency::kResident);
  ASSERT_EQ(resident->size(), bytes.size());
  EXPECT_EQ(std::memcmp(resident->data(), bytes.data(), bytes.size()), 0);
}

TEST(Safetensors, RoundTripAllDtypesAndMetadata) {
  TempDir dir;
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-3f};
  std::vector<uint16_t> b(5), c(6);
  for (int i = 0; i < 5; ++i) b[i] = f32_to_f16(0.5f * static_cast<float>(i) - 1.0f);
  for (int i = 0; i < 6; ++i) c[i] = f32_to_bf16(static_cast<float>(i * i) - 7.5f);
  // The odd-length f16 tensor comes first: the writer must still keep the f32 tensor 4-byte aligned.
  std::vector<TensorView> ts = {
      {"b.half", DType::F16, {5}, b.data()},
      {"a.float", DType::F32, {2, 3}, a.data()},
      {"c.brain", DType::BF16, {3, 2}, c.data()},
  };
  const std::string path = dir.file("rt.safetensors");
  write_safetensors(path, ts, {{"format", "pt"}, {"k", "v w"}});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);  // no temporary left

  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->names(), (std::vector<std::string>{"a.float", "b.half", "c.brain"}));
  EXPECT_EQ(f->metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"k", "v w"}}));
  EXPECT_EQ(f->description(), path);
  for (const TensorView& t : ts) {
    const TensorView& r = f->get(t.name);
    EXPECT_EQ(r.name, t.name);
    EXPECT_EQ(r.dtype, t.dtype);
    EXPECT_EQ(r.shape, t.shape);
    EXPECT_EQ(std::memcmp(r.data, t.data, t.nbytes()), 0) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r.data) % dtype_block_bytes(r.dtype), 0u) << t.name;
  }

  // Independent check of the standard layout: 8-byte LE length, space-padded JSON, contiguous data.
  std::string raw = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(raw[i]);
  EXPECT_EQ(n % 8, 0u);
  auto header = nlohmann::json::parse(raw.substr(8, n));
  EXPECT_EQ(header["a.float"]["dtype"], "F32");
  EXPECT_EQ(header["b.half"]["dtype"], "F16");
  EXPECT_EQ(header["c.brain"]["dtype"], "BF16");
  EXPECT_EQ(header["c.brain"]["shape"], nlohmann::json::array({3, 2}));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  uint64_t total = 0;
  for (const auto& t : ts) total += t.nbytes();
  EXPECT_EQ(raw.size(), 8 + n + total);  // no holes, nothing trailing
  uint64_t a_begin = header["a.float"]["data_offsets"][0];
  float first;
  std::memcpy(&first, raw.data() + 8 + n + a_begin, 4);
  EXPECT_EQ(first, 1.5f);
}

TEST(Safetensors, ReadsHandWrittenFixtureExactly) {
  // Produced by tools/fixtures/make_safetensors_fixture.py with Python's struct/json, not by folio.
  auto f = SafetensorsFile::open(fixture_path("tiny.safetensors"));
  EXPECT_EQ(f->names(), (std::vector<std::string>{"embed.weight", "layers.0.weight", "model.norm.weight", "scale"}));
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("source"), "make_safetensors_fixture.py");

  const TensorView& w = f->get("layers.0.weight", {2, 3});
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(to_f32_vector(w), (std::vector<float>{1.5f, -2.25f, 3.0f, 0.125f, -1024.0f, 7.75f}));
  const TensorView& e = f->get("embed.weight", {4});
  EXPECT_EQ(e.dtype, DType::F16);
  EXPECT_EQ(to_f32_vector(e), (std::vector<float>{1.0f, -0.5f, 65504.0f, 1.0f / 1024}));
  const TensorView& n = f->get("model.norm.weight", {2, 2});
  EXPECT_EQ(n.dtype, DType::BF16);
  EXPECT_EQ(to_f32_vector(n), (std::vector<float>{1.0f, -3.0f, 0.15625f, 256.0f}));
  const TensorView& s = f->get("scale", {});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(to_f32_vector(s), (std::vector<float>{42.0f}));
}

TEST(Safetensors, TruncatedFileNamesFileAndFirstMissingTensor) {
  TempDir dir;
  std::vector<float> x(16, 1.0f), y(16, 2.0f), z(16, 3.0f);
  const std::string path = dir.file("cut.safetensors");
  // Names sort in the opposite order to the data, so "first" must mean first in the file.
  write_safetensors(path, {{"z.first", DType::F32, {16}, x.data()},
                           {"m.second", DType::F32, {4, 4}, y.data()},
                           {"a.third", DType::F32, {16}, z.data()}});
  // Cut inside "m.second": it and "a.third" are incomplete; the first one in file order is blamed.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 64 - 10);
  std::string msg = invalid_input_message([&] { SafetensorsFile::open(path); });
  EXPECT_CONTAINS(msg, path);
  EXPECT_CONTAINS(msg, "'m.second'");
  EXPECT_CONTAINS(msg, "truncated");
  EXPECT_EQ(msg.find("'a.third'"), std::string::npos) << msg;
}

TEST(Safetensors, RejectsHeaderLengthBeyondFile) {
  TempDir dir;
  const std::string path = dir.file("long.safetensors");
  std::string raw = raw_safetensors("{}      ", "");
  raw[0] = static_cast<char>(0xe8);  // claims 1000 bytes of header
  raw[1] = 0x03;
  write_bytes(path, raw);
  std::string msg = invalid_input_message([&] { SafetensorsFile::open(path); });
  EXPECT_CONTAINS(msg, path);
  EXPECT_CONTAINS(msg, "1000-byte header");

  write_bytes(path, "abc");
  EXPECT_CONTAINS(invalid_input_message([&] { SafetensorsFile::open(path); }), "too short");
}

TEST(Safetensors, RejectsBadJson) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, raw_safetensors("{\"a\": [1, 2", ""));
  std::string msg = invalid_input_message([&] { SafetensorsFile::open(path); });
  EXPECT_CONTAINS(msg, path);
  EXPECT_CONTAINS(msg, "invalid JSON");

  write_bytes(path, raw_safetensors("[1, 2, 3]", ""));
  EXPECT_CONTAINS(invalid_input_message([&] { SafetensorsFile::open(path); }), "not an object");
}

TEST(Safetensors, RejectsUnknownDtypeNamingTensorAndDtype) {
  TempDir dir;
  const std::string path = dir.file("f64.safetensors");
  write_bytes(path, raw_safetensors(R"({"scale":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", std::string(16, '\0')));
  std::string msg = invalid_input_message([&] { SafetensorsFile::open(path); });
  EXPECT_CONTAINS(msg, "'scale'");
  EXPECT_CONTAINS(msg, "F64");
  EXPECT_CONTAINS(msg, path);
}

TEST(Safetensors, SkipsIntegerBuffersButStillChecksThem) {
  TempDir dir;
  const std::string path = dir.file("i64.safetensors");
  // position_ids (I64, 16 bytes) then a 2-element F32 weight.
  std::string data(16, '\0');
  const float w[2] = {1.5f, -2.0f};
  data.append(reinterpret_cast<const char*>(w), sizeof w);
  write_bytes(path, raw_safetensors(R"({"position_ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
                                    R"("w":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
                                    data));
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->find("position_ids"), nullptr);
  ASSERT_NE(f->find("w"), nullptr);
  EXPECT_EQ(to_f32_vector(*f->find("w")), (std::vector<float>{1.5f, -2.0f}));
  // A skipped buffer with the wrong size is still an error naming it.
  write_bytes(path, raw_safetensors(R"({"position_ids":{"dtype":"I64","shape":[3],"data_offsets":[0,16]}})", std::string(16, '\0')));
  EXPECT_CONTAINS(invalid_input_message([&] { SafetensorsFile::open(path); }), "'position_ids'");
}

TEST(Safetensors, RejectsInconsistentOrOverlappingOffsets) {
  TempDir dir;
  const std::string path = dir.file("off.safetensors");
  // 2x2 F32 needs 16 bytes, the offsets give 12.
  write_bytes(path, raw_safetensors(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})",
                                    std::string(16, '\0')));
  std::string msg = invalid_input_message([&] { SafetensorsFile::open(path); });
  EXPECT_CONTAINS(msg, "'w'");
  EXPECT_CONTAINS(msg, "needs 16");

  write_bytes(path, raw_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", std::string(8, '\0')));
  EXPECT_CONTAINS(invalid_input_message([&] { SafetensorsFile::open(path); }), "end before begin");

  write_bytes(path, raw_safetensors(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  EXPECT_CONTAINS(invalid_input_message([&] { SafetensorsFile::open(path); }), "'w'");

  write_bytes(path, raw_safetensors(R"({"u":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("v":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}})",
                                    std::string(12, '\0')));
  msg = invalid_input_message([&] { SafetensorsFile::open(path); });
  EXPECT_CONTAINS(msg, "'u'");
  EXPECT_CONTAINS(msg, "'v'");
  EXPECT_CONTAINS(msg, "overlap");
}

TEST(Safetensors, CorruptHeadersFailCleanly) {
  TempDir dir;
  std::string raw = read_bytes(fixture_path("tiny.safetensors"));
  testing::fuzz_header(raw, raw.size() - 44, dir.file("f.safetensors"),
                       [](const std::string& p) { SafetensorsFile::open(p); });
}

TEST(Safetensors, WriterRejectsUnwritableTensors) {
  TempDir dir;
  std::vector<uint8_t> q(34);
  std::string msg = invalid_input_message(
      [&] { write_safetensors(dir.file("q.safetensors"), {{"qw", DType::Q8_0, {32}, q.data()}}); });
  EXPECT_CONTAINS(msg, "'qw'");
  float x = 0;
  msg = invalid_input_message([&] {
    write_safetensors(dir.file("d.safetensors"), {{"t", DType::F32, {1}, &x}, {"t", DType::F32, {1}, &x}});
  });
  EXPECT_CONTAINS(msg, "duplicate tensor 't'");
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.safetensors")));
}

TEST(TensorSource, MissingTensorAndShapeMismatchMessages) {
  TempDir dir;
  std::vector<float> a(6, 0.5f);
  const std::string path = dir.file("m.safetensors");
  write_safetensors(path, {{"w", DType::F32, {2, 3}, a.data()}});
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->find("nope"), nullptr);
  EXPECT_TRUE(f->contains("w"));
  EXPECT_EQ(invalid_input_message([&] { f->get("nope"); }), "tensor 'nope' not found in " + path);
  EXPECT_EQ(invalid_input_message([&] { f->get("w", {3, 2}); }),
            "tensor 'w' has shape [2, 3] but the config implies [3, 2] (in " + path + ")");
  EXPECT_EQ(f->get("w", {2, 3}).shape, (std::vector<int64_t>{2, 3}));
}

// Writes two shards and an index into dir; returns the expected values of each tensor.
std::map<std::string, std::vector<float>> write_sharded(const TempDir& dir, const std::string& index_json) {
  std::map<std::string, std::vector<float>> v = {{"a", {1, 2, 3, 4}}, {"b", {5, 6}}, {"c", {7, 8, 9}}};
  write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                    {{"a", DType::F32, {2, 2}, v["a"].data()}, {"b", DType::F32, {2}, v["b"].data()}});
  write_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"c", DType::F32, {3}, v["c"].data()}});
  write_bytes(dir.file("model.safetensors.index.json"), index_json);
  return v;
}

TEST(SafetensorsCheckpoint, OpensShardedDirectoryViaIndex) {
  TempDir dir;
  auto v = write_sharded(dir, R"({"metadata": {"total_size": 36}, "weight_map": {
      "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors"}})");
  auto ck = SafetensorsCheckpoint::open(dir.path().string());
  EXPECT_EQ(ck->shards().size(), 2u);
  EXPECT_EQ(ck->names(), (std::vector<std::string>{"a", "b", "c"}));
  for (const auto& [name, values] : v) EXPECT_EQ(to_f32_vector(ck->get(name)), values) << name;
  EXPECT_EQ(ck->get("a", {2, 2}).name, "a");
  EXPECT_CONTAINS(invalid_input_message([&] { ck->get("zz"); }), "tensor 'zz' not found in " + dir.path().string());
}

TEST(SafetensorsCheckpoint, IndexedTensorMissingFromShardNamesBoth) {
  TempDir dir;
  write_sharded(dir, R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors", "lm_head.weight": "model-00002-of-00002.safetensors"}})");
  std::string msg = invalid_input_message([&] { SafetensorsCheckpoint::open(dir.path().string()); });
  EXPECT_CONTAINS(msg, "'lm_head.weight'");
  EXPECT_CONTAINS(msg, "model-00002-of-00002.safetensors");
}

TEST(SafetensorsCheckpoint, DuplicateTensorAcrossShardsIsAnError) {
  TempDir dir;
  write_sharded(dir, R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors"}})");
  std::vector<float> extra = {0, 0};
  write_safetensors(dir.file("model-00002-of-00002.safetensors"),
                    {{"c", DType::F32, {2}, extra.data()}, {"b", DType::F32, {2}, extra.data()}});
  std::string msg = invalid_input_message([&] { SafetensorsCheckpoint::open(dir.path().string()); });
  EXPECT_CONTAINS(msg, "tensor 'b' appears in two shards");
}

TEST(SafetensorsCheckpoint, MissingShardFileIsNamed) {
  TempDir dir;
  write_sharded(dir, R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "z": "gone.safetensors"}})");
  std::string msg = invalid_input_message([&] { SafetensorsCheckpoint::open(dir.path().string()); });
  EXPECT_CONTAINS(msg, "gone.safetensors");
}

TEST(SafetensorsCheckpoint, SingleFileDirectoryAndPath) {
  TempDir dir;
  std::vector<float> a = {1, 2};
  write_safetensors(dir.file("model.safetensors"), {{"w", DType::F32, {2}, a.data()}});
  EXPECT_EQ(SafetensorsCheckpoint::open(dir.path().string())->names(), std::vector<std::string>{"w"});
  EXPECT_EQ(to_f32_vector(SafetensorsCheckpoint::open(dir.file("model.safetensors"))->get("w")), a);

  write_safetensors(dir.file("other.safetensors"), {{"w", DType::F32, {2}, a.data()}});
  std::string msg = invalid_input_message([&] { SafetensorsCheckpoint::open(dir.path().string()); });
  EXPECT_CONTAINS(msg, "2 *.safetensors files");

  TempDir empty;
  msg = invalid_input_message([&] { SafetensorsCheckpoint::open(empty.path().string()); });
  EXPECT_CONTAINS(msg, "no *.safetensors file");
  msg = invalid_input_message([&] { SafetensorsCheckpoint::open(empty.file("missing")); });
  EXPECT_CONTAINS(msg, empty.file("missing"));
}

}  // namespace
}  // namespace folio
