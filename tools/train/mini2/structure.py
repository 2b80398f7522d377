"""The structure of a document as folio-mini-ocr 2's decoder writes it: one action per text line.

The recognizer reads every line's characters; the decoder decides, line by line in reading order,
what the line is in the document's markdown:

  PARA        starts a paragraph             JOIN        continues the block (joined with a space)
  H1 H2 H3    starts a heading               JOIN_TIGHT  continues it with no space (a line that
  BULLET      starts a bulleted item                     ends in a hyphen that stays: "llvm-" "14")
              (its bullet glyph dropped)     DEHYPHEN    continues it, the previous line's end
  NUMBERED    starts a numbered item                     hyphen removed ("docu-" "ment")
  CODE        a line of a code block         ROW         a table row (its segments are the cells)
  FURNITURE   a running header, footer or    SKIP        not text (a rule, a speck): dropped
              page number (kept as its own paragraph)

Between pages the decoder writes PAGE, after the last line EOS. JOIN_TIGHT and DEHYPHEN act only after
a line ending in a hyphen; anywhere else they join as JOIN does. render_markdown turns actions and
line texts into markdown; the C++ engine mirrors it (keep the two in step).
"""
import re

ACTIONS = ["PARA", "JOIN", "JOIN_TIGHT", "DEHYPHEN", "H1", "H2", "H3", "BULLET", "NUMBERED", "CODE", "ROW",
           "FURNITURE", "SKIP"]
SPECIALS = ["<bos>", "<eos>", "<page>"]
VOCAB = ACTIONS + SPECIALS
ID = {name: i for i, name in enumerate(VOCAB)}
BOS, EOS, PAGE = ID["<bos>"], ID["<eos>"], ID["<page>"]

START_OF_KIND = {"h1": "H1", "h2": "H2", "h3": "H3", "p": "PARA", "ul": "BULLET", "ol": "NUMBERED", "code": "CODE",
                 "row": "ROW", "furniture": "FURNITURE"}
BULLET_GLYPHS = "•–-*·▪◦‣○●■□"
CONTINUES = {"JOIN", "JOIN_TIGHT", "DEHYPHEN"}


def _squash(s):
    return re.sub(r"\s+", " ", s).strip()


def join_action(prev_text, next_text, unit_text):
    """How a unit's line continues its previous line, judged from their texts and the unit's own."""
    prev_text, next_text = prev_text.rstrip(), next_text.lstrip()
    if not prev_text.endswith("-") or not next_text:
        return "JOIN"
    head = prev_text.split(" ")[-1]
    tail = next_text.split(" ")[0]
    unit = _squash(unit_text)
    if head[:-1] + tail in unit and head + tail not in unit:
        return "DEHYPHEN"
    if head + tail in unit:
        return "JOIN_TIGHT"
    return "JOIN"


def label_lines(lines, units):
    """Actions for lines in reading order. lines: [(unit index or None or 'furniture', text)];
    units: [(kind, text)] as docsynth.units."""
    out, seen, prev_of_unit = [], set(), {}
    for unit, text in lines:
        if unit is None:
            out.append("SKIP")
            continue
        kind, unit_text = ("furniture", "") if unit == "furniture" else units[unit]
        if unit not in seen:
            out.append(START_OF_KIND[kind])
            seen.add(unit)
        elif kind in ("code", "row", "furniture"):
            out.append(START_OF_KIND[kind])
        else:
            out.append(join_action(prev_of_unit[unit], text, unit_text))
        prev_of_unit[unit] = text
    return out


def render_markdown(actions, texts):
    """Markdown of one page from one action and one text per line (a line's text: its segments
    joined by " "; for ROW, texts[i] may be the list of its segments, the cells). Written so that a
    stream can produce it line by line (the C++ StructureWriter): a table row is written with its
    own cells (no padding to the widest row), the separator after a table's first row takes that
    row's width, and a line's final hyphen waits for the next action (DEHYPHEN drops it)."""
    blocks = []  # [kind, text or list of lines]

    def text_of(i):
        t = texts[i]
        return " ".join(t) if isinstance(t, list) else t

    for i, a in enumerate(actions):
        if a == "SKIP":
            continue
        t = text_of(i)
        if a in CONTINUES and blocks and blocks[-1][0] in ("PARA", "H1", "H2", "H3", "BULLET", "NUMBERED"):
            cur = blocks[-1]
            if not cur[1].endswith("-"):
                a = "JOIN"  # JOIN_TIGHT and DEHYPHEN only ever follow a hyphen
            if a == "JOIN":
                cur[1] = cur[1] + " " + t if cur[1] else t
            elif a == "JOIN_TIGHT":
                cur[1] += t
            else:
                cur[1] = (cur[1][:-1] if cur[1].endswith("-") else cur[1]) + t
            continue
        if a in CONTINUES:
            a = "PARA"
        if a == "BULLET":
            t = t.lstrip()
            if t and t[0] in BULLET_GLYPHS:
                t = t[1:].lstrip()
        if a == "CODE" and blocks and blocks[-1][0] == "CODE":
            blocks[-1][1].append(t)
        elif a == "CODE":
            blocks.append(["CODE", [t]])
        elif a == "ROW":
            cells = texts[i] if isinstance(texts[i], list) else [t]
            if blocks and blocks[-1][0] == "ROW":
                blocks[-1][1].append(cells)
            else:
                blocks.append(["ROW", [cells]])
        else:
            blocks.append([a, t])
    parts = []
    for kind, body in blocks:
        if kind in ("H1", "H2", "H3"):
            parts.append("#" * int(kind[1]) + " " + body)
        elif kind == "BULLET":
            parts.append("- " + body)
        elif kind == "CODE":
            parts.append("```\n" + "\n".join(body) + "\n```")
        elif kind == "ROW":
            rows = ["| " + " | ".join(r) + " |" for r in body]
            rows.insert(1, "|" + "---|" * len(body[0]))
            parts.append("\n".join(rows))
        else:
            parts.append(body)
    # List items of one list stay together; every other block is a paragraph of its own.
    out = ""
    for k, p in enumerate(parts):
        if k:
            same_list = blocks[k][0] == blocks[k - 1][0] and blocks[k][0] in ("BULLET", "NUMBERED")
            out += "\n" if same_list else "\n\n"
        out += p
    return out


def render_document(pages_actions, pages_texts, page_marker="\n<page>\n"):
    """Pages rendered one by one (a block never spans a page break), joined by page_marker."""
    return page_marker.join(render_markdown(a, t) for a, t in zip(pages_actions, pages_texts))
