// Request parsing pieces of the OCR endpoints, without HTTP: base64 and data URIs, file types, the
// /v1/ocr JSON and form bodies, and the reference cache's LRU byte budget.
#include <gtest/gtest.h>

#include "server/base64.h"
#include "core/content_hash.h"
#include "server/ocr_request.h"
#include "server/reference_cache.h"

namespace folio {
namespace {

std::string code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.code;
  }
  return "no error";
}

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + "rest";

TEST(Base64, DecodesRfc4648Vectors) {
  // RFC 4648 section 10.
  EXPECT_EQ(decode_base64("Zg==", "x"), "f");
  EXPECT_EQ(decode_base64("Zm8=", "x"), "fo");
  EXPECT_EQ(decode_base64("Zm9v", "x"), "foo");
  EXPECT_EQ(decode_base64("Zm9vYg==", "x"), "foob");
  EXPECT_EQ(decode_base64("Zm9vYmE=", "x"), "fooba");
  EXPECT_EQ(decode_base64("Zm9vYmFy", "x"), "foobar");
  EXPECT_EQ(decode_base64("Zm9vYg", "x"), "foob");  // padding optional
  EXPECT_EQ(decode_base64("Zm9v\nYmFy\r\n", "x"), "foobar");
  EXPECT_EQ(decode_base64("AP8=", "x"), std::string("\x00\xff", 2));
}

TEST(Base64, RefusesMalformedInputNamingTheField) {
  for (const char* bad : {"", "Z", "Zm9vY", "Zm9v!", "Zg==Zg==", "Zg===", "Z===", "===="}) {
    SCOPED_TRACE(bad);
    try {
      decode_base64(bad, "files[1].file");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.code, "invalid_base64");
      EXPECT_NE(std::string(e.what()).find("files[1].file"), std::string::npos) << e.what();
    }
  }
}

TEST(DataUri, ParsesTypeAndPayload) {
  DataUri d = parse_data_uri("data:image/png;base64,Zm9v", "u");
  EXPECT_EQ(d.media_type, "image/png");
  EXPECT_EQ(d.bytes, "foo");
  EXPECT_EQ(parse_data_uri("data:;base64,Zm9v", "u").media_type, "");
  EXPECT_EQ(code_of([] { parse_data_uri("https://example.com/a.png", "u"); }), "invalid_image_url");
  EXPECT_EQ(code_of([] { parse_data_uri("data:image/png,raw", "u"); }), "invalid_image_url");
  EXPECT_EQ(code_of([] { parse_data_uri("data:image/png;base64", "u"); }), "invalid_image_url");
  EXPECT_EQ(code_of([] { parse_data_uri("data:image/png;base64,@", "u"); }), "invalid_base64");
}

TEST(FileType, SniffsAndChecksDeclarations) {
  EXPECT_EQ(sniff_file_type("%PDF-1.7 ..."), "pdf");
  EXPECT_EQ(sniff_file_type("junk\n%PDF-1.4"), "pdf");  // within the first 1024 bytes, as readers allow
  EXPECT_EQ(sniff_file_type(std::string(2000, ' ') + "%PDF-1.4"), "");
  EXPECT_EQ(sniff_file_type(kPng), "png");
  EXPECT_EQ(sniff_file_type("\xff\xd8\xff\xe0"), "jpeg");
  EXPECT_EQ(sniff_file_type("GIF89a"), "");
  EXPECT_EQ(check_file_type(kPng, "image/png", "a"), "png");
  EXPECT_EQ(check_file_type(kPng, "", "a"), "png");
  EXPECT_EQ(code_of([] { check_file_type(kPng, "application/pdf", "a"); }), "file_type_mismatch");
  EXPECT_EQ(code_of([] { check_file_type("%PDF-1.7", "image/png", "a"); }), "file_type_mismatch");
  // An image labelled as the other image type is read as what it is (OpenAI's docs send a PNG as
  // data:image/jpeg).
  EXPECT_EQ(check_file_type(kPng, "image/jpeg", "a"), "png");
  EXPECT_EQ(check_file_type("\xff\xd8\xff\xe0", "image/png", "a"), "jpeg");
  EXPECT_EQ(code_of([] { check_file_type(kPng, "image/gif", "a"); }), "unsupported_file_type");
  EXPECT_EQ(code_of([] { check_file_type("hello", "", "a"); }), "unsupported_file_type");
}

TEST(OcrRequestJson, ReadsEveryField) {
  const std::string b64 = "JVBERi0xLjc=";  // "%PDF-1.7"
  OcrRequest r = parse_ocr_json(R"({"file":")" + b64 + R"(","filename":"a.pdf","pages":"1-3","stream":true,"max_tokens":7,"model":"m"})");
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].name, "a.pdf");
  EXPECT_EQ(r.files[0].type, "pdf");
  EXPECT_EQ(r.files[0].bytes, "%PDF-1.7");
  EXPECT_EQ(r.pages, "1-3");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.model, "m");
  r = parse_ocr_json(R"({"files":[{"file":")" + b64 + R"("},{"file":"data:application/pdf;base64,)" + b64 + R"("}],"pages":2})");
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].name, "file-1");
  EXPECT_EQ(r.files[1].name, "file-2");
  EXPECT_EQ(r.pages, "2");
  EXPECT_FALSE(r.stream);
}

TEST(OcrRequestJson, MalformedBodiesNameTheField) {
  auto code = [](const std::string& body) { return code_of([&] { parse_ocr_json(body); }); };
  EXPECT_EQ(code("["), "invalid_json");
  EXPECT_EQ(code("[]"), "invalid_json");
  EXPECT_EQ(code("{}"), "missing_field");
  EXPECT_EQ(code(R"({"file":1})"), "invalid_type");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","files":[]})"), "invalid_value");
  EXPECT_EQ(code(R"({"files":[]})"), "invalid_value");
  EXPECT_EQ(code(R"({"files":[3]})"), "invalid_type");
  EXPECT_EQ(code(R"({"files":[{}]})"), "missing_field");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","stream":"yes"})"), "invalid_type");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","max_tokens":-1})"), "invalid_value");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","max_tokens":1.5})"), "invalid_type");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","max_tokens":18446744073709551615})"), "invalid_type");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","pages":[1]})"), "invalid_type");
  EXPECT_EQ(code(R"({"file":"JVBERi0xLjc=","type":"docx"})"), "unsupported_file_type");
  EXPECT_EQ(code(R"({"file":"aGVsbG8="})"), "unsupported_file_type");
}

TEST(OcrRequestForm, ReadsFilesAndFields) {
  OcrRequest r = parse_ocr_form({{"file", "scan.png", "application/octet-stream", kPng},
                                 {"doc", "b.pdf", "application/pdf", "%PDF-1.4"},
                                 {"pages", "", "", "2"},
                                 {"stream", "", "", "true"},
                                 {"max_tokens", "", "", "12"}});
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].type, "png");
  EXPECT_EQ(r.files[1].name, "b.pdf");
  EXPECT_EQ(r.pages, "2");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_EQ(code_of([] { parse_ocr_form({{"pages", "", "", "1"}}); }), "missing_field");
  EXPECT_EQ(code_of([] { parse_ocr_form({{"f", "a.pdf", "", "%PDF-1"}, {"max_tokens", "", "", "12x"}}); }), "invalid_type");
  EXPECT_EQ(code_of([] { parse_ocr_form({{"f", "a.pdf", "", "%PDF-1"}, {"stream", "", "", "maybe"}}); }), "invalid_value");
  EXPECT_EQ(code_of([] { parse_ocr_form({{"f", "a.pdf", "image/png", "%PDF-1"}}); }), "file_type_mismatch");
}

TEST(ContentHash, Sha256KnownAnswersAndFieldsAreUnambiguous) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(Sha256().field("ab").field("c").hex(), Sha256().field("a").field("bc").hex());
}

std::shared_ptr<const CachedPass> entry(size_t bytes) {
  auto e = std::make_shared<CachedPass>();
  e->bytes = bytes;
  return e;
}

TEST(ReferenceCacheTest, LruWithinTheByteBudget) {
  ReferenceCache c(100);
  EXPECT_EQ(c.find("a"), nullptr);
  c.insert("a", entry(40));
  c.insert("b", entry(40));
  EXPECT_NE(c.find("a"), nullptr);  // a is now the most recent
  c.insert("c", entry(40));         // evicts b, the least recent
  EXPECT_EQ(c.find("b"), nullptr);
  EXPECT_NE(c.find("a"), nullptr);
  EXPECT_NE(c.find("c"), nullptr);
  c.insert("big", entry(101));      // larger than the budget: not kept, nothing evicted
  EXPECT_EQ(c.find("big"), nullptr);
  ReferenceCacheStats s = c.stats();
  EXPECT_EQ(s.bytes, 80u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 4u);  // every insert: a pass that had to be prepared
  EXPECT_EQ(s.evictions, 1u);
  // An evicted entry stays valid for whoever holds it.
  auto held = c.find("a");
  c.insert("d", entry(100));
  EXPECT_EQ(c.find("a"), nullptr);
  EXPECT_EQ(held->bytes, 40u);
  EXPECT_EQ(c.stats().bytes, 100u);
}

}  // namespace
}  // namespace folio
