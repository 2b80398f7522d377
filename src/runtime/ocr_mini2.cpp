#include "runtime/ocr_mini2.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <future>
#include <limits>

#include "core/error.h"
#include "doc/gray_page.h"
#include "doc/markdown_blocks.h"
#include "doc/ocr_markdown.h"
#include "io/json_file.h"
#include "vision/deskew.h"
#include "vision/page_layout.h"
#include "runtime/heading_levels.h"
#include "runtime/ocr_accuracy.h"
#include "runtime/contents_lines.h"
#include "runtime/prose_line.h"
#include "runtime/structure_writer.h"

namespace folio {

// What the hooks of one pass share. The pages' readings are written once, as pages are read; the
// decoder side (constrain, embed_token: the scheduler's thread) and the writer side (write_token:
// whoever turns tokens into text, possibly later and elsewhere) each follow the tokens with their
// own cursor, so neither depends on when the other runs.
struct MiniOcr2Model::PassState {
  PassState(int32_t page_token, size_t pages) : cursor(page_token), written(page_token), pages_in_pass(pages) {}
  std::vector<size_t> line_counts;                            // [page]
  std::vector<std::vector<std::vector<std::string>>> cells;  // [page][line][segment]
  std::vector<std::vector<LineStyle>> styles;                // [page][line], until the decoder leaves the page
  std::vector<std::vector<std::optional<std::vector<ContentsWrite>>>> contents;  // [page][line] (contents_lines.h)
  std::vector<std::vector<std::pair<size_t, std::string>>> figures;  // [page]: (before_line, image block) by before_line
  std::vector<size_t> figures_written;                               // [page], the writer side's
  StructureCursor cursor, written;
  StructureWriter writer;
  HeadingLevels headings;                                    // the decoder side's
  size_t pages_in_pass;
};

std::unique_ptr<MiniOcr2Model> MiniOcr2Model::load(const std::string& dir, const std::string& weights) {
  std::unique_ptr<MiniOcr2Model> m(new MiniOcr2Model());
  m->model_ = load_model(dir, true, weights);
  const nlohmann::json cfg = read_json_file(dir + "/config.json");
  FOLIO_CHECK_INPUT(!m->model_.config.rope, dir + "/config.json: the structure decoder must have position_encoding \"none\"");
  FOLIO_CHECK_INPUT(cfg.contains("recognizer") && cfg["recognizer"].contains("charset") && cfg.contains("structure") &&
                        cfg["structure"].contains("actions") && cfg.contains("page_token_id"),
                    dir + "/config.json: a folio-mini-ocr-2 config needs recognizer.charset, structure.actions and page_token_id");
  m->pdf_dpi_ = cfg.value("pdf_dpi", 150.0);
  m->name_ = cfg.value("model_type", m->name_);
  const std::string charset = cfg["recognizer"]["charset"].get<std::string>();
  m->recognizer_ = std::make_unique<LineRecognizer>(*m->model_.weights, charset, "recognizer.");
  m->classes_ = std::make_unique<CharClasses>(charset);
  m->tokens_ = std::make_unique<StructureTokens>(*m->model_.weights, m->model_.config.hidden, m->classes_->count());
  m->page_token_ = cfg["page_token_id"].get<int32_t>();
  // The decoder's tokens 0.. are the actions, in the config's order (names as structure.py's).
  const auto& actions = cfg["structure"]["actions"];
  m->action_of_token_.assign(static_cast<size_t>(m->model_.config.vocab), std::nullopt);
  m->token_of_action_.fill(-1);
  for (size_t i = 0; i < actions.size() && i < m->action_of_token_.size(); ++i) {
    const auto a = structure_action_from_name(actions[i].get<std::string>());
    FOLIO_CHECK_INPUT(a.has_value(), dir + "/config.json: unknown action '" + actions[i].get<std::string>() + "'");
    m->action_of_token_[i] = a;
    m->token_of_action_[static_cast<size_t>(*a)] = static_cast<int32_t>(i);
  }
  return m;
}

namespace {

// The mean of the values, 0 for none: summed in eight double lanes, as one chain of additions
// waits on each one (a page's crops hold a few million values).
double mean_of(const std::vector<float>& v) {
  std::array<double, 8> lane{};
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8)
    for (size_t k = 0; k < 8; ++k) lane[k] += v[i + k];
  double sum = 0;
  for (; i < v.size(); ++i) sum += v[i];
  for (double l : lane) sum += l;
  return v.empty() ? 0.0 : sum / double(v.size());
}

// Where a figure stands among the lines in reading order: before the first line below its top that
// shares columns with it, or below its bottom in a column as wide as it (a caption under figures
// side by side), else after them all.
size_t figure_place(const PageLayout& layout, const FigureBox& f) {
  for (size_t i = 0; i < layout.lines.size(); ++i) {
    const LayoutLine& l = layout.lines[i];
    if (l.y0 >= f.y0 && l.x0 < f.x1 && l.x1 > f.x0) return i;
    if (l.y0 >= f.y1 && l.region_x0 <= f.x0 && l.region_x1 >= f.x1) return i;
  }
  return layout.lines.size();
}

// A figure as page_markdown writes its image block (markdown_blocks reads it back).
std::string image_block(const FigureBox& f, int width, int height) {
  OcrPage page;
  page.blocks.push_back({"image", {pixels_to_box({f.x0, f.y0, f.x1, f.y1}, width, height)}, "", "", ""});
  return page_markdown(page);
}

}  // namespace

MiniOcr2Model::PageAnalysis MiniOcr2Model::analyse_page(GrayImage image, ThreadPool* pool) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint8_t> gray = std::move(image.pixels);
  const double skew = skew_angle(gray.data(), image.width, image.height, pool);
  if (skew != 0.0) gray = rotate_page(gray.data(), image.width, image.height, skew);
  // Figures are cut out of the page the layout sees: their labels are not lines.
  const std::vector<FigureBox> figures = find_figures(gray.data(), image.width, image.height);
  for (const FigureBox& f : figures)
    for (int y = f.y0; y < f.y1; ++y) std::fill_n(gray.begin() + static_cast<std::ptrdiff_t>(size_t(y) * image.width + f.x0), f.x1 - f.x0, uint8_t(255));
  PageAnalysis a{image.width, image.height, find_layout(gray.data(), image.width, image.height), {}, 0.0};
  if (static_cast<int64_t>(a.layout.lines.size()) > kMaxLinesPerPage) a.layout.lines.resize(static_cast<size_t>(kMaxLinesPerPage));
  for (const FigureBox& f : figures) a.figures.push_back({f, figure_place(a.layout, f)});
  std::stable_sort(a.figures.begin(), a.figures.end(), [](const Mini2Figure& x, const Mini2Figure& y) { return x.before_line < y.before_line; });
  a.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

Mini2Page MiniOcr2Model::read_lines(const PageAnalysis& analysis, ThreadPool& threads) const {
  std::vector<const LineCrop*> crops;
  for (const LayoutLine& l : analysis.layout.lines)
    for (const LineSegment& s : l.segments) crops.push_back(&s.crop);
  const std::vector<std::string> texts = recognizer_->read_many(crops, threads);
  Mini2Page page;
  page.width = analysis.width, page.height = analysis.height;
  size_t k = 0;
  for (const LayoutLine& l : analysis.layout.lines) {
    ReadLine r;
    r.x0 = l.x0, r.y0 = l.y0, r.x1 = l.x1, r.y1 = l.y1;
    r.column = l.column, r.columns = l.columns, r.region_x0 = l.region_x0, r.region_x1 = l.region_x1;
    r.x_height = l.x_height, r.gap_before = l.gap_before, r.led = l.led;
    for (const LineSegment& s : l.segments) {
      r.segments.push_back({s.x0, s.x1, texts[k++], mean_of(s.crop.ink)});
    }
    page.lines.push_back(std::move(r));
  }
  page.figures = analysis.figures;
  return page;
}

Mini2Page MiniOcr2Model::read_page(const RgbImage& image, ThreadPool& threads) const {
  return read_lines(analyse_page(gray_image(image), &threads), threads);
}

// Pages [next, end) analysed one ahead of their use: take() returns the next page's analysis and
// starts the one after on its own thread. A pending analysis is waited for on destruction.
class MiniOcr2Model::PageAhead {
 public:
  PageAhead(const MiniOcr2Model& model, const OcrPages& pages, size_t next, size_t end)
      : model_(model), pages_(pages), next_(next), end_(end) {
    start();
  }
  PageAnalysis take() {
    PageAnalysis a = pending_.get();
    start();
    return a;
  }

 private:
  void start() {
    if (next_ >= end_) return;
    pending_ = std::async(std::launch::async, [this, i = next_++] { return model_.analyse_page(pages_.render_gray(i), nullptr); });
  }
  const MiniOcr2Model& model_;
  const OcrPages& pages_;
  size_t next_, end_;
  std::future<PageAnalysis> pending_;
};

ReferencePart MiniOcr2Model::page_part(const PageAnalysis& analysis, size_t first, size_t k, size_t count,
                                       ThreadPool& threads, const PageEncodedFn& on_encoded, PassState& state) const {
  const auto t0 = std::chrono::steady_clock::now();
  const Mini2Page page = read_lines(analysis, threads);
  const std::vector<LineFeatures> feats = page_line_features(page.lines, page.height, *classes_);
  const int64_t d = tokens_->hidden(), n = static_cast<int64_t>(feats.size());
  std::vector<float> rows(static_cast<size_t>((n + 1) * d), 0.0f);
  std::vector<int64_t> units;
  for (int64_t i = 0; i < n; ++i) {
    float* row = rows.data() + i * d;
    tokens_->line_token(feats[static_cast<size_t>(i)], row);
    tokens_->add_code(StructureTokenType::Line, static_cast<int64_t>(k), i, row);
    units.push_back(i);
  }
  tokens_->add_code(k + 1 == count ? StructureTokenType::DocEnd : StructureTokenType::PageEnd, static_cast<int64_t>(k), n,
                    rows.data() + n * d);
  units.push_back(n);
  std::vector<std::vector<std::string>> cells;
  for (const ReadLine& l : page.lines) {
    cells.emplace_back();
    for (const ReadSegment& s : l.segments) cells.back().push_back(s.text);
  }
  if (state.cells.size() <= k)
    state.cells.resize(k + 1), state.line_counts.resize(k + 1), state.styles.resize(k + 1), state.contents.resize(k + 1),
        state.figures.resize(k + 1), state.figures_written.resize(k + 1, 0);
  for (const Mini2Figure& f : page.figures) state.figures[k].emplace_back(f.before_line, image_block(f.box, page.width, page.height));
  state.line_counts[k] = cells.size();
  state.contents[k] = contents_writes(page.lines);
  state.cells[k] = std::move(cells);
  state.styles[k] = page_line_styles(page.lines);
  if (on_encoded)
    on_encoded(first + k, analysis.ms + std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ReferencePart part = ReferencePart::rows(std::vector<int32_t>(static_cast<size_t>(n + 1), model_.config.bos_id), std::move(rows));
  part.page = true;
  part.unit_starts = std::move(units);  // sparse: every line its own unit
  return part;
}

void MiniOcr2Model::finish_pass(OcrPass& pass, std::shared_ptr<PassState> state) const {
  const int64_t d = tokens_->hidden();
  const int32_t bos = model_.config.bos_id;
  std::vector<float> bos_row(static_cast<size_t>(d));
  model_.decoder->embed(bos, bos_row.data());
  tokens_->add_code(StructureTokenType::Text, 0, 0, bos_row.data());
  pass.reference.push_back(ReferencePart::rows({bos}, std::move(bos_row)));
  pass.generation.page_separator = page_token_;
  pass.generation.no_repeat_ngram = 0;
  pass.generation.stop_at_eos = true;
  bind_hooks(pass, std::move(state));
}

void MiniOcr2Model::bind_hooks(OcrPass& pass, std::shared_ptr<PassState> state) const {
  const int32_t eos = model_.config.eos_id;
  pass.model_state = state;
  // Only what keeps one action per line: actions while the page has lines, then <page> (<eos> after
  // the pass's last page).
  pass.generation.constrain = [this, state, eos](std::span<float> logits) {
    const auto page = static_cast<size_t>(state->cursor.page());
    const size_t lines = page < state->line_counts.size() ? state->line_counts[page] : 0;
    const bool more = static_cast<size_t>(state->cursor.line()) < lines;
    const int32_t end = page + 1 >= state->pages_in_pass ? eos : page_token_;
    for (size_t t = 0; t < logits.size(); ++t) {
      const bool allowed = more ? action_of_token_[t].has_value() : static_cast<int32_t>(t) == end;
      if (!allowed) logits[t] = -std::numeric_limits<float>::infinity();
    }
    if (!more) return;
    if (contents_writes_at(*state, {page, static_cast<size_t>(state->cursor.line())})) return keep_only(StructureAction::Bullet, logits);
    keep_prose_out_of_code(*state, logits);
    settle_heading_level(*state, logits);
  };
  pass.generation.embed_token = [this, state](int32_t token, float* row) {
    note_heading(*state, token);
    state->cursor.advance(token);
    model_.decoder->embed(token, row);
    tokens_->add_code(StructureTokenType::Text, state->cursor.page(), state->cursor.line(), row);
  };
  pass.write_token = [this, state](int32_t token) -> std::string {
    const auto page = static_cast<size_t>(state->written.page()), line = static_cast<size_t>(state->written.line());
    state->written.advance(token);
    const auto a = token >= 0 && static_cast<size_t>(token) < action_of_token_.size() ? action_of_token_[static_cast<size_t>(token)] : std::nullopt;
    // The page's figures that stand before this line (all that are left, at the page's end).
    std::string out = write_figures(*state, page, a ? line : std::numeric_limits<size_t>::max());
    if (token == page_token_) {
      if (page < state->cells.size()) state->cells[page] = {};  // written: only its line count is needed now
      return out + state->writer.page_break("\n<page>\n");  // kMini2PageMarker on a line of its own
    }
    if (!a || page >= state->cells.size() || line >= state->cells[page].size()) return out;
    if (const std::vector<ContentsWrite>* writes = contents_writes_at(*state, {page, line})) {
      for (const ContentsWrite& w : *writes)
        out += state->writer.push(w.item ? StructureAction::Bullet : StructureAction::Para, {w.text}, w.level);
      return out;
    }
    return out + state->writer.push(*a, state->cells[page][line]);
  };
  pass.write_end = [state] { return state->writer.finish(); };
}

std::string MiniOcr2Model::write_figures(PassState& state, size_t page, size_t before_line) {
  if (page >= state.figures.size()) return "";
  std::string out;
  const auto& figures = state.figures[page];
  for (size_t& k = state.figures_written[page]; k < figures.size() && figures[k].first <= before_line; ++k)
    out += state.writer.block(figures[k].second);
  return out;
}

// Contents entries (contents_lines.h) are the model's rule, not the decoder's choice: a planned line
// writes its plan (nested items, or a two-column index's paragraphs), and the decoder is given the
// bulleted item as its action for it.
const std::vector<ContentsWrite>* MiniOcr2Model::contents_writes_at(const PassState& state, std::pair<size_t, size_t> at) const {
  const auto [page, line] = at;
  if (page >= state.contents.size() || line >= state.contents[page].size() || !state.contents[page][line]) return nullptr;
  return &*state.contents[page][line];
}

void MiniOcr2Model::keep_only(StructureAction action, std::span<float> logits) const {
  const int32_t keep = token_of_action_[static_cast<size_t>(action)];
  if (keep < 0) return;
  for (size_t t = 0; t < logits.size(); ++t)
    if (static_cast<int32_t>(t) != keep) logits[t] = -std::numeric_limits<float>::infinity();
}

// Prose is not code (prose_line.h): when the decoder would write a line that reads as prose (or an
// option term) as code
// (or, for a line of one segment, as a table row: a row of one cell is no table), its best choice
// among the actions that keep the line as text (a paragraph, a continuation, a heading, an item)
// stands instead. Other choices are the decoder's.
void MiniOcr2Model::keep_prose_out_of_code(const PassState& state, std::span<float> logits) const {
  const auto page = static_cast<size_t>(state.cursor.page()), line = static_cast<size_t>(state.cursor.line());
  if (page >= state.cells.size() || line >= state.cells[page].size()) return;
  const std::vector<std::string>& cells = state.cells[page][line];
  const auto best = static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  const std::optional<StructureAction> chosen = best < action_of_token_.size() ? action_of_token_[best] : std::nullopt;
  if (chosen != StructureAction::Code && !(chosen == StructureAction::Row && cells.size() == 1)) return;
  std::string text;
  for (const std::string& cell : cells) text += (text.empty() ? "" : " ") + cell;
  if (!reads_as_prose(text) && !is_option_term(text)) return;
  for (StructureAction a : {StructureAction::Code, StructureAction::Row, StructureAction::Skip, StructureAction::Furniture})
    if (const int32_t t = token_of_action_[static_cast<size_t>(a)]; t >= 0) logits[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
}

const LineStyle* MiniOcr2Model::cursor_style(const PassState& state) const {
  const auto page = static_cast<size_t>(state.cursor.page()), line = static_cast<size_t>(state.cursor.line());
  return page < state.styles.size() && line < state.styles[page].size() ? &state.styles[page][line] : nullptr;
}

std::optional<int> MiniOcr2Model::heading_level(int32_t token) const {
  if (token < 0 || static_cast<size_t>(token) >= action_of_token_.size() || !action_of_token_[static_cast<size_t>(token)]) return std::nullopt;
  const auto a = *action_of_token_[static_cast<size_t>(token)];
  if (a != StructureAction::H1 && a != StructureAction::H2 && a != StructureAction::H3) return std::nullopt;
  return static_cast<int>(a) - static_cast<int>(StructureAction::H1) + 1;
}

// When the decoder's choice for the line is a heading, the level HeadingLevels settles takes the
// place of its proposal: the two logits swap, so a sampled decoding keeps the distribution's shape.
void MiniOcr2Model::settle_heading_level(const PassState& state, std::span<float> logits) const {
  const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  const std::optional<int> proposed = heading_level(best);
  const LineStyle* style = cursor_style(state);
  if (!proposed || !style) return;
  const int level = state.headings.level(*style, *proposed);
  const int32_t settled = token_of_action_[static_cast<size_t>(StructureAction::H1) + static_cast<size_t>(level - 1)];
  if (settled >= 0 && settled != best) std::swap(logits[static_cast<size_t>(best)], logits[static_cast<size_t>(settled)]);
}

void MiniOcr2Model::note_heading(PassState& state, int32_t token) const {
  if (token == page_token_) {
    const auto page = static_cast<size_t>(state.cursor.page());
    if (page < state.styles.size()) state.styles[page] = {};  // decided: no longer needed
    return;
  }
  const LineStyle* style = cursor_style(state);
  if (const std::optional<int> level = heading_level(token); level && style) state.headings.note(*style, *level);
}

OcrPass MiniOcr2Model::fresh_decoding(const OcrPass& prepared) const {
  OcrPass out = prepared;
  const auto* old = static_cast<const PassState*>(prepared.model_state.get());
  if (!old) throw Error(Error::Kind::Internal, "fresh_decoding: the pass was not prepared by folio-mini-ocr-2");
  auto state = std::make_shared<PassState>(page_token_, old->pages_in_pass);
  state->line_counts = old->line_counts;
  state->cells = old->cells;
  state->styles = old->styles;
  state->contents = old->contents;
  state->figures = old->figures;
  state->figures_written.assign(old->figures.size(), 0);
  bind_hooks(out, std::move(state));
  return out;
}

OcrPass MiniOcr2Model::prepare(const OcrPages& pages, size_t first, size_t count, VisionMode, ThreadPool& threads,
                               const PageEncodedFn& on_encoded) {
  check_pass_pages(pages, first, count);
  auto state = std::make_shared<PassState>(page_token_, count);
  OcrPass pass;
  PageAhead ahead(*this, pages, first, first + count);
  for (size_t k = 0; k < count; ++k) pass.reference.push_back(page_part(ahead.take(), first, k, count, threads, on_encoded, *state));
  finish_pass(pass, state);
  return pass;
}

OcrPass MiniOcr2Model::prepare_rolling(const OcrPages& pages, size_t first, size_t count, size_t resident, VisionMode,
                                       ThreadPool& threads, const PageEncodedFn& on_encoded) {
  check_pass_pages(pages, first, count);
  FOLIO_CHECK_INPUT(resident >= 1 && static_cast<int64_t>(resident) < tokens_->max_pages(),
                    "rolling: resident pages must be between 1 and " + std::to_string(tokens_->max_pages() - 1) +
                        " (pages that share a page code must never be resident together), got " + std::to_string(resident));
  auto state = std::make_shared<PassState>(page_token_, count);
  OcrPass pass;
  const size_t initial = std::min(resident, count);
  auto ahead = std::make_shared<PageAhead>(*this, pages, first, first + count);
  for (size_t k = 0; k < initial; ++k) pass.reference.push_back(page_part(ahead->take(), first, k, count, threads, on_encoded, *state));
  finish_pass(pass, state);
  DecodingOptions::Rolling rolling;
  rolling.separator = page_token_;
  rolling.next_page = [this, ahead, &threads, on_encoded, first, count, state, next = initial]() mutable -> std::optional<ReferencePart> {
    if (next >= count) return std::nullopt;
    return page_part(ahead->take(), first, next++, count, threads, on_encoded, *state);
  };
  pass.generation.rolling = std::move(rolling);
  return pass;
}

std::vector<OcrPage> MiniOcr2Model::parse(std::string_view text) const {
  std::vector<OcrPage> pages;
  for (std::string& page : split_text_pages(text, kMini2PageMarker)) {
    while (!page.empty() && page.front() == '\n') page.erase(page.begin());
    pages.push_back(OcrPage{markdown_blocks(page)});
  }
  return pages;
}

}  // namespace folio
