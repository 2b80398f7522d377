#include "io/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io_test_util.h"

namespace folio {
namespace {

using testing::fixture_path;
using testing::invalid_input_message;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;


// Independent peek at a tensor descriptor in raw GGUF bytes: finds "<u64 len><name>" and returns
// the ne array and ggml type that follow it, plus the byte position of the type field.
struct RawInfo {
  std::vector<uint64_t> ne;
  uint32_t type;
  size_t type_pos;
};
RawInfo raw_tensor_info(const std::string& raw, const std::string& name) {
  std::string key(8, '\0');
  uint64_t n = name.size();
  std::memcpy(key.data(), &n, 8);
  key += name;
  size_t pos = raw.rfind(key);  // rfind: tensor infos come after the metadata
  EXPECT_NE(pos, std::string::npos) << name;
  pos += key.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, raw.data() + pos, 4);
  pos += 4;
  RawInfo info;
  info.ne.resize(n_dims);
  std::memcpy(info.ne.data(), raw.data() + pos, 8 * n_dims);
  pos += 8 * n_dims;
  info.type_pos = pos;
  std::memcpy(&info.type, raw.data() + pos, 4);
  return info;
}

TEST(Gguf, MetadataRoundTripsEveryType) {
  TempDir dir;
  GgufWriter w;
  std::vector<std::pair<std::string, GgufValue>> kvs = {
      {"t.u8", uint8_t{250}},
      {"t.i8", int8_t{-100}},
      {"t.u16", uint16_t{65000}},
      {"t.i16", int16_t{-32000}},
      {"t.u32", uint32_t{4000000000u}},
      {"t.i32", int32_t{-2000000000}},
      {"t.u64", uint64_t{1} << 40},
      {"t.i64", int64_t{-(int64_t{1} << 50)}},
      {"t.f32", 0.1f},
      {"t.f64", 0.1},
      {"t.bool", true},
      {"t.string", std::string("h\xc3\xa9llo, w\0rld", 13)},
      {"t.a.u8", std::vector<uint8_t>{0, 1, 255}},
      {"t.a.i8", std::vector<int8_t>{-128, 0, 127}},
      {"t.a.u16", std::vector<uint16_t>{1, 65535}},
      {"t.a.i16", std::vector<int16_t>{-5, 5}},
      {"t.a.u32", std::vector<uint32_t>{7, 8, 9}},
      {"t.a.i32", std::vector<int32_t>{3, -3, 1}},
      {"t.a.u64", std::vector<uint64_t>{~uint64_t{0}}},
      {"t.a.i64", std::vector<int64_t>{-1, 1}},
      {"t.a.f32", std::vector<float>{0.0f, -1.5f, 2.25f}},
      {"t.a.f64", std::vector<double>{1e300, -2.5}},
      {"t.a.bool", std::vector<bool>{true, false, true}},
      {"t.a.string", std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"}},
      {"t.a.empty", std::vector<std::string>{}},
  };
  for (const auto& [k, v] : kvs) w.set(k, v);
  w.set("t.u8", uint8_t{251});  // replaces in place
  const std::string path = dir.file("kv.gguf");
  w.write(path);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);  // no temporary left

  auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_TRUE(f->names().empty());
  std::vector<std::string> keys;
  for (const auto& [k, v] : kvs) {
    keys.push_back(k);
    const GgufValue* got = f->get(k);
    ASSERT_NE(got, nullptr) << k;
    if (k == "t.u8") {
      EXPECT_EQ(*got, GgufValue(uint8_t{251}));
    } else {
      EXPECT_EQ(got->index(), v.index()) << k;
      EXPECT_TRUE(*got == v) << k;
    }
  }
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(f->keys(), keys);
  EXPECT_EQ(f->get("nope"), nullptr);

  // Typed getters.
  EXPECT_EQ(f->get_int("t.u8"), 251);
  EXPECT_EQ(f->get_int("t.i16"), -32000);
  EXPECT_EQ(f->get_int("t.u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("t.i64"), -(int64_t{1} << 50));
  EXPECT_EQ(f->get_float("t.f32"), static_cast<double>(0.1f));
  EXPECT_EQ(f->get_float("t.f64"), 0.1);
  EXPECT_EQ(f->get_float("t.i32"), -2000000000.0);
  EXPECT_EQ(f->get_string("t.string"), std::string("h\xc3\xa9llo, w\0rld", 13));
  EXPECT_EQ(f->get_string_array("t.a.string"), (std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"}));
  EXPECT_TRUE(f->get_string_array("t.a.empty").empty());
  EXPECT_EQ(f->get_f32_array("t.a.f32"), (std::vector<float>{0.0f, -1.5f, 2.25f}));
  EXPECT_EQ(f->get_i32_array("t.a.i32"), (std::vector<int32_t>{3, -3, 1}));
  EXPECT_EQ(f->get_i32_array("t.a.u16"), (std::vector<int32_t>{1, 65535}));

  // Absent keys: nullopt / empty. Wrong types: an error naming the key and both types.
  EXPECT_FALSE(f->get_string("nope"));
  EXPECT_FALSE(f->get_int("nope"));
  EXPECT_FALSE(f->get_float("nope"));
  EXPECT_TRUE(f->get_f32_array("nope").empty());
  std::string msg = invalid_input_message([&] { f->get_int("t.string"); });
  EXPECT_CONTAINS(msg, "'t.string'");
  EXPECT_CONTAINS(msg, "has type string");
  msg = invalid_input_message([&] { f->get_string_array("t.a.i32"); });
  EXPECT_CONTAINS(msg, "array<i32>");
  EXPECT_CONTAINS(invalid_input_message([&] { f->get_int("t.a.u64"); }), "'t.a.u64'");
  EXPECT_CONTAINS(invalid_input_message([&] { f->get_i32_array("t.a.u64"); }), "does not fit in int32");
  EXPECT_CONTAINS(invalid_input_message([&] { f->get_float("t.bool"); }), "'t.bool'");
}

TEST(Gguf, TensorsRoundTripWithReversedDims) {
  TempDir dir;
  std::vector<float> a(6);
  for (int i = 0; i < 6; ++i) a[i] = static_cast<float>(i) - 2.5f;
  std::vector<uint16_t> h(4 * 8);
  for (size_t i = 0; i < h.size(); ++i) h[i] = f32_to_f16(0.25f * static_cast<float>(i));
  std::vector<float> qsrc(2 * 64);
  for (size_t i = 0; i < qsrc.size(); ++i) qsrc[i] = std::sin(0.3f * static_cast<float>(i)) * 3.0f;
  std::vector<BlockQ8_0> q(qsrc.size() / 32);
  convert_from_f32(DType::Q8_0, qsrc.data(), q.data(), static_cast<int64_t>(qsrc.size()));
  std::vector<uint16_t> bf(3);
  for (int i = 0; i < 3; ++i) bf[i] = f32_to_bf16(static_cast<float>(i) + 0.5f);

  std::vector<TensorView> ts = {
      {"a.f32", DType::F32, {2, 3}, a.data()},
      {"h.f16", DType::F16, {4, 8}, h.data()},
      {"q.q8_0", DType::Q8_0, {2, 64}, q.data()},
      {"bf.bf16", DType::BF16, {3}, bf.data()},
  };
  GgufWriter w;
  w.set("general.architecture", std::string("test"));
  for (const auto& t : ts) w.add_tensor(t);
  const std::string path = dir.file("t.gguf");
  w.write(path);

  // The file itself stores ne innermost first and the ggml type numbers.
  std::string raw = read_bytes(path);
  EXPECT_EQ(raw.size() % 32, 0u);
  EXPECT_EQ(raw_tensor_info(raw, "a.f32").ne, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(raw_tensor_info(raw, "h.f16").ne, (std::vector<uint64_t>{8, 4}));
  EXPECT_EQ(raw_tensor_info(raw, "q.q8_0").ne, (std::vector<uint64_t>{64, 2}));
  EXPECT_EQ(raw_tensor_info(raw, "a.f32").type, 0u);
  EXPECT_EQ(raw_tensor_info(raw, "h.f16").type, 1u);
  EXPECT_EQ(raw_tensor_info(raw, "q.q8_0").type, 8u);
  EXPECT_EQ(raw_tensor_info(raw, "bf.bf16").type, 30u);

  auto f = GgufFile::open(path);
  EXPECT_EQ(f->names(), (std::vector<std::string>{"a.f32", "bf.bf16", "h.f16", "q.q8_0"}));
  const uint8_t* base = f->file()->data();
  for (const auto& t : ts) {
    const TensorView& r = f->get(t.name, t.shape);
    EXPECT_EQ(r.dtype, t.dtype) << t.name;
    EXPECT_EQ(std::memcmp(r.data, t.data, t.nbytes()), 0) << t.name;
    EXPECT_EQ((static_cast<const uint8_t*>(r.data) - base) % 32, 0) << t.name;
  }
  // Through the TensorSource interface, one-argument get() is the tensor lookup.
  const TensorSource& src = *f;
  EXPECT_EQ(src.get("a.f32").data, f->tensor("a.f32").data);
  EXPECT_CONTAINS(invalid_input_message([&] { f->tensor("nope"); }), "tensor 'nope' not found in " + path);
  EXPECT_CONTAINS(invalid_input_message([&] { f->get("a.f32", {3, 2}); }),
                  "tensor 'a.f32' has shape [2, 3] but the config implies [3, 2]");
  // q8_0 row 1 decodes to the second half of the source, within the quantisation step.
  std::vector<float> dq = to_f32_vector(f->tensor("q.q8_0"));
  for (size_t i = 0; i < dq.size(); ++i) EXPECT_NEAR(dq[i], qsrc[i], 3.0f / 127) << i;
  EXPECT_EQ(f->tensor("q.q8_0").row_bytes(), 2 * sizeof(BlockQ8_0));
}

TEST(Gguf, ReadsHandWrittenFixtureExactly) {
  // Produced by tools/fixtures/make_gguf_fixture.py with Python's struct, not by folio.
  auto f = GgufFile::open(fixture_path("tiny.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.block_count"), 2);
  EXPECT_EQ(f->get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(*f->get("llama.use_parallel_residual"), GgufValue(true));
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string>{"<s>", "</s>", "h\xc3\xa9llo"}));
  EXPECT_EQ(f->get_f32_array("tokenizer.ggml.scores"), (std::vector<float>{0.0f, -1.5f, 2.25f}));
  EXPECT_EQ(f->get_i32_array("tokenizer.ggml.token_type"), (std::vector<int32_t>{3, 3, 1}));

  const TensorView& e = f->get("tok_embd.weight", {2, 3});  // ne [3, 2]
  EXPECT_EQ(e.dtype, DType::F32);
  EXPECT_EQ(to_f32_vector(e), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  float row1[3];
  std::memcpy(row1, e.row_ptr(1), sizeof row1);
  EXPECT_EQ(row1[0], 4.0f);
  EXPECT_EQ(to_f32_vector(f->get("norm.weight", {4})), (std::vector<float>{0.5f, -0.25f, 8.0f, -1024.0f}));
  const TensorView& q = f->get("q.weight", {1, 32});
  EXPECT_EQ(q.dtype, DType::Q8_0);
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = static_cast<float>(i - 16) * 0.5f;
  EXPECT_EQ(to_f32_vector(q), want);
  EXPECT_EQ((static_cast<const uint8_t*>(f->tensor("norm.weight").data) - f->file()->data()) % 64, 0);
}

TEST(Gguf, CorruptHeadersFailCleanly) {
  TempDir dir;
  std::string raw = read_bytes(fixture_path("tiny.gguf"));
  testing::fuzz_header(raw, 512, dir.file("f.gguf"), [](const std::string& p) { GgufFile::open(p); });
}

TEST(Gguf, WriterHonoursCustomAlignment) {
  TempDir dir;
  std::vector<float> a(3, 1.0f), b(5, 2.0f);
  GgufWriter w;
  w.set("general.alignment", uint32_t{128});
  w.add_tensor({"a", DType::F32, {3}, a.data()});
  w.add_tensor({"b", DType::F32, {5}, b.data()});
  w.write(dir.file("al.gguf"));
  auto f = GgufFile::open(dir.file("al.gguf"));
  EXPECT_EQ(f->alignment(), 128u);
  for (const char* n : {"a", "b"})
    EXPECT_EQ((static_cast<const uint8_t*>(f->tensor(n).data) - f->file()->data()) % 128, 0) << n;
  EXPECT_EQ(to_f32_vector(f->tensor("b")), b);
}

TEST(Gguf, WriterRejectsBadTensors) {
  GgufWriter w;
  std::vector<BlockQ8_0> q(1);
  std::string msg = invalid_input_message([&] { w.add_tensor({"q", DType::Q8_0, {2, 16}, q.data()}); });
  EXPECT_CONTAINS(msg, "'q'");
  EXPECT_CONTAINS(msg, "block size 32");
  float x = 0;
  w.add_tensor({"x", DType::F32, {1}, &x});
  EXPECT_CONTAINS(invalid_input_message([&] { w.add_tensor({"x", DType::F32, {1}, &x}); }), "duplicate tensor 'x'");
  EXPECT_CONTAINS(invalid_input_message([&] { w.add_tensor({"y", DType::F32, {1, 1, 1, 1, 1}, &x}); }), "'y'");
}

std::string small_gguf(const TempDir& dir, const std::string& name) {
  std::vector<float> a(64, 1.0f), b(64, 2.0f), c(64, 3.0f);
  GgufWriter w;
  w.set("general.name", std::string("small"));
  w.add_tensor({"first", DType::F32, {64}, a.data()});
  w.add_tensor({"second", DType::F32, {8, 8}, b.data()});
  w.add_tensor({"third", DType::F32, {64}, c.data()});
  w.write(dir.file(name));
  return dir.file(name);
}

TEST(Gguf, TruncatedFileNamesFirstMissingTensor) {
  TempDir dir;
  const std::string path = small_gguf(dir, "cut.gguf");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 256 - 3);  // inside "second"
  std::string msg = invalid_input_message([&] { GgufFile::open(path); });
  EXPECT_CONTAINS(msg, path);
  EXPECT_CONTAINS(msg, "truncated");
  EXPECT_CONTAINS(msg, "'second'");
  EXPECT_EQ(msg.find("'third'"), std::string::npos) << msg;

  // Cut inside the header: still a clean error naming the file.
  std::string raw = read_bytes(small_gguf(dir, "full.gguf"));
  for (size_t cut : {size_t{5}, size_t{20}, size_t{30}, size_t{60}, size_t{100}}) {
    write_bytes(path, raw.substr(0, cut));
    EXPECT_CONTAINS(invalid_input_message([&] { GgufFile::open(path); }), path);
  }
}

TEST(Gguf, RejectsBadMagicAndVersion) {
  TempDir dir;
  const std::string path = small_gguf(dir, "m.gguf");
  std::string raw = read_bytes(path);
  std::string bad = raw;
  bad[3] = 'X';
  write_bytes(path, bad);
  std::string msg = invalid_input_message([&] { GgufFile::open(path); });
  EXPECT_CONTAINS(msg, path);
  EXPECT_CONTAINS(msg, "magic");

  bad = raw;
  bad[4] = 1;  // version 1 (u32 counts) is not supported
  write_bytes(path, bad);
  msg = invalid_input_message([&] { GgufFile::open(path); });
  EXPECT_CONTAINS(msg, "version 1");

  bad = raw;
  bad[4] = 2;  // v2 has the same layout as v3
  write_bytes(path, bad);
  EXPECT_EQ(GgufFile::open(path)->version(), 2u);
}

TEST(Gguf, UnsupportedTensorTypeNamesTensorAndType) {
  TempDir dir;
  const std::string path = small_gguf(dir, "ty.gguf");
  std::string raw = read_bytes(path);
  RawInfo info = raw_tensor_info(raw, "second");
  uint32_t q3_k = 11;  // a type folio does not read (Q4_K, 12, it does)
  std::memcpy(raw.data() + info.type_pos, &q3_k, 4);
  write_bytes(path, raw);
  std::string msg = invalid_input_message([&] { GgufFile::open(path); });
  EXPECT_CONTAINS(msg, "'second'");
  EXPECT_CONTAINS(msg, "ggml type 11 (Q3_K)");
  EXPECT_CONTAINS(msg, "Q4_K");
  EXPECT_CONTAINS(msg, path);
}

TEST(Gguf, MisalignedOffsetIsRejected) {
  TempDir dir;
  const std::string path = small_gguf(dir, "off.gguf");
  std::string raw = read_bytes(path);
  RawInfo info = raw_tensor_info(raw, "third");
  uint64_t off;
  std::memcpy(&off, raw.data() + info.type_pos + 4, 8);
  off += 4;
  std::memcpy(raw.data() + info.type_pos + 4, &off, 8);
  write_bytes(path, raw);
  std::string msg = invalid_input_message([&] { GgufFile::open(path); });
  EXPECT_CONTAINS(msg, "'third'");
  EXPECT_CONTAINS(msg, "alignment");
}

}  // namespace
}  // namespace folio
