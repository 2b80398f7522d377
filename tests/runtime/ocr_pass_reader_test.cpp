// OcrPassReader and OcrTextInOrder on a tiny random Unlimited-OCR checkpoint's tokenizer (tokens
// fed by hand, no decoding): a pass's text is the tokenizer's decode of its tokens without the end
// token; pages become final once the next page's marker is written and all of them, fitted to the
// pass, once it ends, each given once; a model's own write_token / write_end replace the tokenizer;
// passes' text streams in pass order whatever order they end in. Bad use is an Internal error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "runtime/model_factory.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_pass_reader.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  fs::path dir;
  std::unique_ptr<OcrModel> model;
  Fixture() {
    dir = fs::temp_directory_path() / ("folio_ocr_pass_reader_test_" + std::to_string(getpid()));
    fs::create_directories(dir);
    write_random_checkpoint(preset_config("unlimited-ocr", "tiny"), preset_vision_config("unlimited-ocr", "tiny"),
                            (dir / "model").string(), 5, DType::F32);
    model = load_ocr_model((dir / "model").string());
  }
  ~Fixture() { fs::remove_all(dir); }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

OcrPass text_pass() {
  OcrPass p;
  p.generation.stop_at_eos = true;
  return p;
}

std::vector<int32_t> ids(const std::string& text) { return fx().model->tokenizer().encode(text); }

// Pushes `text`'s tokens, returning the pages each push made final (their indices, in order).
std::vector<size_t> push_all(OcrPassReader& r, const std::string& text, std::string& pieces, std::vector<std::string>& warnings) {
  std::vector<size_t> final_pages;
  for (int32_t t : ids(text)) {
    pieces += r.push(t);
    for (auto& [index, page] : r.take_final_pages(warnings)) final_pages.push_back(index);
  }
  return final_pages;
}

TEST(OcrPassReader, TextIsTheTokensDecodedWithoutTheEndTokenAndPagesBecomeFinalAtTheNextMarker) {
  OcrPass pass = text_pass();
  OcrPassReader r(*fx().model, pass, 4, 3);
  const std::string text = "<PAGE>alpha one<PAGE>beta two<PAGE>gamma three";
  std::string pieces;
  std::vector<std::string> warnings;
  EXPECT_EQ(push_all(r, text, pieces, warnings), (std::vector<size_t>{4, 5}));  // the third is being written
  pieces += r.push(fx().model->decoder().config().eos_id);
  EXPECT_FALSE(r.ended());
  pieces += r.end();
  EXPECT_TRUE(r.ended());
  EXPECT_EQ(pieces, text);
  EXPECT_EQ(r.text(), text);
  EXPECT_EQ(r.tokens().size(), ids(text).size() + 1);  // the end token is a token, not text
  auto last = r.take_final_pages(warnings);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].first, 6u);
  ASSERT_FALSE(last[0].second.blocks.empty());
  EXPECT_EQ(last[0].second.blocks[0].text, "gamma three");
  EXPECT_TRUE(r.take_final_pages(warnings).empty());  // each page once
  EXPECT_TRUE(warnings.empty());
}

TEST(OcrPassReader, AnEndedPassHasExactlyItsPagesAndSaysWhatFittingChanged) {
  OcrPass pass = text_pass();
  OcrPassReader r(*fx().model, pass, 0, 2);
  std::string pieces;
  std::vector<std::string> warnings;
  EXPECT_EQ(push_all(r, "<PAGE>a<PAGE>b<PAGE>c", pieces, warnings), (std::vector<size_t>{0}));
  r.end();
  auto rest = r.take_final_pages(warnings);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].first, 1u);
  EXPECT_EQ(rest[0].second.blocks.size(), 2u);  // "b" and the extra page's "c"
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("merged into the last page"), std::string::npos);

  OcrPass short_pass = text_pass();
  OcrPassReader s(*fx().model, short_pass, 0, 3);
  push_all(s, "<PAGE>only", pieces, warnings);
  s.end();
  EXPECT_EQ(s.take_final_pages(warnings).size(), 3u);  // the missing pages are empty, still given
  EXPECT_NE(warnings.back().find("the missing ones are empty"), std::string::npos);
}

TEST(OcrPassReader, AModelsOwnTextHooksReplaceTheTokenizer) {
  OcrPass pass = text_pass();
  pass.write_token = [](int32_t t) { return "[" + std::to_string(t) + "]"; };
  pass.write_end = [] { return std::string("<end>"); };
  OcrPassReader r(*fx().model, pass, 0, 1);
  EXPECT_FALSE(pass.write_token);  // taken from the pass
  EXPECT_EQ(r.push(7), "[7]");
  EXPECT_EQ(r.push(fx().model->decoder().config().eos_id), "[" + std::to_string(fx().model->decoder().config().eos_id) + "]");
  EXPECT_EQ(r.end(), "<end>");
  EXPECT_EQ(r.text(), "[7][" + std::to_string(fx().model->decoder().config().eos_id) + "]<end>");
}

TEST(OcrPassReader, ATokenAfterTheEndOrASecondEndIsAnInternalError) {
  OcrPass pass = text_pass();
  OcrPassReader r(*fx().model, pass, 0, 1);
  r.end();
  EXPECT_THROW(r.push(1), Error);
  EXPECT_THROW(r.end(), Error);
}

TEST(OcrTextInOrder, PassesStreamInPassOrderWhateverOrderTheyEndIn) {
  std::vector<OcrPass> passes(3, text_pass());
  std::vector<std::unique_ptr<OcrPassReader>> readers;
  for (size_t k = 0; k < 3; ++k) readers.push_back(std::make_unique<OcrPassReader>(*fx().model, passes[k], k, 1));
  bool third_started = false;
  auto reader = [&](size_t k) -> const OcrPassReader* { return k < 2 || third_started ? readers[k].get() : nullptr; };
  OcrTextInOrder order;
  std::string out;
  auto feed = [&](size_t k, const std::string& text) {
    for (int32_t t : ids(text)) readers[k]->push(t);
  };
  feed(1, "second pass");
  readers[1]->end();  // the second ends first: its text waits
  out += order.take(3, reader);
  EXPECT_EQ(out, "");
  feed(0, "first");
  out += order.take(3, reader);
  EXPECT_EQ(out, "first");
  EXPECT_EQ(order.current(), 0u);
  readers[0]->end();
  out += order.take(3, reader);
  EXPECT_EQ(out, "first\n\nsecond pass");
  EXPECT_EQ(order.current(), 2u);  // the third has not started
  third_started = true;
  feed(2, "third");
  readers[2]->end();
  out += order.take(3, reader);
  EXPECT_EQ(out, "first\n\nsecond pass\n\nthird");
  EXPECT_EQ(order.current(), 3u);
  EXPECT_EQ(order.take(3, reader), "");
}

}  // namespace
}  // namespace folio
