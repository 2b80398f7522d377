"""Synthetic documents for folio-mini-ocr 2's structure decoder, typeset by WeasyPrint.

A document is a list of blocks drawn from one corpus split (corpus.py: sources split by file, one in
eight held out): headings (three levels), paragraphs, bulleted and numbered lists, code blocks and
small tables, with a style drawn per document: page size and margins, body / heading / code faces
from one font split (fonts.py: training faces, or the held-out ones), 8-14 pt body text, line
height, justified or ragged, first-line indents or spaced paragraphs, automatic hyphenation, one
or two columns, a running header and page numbers. Three documents in ten are laid out as a manual
(man pages, reference guides): headings at the margin in the body's size, often in capitals, the
body indented under them, and options as tagged paragraphs (a short term, its description indented
further below it), so that indented prose is read as prose, not code.

Each document is typeset twice from the same HTML, so the layout is identical: once in black (the
pages the model reads) and once with every block in its own colour (block k in colour_of(k)), which
labels every line with the block it belongs to (labels.py). Ground truth is the blocks themselves
(to_markdown), not any text extraction.

    /usr/bin/python3 tools/train/mini2/docsynth.py --work train-work/mini2 --split train --docs 2 --show
"""
import argparse
import html
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus as corpus_mod  # noqa: E402
import fonts  # noqa: E402
from lines import CHARSET  # noqa: E402

DPI = 150
FURNITURE = 255  # colour index of running headers and page numbers
BULLETS = ["•", "–", "-", "*", "·"]


# ---------------------------------------------------------------------------------------------------
# blocks


class Words:
    """A reading position in one source's words, so a document reads like its source."""

    def __init__(self, rng, corp):
        self.rng, self.corp = rng, corp
        self.words = rng.choice(corp.words)
        self.i = rng.randrange(len(self.words))

    def take(self, n):
        out = []
        for _ in range(n):
            if self.i >= len(self.words):  # the source ran out: go on in another one
                self.words, self.i = self.rng.choice(self.corp.words), 0
            word = self.words[self.i]
            self.i += 1
            # groff hyphenated the man pages the corpus was formatted from: "ad- ditionally" is one word.
            while (word.endswith("-") and word[:-1].isalpha() and self.i < len(self.words)
                   and self.words[self.i][:1].islower()):
                word = word[:-1] + self.words[self.i]
                self.i += 1
            out.append(word)
        return out


def sentence_case(words):
    s = " ".join(words)
    return s[:1].upper() + s[1:]


def make_blocks(rng, corp):
    w = Words(rng, corp)
    blocks = [{"type": "h1", "text": sentence_case(w.take(rng.randint(2, 8)))}]
    n = rng.randint(6, 22)
    last_heading = "h1"
    while len(blocks) < n:
        r = rng.random()
        if r < 0.12:
            level = rng.choice(["h2", "h2", "h3"])
            # Real documents do not skip a level: a subsection (h3) only under a section (h2).
            last_heading = "h2" if level == "h3" and last_heading == "h1" else level
            blocks.append({"type": last_heading, "text": sentence_case(w.take(rng.randint(1, 7)))})
        elif r < 0.62:
            blocks.append({"type": "p", "text": " ".join(w.take(rng.randint(8, 120)))})
        elif r < 0.77:
            items = [" ".join(w.take(rng.randint(2, 40))) for _ in range(rng.randint(2, 7))]
            blocks.append({"type": rng.choice(["ul", "ol"]), "items": items})
        elif r < 0.87:
            lines = []
            for _ in range(rng.randint(2, 9)):
                indent = "    " * rng.choice([0, 0, 1, 1, 2])
                body = " ".join(w.take(rng.randint(1, 6)))
                lines.append(indent + rng.choice(["{}", "{}();", "{} = {}", "# {}", "if ({}) {{", "return {};",
                                                  "$ {}", "--{}"]).format(*(body.split(" ", 1) + [body])[:2]))
            blocks.append({"type": "code", "lines": lines})
        else:
            cols = rng.randint(2, 5)
            rows = [[" ".join(w.take(rng.randint(1, 2))) for _ in range(cols)]]
            for _ in range(rng.randint(2, 7)):
                rows.append([rng.choice([" ".join(w.take(rng.randint(1, 2))), str(rng.randint(0, 99999)),
                                         f"{rng.uniform(0, 1000):.{rng.randint(0, 3)}f}"]) for _ in range(cols)])
            blocks.append({"type": "table", "rows": rows})
    return blocks


def manual_blocks(rng, blocks):
    """The blocks of a manual: headings in capitals (usually), and some paragraphs as tagged
    paragraphs, a term (an option or a few words of the paragraph) then the paragraph, marked to be
    indented further ("tagged"); the term is marked too (bold in some documents, as groff sets it)."""
    caps = rng.random() < 0.75
    out = []
    for b in blocks:
        if b["type"] in ("h1", "h2", "h3") and caps:
            b = {**b, "text": b["text"].upper()}
        if b["type"] == "p" and rng.random() < 0.4:
            words = b["text"].split()
            head = "-".join(w.strip(".,;:()") for w in words[:rng.randint(1, 2)]).lower() or "x"
            term = rng.choice([f"-{head[:1]}, --{head}", f"--{head}", f"-{head[:1]}", " ".join(words[:rng.randint(1, 4)])])
            out.append({"type": "p", "text": term, "term": True})
            b = {**b, "tagged": True}
        out.append(b)
    return out


def units(blocks):
    """The labelled units in order: (block index, kind, text). A list item and a table row are units
    of their own; kind is the unit's markdown role."""
    out = []
    for b in blocks:
        t = b["type"]
        if t in ("h1", "h2", "h3", "p"):
            out.append((t, b["text"]))
        elif t in ("ul", "ol"):
            out.extend((t, item) for item in b["items"])
        elif t == "code":
            out.append(("code", "\n".join(b["lines"])))
        else:
            out.extend(("row", " | ".join(r)) for r in b["rows"])
    return out


def to_markdown(blocks):
    parts = []
    for b in blocks:
        t = b["type"]
        if t in ("h1", "h2", "h3"):
            parts.append("#" * int(t[1]) + " " + b["text"])
        elif t == "p":
            parts.append(b["text"])
        elif t == "ul":
            parts.append("\n".join("- " + i for i in b["items"]))
        elif t == "ol":
            parts.append("\n".join(f"{k + 1}. {i}" for k, i in enumerate(b["items"])))
        elif t == "code":
            parts.append("```\n" + "\n".join(b["lines"]) + "\n```")
        else:
            rows = ["| " + " | ".join(r) + " |" for r in b["rows"]]
            rows.insert(1, "|" + "---|" * len(b["rows"][0]))
            parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------------
# style and HTML


def colour_of(k):
    """Unit k's colour (k < 225), or the furniture colour: decoded by labels.unit_of."""
    if k == FURNITURE:
        return (0, 0, 255)
    return (8 + 16 * (k % 15), 8 + 16 * (k // 15), 96)


def make_style(rng, families):
    prose = [f for f in families if f not in fonts.MONO]
    mono = sorted(fonts.MONO & set(fonts.TRAIN))
    size = rng.choice([8, 9, 9.5, 10, 10, 10.5, 11, 11, 12, 12, 13, 14])
    return {
        "page": rng.choice(["letter", "A4"]),
        "margin": rng.uniform(0.5, 1.2),
        "body": rng.choice(prose),
        "heading": rng.choice(prose) if rng.random() < 0.4 else None,
        "mono": rng.choice(mono),
        "size": size,
        "code_size": size * rng.uniform(0.8, 1.0),
        "line_height": rng.uniform(1.1, 1.6),
        "justify": rng.random() < 0.5,
        "hyphens": rng.random() < 0.4,
        "indent": rng.random() < 0.35,
        "para_gap": rng.uniform(0.3, 1.0),
        "columns": 2 if rng.random() < 0.25 else 1,
        "h_scale": [rng.uniform(1.5, 2.2), rng.uniform(1.2, 1.5), rng.uniform(1.0, 1.2)],
        "h_bold": [rng.random() < 0.85, rng.random() < 0.8, rng.random() < 0.7],
        "h_italic": rng.random() < 0.15,
        "bullet": rng.choice(BULLETS),
        "running_header": rng.random() < 0.5,
        "page_numbers": rng.random() < 0.7,
        "table_rules": rng.random() < 0.5,
    }


def font_faces(families, names):
    out = []
    for name in sorted(set(n for n in names if n)):
        for style, path in families.get(name, fonts.TRAIN.get(name, {})).items():
            weight = "bold" if "bold" in style else "normal"
            fstyle = "italic" if "italic" in style else "normal"
            out.append(f"@font-face {{ font-family: '{name}'; src: url('file://{path}'); font-weight: {weight}; "
                       f"font-style: {fstyle}; }}")
    return "\n".join(out)


def to_html(blocks, style, families, title, coloured):
    s = style

    def colour(k):
        if not coloured:
            return "#000"
        r, g, b = colour_of(k)
        return f"rgb({r},{g},{b})"

    css = [font_faces(families, [s["body"], s["heading"], s["mono"]])]
    page = [f"size: {s['page']}; margin: {s['margin']:.2f}in;"]
    if s["running_header"]:
        page.append(f"@top-center {{ content: '{title}'; font-family: '{s['body']}'; font-size: {s['size'] * 0.85:.1f}pt; "
                    f"color: {colour(FURNITURE)}; }}")
    if s["page_numbers"]:
        page.append(f"@bottom-center {{ content: counter(page); font-family: '{s['body']}'; "
                    f"font-size: {s['size'] * 0.9:.1f}pt; color: {colour(FURNITURE)}; }}")
    css.append("@page { " + " ".join(page) + " }")
    css.append(f"body {{ font-family: '{s['body']}'; font-size: {s['size']}pt; line-height: {s['line_height']:.2f}; "
               f"text-align: {'justify' if s['justify'] else 'left'}; hyphens: {'auto' if s['hyphens'] else 'manual'}; "
               f"column-count: {s['columns']}; column-gap: 0.35in; margin: 0; }}")
    para = f"margin: 0; text-indent: 1.5em;" if s["indent"] else f"margin: 0 0 {s['para_gap']:.2f}em 0;"
    css.append(f"p {{ {para} orphans: 1; widows: 1; }}")
    if s.get("manual"):  # headings at the margin in the body's size
        # The title keeps its size; sections (h2) are in the body's size or a little larger, and
        # subsections (h3) in the body's size, set in a little from the margin (groff's .SS).
        s = {**s, "h_scale": [s["h_scale"][0], 1.0 + 0.1 * s["manual_grow"], 1.0], "h_bold": [True, True, True]}
    for i in range(3):
        css.append(f"h{i + 1} {{ font-size: {s['h_scale'][i]:.2f}em; font-weight: {'bold' if s['h_bold'][i] else 'normal'};"
                   f" font-style: {'italic' if s['h_italic'] else 'normal'}; margin: 0.6em 0 0.3em 0; "
                   f"line-height: 1.15; text-align: left; hyphens: manual;"
                   + (f" font-family: '{s['heading']}';" if s["heading"] else "") + " }")
    css.append(f"ul {{ list-style-type: '{s['bullet']} '; margin: 0 0 0.5em 0; padding-left: 1.6em; }}")
    css.append("ol { margin: 0 0 0.5em 0; padding-left: 2em; }")
    css.append(f"pre {{ font-family: '{s['mono']}'; font-size: {s['code_size']:.1f}pt; line-height: 1.2; "
               "margin: 0.3em 0 0.8em 1em; white-space: pre; }")
    border = "border: 0.5pt solid #000;" if s["table_rules"] and not coloured else \
        ("border: 0.5pt solid #fff;" if s["table_rules"] else "")
    css.append(f"table {{ border-collapse: collapse; margin: 0.4em 0 0.9em 0; }} td, th {{ padding: 0.15em 0.8em; {border} "
               "text-align: left; white-space: nowrap; }")
    if s.get("manual"):  # the body indented under the headings (after the rules above: it wins)
        css.append(f"p, ul, ol, pre, table {{ margin-left: {s['manual_indent']:.1f}em; }}")
        css.append(f"p.tagged {{ margin-left: {s['manual_indent'] + s['manual_tag']:.1f}em; }}")
        css.append(f"h3 {{ margin-left: {s['manual_indent'] * 0.45:.1f}em; }}")
        if s.get("manual_term_bold"):  # groff sets a tagged paragraph's term in bold
            css.append("p.term { font-weight: bold; }")
    body = []
    k = 0
    for b in blocks:
        t = b["type"]
        if t in ("h1", "h2", "h3", "p"):
            cls = " class='tagged'" if b.get("tagged") else " class='term'" if b.get("term") else ""
            body.append(f"<{t}{cls} style='color:{colour(k)}'>{html.escape(b['text'])}</{t}>")
            k += 1
        elif t in ("ul", "ol"):
            items = []
            for item in b["items"]:
                items.append(f"<li style='color:{colour(k)}'>{html.escape(item)}</li>")
                k += 1
            body.append(f"<{t}>" + "".join(items) + f"</{t}>")
        elif t == "code":
            body.append(f"<pre style='color:{colour(k)}'>" + html.escape("\n".join(b["lines"])) + "</pre>")
            k += 1
        else:
            rows = []
            for r, row in enumerate(b["rows"]):
                tag = "th" if r == 0 else "td"
                rows.append(f"<tr style='color:{colour(k)}'>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row)
                            + "</tr>")
                k += 1
            body.append("<table>" + "".join(rows) + "</table>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><style>" + "\n".join(css) +
            "</style></head><body>" + "\n".join(body) + "</body></html>")


# ---------------------------------------------------------------------------------------------------
# rendering


def render(html_text, out_pdf):
    import weasyprint  # imported late: a slow import the other tools do not need
    weasyprint.HTML(string=html_text).write_pdf(out_pdf)


def rasterise(pdf, prefix, coloured, dpi=DPI):
    """Pages of `pdf` as PNG files prefix-N.png (gray, antialiased) or prefix-N.ppm... sorted by page."""
    args = ["pdftoppm", "-r", str(dpi)]
    args += ["-aa", "no", "-aaVector", "no", "-png"] if coloured else ["-gray", "-png"]
    subprocess.run(args + [pdf, prefix], check=True)
    d = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith(base + "-") and f.endswith(".png"))


def make_document(seed, index, corp, split, work_dir):
    """Renders document `index` of a split into work_dir: page-N.png (gray) and label-N.png
    (coloured), doc.json (blocks, style, markdown). Deterministic in (seed, split, index)."""
    import json
    rng = random.Random(f"{seed}:{split}:{index}")
    families = fonts.HELD_OUT if split == "heldout" else fonts.TRAIN
    blocks = make_blocks(rng, corp)
    style = make_style(rng, list(families))
    # Drawn from a stream of its own, so the other documents are the same as before manuals came.
    manual = random.Random(f"{seed}:{split}:{index}:manual")
    if manual.random() < 0.3:
        blocks = manual_blocks(manual, blocks)
        style.update({"manual": True, "manual_indent": manual.uniform(2.5, 7.0), "manual_tag": manual.uniform(2.0, 5.0),
                      "manual_grow": manual.random(), "manual_term_bold": manual.random() < 0.6, "indent": False,
                      "columns": 1})
    n_units = len(units(blocks))
    while n_units > 200:  # colours for 225 units
        blocks.pop()
        n_units = len(units(blocks))
    title = html.escape(blocks[0]["text"][:60]).replace("'", "")
    os.makedirs(work_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for coloured, name in ((False, "page"), (True, "label")):
            pdf = os.path.join(tmp, name + ".pdf")
            render(to_html(blocks, style, families, title, coloured), pdf)
            for p, path in enumerate(rasterise(pdf, os.path.join(tmp, name), coloured)):
                os.replace(path, os.path.join(work_dir, f"{name}-{p}.png"))
    with open(os.path.join(work_dir, "doc.json"), "w") as f:
        json.dump({"blocks": blocks, "style": style, "units": units(blocks), "markdown": to_markdown(blocks)}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--split", default="train", choices=["train", "heldout"])
    ap.add_argument("--docs", type=int, default=2)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", action="store_true")
    a = ap.parse_args()
    corpus_mod.build(a.work, 3000)
    corp = corpus_mod.Corpus(a.work, a.split, set(CHARSET))
    for i in range(a.first, a.first + a.docs):
        d = os.path.join(a.work, "docs", a.split, f"{i:06d}")
        if not os.path.exists(os.path.join(d, "doc.json")):
            make_document(a.seed, i, corp, a.split, d)
        if a.show:
            print(d, sorted(os.listdir(d)))


if __name__ == "__main__":
    main()
