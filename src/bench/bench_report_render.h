// The markdown of `folio bench report`: a pure function of the report's manifest (DIR/json/report.json:
// machine, sizes, every run with its command and outcome) and the JSON files the runs wrote. Every
// figure printed is read from one of those files, and each table names its file and command; a run
// that failed shows as "not available: <its error>" in its cells. The prose (definitions, how each
// figure is measured) is fixed template text.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace folio::cli {

// A run's result as the renderer sees it: its JSON (null when not available) and why not.
struct RunData {
  const nlohmann::json* run = nullptr;  // the manifest entry
  nlohmann::json data;                  // the run's JSON file; null when not available
  std::string error;                    // "" when available
};

// The manifest's runs with their JSON files loaded from `json_dir` (a listed file that is missing
// or unreadable makes that run not available, naming the file).
std::vector<RunData> load_runs(const nlohmann::json& manifest, const std::filesystem::path& json_dir);

// Earlier runs kept in `archive_dir` (*.json of suite decode, accuracy or serve), by file name.
std::vector<std::pair<std::string, nlohmann::json>> load_archive(const std::filesystem::path& archive_dir);

// Sections written by hand (DIR/sections/*.md, by file name): measurements the standard set does not
// run (side studies, peers built by hand), each with its own commands and JSON. Copied in as written.
std::vector<std::pair<std::string, std::string>> load_hand_sections(const std::filesystem::path& sections_dir);

// One line or area per series: (x, y) points.
struct PlotSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;
  std::string style;  // gnuplot line style (e.g. "lc rgb '#d62728' pt 7 dt 1"); "" = gnuplot's next one
};
struct PlotPanel {
  std::string ylabel;
  std::vector<PlotSeries> series;
};
struct PlotSpec {
  std::string name;   // file name, e.g. "decode_uocr-full.png"
  std::string title, xlabel;
  std::vector<PlotPanel> panels;  // side by side
};

// The plots of a report (only those with at least one series of two or more points).
std::vector<PlotSpec> plan_plots(const std::vector<RunData>& runs,
                                 const std::vector<std::pair<std::string, nlohmann::json>>& archive);

// A gnuplot script drawing `spec` as PNG to `png_path` (data inline, as datablocks).
std::string gnuplot_script(const PlotSpec& spec, const std::string& png_path);

// `plots`: plot name -> "" when drawn, else why not. `image_prefix`: how the markdown reaches the
// plot files (e.g. "benchmarks/"). `json_prefix`: how it names the JSON files (e.g. "benchmarks/json/").
std::string render_report(const nlohmann::json& manifest, const std::vector<RunData>& runs,
                          const std::vector<std::pair<std::string, nlohmann::json>>& archive,
                          const std::vector<std::pair<std::string, std::string>>& hand_sections,
                          const std::map<std::string, std::string>& plots, const std::string& image_prefix,
                          const std::string& json_prefix);

}  // namespace folio::cli
