#include "text/gguf_vocab.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/sentencepiece_tokenizer.h"

namespace folio {

namespace {

// DeepSeek-V3's pre-tokenizer regexes (also DeepSeek-OCR's and Unlimited-OCR's): digits in threes,
// CJK runs, then punctuation-led words, letter runs, punctuation runs, newlines and spaces.
const char* const kDeepseekV3Splits[] = {
    "\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    // One regex written on two lines (the parentheses tell compilers the joined literal is meant).
    ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
     " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")};

// GGUF names a byte-level BPE's pre-tokenizer ("tokenizer.ggml.pre") instead of storing it; this
// is the tokenizer.json spelling of the ones folio knows.
nlohmann::json gguf_pre_tokenizer(const GgufFile& g) {
  const std::string pre = g.get_string("tokenizer.ggml.pre").value_or("default");
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  if (pre == "default" || pre == "gpt-2") return byte_level;
  if (pre == "deepseek-v3") {
    nlohmann::json seq = nlohmann::json::array();
    for (const char* re : kDeepseekV3Splits)
      seq.push_back({{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
    byte_level["use_regex"] = false;
    seq.push_back(byte_level);
    return {{"type", "Sequence"}, {"pretokenizers", seq}};
  }
  throw Error(Error::Kind::Unsupported, g.description() + ": pre-tokenizer '" + pre +
                                            "' is not supported (default, gpt-2, deepseek-v3)");
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g) {
  auto model = g.get_string("tokenizer.ggml.model").value_or("");
  auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (tokens.empty()) throw_invalid(g.description() + ": no tokenizer.ggml.tokens in the GGUF metadata");
  if (model == "llama") {
    SpmVocab v;
    v.tokens = std::move(tokens);
    v.scores = g.get_f32_array("tokenizer.ggml.scores");
    v.types = g.get_i32_array("tokenizer.ggml.token_type");
    if (v.scores.empty()) v.scores.assign(v.tokens.size(), 0.f);
    if (v.types.empty()) v.types.assign(v.tokens.size(), 1);
    v.bos = static_cast<int32_t>(g.get_int("tokenizer.ggml.bos_token_id").value_or(1));
    v.eos = static_cast<int32_t>(g.get_int("tokenizer.ggml.eos_token_id").value_or(2));
    v.unk = static_cast<int32_t>(g.get_int("tokenizer.ggml.unknown_token_id").value_or(0));
    if (const GgufValue* add = g.get("tokenizer.ggml.add_space_prefix")) {
      if (const bool* b = std::get_if<bool>(add)) v.add_space_prefix = *b;
    }
    return make_sentencepiece_tokenizer(std::move(v));
  }
  if (model == "gpt2") {
    // A byte-level BPE vocabulary: rebuild the tokenizer.json it came from and load that.
    nlohmann::json j;
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", g.get_string_array("tokenizer.ggml.merges")}};
    j["pre_tokenizer"] = gguf_pre_tokenizer(g);
    j["decoder"] = {{"type", "ByteLevel"}};
    j["added_tokens"] = nlohmann::json::array();
    auto types = g.get_i32_array("tokenizer.ggml.token_type");
    for (size_t i = 0; i < types.size() && i < tokens.size(); ++i)
      if (types[i] == 3 || types[i] == 4)
        j["added_tokens"].push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == 3}});
    return load_tokenizer_json_string(j.dump());
  }
  throw Error(Error::Kind::Unsupported, g.description() + ": tokenizer model '" + model + "' is not supported (llama, gpt2)");
}


namespace {

// llama.cpp's name for a tokenizer.json pre-tokenizer, or "" if it has none.
std::string gguf_pre_name(const nlohmann::json& pre) {
  if (pre.is_object() && pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true)) return "gpt-2";
  if (!pre.is_object() || pre.value("type", "") != "Sequence" || !pre.contains("pretokenizers")) return "";
  const nlohmann::json& parts = pre["pretokenizers"];
  const size_t n = std::size(kDeepseekV3Splits);
  if (!parts.is_array() || parts.size() != n + 1 || parts[n].value("type", "") != "ByteLevel") return "";
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json& p = parts[i];
    if (p.value("type", "") != "Split" || !p.contains("pattern") || p["pattern"].value("Regex", "") != kDeepseekV3Splits[i])
      return "";
  }
  return "deepseek-v3";
}

}  // namespace

void write_gguf_vocab(const nlohmann::json& tj, int64_t vocab_size, int32_t bos, int32_t eos, const std::string& source,
                      GgufWriter& w) {
  const nlohmann::json& model = tj.contains("model") ? tj["model"] : nlohmann::json::object();
  if (model.value("type", "") != "BPE" || !model.contains("vocab"))
    throw Error(Error::Kind::Unsupported, source + ": only byte-level BPE tokenizers can be written to GGUF");
  const std::string pre = gguf_pre_name(tj.contains("pre_tokenizer") ? tj["pre_tokenizer"] : nlohmann::json());
  if (pre.empty())
    throw Error(Error::Kind::Unsupported, source + ": its pre-tokenizer has no llama.cpp name (gpt-2, deepseek-v3)");
  const size_t n = static_cast<size_t>(vocab_size);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, 5);  // llama.cpp token types: 1 normal, 3 control, 4 user-defined, 5 unused
  auto place = [&](int64_t id, const std::string& text, int32_t type) {
    if (id < 0 || id >= vocab_size)
      throw_invalid(source + ": token id " + std::to_string(id) + " is outside the model's vocabulary of " +
                    std::to_string(vocab_size));
    tokens[static_cast<size_t>(id)] = text;
    types[static_cast<size_t>(id)] = type;
  };
  for (const auto& [text, id] : model["vocab"].items()) place(id.get<int64_t>(), text, 1);
  if (tj.contains("added_tokens"))
    for (const auto& a : tj["added_tokens"]) place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(), a.value("special", false) ? 3 : 4);
  for (size_t i = 0; i < n; ++i)
    if (types[i] == 5) tokens[i] = "[PAD" + std::to_string(i) + "]";
  std::vector<std::string> merges;
  if (model.contains("merges"))
    for (const auto& m : model["merges"])
      merges.push_back(m.is_array() ? m[0].get<std::string>() + " " + m[1].get<std::string>() : m.get<std::string>());
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens", std::move(tokens));
  w.set("tokenizer.ggml.token_type", std::move(types));
  w.set("tokenizer.ggml.merges", std::move(merges));
  if (bos >= 0) w.set("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(bos));
  if (eos >= 0) w.set("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(eos));
}

}  // namespace folio
