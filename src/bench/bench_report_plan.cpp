#include "bench/bench_report_plan.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace folio::cli {

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void check_subset(const std::vector<std::string>& given, const std::vector<std::string>& known, const std::string& what) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  for (const auto& g : given)
    if (!has(known, g)) throw_invalid(what + ": unknown '" + g + "' (known: " + list + ")");
  if (given.empty()) throw_invalid(what + ": empty list (known: " + list + ")");
}

// Sizes of the standard set. Full: what the issue asks for; quick: the same shapes, small enough
// for under 10 minutes on 2 cores.
struct Sizes {
  int64_t big_ref, big_gen, big_every;     // full-size decoder
  int64_t mini_ref, mini_gen, mini_every;  // the OCR model's decoder
  std::vector<std::string> big_dtypes;     // KV dtypes run on the full-size decoder
  std::vector<int> page_counts;
  struct AccSet { int pages, docs; bool all; };  // all: every policy x KV dtype; else rswa and sparse with bf16
  std::vector<AccSet> acc_sets;
  std::vector<std::pair<int, int>> tesseract;  // (pages, docs): the same documents as accuracy
  std::vector<std::pair<int, int>> serve;      // (concurrency, requests)
  int64_t peer_ref, peer_gen;
  std::string peer_measure_at = "";  // PyTorch's timed windows (empty: every token timed)
};

Sizes sizes_for(bool quick) {
  if (quick)
    return {256, 256, 32, 512, 1024, 64, {"bf16"}, {1, 10, 20}, {{1, 5, true}, {20, 1, false}}, {{1, 5}},
            {{1, 8}, {4, 16}, {16, 32}}, 32, 16};
  // Full: positions up to the full-size decoder's context of 32K (P + N = 32768).
  return {4096, 28672, 1024, 4096, 32768, 1024, {"f32", "bf16", "q8", "q4"}, {1, 10, 40, 100, 500},
          {{1, 20, true}, {20, 3, true}, {100, 1, true}}, {{1, 20}, {20, 3}}, {{1, 100}, {4, 200}, {16, 200}}, 4096, 8192,
          "0,2048,4096,6144,8128"};
}

std::string s(int64_t v) { return std::to_string(v); }

}  // namespace

std::vector<std::string> make_decoder_argv(const std::string& out) {
  return {"folio", "make-model", "--arch", "unlimited-ocr-decoder", "--preset", "full", "--seed", "1", "--dtype", "bf16", "--out", out};
}

namespace {

// The runs of one plan, section by section.
struct Planner {
  const ReportOptions& o;
  const Sizes z;
  const std::string json_dir, threads;
  ReportPlan plan;

  explicit Planner(const ReportOptions& opts) : o(opts), z(sizes_for(opts.quick)), json_dir(opts.out + "/json/"), threads(s(opts.threads)) {}
  void add(PlannedRun r) { plan.runs.push_back(std::move(r)); }
  // Names the OCR model in a command (after `folio bench SUITE`) when the report names one.
  void mini_opt(std::vector<std::string>& argv) const {
    if (!o.mini_model_display.empty()) argv.insert(argv.begin() + 3, {"--model", o.mini_model_display});
  }

  // decode: every policy x KV dtype on the mini model, then on the full-size decoder.
  void decode() {
    struct M { std::string key, dir; int64_t ref, gen, every; std::vector<std::string> dtypes; };
    const std::string mini_dir = o.mini_model_display.empty() ? o.mini_model : o.mini_model_display;
    // The mini model's runs first: minutes each against about an hour for each full-size run, so a
    // report stopped part way (and filled in later with --resume) already has one whole matrix.
    for (const M& m : {M{"mini", mini_dir, z.mini_ref, z.mini_gen, z.mini_every, o.kv_dtypes},
                       M{"uocr-full", o.decoder_model, z.big_ref, z.big_gen, z.big_every, z.big_dtypes}})
      for (const std::string policy : {"full", "rswa", "sparse"}) {
        if (!has(o.policies, policy)) continue;
        for (const std::string& dt : m.dtypes) {
          if (!has(o.kv_dtypes, dt)) continue;
          const std::string id = "decode_" + m.key + "_" + policy + "_" + dt;
          add({id, "decode",
               {"folio", "bench", "decode", "--model", m.dir, "--policy", policy, "--window", "128", "--kv-dtype", dt, "--ref-tokens",
                s(m.ref), "--gen-tokens", s(m.gen), "--sample-every", s(m.every), "--threads", threads, "--json", json_dir + id + ".json"},
               {{"kind", "decode"}, {"model_key", m.key}, {"policy", policy}, {"kv_dtype", dt}}, true, ""});
        }
      }
    plan.sizes["decode"] = {{"uocr-full", {{"ref_tokens", z.big_ref}, {"gen_tokens", z.big_gen}, {"sample_every", z.big_every}, {"kv_dtypes", z.big_dtypes}}},
                            {"mini", {{"ref_tokens", z.mini_ref}, {"gen_tokens", z.mini_gen}, {"sample_every", z.mini_every}}}};
  }

  // pages: one document per size, rswa W=128 with bf16 KV, measured once (baseline = the run itself).
  void pages() {
    // One document per size, rswa W=128 with bf16 KV, measured once (baseline = the run itself).
    for (int p : z.page_counts) {
      std::vector<std::string> argv = {"folio", "bench", "accuracy", "--docs", "1", "--pages", s(p), "--policy", "rswa",
                                       "--kv-dtype", "bf16", "--baseline-policy", "rswa", "--baseline-kv-dtype", "bf16",
                                       "--threads", threads, "--json", json_dir + "pages_p" + s(p) + ".json"};
      mini_opt(argv);
      add({"pages_p" + s(p), "pages", argv, {{"kind", "pages"}, {"pages", p}}, true, ""});
    }
    plan.sizes["pages"] = {{"pages", z.page_counts}, {"docs", 1}};
  }

  // accuracy: every policy x KV dtype on the smallest sets, rswa and sparse in bf16 on the others.
  void accuracy() {
    for (const auto& set : z.acc_sets)
      for (const std::string& policy : o.policies)
        for (const std::string& dt : o.kv_dtypes) {
          if (!set.all && (dt != "bf16" || (policy != "rswa" && policy != "sparse"))) continue;
          if (policy == "full" && dt == "f32") continue;  // the baseline itself
          const std::string id = "accuracy_p" + s(set.pages) + "_" + policy + "_" + dt;
          std::vector<std::string> argv = {"folio", "bench", "accuracy", "--docs", s(set.docs), "--pages", s(set.pages), "--policy", policy,
                                           "--kv-dtype", dt, "--threads", threads, "--json", json_dir + id + ".json"};
          mini_opt(argv);
          add({id, "accuracy", argv, {{"kind", "accuracy"}, {"pages", set.pages}, {"docs", set.docs}, {"policy", policy}, {"kv_dtype", dt}}, true, ""});
        }
    nlohmann::json sets = nlohmann::json::array();
    for (const auto& set : z.acc_sets)
      sets.push_back({{"pages", set.pages}, {"docs", set.docs}, {"runs", set.all ? "every policy x KV dtype" : "rswa and sparse, bf16 KV"}});
    plan.sizes["accuracy"] = sets;
  }

  // service: bench serve at each concurrency.
  void service() {
    for (auto [c, n] : z.serve) {
      std::vector<std::string> argv = {"folio", "bench", "serve", "--concurrency", s(c), "--requests", s(n), "--threads", threads,
                                       "--json", json_dir + "serve_c" + s(c) + ".json"};
      mini_opt(argv);
      add({"serve_c" + s(c), "service", argv, {{"kind", "serve"}, {"concurrency", c}}, true, ""});
    }
    nlohmann::json sv = nlohmann::json::array();
    for (auto [c, n] : z.serve) sv.push_back({{"concurrency", c}, {"requests", n}});
    plan.sizes["service"] = sv;
  }

  // peer: the same decode in PyTorch eager, and tesseract on the accuracy documents.
  void peer() {
    for (const std::string policy : {"full", "rswa"}) {
      const std::string every = s(std::max<int64_t>(1, z.peer_gen / 8));
      add({"peer_folio_" + policy, "peer",
           {"folio", "bench", "decode", "--model", o.decoder_model, "--policy", policy, "--window", "128", "--kv-dtype", "f32",
            "--ref-tokens", s(z.peer_ref), "--gen-tokens", s(z.peer_gen), "--sample-every", every, "--threads", threads, "--json",
            json_dir + "peer_folio_" + policy + ".json"},
           {{"kind", "peer"}, {"engine", "folio"}, {"policy", policy}}, true, ""});
      std::vector<std::string> torch_argv = {o.python, o.peer_script.empty() ? "tools/reference/bench_decode.py" : o.peer_script, "--model",
                                             o.decoder_model, "--policy", policy, "--window", "128", "--dtype", "f32", "--ref-tokens",
                                             s(z.peer_ref), "--gen-tokens", s(z.peer_gen), "--sample-every", every, "--threads",
                                             s(o.threads)};
      // At the full size PyTorch eager would take hours per policy: it is timed in windows spread
      // over the output (bench_decode.py --measure-at), folio decodes every token.
      if (!z.peer_measure_at.empty()) torch_argv.insert(torch_argv.end(), {"--measure-at", z.peer_measure_at, "--measure-tokens", "64"});
      torch_argv.insert(torch_argv.end(), {"--json", json_dir + "peer_pytorch_" + policy + ".json"});
      add({"peer_pytorch_" + policy, "peer", torch_argv, {{"kind", "peer"}, {"engine", "pytorch"}, {"policy", policy}}, true,
           o.peer_script.empty() ? o.peer_unavailable : ""});
    }
    // Tesseract on the documents of the accuracy section's sets (same pages, same CER code).
    for (auto [p, d] : z.tesseract) {
      const std::string id = "tesseract_p" + s(p);
      add({id, "peer",
           {"folio", "bench", "accuracy", "--engine", "tesseract", "--docs", s(d), "--pages", s(p), "--json", json_dir + id + ".json"},
           {{"kind", "tesseract"}, {"pages", p}, {"docs", d}}, true, ""});
      // folio on the same documents, when the accuracy section does not already run them.
      if (!has(o.sections, "accuracy") || !has(o.policies, "rswa") || !has(o.kv_dtypes, "bf16")) {
        const std::string fid = "accuracy_p" + s(p) + "_rswa_bf16";
        std::vector<std::string> argv = {"folio", "bench", "accuracy", "--docs", s(d), "--pages", s(p), "--policy", "rswa",
                                         "--kv-dtype", "bf16", "--threads", threads, "--json", json_dir + fid + ".json"};
        mini_opt(argv);
        add({fid, "peer", argv, {{"kind", "accuracy"}, {"pages", p}, {"docs", d}, {"policy", "rswa"}, {"kv_dtype", "bf16"}}, true, ""});
      }
    }
    nlohmann::json ts = nlohmann::json::array();
    for (auto [p, d] : z.tesseract) ts.push_back({{"pages", p}, {"docs", d}});
    plan.sizes["peer"] = {{"ref_tokens", z.peer_ref}, {"gen_tokens", z.peer_gen}, {"tesseract", ts},
                          {"full_size_command_ref_tokens", 4096}, {"full_size_command_gen_tokens", 8192}};
  }
};

}  // namespace

ReportPlan plan_report(const ReportOptions& o) {
  check_subset(o.sections, kReportSections, "--sections");
  check_subset(o.policies, {"full", "rswa", "sparse", "rolling"}, "--policies");
  check_subset(o.kv_dtypes, {"f32", "bf16", "f16", "q8", "q4"}, "--kv-dtypes");
  Planner p(o);
  const bool big_needed = has(o.sections, "decode") || has(o.sections, "peer");
  if (big_needed && o.make_decoder_model)
    p.add({"make_model", has(o.sections, "decode") ? "decode" : "peer", make_decoder_argv(o.decoder_model), {{"kind", "make-model"}}, false, ""});
  if (has(o.sections, "decode")) p.decode();
  if (has(o.sections, "pages")) p.pages();
  if (has(o.sections, "accuracy")) p.accuracy();
  if (has(o.sections, "service")) p.service();
  if (has(o.sections, "peer")) p.peer();
  return std::move(p.plan);
}

std::vector<PlannedRun> select_runs(const ReportPlan& plan, const std::vector<std::string>& ids, const std::string& decoder_model) {
  if (ids.empty()) throw_invalid("--only: empty list (give run ids, e.g. decode_mini_rswa_bf16)");
  for (const std::string& id : ids) {
    const bool known = std::any_of(plan.runs.begin(), plan.runs.end(), [&](const PlannedRun& r) { return r.id == id && r.id != "make_model"; });
    if (known) continue;
    std::string some;
    int listed = 0;
    for (const PlannedRun& r : plan.runs)
      if (r.id != "make_model" && listed++ < 4) some += (some.empty() ? "" : ", ") + r.id;
    throw_invalid("--only: no run '" + id + "' in the sections, policies and KV dtypes given (run ids are the JSON file names" +
                  (some.empty() ? std::string(")") : ", e.g. " + some + ")"));
  }
  std::vector<PlannedRun> out;
  for (const PlannedRun& r : plan.runs)
    if (has(ids, r.id)) out.push_back(r);
  const bool reads_decoder = std::any_of(out.begin(), out.end(), [&](const PlannedRun& r) { return has(r.argv, decoder_model); });
  for (const PlannedRun& r : plan.runs)
    if (r.id == "make_model" && reads_decoder) out.insert(out.begin(), r);
  return out;
}

namespace {

// Where the --json argument's value starts and ends in `command` (npos, npos when there is none).
std::pair<size_t, size_t> json_argument(const std::string& command) {
  const std::string flag = " --json ";
  const size_t at = command.rfind(flag);
  if (at == std::string::npos) return {std::string::npos, std::string::npos};
  const size_t begin = at + flag.size();
  return {begin, std::min(command.find(' ', begin), command.size())};
}

}  // namespace

std::string json_dir_of(const std::string& command) {
  const auto [begin, end] = json_argument(command);
  if (begin == std::string::npos) return "";
  const size_t slash = command.rfind('/', end - 1);
  return slash == std::string::npos || slash < begin ? "" : command.substr(begin, slash + 1 - begin);
}

std::string with_json_dir(const std::string& command, const std::string& dir) {
  const size_t begin = json_argument(command).first;
  if (begin == std::string::npos) return command;
  const std::string old = json_dir_of(command);
  return command.substr(0, begin) + dir + command.substr(begin + old.size());
}

}  // namespace folio::cli
