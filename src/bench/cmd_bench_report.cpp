// folio bench report: runs the standard benchmark set (issue 7) as subprocesses of this executable,
// each writing its JSON into DIR/json/, then writes DIR.md and the plots (DIR/*.png) from those
// files alone, so every figure in the report is traceable to a file and a command. A run that fails
// is reported as "not available: <its error>" and the report goes on. `--render-only` rewrites the
// markdown and plots from the JSON files of an earlier run (DIR/json/report.json lists them).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "bench/bench_report_plan.h"
#include "bench/bench_report_render.h"
#include "cmdline/commands.h"
#include "bench/machine_info.h"
#include "bench/subprocess.h"
#include "core/error.h"
#include "runtime/default_model.h"

namespace folio::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ReportArgs {
  std::string out, sections, policies, kv_dtypes, only, folio, cache, decoder_model, mini_model, python = "/usr/bin/python3";
  bool quick = false, render_only = false, resume = false;
  int threads = 0;
};

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// A path as commands show it: relative to the working directory when below it.
std::string display_path(const std::string& p) {
  std::error_code ec;
  const fs::path rel = fs::proximate(p, ec);
  return ec || rel.string().rfind("..", 0) == 0 ? p : rel.string();
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream in(path ? path : "");
  for (std::string dir; std::getline(in, dir, ':');)
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out || !(out << text)) throw Error(Error::Kind::Io, "cannot write " + path.string());
}

json read_manifest(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw_invalid("--render-only: " + path.string() + " not found (run `folio bench report` without --render-only first)");
  json j = json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("runs")) throw_invalid("--render-only: " + path.string() + " is not a report manifest");
  return j;
}

// The directory DIR of --out, checked: creatable and writable, and DIR.md writable.
void prepare_out(const fs::path& dir, const fs::path& md) {
  std::error_code ec;
  fs::create_directories(dir / "json", ec);
  if (ec) throw Error(Error::Kind::Io, "--out: cannot create " + (dir / "json").string() + ": " + ec.message());
  const fs::path probe = dir / "json" / ".write-test";
  if (!std::ofstream(probe)) throw Error(Error::Kind::Io, "--out: cannot write in " + (dir / "json").string());
  fs::remove(probe, ec);
  const bool existed = fs::exists(md);
  if (!std::ofstream(md, std::ios::app)) throw Error(Error::Kind::Io, "--out: cannot write " + md.string());
  if (!existed) fs::remove(md, ec);
}

std::string report_command(const ReportArgs& a) {
  std::vector<std::string> argv = {"folio", "bench", "report", "--out", a.out};
  if (a.quick) argv.push_back("--quick");
  for (const auto& [flag, v] : {std::pair<const char*, std::string>{"--sections", a.sections}, {"--policies", a.policies},
                                {"--kv-dtypes", a.kv_dtypes}, {"--only", a.only}, {"--decoder-model", a.decoder_model}, {"--cache", a.cache},
                                {"--mini-model", a.mini_model}})
    if (!v.empty()) argv.insert(argv.end(), {flag, v});
  if (a.threads) argv.insert(argv.end(), {"--threads", std::to_string(a.threads)});
  return shell_join(argv);
}

// The report's options from the command line: the full-size decoder (given, or made once into the
// cache) and the OCR model of the decode, page, accuracy and service sections (the shipped default,
// folio-mini-ocr 2, whose held-out sets data/heldout holds, named in every command).
ReportOptions report_options(const ReportArgs& a) {
  ReportOptions o;
  o.out = a.out;
  o.quick = a.quick;
  if (!a.sections.empty()) o.sections = split_csv(a.sections);
  if (!a.policies.empty()) o.policies = split_csv(a.policies);
  if (!a.kv_dtypes.empty()) o.kv_dtypes = split_csv(a.kv_dtypes);
  o.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!a.decoder_model.empty()) {
    o.decoder_model = display_path(a.decoder_model);
  } else {
    const char* env = std::getenv("FOLIO_CACHE");
    const char* home = std::getenv("HOME");
    const std::string cache = !a.cache.empty() ? a.cache : env ? env : std::string(home ? home : "/tmp") + "/.cache/folio";
    o.decoder_model = display_path(cache + "/uocr-full-bf16");
    o.make_decoder_model = !fs::exists(o.decoder_model + "/model.safetensors");
  }
  if (!a.mini_model.empty()) o.mini_model = o.mini_model_display = display_path(a.mini_model);
  else {
    o.mini_model_display = kDefaultOcrModel;
    try {
      o.mini_model = display_path(shipped_path(kDefaultOcrModel));
    } catch (const Error& e) {
      o.mini_model = kDefaultOcrModel;  // its runs fail and say why
    }
  }
  o.python = a.python;
  return o;
}

// The PyTorch peer: its script, and whether o.python imports torch (else why not, in the report).
void find_peer(ReportOptions& o, const fs::path& json_dir) {
  try {
    o.peer_script = display_path(shipped_path("tools/reference/bench_decode.py"));
    const ProcessResult r = run_process({o.python, "-c", "import torch"}, (json_dir / "python-check.log").string());
    if (r.exit_code != 0) {
      o.peer_unavailable = o.python + " with torch not found (" + last_error_line((json_dir / "python-check.log").string()) + ")";
      o.peer_script.clear();
    }
    fs::remove(json_dir / "python-check.log");
  } catch (const Error& e) {
    o.peer_unavailable = e.what();
  }
}

// --resume: the runs an earlier report.json in this directory lists as done, by id.
std::map<std::string, json> finished_runs(const fs::path& json_dir, bool resume) {
  std::map<std::string, json> done;
  if (!resume || !fs::exists(json_dir / "report.json")) return done;
  std::ifstream in(json_dir / "report.json");
  const json prev = json::parse(in, nullptr, false);
  if (prev.is_object() && prev.contains("runs") && prev["runs"].is_array())
    for (const json& e : prev["runs"])
      if (e.is_object() && e.value("status", "") == "ok") done[e.value("id", "")] = e;
  return done;
}

// The whole standard set, whatever --sections this invocation runs: the page lists the runs of it
// that have no result yet (a full-size report is filled over several invocations). Sets the
// manifest's "planned" and "sizes" (kept runs of other sections were made at these sizes too).
void list_planned(const ReportOptions& o, json& manifest) {
  ReportOptions all = o;
  all.sections = kReportSections;
  json planned = json::array();
  const ReportPlan whole = plan_report(all);
  for (const PlannedRun& r : whole.runs)
    if (r.params.value("kind", "") != "make-model") planned.push_back({{"id", r.id}, {"section", r.section}, {"command", shell_join(r.argv)}});
  manifest["planned"] = planned;
  manifest["sizes"] = whole.sizes;
}

// Runs one planned run (or reports it skipped) and returns its manifest entry. Its JSON and log from
// an earlier run are removed first: never report a figure from an earlier run.
json run_planned(const PlannedRun& r, const std::string& folio_exe, const fs::path& json_dir, const std::string& commit) {
  const std::string command = shell_join(r.argv);
  json entry = {{"id", r.id}, {"section", r.section}, {"command", command}, {"params", r.params},
                {"json", r.writes_json ? r.id + ".json" : ""}};
  const fs::path json_path = json_dir / (r.id + ".json"), log = json_dir / (r.id + ".log");
  std::error_code ec;
  fs::remove(json_path, ec);
  fs::remove(log, ec);
  if (!r.skip_reason.empty()) {
    entry.update({{"status", "skipped"}, {"error", r.skip_reason}});
    std::printf("        not available: %s\n", r.skip_reason.c_str());
    return entry;
  }
  std::vector<std::string> argv = r.argv;
  if (argv[0] == "folio") argv[0] = folio_exe;
  const ProcessResult p = run_process(argv, log.string());
  const bool ok = p.exit_code == 0 && (!r.writes_json || fs::exists(json_path));
  entry.update({{"status", ok ? "ok" : "failed"}, {"exit_code", p.exit_code}, {"wall_s", p.wall_s}, {"commit", commit},
                {"finished", utc_now()}});
  if (ok) {
    fs::remove(log, ec);
  } else {
    const std::string why = p.exit_code == 0 ? "exited 0 without writing " + json_path.string() : last_error_line(log.string());
    entry.update({{"error", why}, {"log", log.filename().string()}});
  }
  std::printf("        %s in %.1f s%s%s\n", ok ? "ok" : "FAILED", p.wall_s, ok ? "" : ": ", ok ? "" : entry["error"].get<std::string>().c_str());
  return entry;
}

std::string this_executable(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw Error(Error::Kind::Io, "cannot find this executable (/proc/self/exe): pass --folio PATH");
  return exe;
}

// Kept runs (--resume) the run loop has not reached yet, listed in report.json from the start so
// that a resumed report stopped part way does not forget runs it was keeping (the next --resume
// would run them again, hours at the full size). A planned run is kept when an earlier one had the
// very same command (a report directory moved since differs only in the directory of --json) and
// its JSON is still there; runs named by --only run again. Finished runs of sections this
// invocation does not run are kept too, as long as their JSON is there (they go after the plan's).
std::map<std::string, json> runs_kept(const ReportArgs& a, const ReportPlan& plan, std::map<std::string, json>& done_before,
                                      const fs::path& json_dir) {
  const std::string planned_json_dir = a.out + "/json/";  // as the plan's commands name it
  std::map<std::string, json> kept;
  std::set<std::string> in_plan;
  for (const PlannedRun& r : plan.runs) {
    in_plan.insert(r.id);
    const auto before = done_before.find(r.id);
    const bool same = before != done_before.end() &&
                      with_json_dir(before->second.value("command", ""), planned_json_dir) == shell_join(r.argv) &&
                      (!r.writes_json || fs::exists(json_dir / (r.id + ".json")));
    if (a.only.empty() && same) kept[r.id] = before->second;
  }
  for (const auto& [id, e] : done_before) {
    const std::string file = e.value("json", "");
    if (!in_plan.count(id) && (file.empty() || fs::exists(json_dir / file))) kept[id] = e;
  }
  for (auto& [id, e] : kept) e["resumed"] = true;
  return kept;
}

json execute(const ReportArgs& a, const fs::path& json_dir) {
  ReportOptions o = report_options(a);
  ReportPlan plan = plan_report(o);  // validates --sections, --policies, --kv-dtypes before any work
  if (std::find(o.sections.begin(), o.sections.end(), "peer") != o.sections.end()) {
    find_peer(o, json_dir);
    plan = plan_report(o);
  }
  if (!a.only.empty()) plan.runs = select_runs(plan, split_csv(a.only), o.decoder_model);
  const std::string folio_exe = this_executable(a.folio);
  std::map<std::string, json> done_before = finished_runs(json_dir, a.resume);
  const json machine = describe_machine(fs::current_path().string());
  json manifest = {{"folio_report", 1}, {"command", report_command(a)}, {"quick", a.quick}, {"threads", o.threads},
                   {"json_dir", display_path(json_dir.string()) + "/"},
                   {"machine", machine}, {"sizes", plan.sizes}, {"runs", json::array()}};
  list_planned(o, manifest);
  std::printf("folio bench report: %zu runs (%s sizes: %s)\n", plan.runs.size(), a.quick ? "--quick" : "full", plan.sizes.dump().c_str());
  std::fflush(stdout);
  std::map<std::string, json> kept_ahead = runs_kept(a, plan, done_before, json_dir);
  auto save = [&] {
    json m = manifest;
    for (const auto& [id, e] : kept_ahead) m["runs"].push_back(e);
    write_file(json_dir / "report.json", m.dump(2) + "\n");  // renderable after every run
  };
  if (!kept_ahead.empty()) save();
  size_t i = 0;
  for (const PlannedRun& r : plan.runs) {
    std::printf("[%zu/%zu] %s\n", ++i, plan.runs.size(), shell_join(r.argv).c_str());
    if (const auto kept = kept_ahead.find(r.id); kept != kept_ahead.end()) {
      std::printf("        kept from an earlier run (%s)\n", kept->second.value("finished", std::string("date unknown")).c_str());
      manifest["runs"].push_back(kept->second);
      kept_ahead.erase(kept);
    } else {
      std::fflush(stdout);
      manifest["runs"].push_back(run_planned(r, folio_exe, json_dir, machine.value("commit", "")));
    }
    std::fflush(stdout);
    save();
  }
  for (const auto& [id, e] : kept_ahead) manifest["runs"].push_back(e);  // other sections' runs
  return manifest;
}

int run_report(const ReportArgs& a) {
  std::string out = a.out;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (out.empty() || out == "/" || out == "." || out == "..") throw_invalid("--out must name a directory to create, e.g. docs/benchmarks (got '" + a.out + "')");
  const fs::path dir(out), json_dir = dir / "json", md = out + ".md";
  // Check the lists before touching the file system (plan_report validates them).
  {
    ReportOptions check;
    if (!a.sections.empty()) check.sections = split_csv(a.sections);
    if (!a.policies.empty()) check.policies = split_csv(a.policies);
    if (!a.kv_dtypes.empty()) check.kv_dtypes = split_csv(a.kv_dtypes);
    check.quick = a.quick;
    const ReportPlan plan = plan_report(check);
    if (!a.only.empty()) select_runs(plan, split_csv(a.only), check.decoder_model);
  }
  json manifest;
  if (a.render_only) {
    manifest = read_manifest(json_dir / "report.json");
    prepare_out(dir, md);
    manifest["json_dir"] = display_path(json_dir.string()) + "/";  // where the files are read from now (the directory may have moved)
  } else {
    prepare_out(dir, md);
    ReportArgs b = a;
    b.out = out;
    manifest = execute(b, json_dir);
  }
  const std::vector<RunData> runs = load_runs(manifest, json_dir);
  const auto archive = load_archive(dir / "archive");
  std::map<std::string, std::string> plots;
  const std::string gnuplot = find_in_path("gnuplot");
  for (const PlotSpec& spec : plan_plots(runs, archive)) {
    if (gnuplot.empty()) {
      plots[spec.name] = "gnuplot not found in PATH (Debian package gnuplot-nox)";
      continue;
    }
    const fs::path script = json_dir / (spec.name + ".gp"), log = json_dir / (spec.name + ".log");
    write_file(script, gnuplot_script(spec, (dir / spec.name).string()));
    const ProcessResult p = run_process({gnuplot, script.string()}, log.string());
    plots[spec.name] = p.exit_code == 0 ? "" : "gnuplot failed: " + last_error_line(log.string());
    std::error_code ec;
    fs::remove(script, ec);
    if (p.exit_code == 0) fs::remove(log, ec);
  }
  for (const auto& [name, why] : plots)
    if (!why.empty()) std::printf("plot %s skipped: %s\n", name.c_str(), why.c_str());
  const std::string base = dir.filename().string() + "/";
  write_file(md, render_report(manifest, runs, archive, load_hand_sections(dir / "sections"), plots, base, base + "json/"));
  size_t missing = 0;
  for (const RunData& r : runs) missing += !r.error.empty();
  std::printf("wrote %s (%zu runs, %zu not available; JSON in %s)\n", md.string().c_str(), runs.size(), missing, json_dir.string().c_str());
  return 0;
}

}  // namespace

SubRunner add_bench_report(CLI::App& bench) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* c = bench.add_subcommand("report", "Run the standard benchmark set and write DIR.md, DIR/*.png and DIR/json/*.json");
  c->add_option("--out", a->out, "Report directory DIR (e.g. docs/benchmarks: writes docs/benchmarks.md)")->required();
  c->add_flag("--quick", a->quick, "Small sizes (under 10 minutes on 2 cores); the sizes are stated in the report");
  c->add_option("--sections", a->sections, "Comma-separated subset of decode,pages,accuracy,service,peer (default: all)");
  c->add_option("--policies", a->policies, "KV policies of the decode and accuracy matrices (default: full,rswa,sparse,rolling)");
  c->add_option("--kv-dtypes", a->kv_dtypes, "KV dtypes of the decode and accuracy matrices (default: f32,bf16,q8,q4)");
  c->add_option("--only", a->only,
                "Comma-separated run ids (their JSON file names, e.g. decode_mini_rswa_bf16): run just these of the set, "
                "again if they have results; with --resume the report keeps the others it has");
  c->add_option("--folio", a->folio, "folio executable the runs use (default: this one)");
  c->add_option("--decoder-model", a->decoder_model, "Full-size decoder checkpoint (default: CACHE/uocr-full-bf16, made if missing)");
  c->add_option("--cache", a->cache, "Where the full-size decoder is made (default: $FOLIO_CACHE or ~/.cache/folio)");
  c->add_option("--mini-model", a->mini_model, "OCR model (default: the shipped folio-mini-ocr 3)");
  c->add_option("--python", a->python, "Python with torch for the PyTorch peer")->capture_default_str();
  c->add_option("--threads", a->threads, "Threads of every run (0 = one per core)")->capture_default_str();
  c->add_flag("--render-only", a->render_only, "Rewrite DIR.md and the plots from DIR/json (no runs)");
  c->add_flag("--resume", a->resume,
              "Keep the runs an earlier report in DIR finished with the same command (their JSON files stay); run the rest");
  return {c, [a]() { return run_report(*a); }};
}

}  // namespace folio::cli
