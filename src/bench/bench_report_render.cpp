#include "bench/bench_report_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "bench/bench_report_plan.h"

namespace folio::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// ---- paths a reader can reproduce ----------------------------------------------------------------

// A model given by absolute path (this machine's own cache) is shown as models/<name>, where the
// make-model command this page prints puts it; relative paths (the repository's files) stay.
std::string reader_path(const std::string& path) {
  if (path.empty() || path[0] != '/') return path;
  return "models/" + fs::path(path).filename().string();
}

// A command line with its model paths (the values of --model, --decoder-model, --mini-model,
// --mmproj, and make-model's --out) as a reader names them; --cache is the models/ directory itself.
std::string reader_command(const std::string& command) {
  static const std::set<std::string> model_flags{"--model", "--decoder-model", "--mini-model", "--mmproj"};
  const bool makes_model = command.find(" make-model ") != std::string::npos;
  std::istringstream in(command);
  std::string out, word, previous;
  while (in >> word) {
    if (previous == "--cache" && !word.empty() && word[0] == '/') word = "models";
    else if (model_flags.count(previous) || (makes_model && previous == "--out")) word = reader_path(word);
    if (!out.empty()) out += ' ';
    out += word;
    previous = word;
  }
  return out;
}

// ---- number formatting --------------------------------------------------------------------------

std::string fixed(double v, int prec) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// 259522560 -> "259,522,560"
std::string grouped(double v) {
  if (!std::isfinite(v)) return "-";
  const long long n = std::llround(v);
  std::string d = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// 4096 -> "4096" (for command lines)
std::string integer(double v) { return std::isfinite(v) ? std::to_string(std::llround(v)) : "?"; }

std::string mib(double bytes) { return std::isfinite(bytes) ? fixed(bytes / (1 << 20), 1) + " MiB" : "-"; }
std::string percent(double x) { return std::isfinite(x) ? fixed(100.0 * x, 2) + "%" : "-"; }

double num(const json& j, const char* key) {
  if (!j.is_object()) return NAN;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}
// A member by reference (an empty array or object when absent), so pointers into it stay valid.
const json& member(const json& j, const char* key, bool array) {
  static const json empty_array = json::array(), empty_object = json::object();
  if (j.is_object())
    if (const auto it = j.find(key); it != j.end() && (array ? it->is_array() : it->is_object())) return *it;
  return array ? empty_array : empty_object;
}
const json& samples_of(const json& j) { return member(j, "samples", true); }

std::string str(const json& j, const char* key, const std::string& def = "") {
  if (!j.is_object()) return def;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}

// "a | b | c" as a table row.
std::string row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += " " + c + " |";
  return out + "\n";
}
std::string header(const std::vector<std::string>& cells) {
  std::string out = row(cells) + "|";
  for (size_t i = 0; i < cells.size(); ++i) out += " --- |";
  return out + "\n";
}
// A row for a run that is not available: the reason in the first free cell, the rest empty.
std::string missing_row(std::vector<std::string> lead, size_t columns, const std::string& why, const std::string& file) {
  lead.push_back("not available: " + why);
  while (lead.size() + 1 < columns) lead.push_back("");
  lead.push_back(file);
  return row(lead);
}

std::string param(const RunData& r, const char* key) {
  const json& p = (*r.run)["params"];
  if (!p.contains(key)) return "";
  return p[key].is_string() ? p[key].get<std::string>() : p[key].dump();
}
// The run's JSON file as a link, or for a failed run its log (kept next to the JSON files).
std::string file_cell(const RunData& r, const std::string& json_prefix) {
  const std::string f = r.error.empty() ? str(*r.run, "json") : str(*r.run, "log");
  return f.empty() ? "" : "[" + f + "](" + json_prefix + f + ")";
}

std::vector<const RunData*> of_kind(const std::vector<RunData>& runs, const std::string& section, const std::string& kind) {
  std::vector<const RunData*> out;
  for (const RunData& r : runs)
    if (str(*r.run, "section") == section && param(r, "kind") == kind) out.push_back(&r);
  return out;
}

// The commands of a section's runs, as one code block.
std::string commands(const std::vector<const RunData*>& runs) {
  if (runs.empty()) return "";
  std::string out = "Commands (each writes the JSON file named by `--json`):\n\n```\n";
  for (const RunData* r : runs) out += reader_command(str(*r->run, "command")) + "\n";
  return out + "```\n\n";
}

std::string image(const std::map<std::string, std::string>& plots, const std::string& name, const std::string& alt,
                  const std::string& image_prefix) {
  const auto it = plots.find(name);
  if (it == plots.end()) return "";
  if (!it->second.empty()) return "_(plot " + name + " not drawn: " + it->second + ")_\n\n";
  return "![" + alt + "](" + image_prefix + name + ")\n\n";
}

// ---- decode -------------------------------------------------------------------------------------

const std::vector<std::string> kDecodeColumns = {"policy", "KV dtype", "P", "N", "KV bytes: first -> last sample", "ms/token: first -> last (last/first)",
                                                 "tokens/s", "KV peak", "KV read per token", "RSS peak", "roofline: copy / read", "JSON"};

// Decode runs written before the peak was taken ahead of the bandwidth test include its buffers
// (page-reference runs never did: they came with that change).
std::string rss_peak_cell(const json& j) {
  const bool before = j.contains("rss_peak_before_bandwidth_test") || !j.contains("roofline") || str(j, "reference") == "pages";
  return mib(num(j, "rss_peak_bytes")) + (before ? "" : " (incl. 1 GiB of bandwidth-test buffers)");
}

std::string decode_row(const std::string& policy, const std::string& dtype, const json& j, const std::string& file) {
  const json& s = samples_of(j);
  std::string kv = "-", ms = "-";
  if (!s.empty()) {
    const json &a = s.front(), &b = s.back();
    kv = grouped(num(a, "kv_bytes")) + " -> " + grouped(num(b, "kv_bytes"));
    ms = fixed(num(a, "ms_per_token"), 2) + " -> " + fixed(num(b, "ms_per_token"), 2) + " (" +
         fixed(num(b, "ms_per_token") / num(a, "ms_per_token"), 3) + ")";
  }
  const json& rf = member(j, "roofline", false);
  std::string roof = rf.empty() ? "-" : percent(num(rf, "efficiency")) + " / " + percent(num(rf, "read_efficiency"));
  if (const json& ps = member(rf, "per_sample", false); !ps.empty())
    roof += "; copy per sample: median " + percent(num(ps, "efficiency_median")) + " (" + percent(num(ps, "efficiency_min")) + "-" +
            percent(num(ps, "efficiency_max")) + ") at " + fixed(num(ps, "copy_bandwidth_gbs_median"), 1) + " GB/s";
  const std::string read = rf.empty()                                        ? "-"
                           : rf.contains("kv_bytes_read_per_token_mean") ? grouped(num(rf, "kv_bytes_read_per_token_mean"))
                                                                         : grouped(num(rf, "kv_bytes_read_per_token_max")) + " (most)";
  return row({policy, dtype, grouped(num(j, "ref_tokens")), grouped(num(j, "gen_tokens")), kv, ms, fixed(num(j, "decode_tokens_per_s"), 2),
              grouped(num(j, "kv_bytes_peak")), read, rss_peak_cell(j), roof, file});
}

// What a run's samples show, computed: constant or growing KV bytes, the ms/token trend.
std::string decode_finding(const std::string& label, const json& j) {
  const json& s = samples_of(j);
  if (s.size() < 2) return "";
  const double window = num(j, "window"), per_token = num(j, "kv_bytes_per_token");
  std::vector<const json*> late;  // samples once the window is full
  for (const json& x : s)
    if (!(num(x, "pos") < window)) late.push_back(&x);
  const json &a = s.front(), &b = s.back();
  const double ratio = num(b, "ms_per_token") / num(a, "ms_per_token");
  std::string out = "- **" + label + "**: ";
  bool flat = late.size() >= 2;
  for (const json* x : late) flat = flat && num(*x, "kv_bytes") == num(*late.front(), "kv_bytes");
  if (flat) {
    const double kv = num(*late.front(), "kv_bytes");
    out += "KV bytes identical at every sample from position " + grouped(num(*late.front(), "pos")) + " on: " + grouped(kv) + " bytes";
    if (per_token > 0) out += " = " + grouped(kv / per_token) + " tokens x " + grouped(per_token) + " bytes per token (P = " +
                              grouped(num(j, "ref_tokens")) + ", W = " + grouped(window) + ", reference rounded up to whole blocks)";
  } else {
    const double dpos = num(b, "pos") - num(a, "pos");
    out += "KV bytes grow from " + grouped(num(a, "kv_bytes")) + " to " + grouped(num(b, "kv_bytes")) + " (" +
           grouped((num(b, "kv_bytes") - num(a, "kv_bytes")) / dpos * 1024) + " bytes per 1024 generated tokens)";
  }
  out += "; ms/token " + fixed(num(a, "ms_per_token"), 2) + " at position " + grouped(num(a, "pos")) + ", " +
         fixed(num(b, "ms_per_token"), 2) + " at " + grouped(num(b, "pos")) + " (last/first " + fixed(ratio, 3) + ").\n";
  if (str(j, "reference") != "pages") return out;
  // An OCR document: its pages were encoded by the model in the same process, so the peak RSS holds
  // the checkpoint's mapped weights, the encoder's activations and the KV.
  const double ckpt = num(j, "checkpoint_bytes"), peak = num(j, "rss_peak_bytes"), limit = ckpt + 1.2e9;
  if (num(j, "context") > num(j, "trained_context"))
    out += "  - Positions run to " + grouped(num(j, "ref_tokens") + num(j, "gen_tokens")) + ", past the checkpoint's context of " +
           grouped(num(j, "trained_context")) + " (`--context`): RoPE continues, so speed and memory are what this run measures.\n";
  out += "  - " + grouped(num(j, "pages")) + " synthetic " + integer(num(j, "page_width")) + "x" + integer(num(j, "page_height")) +
         " pages encoded by the model (" + str(j, "vision_mode") + " mode, " + fixed(num(j, "encode_ms_per_page_median") / 1000, 1) +
         " s per page, median) into P = " + grouped(num(j, "ref_tokens")) + " reference tokens; prefill " +
         fixed(num(j, "prefill_ms") / 1000, 1) + " s. RSS at the first and last sample: " + mib(num(a, "rss_bytes")) + ", " +
         mib(num(b, "rss_bytes")) + "; peak " + mib(peak) + " against the checkpoint's " + mib(ckpt) + " of weights: " +
         (peak >= ckpt ? mib(peak - ckpt) + " above them" : mib(ckpt - peak) + " below them (only the weight pages touched count)") + " (bound: weights + 1.2 GB = " + mib(limit) + ", " + (peak <= limit ? "met" : "NOT met") + ").\n";
  return out;
}

std::string model_title(const std::string& key) {
  if (key == "uocr-full") return "Full-size random-weight Unlimited-OCR decoder";
  if (key == "mini") return "The shipped OCR model's decoder";
  return key;
}

// A decode model's samples side by side for one KV dtype (bf16 when it ran), every policy.
std::string samples_table(const std::vector<const RunData*>& mine) {
  std::string dt;
  for (const std::string want : {"bf16", "f32", "q8", "q4", "f16"}) {
    for (const RunData* r : mine)
      if (!r->data.is_null() && param(*r, "kv_dtype") == want) dt = want;
    if (!dt.empty()) break;
  }
  std::vector<const RunData*> cols;
  for (const RunData* r : mine)
    if (!r->data.is_null() && param(*r, "kv_dtype") == dt) cols.push_back(r);
  if (cols.empty()) return "";
  std::vector<std::string> h = {"generated tokens"};
  for (const RunData* r : cols) {
    h.push_back(param(*r, "policy") + " KV bytes");
    h.push_back(param(*r, "policy") + " ms/token");
  }
  std::string out = "\nSamples, " + dt + " KV:\n\n" + header(h);
  std::set<double> positions;
  for (const RunData* r : cols)
    for (const json& s : samples_of(r->data)) positions.insert(num(s, "pos"));
  for (double pos : positions) {
    std::vector<std::string> cells = {grouped(pos)};
    for (const RunData* r : cols) {
      const json* hit = nullptr;
      for (const json& s : samples_of(r->data))
        if (num(s, "pos") == pos) hit = &s;
      cells.push_back(hit ? grouped(num(*hit, "kv_bytes")) : "");
      cells.push_back(hit ? fixed(num(*hit, "ms_per_token"), 2) : "");
    }
    out += row(cells);
  }
  return out;
}

std::string decode_section(const std::vector<RunData>& runs, const std::map<std::string, std::string>& plots, const std::string& image_prefix,
                           const std::string& json_prefix) {
  std::string out = R"(## Decode: KV bytes and ms/token as the output grows

A reference of P random token ids (the decoder-only stand-in for image tokens) is prefilled, then N
tokens are decoded one at a time (greedy, EOS ignored). Every K tokens a sample records the KV bytes
the pool holds for the sequence (its own counters) and the mean ms/token over those K tokens.
Policies: `full` keeps every token; `rswa` keeps the reference and the last W = 128 generated tokens
(bytes = (reference rounded up to whole blocks + W) x bytes per token, constant once W tokens were
generated); `sparse` keeps what rswa keeps but reads only the top reference units per layer and KV
head. KV dtypes: f32, bf16, q8 and q4 (KIVI-style groups).

Roofline (per run, in its JSON): a decode step must at least stream the active weights once and read
the visible KV once: roofline ms/token = (active weight bytes per token + mean KV bytes read per
token) / bandwidth, with two bandwidths measured in the same run (2 x 512 MiB, best of 5): copy
(STREAM convention, bytes read + written per second of memcpy) and read (a pure streaming read, the
real limit of a weight GEMV). Efficiency = roofline / measured ms/token. Runs made with
`--sample-bandwidth` also measure the copy bandwidth after every sample (in a child process, untimed)
and judge each sample by its own: "copy per sample" gives the median, minimum and maximum of those
efficiencies and the median bandwidth (it swings by half on a shared machine).

)";
  for (const std::string key : {"uocr-full", "mini"}) {
    std::vector<const RunData*> mine;
    for (const RunData* r : of_kind(runs, "decode", "decode"))
      if (param(*r, "model_key") == key) mine.push_back(r);
    if (mine.empty()) continue;
    out += "### " + model_title(key) + "\n\n";
    for (const RunData* r : mine)
      if (!r->data.is_null()) {
        out += "Model `" + reader_path(str(r->data, "model")) + "` (" + str(r->data, "architecture", "?") + ", " + grouped(num(r->data, "kv_bytes_per_token")) +
               " KV bytes per token in " + str(r->data, "kv_dtype") + "), " + grouped(num(r->data, "threads")) + " threads, ISA " +
               str(r->data, "isa", "?") + ".\n\n";
        break;
      }
    out += image(plots, "decode_" + key + ".png", model_title(key) + ": KV bytes and ms/token vs generated tokens", image_prefix);
    out += header(kDecodeColumns);
    for (const RunData* r : mine) {
      const std::string pol = param(*r, "policy"), dt = param(*r, "kv_dtype");
      out += r->data.is_null() ? missing_row({pol, dt}, kDecodeColumns.size(), r->error, file_cell(*r, json_prefix))
                               : decode_row(pol, dt, r->data, file_cell(*r, json_prefix));
    }
    out += "\nWhat the samples show:\n";
    for (const RunData* r : mine)
      if (!r->data.is_null()) out += decode_finding(param(*r, "policy") + ", " + param(*r, "kv_dtype") + " KV", r->data);
    out += samples_table(mine);
    out += "\n";
    out += commands(mine);
  }
  return out;
}

// ---- pages --------------------------------------------------------------------------------------

std::string pages_section(const std::vector<RunData>& runs, const std::map<std::string, std::string>& plots, const std::string& image_prefix,
                          const std::string& json_prefix) {
  const auto mine = of_kind(runs, "pages", "pages");
  if (mine.empty()) return "";
  std::string out = R"(## Page scaling: memory and time vs pages

One held-out document of P pages read by the OCR model in as few passes as it allows (`folio bench
accuracy --pages P`, rswa W = 128, bf16 KV, no separate baseline run; pages and CER as in the
accuracy section below). Peak RSS is the whole process's (getrusage), KV
peak the pool's own counter; encoder time is rendering, preprocessing and vision encoding of all
pages (the JSON's `encode_ms`, when `folio bench accuracy` records it).

)";
  out += image(plots, "pages.png", "Peak RSS and KV bytes vs pages", image_prefix);
  const std::vector<std::string> cols = {"pages", "docs", "peak RSS", "KV peak", "encoder ms (all pages)", "encoder ms / page", "pages/s", "CER", "JSON"};
  out += header(cols);
  for (const RunData* r : mine) {
    if (r->data.is_null()) {
      out += missing_row({param(*r, "pages")}, cols.size(), r->error, file_cell(*r, json_prefix));
      continue;
    }
    const json& j = r->data;
    const double enc = num(j, "encode_ms"), pages = num(j, "pages") * num(j, "docs");
    out += row({grouped(num(j, "pages")), grouped(num(j, "docs")), mib(num(j, "rss_peak_bytes")), grouped(num(j, "kv_bytes_peak")),
                std::isfinite(enc) ? fixed(enc, 1) : "not recorded by this build's bench accuracy",
                std::isfinite(enc) ? fixed(enc / pages, 1) : "-", fixed(num(j, "pages_per_s"), 2), percent(num(j, "cer")), file_cell(*r, json_prefix)});
  }
  out += "\n";
  return out + commands(mine);
}

// ---- accuracy -----------------------------------------------------------------------------------

const std::vector<std::string> kAccColumns = {"policy", "KV dtype", "CER (errors / chars)", "baseline CER (baseline)", "token agreement",
                                              "teacher-forced agreement", "passes (baseline)", "KV peak", "baseline KV peak", "KV / baseline",
                                              "KV read per token, most (baseline)", "peak RSS", "pages/s", "JSON"};

// The passes a run read its documents in, all documents together: its own count, or in files
// written before that was recorded, the number of stop reasons (one per pass). NAN when unknown.
double passes_of(const json& j) {
  if (const double p = num(j, "passes"); std::isfinite(p)) return p;
  const json& docs = member(j, "documents", true);
  if (docs.empty()) return NAN;
  double n = 0;
  for (const json& d : docs) {
    const json& stops = member(d, "stop_reasons", true);
    if (stops.empty()) return NAN;
    n += static_cast<double>(stops.size());
  }
  return n;
}

// The baseline's passes: recorded by the run, or else those of the set's own run of the baseline's
// policy, in any KV dtype (same documents, and the pass plan depends only on the pages and the policy).
double baseline_passes_of(const json& j, const std::vector<const RunData*>& set) {
  if (const double p = num(j, "baseline_passes"); std::isfinite(p)) return p;
  for (const RunData* r : set)
    if (!r->data.is_null() && param(*r, "policy") == str(j, "baseline_policy"))
      if (const double p = passes_of(r->data); std::isfinite(p)) return p;
  return NAN;
}

std::string accuracy_row(const std::string& name, const std::string& dtype, const json& j, double baseline_passes, const std::string& file) {
  // The policy's parameters, when the run recorded them.
  std::string policy = name;
  if (name == "sparse" && j.contains("sparse_top_k"))
    policy += " (top-" + integer(num(j, "sparse_top_k")) +
              (j.contains("sparse_focus_pages") ? ", focus " + integer(num(j, "sparse_focus_pages")) : std::string(", no focus")) + ")";
  if (name == "rolling" && j.contains("resident_pages")) policy += " (" + integer(num(j, "resident_pages")) + " resident)";
  if (j.contains("kv_offload"))
    policy += ", tiered: " + mib(num(j, "kv_offloaded_bytes_peak")) + " in a store of " + mib(num(j, "kv_hot_bytes")) + " RAM + file, " +
              grouped(num(j, "kv_store_cold_reads")) + " cold reads";
  const std::string read = j.contains("kv_active_bytes_max")
                               ? grouped(num(j, "kv_active_bytes_max")) + " (" + grouped(num(j, "baseline_kv_active_bytes_max")) + ")"
                               : std::string("-");
  const std::string base = j.contains("baseline_policy") ? " (" + str(j, "baseline_policy") + ", " + str(j, "baseline_kv_dtype") + ")" : "";
  const std::string forced = j.contains("teacher_forced_agreement_with_baseline")
                                 ? fixed(num(j, "teacher_forced_agreement_with_baseline"), 4) : std::string("-");
  const std::string rss = j.contains("rss_peak_bytes") ? fixed(num(j, "rss_peak_bytes") / (1 << 20), 1) + " MiB" : std::string("-");
  return row({policy, dtype, "**" + percent(num(j, "cer")) + "** (" + grouped(num(j, "errors")) + " / " + grouped(num(j, "chars")) + ")",
              percent(num(j, "baseline_cer")) + base, fixed(num(j, "token_agreement_with_baseline"), 4), forced,
              std::isfinite(passes_of(j)) ? grouped(passes_of(j)) + " (" + grouped(baseline_passes) + ")" : std::string("-"),
              grouped(num(j, "kv_bytes_peak")), grouped(num(j, "baseline_kv_bytes_peak")),
              fixed(num(j, "kv_bytes_peak") / num(j, "baseline_kv_bytes_peak"), 3), read, rss, fixed(num(j, "pages_per_s"), 2), file});
}

// Why a run holds more KV at its peak than the baseline, from its own figures: the peak is that of
// the largest pass, and a policy that reads more pages per pass (sparse pins every page of its
// pass so that it can choose among them) peaks higher even when each token reads far less.
std::string kv_above_baseline_note(const std::vector<const RunData*>& above, const std::vector<const RunData*>& set) {
  if (above.empty()) return "";
  std::string out = "**KV / baseline above 1.** The KV peak is that of a run's largest pass (every pass keeps its whole reference, "
                    "the pages it reads, in the pool), so a run that reads more pages per pass than the baseline peaks higher "
                    "whatever each token reads. The runs above the baseline's peak:\n";
  for (const RunData* r : above) {
    const json& j = r->data;
    const double p = passes_of(j), bp = baseline_passes_of(j, set);
    out += "- " + param(*r, "policy") + " " + param(*r, "kv_dtype") + ": " + grouped(num(j, "kv_bytes_peak")) + " bytes against " +
           grouped(num(j, "baseline_kv_bytes_peak")) + ", ";
    if (!std::isfinite(p) || !std::isfinite(bp))
      out += "passes not recorded";
    else if (p < bp)
      out += "in " + grouped(p) + " pass(es) against the baseline's " + grouped(bp);
    else
      out += "in " + grouped(p) + " pass(es), as many as the baseline's " + grouped(bp) + " (not explained by passes)";
    if (j.contains("kv_active_bytes_max"))
      out += "; KV read per token at most " + grouped(num(j, "kv_active_bytes_max")) + " bytes against " +
             grouped(num(j, "baseline_kv_active_bytes_max"));
    out += ".\n";
  }
  return out + "\n";
}

std::string accuracy_section(const std::vector<RunData>& runs, const std::string& json_prefix) {
  auto mine = of_kind(runs, "accuracy", "accuracy");
  if (mine.empty()) return "";
  std::string out = R"(## Accuracy: what a policy or KV format costs

The OCR model reads D held-out documents of P pages (`data/heldout/pP`: man pages of sources never
trained on, typeset by groff, a typesetter never used in training; `tools/train/mini2/make_heldout_sets.py`)
under each KV policy and dtype, and each run is compared with the ground truth and with the baseline
(policy full, f32 KV) on the same documents. P = 100 is one document of the held-out pages in a fixed
cycle (the 20-page documents, then the 1-page ones).

**Definitions** (src/runtime/ocr_accuracy.h, src/runtime/scoring_text.h). CER: the expected text
and the output are cut into pages at `<page>`; CER = sum over pages of the character edit distance
(Levenshtein, unit costs) / sum of expected page lengths; a missing page counts all its characters.
The truth is `pdftotext -layout` of each page (plain text; the set's `set.json` says so), so the
output's markdown syntax is taken off first (heading marks, list markers, table pipes, fences) and
both sides are normalised alike: ligatures and dash or space variants mapped, bullet glyphs dropped,
whitespace runs one space. Case is kept. Token agreement: ids equal at equal positions / the longer
run's length (a single early insertion shifts every later token, so it is a strict measure).
Passes: how many passes the run read its documents in, all documents together, and the baseline's
(a pass decodes consecutive pages against their reference: at most 20 under full and rswa; under
sparse as many as the model allows, 63 for folio-mini-ocr 2, and as leave half its context for the
output; rolling reads the whole document in one). KV bytes: the pool's peak bytes in
use (its own counters), so the largest pass's. Pages/s: reading the PDF, the front end, prefill and
decoding of the measured run (not the baseline run).

)";
  std::set<int> sets;
  for (const RunData* r : mine) sets.insert(std::stoi(param(*r, "pages")));
  for (int p : sets) {
    std::vector<const RunData*> set;
    for (const RunData* r : mine)
      if (param(*r, "pages") == std::to_string(p)) set.push_back(r);
    out += "### " + param(*set.front(), "docs") + " x " + std::to_string(p) + "-page documents\n\n" + header(kAccColumns);
    std::vector<const RunData*> above;  // runs whose KV peak exceeds the baseline's
    for (const RunData* r : set) {
      const std::string pol = param(*r, "policy"), dt = param(*r, "kv_dtype");
      if (r->data.is_null()) {
        out += missing_row({pol, dt}, kAccColumns.size(), r->error, file_cell(*r, json_prefix));
        continue;
      }
      out += accuracy_row(pol, dt, r->data, baseline_passes_of(r->data, set), file_cell(*r, json_prefix));
      if (num(r->data, "kv_bytes_peak") > num(r->data, "baseline_kv_bytes_peak")) above.push_back(r);
    }
    out += '\n';
    out += kv_above_baseline_note(above, set);
    out += commands(set);
  }
  return out;
}

// ---- service ------------------------------------------------------------------------------------

const std::vector<std::string> kServeColumns = {"concurrency", "requests", "ok / errors / lost", "output tokens/s", "TTFT p50 / p99 ms",
                                                "TPOT p50 / p99 ms", "server RSS after 50 / at end", "JSON"};

std::string serve_row(const json& j, const std::string& file) {
  const bool cached = !j.contains("caches") || j["caches"].get<bool>();
  return row({grouped(num(j, "concurrency")) + (cached ? "" : " (no cache)"), grouped(num(j, "requests")),
              grouped(num(j, "ok")) + " / " + grouped(num(j, "errors")) + " / " + grouped(num(j, "lost")), fixed(num(j, "output_tokens_per_s"), 0),
              fixed(num(j, "ttft_ms_p50"), 0) + " / " + fixed(num(j, "ttft_ms_p99"), 0),
              fixed(num(j, "tpot_ms_p50"), 2) + " / " + fixed(num(j, "tpot_ms_p99"), 2),
              mib(num(j, "server_rss_after_first50_bytes")) + " / " + mib(num(j, "server_rss_at_end_bytes")), file});
}

std::string service_section(const std::vector<RunData>& runs, const std::string& json_prefix) {
  const auto mine = of_kind(runs, "service", "serve");
  if (mine.empty()) return "";
  std::string out = R"(## Service: `folio serve` under load

`folio bench serve` starts the server in-process on a loopback port with the OCR model (rswa W=128,
bf16 KV, batch size 16, threads as given); every request posts examples/sample-typeset.pdf (the default model's sample, one typeset page) as JSON
base64 to `/v1/ocr` (after the first request the page's prepared reference comes from the cache).
TTFT is the client's latency minus the server's decode time (first to last token, the answer's
`stats.decode_ms`), so it includes the upload, page preparation and queueing as a client sees them;
TPOT is that decode time over tokens - 1. Percentiles are nearest-rank. Server RSS comes from its
`/metrics` (`folio_process_rss_bytes`) after the 50th answer (or the last, with fewer requests) and at
the end. On a shared machine absolute figures are noisy; the ratios between concurrencies are the point.

)";
  out += header(kServeColumns);
  double c1 = NAN;
  std::string ratios;
  for (const RunData* r : mine) {
    if (r->data.is_null()) {
      out += missing_row({param(*r, "concurrency")}, kServeColumns.size(), r->error, file_cell(*r, json_prefix));
      continue;
    }
    out += serve_row(r->data, file_cell(*r, json_prefix));
    const double tps = num(r->data, "output_tokens_per_s");
    if (num(r->data, "concurrency") == 1) c1 = tps;
    else if (std::isfinite(c1) && c1 > 0)
      ratios += "concurrency " + grouped(num(r->data, "concurrency")) + " gives " + fixed(tps / c1, 1) + "x the output tokens/s of concurrency 1. ";
  }
  if (!ratios.empty()) out += "\nBatching: " + ratios + "\n";
  out += "\n";
  return out + commands(mine);
}

// ---- peer ---------------------------------------------------------------------------------------

// folio against PyTorch eager on the full-size decoder.
std::string pytorch_peer(const nlohmann::json& manifest, const std::vector<const RunData*>& peers, const std::string& json_prefix) {
  std::string out;
  const json& sz = member(member(manifest, "sizes", false), "peer", false);
  out += R"(### folio vs PyTorch eager decode

The same checkpoint (the full-size random-weight Unlimited-OCR decoder, bf16 weights) decoded by
folio and by our independent PyTorch reference (`tools/reference/bench_decode.py`: eager mode, one
token per step, a preallocated KV cache per layer, experts run on their own tokens; the way the
Hugging Face code runs on a CPU). PyTorch computes in float32 (bf16 weights widened on load, f32 KV),
so folio runs with f32 KV too. Both decode N tokens after a P-token random reference under `full`
(every token cached) and `rswa` (reference + ring of W = 128 generated tokens: the golden generator's
mask). Ratios are folio / PyTorch: speed above 1 means folio is faster, RSS below 1 means folio needs
less memory (peak RSS of the whole process, getrusage, weights included: folio maps the bf16 file,
PyTorch holds f32 copies; folio's peak is taken before its bandwidth test, except in runs labelled
otherwise). Speeds on a shared machine are noisy; both engines ran back to back.

)";
  const std::vector<std::string> cols = {"policy", "P + N", "folio tokens/s", "PyTorch tokens/s", "speed ratio", "folio peak RSS",
                                         "PyTorch peak RSS", "RSS ratio", "JSON"};
  out += header(cols);
  for (const std::string pol : {"full", "rswa"}) {
    const RunData *f = nullptr, *t = nullptr;
    for (const RunData* r : peers)
      if (param(*r, "policy") == pol) (param(*r, "engine") == "folio" ? f : t) = r;
    if (!f && !t) continue;
    const json fj = f ? f->data : json(), tj = t ? t->data : json();
    const json& any = !fj.is_null() ? fj : tj;
    const std::string size = any.is_null() ? "" : grouped(num(any, "ref_tokens")) + " + " + grouped(num(any, "gen_tokens"));
    auto cell = [](const RunData* r, const json& j, const std::string& v) {
      return !r ? std::string("-") : j.is_null() ? "not available: " + r->error : v;
    };
    out += row({pol, size, cell(f, fj, fixed(num(fj, "decode_tokens_per_s"), 2)), cell(t, tj, fixed(num(tj, "decode_tokens_per_s"), 2)),
                fj.is_null() || tj.is_null() ? "-" : "**" + fixed(num(fj, "decode_tokens_per_s") / num(tj, "decode_tokens_per_s"), 2) + "**",
                cell(f, fj, rss_peak_cell(fj)), cell(t, tj, mib(num(tj, "rss_peak_bytes"))),
                fj.is_null() || tj.is_null() ? "-" : "**" + fixed(num(fj, "rss_peak_bytes") / num(tj, "rss_peak_bytes"), 2) + "**",
                (f ? file_cell(*f, json_prefix) : "") + (f && t ? ", " : "") + (t ? file_cell(*t, json_prefix) : "")});
  }
  out += "\n";
  for (const RunData* r : peers)
    if (str(r->data, "measured") == "sampled") {
      const json& at = member(r->data, "measure_at", true);
      std::string list;
      for (const json& x : at) list += (list.empty() ? "" : ", ") + grouped(x.get<double>());
      out += "PyTorch " + param(*r, "policy") + " was timed in windows of " + grouped(num(r->data, "measure_tokens")) +
             " decoded tokens from generated positions " + list +
             " (`--measure-at`), not over every token: at its speed the whole output takes hours. Between windows the "
             "positions are fast-forwarded (full: the skipped tokens go through the model in chunks, so the cache holds them "
             "all; rswa: the " + grouped(num(r->data, "window")) + " tokens before a window are decoded into the ring), so each "
             "window reads exactly the cache rows a decoded run reads there. Its tokens/s is over the whole output, from ms/token "
             "interpolated linearly between the windows (a step's work grows linearly with the cached tokens; folio's own samples "
             "show how straight that line is). Time spent fast-forwarding: " + fixed(num(r->data, "fill_ms") / 1000, 1) + " s.\n\n";
    }
  out += commands(peers);
  if (sz.contains("ref_tokens") && (num(sz, "ref_tokens") != num(sz, "full_size_command_ref_tokens") ||
                                    num(sz, "gen_tokens") != num(sz, "full_size_command_gen_tokens")))
    out += "The issue's size (4096-token reference + 8192 generated tokens, hours on 2 cores) is what a full "
           "`folio bench report` runs; this report ran P = " + grouped(num(sz, "ref_tokens")) + ", N = " + grouped(num(sz, "gen_tokens")) +
           ". The same commands with `--ref-tokens 4096 --gen-tokens 8192 --sample-every 1024` give the full-size figures.\n\n";
  return out;
}

// folio against tesseract on the held-out documents.
std::string tesseract_peer(const std::vector<RunData>& runs, const std::vector<const RunData*>& tess, const std::string& json_prefix) {
  std::string out;
  out += R"(### folio vs tesseract on the held-out pages

Debian's tesseract-ocr (English, `--psm 6`, pages rendered at 300 dpi, `OMP_THREAD_LIMIT` set to the
run's threads) reads the same held-out documents, scored by the same code; folio runs its default
model with rswa W = 128 and bf16 KV, pages rendered at the model's DPI. Pages/s count rendering and
reading (for tesseract also writing each page as a PNG for it).

)";
  const std::vector<std::string> cols = {"set", "folio CER", "tesseract CER", "folio pages/s", "tesseract pages/s", "speed ratio", "JSON"};
  out += header(cols);
  std::vector<const RunData*> shown;
  for (const RunData* t : tess) {
    const RunData* f = nullptr;
    for (const RunData& r : runs)
      if (param(r, "kind") == "accuracy" && param(r, "policy") == "rswa" && param(r, "kv_dtype") == "bf16" &&
          param(r, "pages") == param(*t, "pages") && param(r, "docs") == param(*t, "docs"))
        f = &r;
    const std::string set = param(*t, "docs") + " x " + param(*t, "pages") + "-page";
    const json fj = f ? f->data : json(), &tj = t->data;
    auto cell = [](const RunData* r, const json& j, const std::string& v) {
      return !r ? std::string("not run") : j.is_null() ? "not available: " + r->error : v;
    };
    out += row({set, cell(f, fj, percent(num(fj, "cer"))), cell(t, tj, percent(num(tj, "cer"))), cell(f, fj, fixed(num(fj, "pages_per_s"), 2)),
                cell(t, tj, fixed(num(tj, "pages_per_s"), 2)),
                fj.is_null() || tj.is_null() ? "-" : fixed(num(fj, "pages_per_s") / num(tj, "pages_per_s"), 1) + "x",
                (f ? file_cell(*f, json_prefix) + ", " : "") + file_cell(*t, json_prefix)});
    shown.push_back(t);
  }
  out += "\n";
  out += commands(shown);
  return out;
}

std::string peer_section(const nlohmann::json& manifest, const std::vector<RunData>& runs, const std::string& json_prefix) {
  const auto peers = of_kind(runs, "peer", "peer");
  const auto tess = of_kind(runs, "peer", "tesseract");
  if (peers.empty() && tess.empty()) return "";
  std::string out = "## Peers, same machine, same run\n\n";
  if (!peers.empty()) out += pytorch_peer(manifest, peers, json_prefix);
  if (!tess.empty()) out += tesseract_peer(runs, tess, json_prefix);
  return out;
}

// The value of `flag` in a command line ("" without it).
std::string flag_value(const std::string& command, const std::string& flag) {
  std::istringstream in(command);
  for (std::string word; in >> word;)
    if (word == flag && in >> word) return word;
  return "";
}

// Where the page's models/ path of the full-size decoder comes from: the run that made it for this
// report, or else the command that makes it, when a run reads it.
std::string made_models_note(const std::vector<RunData>& runs) {
  for (const RunData& r : runs)
    if (param(r, "kind") == "make-model")
      return "The full-size decoder was made for this report: `" + reader_command(str(*r.run, "command")) + "`" +
             (r.error.empty() ? "" : " (failed: " + r.error + ")") + ".\n\n";
  for (const RunData& r : runs) {
    const bool reads_decoder = param(r, "model_key") == "uocr-full" || (param(r, "kind") == "peer" && param(r, "engine") == "folio");
    const std::string dir = flag_value(reader_command(str(*r.run, "command")), "--model");
    if (!reads_decoder || dir.empty()) continue;
    std::string make;
    for (const std::string& w : make_decoder_argv(dir)) {
      if (!make.empty()) make += ' ';
      make += w;
    }
    return "`" + dir + "` is the full-size decoder with random weights (speed and bytes do not depend on the weights' values): `" +
           make + "` makes it.\n\n";
  }
  return "";
}

// ---- earlier runs -------------------------------------------------------------------------------

// The command that wrote an archived JSON, rebuilt from its fields.
std::string archived_command(const json& j) {
  const std::string suite = str(j, "suite");
  if (suite == "decode" && str(j, "reference") == "pages")
    return "folio bench decode --model " + str(j, "model") + " --pages " + integer(num(j, "pages")) + " --gen-tokens " +
           integer(num(j, "gen_tokens")) +
           (num(j, "context") > num(j, "trained_context") ? " --context " + integer(num(j, "context")) : std::string()) + " --policy " + str(j, "policy") + " --window " + integer(num(j, "window")) + " --kv-dtype " +
           str(j, "kv_dtype") + " --threads " + integer(num(j, "threads"));
  if (suite == "encode")
    return "folio bench encode --model " + str(j, "model") + " --mode " + str(j, "mode") + " --runs " + integer(num(j, "runs")) +
           " --threads " + integer(num(j, "threads"));
  if (suite == "decode")
    return "folio bench decode --model " + str(j, "model") + " --policy " + str(j, "policy") +
           (str(j, "policy") == "sparse" ? " --sparse-top-k " + integer(num(j, "sparse_top_k")) : "") + " --window " + integer(num(j, "window")) +
           " --kv-dtype " + str(j, "kv_dtype") + " --ref-tokens " + integer(num(j, "ref_tokens")) + " --gen-tokens " + integer(num(j, "gen_tokens")) +
           " --threads " + integer(num(j, "threads"));
  if (suite == "accuracy")
    return str(j, "engine") == "tesseract"
               ? "folio bench accuracy --engine tesseract --docs " + integer(num(j, "docs")) + " --pages " + integer(num(j, "pages"))
               : "folio bench accuracy --docs " + integer(num(j, "docs")) + " --pages " + integer(num(j, "pages")) + " --policy " +
                     str(j, "policy") +
                     (str(j, "policy") == "sparse" ? " --sparse-top-k " + integer(num(j, "sparse_top_k")) +
                                                         (j.contains("sparse_focus_pages") ? " --sparse-focus-pages " + integer(num(j, "sparse_focus_pages"))
                                                                                           : std::string(" (before focus pages existed)"))
                                                   : "") +
                     (str(j, "policy") == "rolling" ? " --resident-pages " + integer(num(j, "resident_pages")) : "") +
                     " --kv-dtype " + str(j, "kv_dtype") +
                     (j.contains("kv_offload") ? " --kv-offload DIR --kv-hot-bytes " + integer(num(j, "kv_hot_bytes")) : "") +
                     (j.contains("baseline_policy") ? " --baseline-policy " + str(j, "baseline_policy") + " --baseline-kv-dtype " +
                                                          str(j, "baseline_kv_dtype")
                                                    : "");
  if (suite == "divergence")
    return "folio bench divergence --model " + str(j, "model") + " --policy " + str(j, "policy") +
           (str(j, "policy") == "sparse" ? " --sparse-top-k " + integer(num(j, "sparse_top_k")) : "") + " --kv-dtype " + str(j, "kv_dtype") +
           " --ref-tokens " + integer(num(j, "ref_tokens")) + " --gen-tokens " + integer(num(j, "gen_tokens")) + " --threads " +
           integer(num(j, "threads"));
  if (suite == "serve")
    return "folio bench serve --concurrency " + integer(num(j, "concurrency")) + " --requests " + integer(num(j, "requests")) +
           (j.contains("caches") && !j["caches"].get<bool>() ? " --no-cache" : "");
  return "";
}

std::string archive_section(const std::vector<std::pair<std::string, json>>& archive, const std::map<std::string, std::string>& plots,
                            const std::string& image_prefix) {
  if (archive.empty()) return "";
  const std::string dir = image_prefix + "archive/";
  std::string out = R"(## Earlier runs kept for reference

JSON files of earlier, longer runs of the same suites, kept in `archive/` next to this report's JSON
files (written by the commands below, at the commit and on the machine each file's run used; the
figures are read from the files like every other figure here).

)";
  out += image(plots, "decode_archive.png", "Earlier decode runs: KV bytes and ms/token vs generated tokens", image_prefix);
  std::string dec, acc, srv, div, enc, cmds;
  for (const auto& [name, j] : archive) {
    const std::string file = "[" + name + "](" + dir + name + ")", suite = str(j, "suite");
    if (suite == "decode") dec += decode_row(str(j, "policy"), str(j, "kv_dtype"), j, file);
    else if (suite == "accuracy" && str(j, "engine") == "tesseract")
      acc += row({"tesseract", "-", percent(num(j, "cer")) + " (" + grouped(num(j, "errors")) + " / " + grouped(num(j, "chars")) + ")", "-", "-", "-",
                  "-", "-", "-", "-", "-", "-", fixed(num(j, "pages_per_s"), 2), file});
    else if (suite == "accuracy") acc += accuracy_row(str(j, "policy"), str(j, "kv_dtype"), j, baseline_passes_of(j, {}), file);
    else if (suite == "serve") srv += serve_row(j, file);
    else if (suite == "encode")
      enc += row({str(j, "mode"), integer(num(j, "page_width")) + "x" + integer(num(j, "page_height")), grouped(num(j, "image_tokens")),
                  grouped(num(j, "tiles")), fixed(num(j, "ms_per_page_median"), 1), fixed(num(j, "global_view_ms_median"), 1),
                  integer(num(j, "runs")), integer(num(j, "threads")), mib(num(j, "rss_peak_bytes")), file});
    else if (suite == "divergence")
      div += row({str(j, "policy") + (str(j, "policy") == "sparse" ? " (top-" + integer(num(j, "sparse_top_k")) + ")" : std::string()),
                  str(j, "kv_dtype"), str(j, "baseline_policy") + ", f32",
                  grouped(num(j, "ref_tokens")) + " + " + grouped(num(j, "gen_tokens")),
                  fixed(num(j, "kl_mean"), 5) + " / " + fixed(num(j, "kl_max"), 5), fixed(num(j, "top1_agreement"), 4),
                  fixed(num(j, "logits_rel_l2_mean"), 4), grouped(num(j, "kv_bytes_peak")) + " (" + grouped(num(j, "baseline_kv_bytes_peak")) + ")",
                  grouped(num(j, "kv_active_bytes_max")) + " (" + grouped(num(j, "baseline_kv_active_bytes_max")) + ")", file});
    cmds += reader_command(archived_command(j)) + "\n";
  }
  if (!dec.empty()) out += header(kDecodeColumns) + dec + "\n";
  for (const auto& [name, j] : archive)
    if (str(j, "suite") == "decode") out += decode_finding(name, j);
  if (!acc.empty()) out += "\n" + header(kAccColumns) + acc + "\n";
  if (!srv.empty()) out += header(kServeColumns) + srv + "\n";
  if (!enc.empty())
    out += "Vision encoder time per page (median of the runs; preprocessing, the views, the tiles and assembly):\n\n" +
           header({"mode", "page", "image tokens", "tiles", "ms per page", "global view ms", "runs", "threads", "RSS peak", "JSON"}) + enc + "\n";
  if (!div.empty())
    out += "Logit divergence, teacher-forced on the baseline's greedy tokens (KL of the run's next-token distribution from the "
           "baseline's, in nats; top-1: the run's choice is the baseline's token):\n\n" +
           header({"policy", "KV dtype", "baseline", "reference + generated", "KL mean / max", "top-1 agreement", "logits rel. L2",
                   "KV peak (baseline)", "KV read per token, most (baseline)", "JSON"}) +
           div + "\n";
  return out + "Commands:\n\n```\n" + cmds + "```\n";
}

PlotSeries decode_series(const std::string& title, const json& j, bool kv) {
  PlotSeries s{title, {}, ""};
  for (const json& x : samples_of(j))
    s.points.emplace_back(num(x, "pos"), kv ? num(x, "kv_bytes") / (1 << 20) : num(x, "ms_per_token"));
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<RunData> load_runs(const json& manifest, const fs::path& json_dir) {
  std::vector<RunData> out;
  if (!manifest.contains("runs") || !manifest["runs"].is_array()) return out;
  for (const json& r : manifest["runs"]) {  // by reference: RunData points at the manifest's entries
    RunData d;
    d.run = &r;
    const std::string file = str(r, "json");
    if (file.empty()) {
      d.error = str(r, "error");
    } else if (str(r, "status") != "ok") {
      d.error = str(r, "error", "not run");
    } else {
      std::ifstream in(json_dir / file);
      d.data = in ? json::parse(in, nullptr, false) : json();
      if (!in) d.error = (json_dir / file).string() + " is missing", d.data = json();
      else if (d.data.is_discarded() || !d.data.is_object()) d.error = (json_dir / file).string() + " is not a JSON object", d.data = json();
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::pair<std::string, json>> load_archive(const fs::path& archive_dir) {
  std::vector<std::pair<std::string, json>> out;
  std::error_code ec;
  if (!fs::is_directory(archive_dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(archive_dir, ec)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    json j = json::parse(in, nullptr, false);
    if (j.is_object() && (str(j, "suite") == "decode" || str(j, "suite") == "accuracy" || str(j, "suite") == "serve" ||
                            str(j, "suite") == "divergence" || str(j, "suite") == "encode"))
      out.emplace_back(e.path().filename().string(), std::move(j));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

namespace {

// Decode plots draw each policy in one colour (the rising full line against the flat rswa one is
// the picture) and each KV dtype with its own points and dashes, in a fixed order whatever order
// the runs were made in.
constexpr const char* kPlotPolicies[] = {"full", "rswa", "sparse"};
constexpr const char* kPlotPolicyColours[] = {"#d62728", "#1f77b4", "#2ca02c"};
constexpr const char* kPlotDtypes[] = {"f32", "bf16", "f16", "q8", "q4"};
constexpr const char* kPlotDtypeMarks[] = {"pt 5 dt 1", "pt 7 dt 1", "pt 9 dt 1", "pt 13 dt 2", "pt 11 dt 3"};

template <size_t N>
size_t rank_of(const char* const (&names)[N], const std::string& v) {
  for (size_t i = 0; i < N; ++i)
    if (v == names[i]) return i;
  return N;
}

std::string decode_style(const std::string& policy, const std::string& dtype) {
  const size_t p = rank_of(kPlotPolicies, policy), d = rank_of(kPlotDtypes, dtype);
  if (p == std::size(kPlotPolicies) || d == std::size(kPlotDtypes)) return "";
  return std::string("lc rgb '") + kPlotPolicyColours[p] + "' " + kPlotDtypeMarks[d];
}

}  // namespace

std::vector<PlotSpec> plan_plots(const std::vector<RunData>& runs, const std::vector<std::pair<std::string, json>>& archive) {
  std::vector<PlotSpec> out;
  auto keep = [&](PlotSpec spec) {
    for (const PlotPanel& p : spec.panels)
      for (const PlotSeries& s : p.series)
        if (s.points.size() >= 2) return out.push_back(std::move(spec));
  };
  for (const std::string key : {"uocr-full", "mini"}) {
    PlotSpec spec{"decode_" + key + ".png", "", "generated tokens", {{"KV bytes in the pool (MiB)", {}}, {"ms per token (mean over the interval)", {}}}};
    std::vector<const RunData*> mine;
    for (const RunData& r : runs)
      if (!r.data.is_null() && param(r, "kind") == "decode" && param(r, "model_key") == key) mine.push_back(&r);
    std::stable_sort(mine.begin(), mine.end(), [](const RunData* a, const RunData* b) {
      return std::pair(rank_of(kPlotPolicies, param(*a, "policy")), rank_of(kPlotDtypes, param(*a, "kv_dtype"))) <
             std::pair(rank_of(kPlotPolicies, param(*b, "policy")), rank_of(kPlotDtypes, param(*b, "kv_dtype")));
    });
    for (const RunData* rp : mine) {
      const RunData& r = *rp;
      const std::string t = param(r, "policy") + " (" + param(r, "kv_dtype") + " KV)";
      for (bool kv : {true, false}) {
        PlotSeries s = decode_series(t, r.data, kv);
        s.style = decode_style(param(r, "policy"), param(r, "kv_dtype"));
        spec.panels[kv ? 0 : 1].series.push_back(std::move(s));
      }
      spec.title = model_title(key) + ": P = " + grouped(num(r.data, "ref_tokens")) + " reference tokens, W = " + grouped(num(r.data, "window")) +
                   ", " + grouped(num(r.data, "threads")) + " threads";
    }
    // sparse keeps what rswa keeps: its KV line lies exactly on rswa's of the same dtype and would
    // hide it. Such a line is drawn wide just before rswa's, so it shows as a band around it.
    std::vector<PlotSeries>& kv = spec.panels[0].series;
    for (size_t i = 0; i < mine.size(); ++i) {
      if (param(*mine[i], "policy") != "sparse") continue;
      for (size_t j = 0; j < i; ++j)
        if (param(*mine[j], "policy") == "rswa" && param(*mine[j], "kv_dtype") == param(*mine[i], "kv_dtype") && kv[j].points == kv[i].points) {
          kv[i].style += " lw 6";
          kv[i].title += ": the same bytes as rswa (the wide band under its line)";
          std::rotate(kv.begin() + j, kv.begin() + i, kv.begin() + i + 1);
          std::rotate(mine.begin() + j, mine.begin() + i, mine.begin() + i + 1);
          break;
        }
    }
    keep(spec);
  }
  PlotSpec pages{"pages.png", "One document of P pages, rswa W = 128, bf16 KV", "pages", {{"MiB", {{"peak RSS", {}, ""}, {"KV peak", {}, ""}}}}};
  for (const RunData& r : runs)
    if (!r.data.is_null() && param(r, "kind") == "pages") {
      pages.panels[0].series[0].points.emplace_back(num(r.data, "pages"), num(r.data, "rss_peak_bytes") / (1 << 20));
      pages.panels[0].series[1].points.emplace_back(num(r.data, "pages"), num(r.data, "kv_bytes_peak") / (1 << 20));
    }
  keep(pages);
  PlotSpec arch{"decode_archive.png", "Earlier runs", "generated tokens", {{"KV bytes in the pool (MiB)", {}}, {"ms per token (mean over the interval)", {}}}};
  for (const auto& [name, j] : archive)
    if (str(j, "suite") == "decode") {
      const std::string t = str(j, "policy") + " (" + str(j, "kv_dtype") + " KV, P = " + grouped(num(j, "ref_tokens")) + ")";
      arch.panels[0].series.push_back(decode_series(t, j, true));
      arch.panels[1].series.push_back(decode_series(t, j, false));
    }
  keep(arch);
  return out;
}

std::string gnuplot_script(const PlotSpec& spec, const std::string& png_path) {
  std::ostringstream g;
  int block = 0;
  std::vector<std::vector<std::string>> names(spec.panels.size());
  for (size_t p = 0; p < spec.panels.size(); ++p)
    for (const PlotSeries& s : spec.panels[p].series) {
      const std::string name = "$d" + std::to_string(block++);
      names[p].push_back(name);
      g << name << " << EOD\n";
      for (auto [x, y] : s.points)
        if (std::isfinite(x) && std::isfinite(y)) g << x << " " << y << "\n";
      g << "EOD\n";
    }
  // Many series (a decode matrix): the key goes below the plots, where it hides no line.
  size_t most = 0;
  for (const PlotPanel& p : spec.panels) most = std::max(most, p.series.size());
  const bool key_below = most > 6;
  g << "set terminal pngcairo size " << 600 * spec.panels.size() << "," << (key_below ? 600 : 480) << " font 'DejaVu Sans,10'\n"
    << "set output " << quoted(png_path) << "\n"
    << "set multiplot layout 1," << spec.panels.size() << " title " << quoted(spec.title) << "\n"
    << "set xlabel " << quoted(spec.xlabel) << "\nset grid\n" << (key_below ? "set key below maxcols 2\n" : "set key top left\n")
    << "set yrange [0:*]\n";
  for (size_t p = 0; p < spec.panels.size(); ++p) {
    g << "set ylabel " << quoted(spec.panels[p].ylabel) << "\nplot ";
    for (size_t i = 0; i < names[p].size(); ++i) {
      const std::string& style = spec.panels[p].series[i].style;
      g << (i ? ", " : "") << names[p][i] << " using 1:2 with linespoints " << (style.find(" lw ") == std::string::npos ? "lw 2 " : "")
        << style << (style.empty() ? "" : " ") << "title " << quoted(spec.panels[p].series[i].title);
    }
    g << "\n";
  }
  g << "unset multiplot\n";
  return g.str();
}

// The runs of the standard set (manifest "planned") that have no result in this report yet: a
// full-size report is filled over several invocations, and the page must say what it still lacks.
std::string unfinished_section(const json& manifest, const std::vector<RunData>& runs) {
  if (!manifest.contains("planned") || !manifest["planned"].is_array()) return "";
  std::set<std::string> have;
  for (const RunData& r : runs)
    if (r.error.empty()) have.insert(str(*r.run, "id"));
  std::map<std::string, std::vector<std::string>> missing;  // section -> commands
  size_t count = 0;
  for (const json& p : manifest["planned"])
    if (!have.count(p.value("id", ""))) missing[p.value("section", "")].push_back(p.value("command", "")), ++count;
  if (count == 0) return "";
  std::string out = "## Not yet run\n\n" + std::to_string(count) + " of the standard set's " + std::to_string(manifest["planned"].size()) +
                    " runs have no result in this report yet (`--resume` runs them and keeps the rest):\n\n";
  for (const std::string& section : kReportSections) {
    const auto it = missing.find(section);
    if (it == missing.end()) continue;
    out += "- " + section + ": " + std::to_string(it->second.size()) + " runs\n";
    for (const std::string& c : it->second) out += "  - `" + reader_command(c) + "`\n";
  }
  return out + "\n";
}

namespace {

// Whether two spellings of a directory (relative ones to the working directory) name the same one.
bool same_directory(const std::string& a, const std::string& b) {
  return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> load_hand_sections(const fs::path& sections_dir) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!fs::is_directory(sections_dir)) return out;
  for (const auto& e : fs::directory_iterator(sections_dir))
    if (e.path().extension() == ".md") {
      std::ifstream in(e.path(), std::ios::binary);
      out.emplace_back(e.path().filename().string(), std::string(std::istreambuf_iterator<char>(in), {}));
    }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::string hand_section(const std::vector<std::pair<std::string, std::string>>& sections, const std::string& dir) {
  if (sections.empty()) return "";
  std::string out = "## Side studies (hand-run commands)\n\nMeasurements the standard set does not run, each with its "
                    "commands and JSON, kept in `" + dir + "` and copied in as written.\n\n";
  for (const auto& [name, text] : sections) {
    out += text;
    if (!text.ends_with("\n\n")) out += text.ends_with("\n") ? "\n" : "\n\n";
  }
  return out;
}

}  // namespace

std::string render_report(const json& manifest, const std::vector<RunData>& runs, const std::vector<std::pair<std::string, json>>& archive,
                          const std::vector<std::pair<std::string, std::string>>& hand_sections,
                          const std::map<std::string, std::string>& plots, const std::string& image_prefix, const std::string& json_prefix) {
  const json& m = member(manifest, "machine", false);
  const bool quick = manifest.value("quick", false);
  std::string out = "# folio benchmarks\n\n";
  out += "Generated by `" + reader_command(str(manifest, "command")) + "` from the JSON files in `" + str(manifest, "json_dir", json_prefix) +
         "` (one per run; each table names its file and the command that wrote it). Do not edit by hand: rerun the command, or add "
         "`--render-only` to rewrite this page and the plots from the JSON files (the side studies are files of their own, "
         "in `" + image_prefix + "sections/`).\n\n";
  out += "- Machine: " + str(m, "cpu", "unknown CPU") + ", " + grouped(num(m, "cores")) + " cores, ISA " + str(m, "isa", "?") + ", " +
         fixed(num(m, "memory_bytes") / (1 << 30), 1) + " GiB memory\n";
  out += "- Threads per run: " + grouped(num(manifest, "threads")) + "\n";
  // A report filled over several invocations (--resume) holds runs of several commits: name each.
  std::map<std::string, int> commits;
  size_t kept = 0;
  for (const RunData& r : runs) {
    if (param(r, "kind") == "make-model") continue;
    ++commits[str(*r.run, "commit", "unknown")];
    kept += r.run->value("resumed", false);
  }
  out += "- Commit: " + str(m, "commit", "unknown") + "; date (UTC): " + str(m, "date", "unknown") + " (this invocation)\n";
  if (kept > 0 || commits.size() > 1) {
    std::string list;
    for (const auto& [c, n] : commits) list += (list.empty() ? "" : ", ") + c + " (" + std::to_string(n) + ")";
    out += "- Runs by the commit they ran at: " + list + "; " + std::to_string(kept) +
           " of them were kept from earlier invocations (`--resume`), each with its own command\n";
  }
  // Runs whose commands wrote into another directory: the report directory was moved since.
  std::map<std::string, int> elsewhere;
  const std::string here = str(manifest, "json_dir", json_prefix);
  for (const RunData& r : runs)
    if (const std::string d = json_dir_of(str(*r.run, "command")); !d.empty() && !same_directory(d, here)) ++elsewhere[d];
  for (const auto& [d, n] : elsewhere)
    out += "- Moved: " + std::to_string(n) + " of the runs wrote their JSON into `" + d + "`; the files were moved into `" + here +
           "` since, and the commands on this page name the directory each run wrote to\n";
  out += std::string("- Sizes: ") + (quick ? "**--quick** (small sizes; a full run uses the issue's sizes)" : "full") + ": `" +
         manifest.value("sizes", json::object()).dump() + "`\n";
  double wall = 0;
  size_t failed = 0;
  for (const RunData& r : runs) {
    wall += num(*r.run, "wall_s") > 0 ? num(*r.run, "wall_s") : 0;
    failed += !r.error.empty();
  }
  out += "- Runs: " + std::to_string(runs.size()) + " (" + std::to_string(failed) + " not available), " + fixed(wall / 60, 1) + " minutes in all\n\n";
  out += made_models_note(runs);
  out += decode_section(runs, plots, image_prefix, json_prefix);
  out += pages_section(runs, plots, image_prefix, json_prefix);
  out += accuracy_section(runs, json_prefix);
  out += service_section(runs, json_prefix);
  out += peer_section(manifest, runs, json_prefix);
  out += hand_section(hand_sections, image_prefix + "sections/");
  out += archive_section(archive, plots, image_prefix);
  out += unfinished_section(manifest, runs);
  return out;
}

}  // namespace folio::cli
