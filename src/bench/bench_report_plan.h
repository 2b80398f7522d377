// The standard benchmark set of `folio bench report` (issue 7): which `folio bench` runs (and peer
// runs) make each section, at full or --quick sizes. Pure: it only lists commands.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace folio::cli {

// Sections in report order.
inline const std::vector<std::string> kReportSections = {"decode", "pages", "accuracy", "service", "peer"};

struct ReportOptions {
  std::string out;                     // DIR: JSON files go to DIR/json, plots to DIR, markdown to DIR.md
  bool quick = false;
  std::vector<std::string> sections = kReportSections;
  std::vector<std::string> policies = {"full", "rswa", "sparse", "rolling"};  // decode: all but rolling
  std::vector<std::string> kv_dtypes = {"f32", "bf16", "q8", "q4"};
  std::string decoder_model;           // the full-size random-weight Unlimited-OCR decoder
  bool make_decoder_model = false;     // decoder_model is missing: make it first (folio make-model)
  std::string mini_model;              // the OCR model ("" = the shipped folio-mini-ocr)
  std::string mini_model_display;      // how commands name it ("" = omitted where optional)
  std::string python = "/usr/bin/python3";
  std::string peer_script;             // tools/reference/bench_decode.py ("" = no PyTorch peer)
  std::string peer_unavailable;        // why there is no PyTorch peer, when peer_script is ""
  int threads = 0;                     // passed to every run (0 = one per core)
};

struct PlannedRun {
  std::string id;                 // DIR/json/<id>.json
  std::string section;
  std::vector<std::string> argv;  // argv[0] "folio" stands for the folio executable
  nlohmann::json params;          // what the renderer needs to place the result (kind, policy, ...)
  bool writes_json = true;
  std::string skip_reason;        // non-empty: not run, reported as "not available: <reason>"
};

struct ReportPlan {
  std::vector<PlannedRun> runs;
  nlohmann::json sizes;  // the sizes used, per section (stated in the report)
};

// The command that makes the full-size random-weight decoder the decode and peer sections read.
std::vector<std::string> make_decoder_argv(const std::string& out);

// InvalidInput for an unknown section, policy or KV dtype.
ReportPlan plan_report(const ReportOptions& o);

// The runs of `plan` named in `ids` (run ids: the names of their JSON files without .json), in plan
// order, with the step that makes the full-size decoder when one of them reads it. InvalidInput for
// an id that is not among the plan's runs, naming a few that are.
std::vector<PlannedRun> select_runs(const ReportPlan& plan, const std::vector<std::string>& ids, const std::string& decoder_model);

// The directory a run's command line writes its JSON into: its --json argument up to the last '/'
// ("docs/benchmarks/json/"); "" when it has no --json. A report directory can be moved (git mv)
// after its runs were made, and their recorded commands still name the old one.
std::string json_dir_of(const std::string& command);

// `command` with the directory of its --json argument replaced by `dir` (ending in '/'); unchanged
// when it has no --json.
std::string with_json_dir(const std::string& command, const std::string& dir);

}  // namespace folio::cli
