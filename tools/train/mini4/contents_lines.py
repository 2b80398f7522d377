"""Contents pages and indexes: which lines of a page are entries, and what each line writes.

The reference of src/runtime/contents_lines.h (keep the two in step; the C++ test
tests/runtime/contents_lines_test.cpp reads tests/fixtures/mini4/contents_lines.json, which
tools/fixtures/make_contents_lines_fixture.py writes from this module). The rules are the header's,
step for step: candidates (a line ending in a page list as its own segment, or after a leader read
as dots, a comma or colon, or a space on a led line), contents pages (MIN_ENTRIES candidates with
MIN_LED strong ones, a contents or index title, or MIN_ORDERED growing numbers), entries (with
look-alike digits and unread numbers on such a page), titles wrapped over up to MAX_WRAP lines
joined to the entry after or before, levels by indent up to MAX_LEVEL; and contents_writes, which
plans a page whose rows are two entries side by side column by column.

A line is a dict: cells (the segments' texts), spans (their (x0, x1)), x0, region_x0, x_height, led.
"""
import re

MIN_ENTRIES = 4
MIN_LED = 2
MIN_ORDERED = 8       # entries with arabic page numbers, ...
ORDERED_SHARE = 0.9   # ... this share of their successive pairs not decreasing
MAX_LEVEL = 3
MAX_WRAP = 3          # lines of one title without its page number
TITLES = {"index", "contents", "table of contents", "inhalt", "inhaltsverzeichnis", "table des matieres", "sommaire",
          "indice", "contenido", "contenidos", "spis tresci", "index of contents"}


def is_page_number(s):
    return bool(re.fullmatch(r"[0-9]{1,4}|[ivxlcdm]{1,8}|[IVXLCDM]{1,8}", s))


def _has_letter(s):
    return re.search(r"[A-Za-z]", s) is not None


def clean_title(t):
    """The title without what is left of a leader at its end (a tail of dots and spaces that holds a
    space or two dots: a title's own final period, as in "etc.", stays) and without an index term's
    final comma or colon."""
    t = t.strip(" ")
    while t and t[-1] in ",:":
        t = t[:-1].rstrip(" ")
    k = len(t)
    while k > 0 and t[k - 1] in ". ":
        k -= 1
    tail = t[k:]
    if " " in tail or tail.count(".") >= 2:
        t = t[:k].strip(" ")
    return t


def _joined(cells):
    return " ".join(c.strip(" ") for c in cells if c.strip(" "))


def _digits_before(t, end):
    """Start of the run of 1-4 digits ending at `end`, or None."""
    k = end
    while k > 0 and t[k - 1].isdigit() and t[k - 1].isascii():
        k -= 1
    return k if 1 <= end - k <= 4 else None


def page_list_start(t):
    """Start of the page list that ends the text (numbers of 1-4 digits joined by ',' or '-' and
    spaces: "12", "3, 17-19"; or one roman numeral), when the text holds it whole or a space, a
    comma or a colon stands before it; else None."""
    space = t.rfind(" ")
    if is_page_number(t[space + 1:]) and not t[space + 1:].isdigit():
        return space + 1 if space >= 0 else 0  # a roman numeral
    start = _digits_before(t, len(t))
    if start is None:
        return None
    while True:
        k = start
        while k > 0 and t[k - 1] == " ":
            k -= 1
        if k == 0 or t[k - 1] not in ",-":
            break  # (a list is joined by commas and dashes)
        k -= 1
        while k > 0 and t[k - 1] == "-":  # an en dash read as two hyphens
            k -= 1
        while k > 0 and t[k - 1] == " ":
            k -= 1
        more = _digits_before(t, k)
        if more is None:
            break
        start = more
    return start if start == 0 or t[start - 1] in " ,:" else None


def tidy_pages(pages):
    """A page list as written: runs of hyphens (an en dash read as two) one hyphen."""
    return re.sub(r"-{2,}", "-", pages)


def is_page_list(s):
    return bool(s) and page_list_start(s) == 0


def candidate(line):
    """(title, page, strong) when the line is an entry candidate, else None; strong: its page list
    came after a leader read as dots or after a comma or colon (an index's "term, 3, 17-19"), or
    the line was led."""
    cells = line["cells"]
    if not cells:
        return None
    last = cells[-1].strip(" ")
    if len(cells) >= 2 and is_page_list(last):
        title = clean_title(_joined(cells[:-1]))
        return (title, tidy_pages(last), line["led"]) if _has_letter(title) else None
    text = _joined(cells)
    at = page_list_start(text)
    if at is None or at == 0:
        return None
    before = text[:at].rstrip(" ")
    k = len(before)
    while k > 0 and before[k - 1] in ". ":
        k -= 1
    if before[k:].count(".") >= 3:
        title, strong = before, True
    elif before.endswith((",", ":")):
        title, strong = before[:-1], True
    elif line["led"]:
        title, strong = before, True
    else:
        return None
    title = clean_title(title)
    return (title, tidy_pages(text[at:]), strong) if _has_letter(title) else None


_LOOKALIKE = {"l": "1", "I": "1", "|": "1", "]": "1", "[": "1", "!": "1", "O": "0", "o": "0", "Q": "0", "D": "0",
              "S": "5", "s": "5", "Z": "2", "z": "2", "B": "8", "g": "9", "q": "9"}


def misread_number(line):
    """(title, page) of a line of two or more segments whose last one reads as a page number once its
    spaces are dropped and letters that look like digits are taken for them (LOOKALIKE: l and ] for
    1, O for 0, ...: a scan's lone digits), else None. Asked only on a contents page."""
    cells = line["cells"]
    if len(cells) < 2:
        return None
    last = cells[-1].replace(" ", "")
    digits = "".join(_LOOKALIKE.get(c, c) for c in last)
    title = clean_title(_joined(cells[:-1]))
    if not re.fullmatch(r"[0-9]{1,4}", digits) or not _has_letter(title):
        return None
    return title, digits


def unread_number(line):
    """The title of a line whose last segment (of two or more) should be its page number but was read
    as marks or nothing (at most 4 characters, no letter or digit), else None."""
    cells = line["cells"]
    if len(cells) < 2:
        return None
    last = cells[-1].strip(" ")
    title = clean_title(_joined(cells[:-1]))
    if len(last) > 4 or re.search(r"[A-Za-z0-9]", last) or not _has_letter(title):
        return None
    return title


def is_contents_title(line):
    t = ""
    for c in _joined(line["cells"]):
        if c.isascii() and c.isalpha():
            t += c.lower()
        elif c == " " and t and t[-1] != " ":
            t += " "
    return t.strip(" ") in TITLES


def _ordered(cands):
    """Whether at least MIN_ORDERED candidates have arabic page numbers and ORDERED_SHARE of their
    successive pairs do not decrease (a contents page's numbers grow; a table's figures do not)."""
    nums = [int(c[1]) for c in cands if c is not None and c[1].isdigit()]
    if len(nums) < MIN_ORDERED:
        return False
    rising = sum(b >= a for a, b in zip(nums, nums[1:]))
    return rising >= ORDERED_SHARE * (len(nums) - 1)


def indent_levels(indents, tol):
    starts = []
    for v in sorted(indents):
        if not starts or v - starts[-1] > tol:
            starts.append(v)
    out = []
    for v in indents:
        level = 0
        while level + 1 < len(starts) and starts[level + 1] <= v:
            level += 1
        out.append(min(level, MAX_LEVEL))
    return out


def _indent(line):
    return line["x0"] - line["region_x0"]


def contents_entries(lines):
    """One per line: None, or {"part", "level", "title", "page"}; part is "entry" (the line that
    writes the entry), "start" (the first part of the next line's entry) or "continuation" (the rest
    of the line before's entry); only an entry's title and page are its whole item's."""
    n = len(lines)
    out = [None] * n
    cands = [candidate(l) for l in lines]
    count = sum(c is not None for c in cands)
    led = sum(c is not None and c[2] for c in cands)
    titled = any(is_contents_title(l) for l in lines)
    if count < MIN_ENTRIES or (led < MIN_LED and not titled and not _ordered(cands)):
        return out
    for i in range(n):
        if cands[i] is None and misread_number(lines[i]) is not None:
            cands[i] = misread_number(lines[i]) + (False,)
        elif cands[i] is None and unread_number(lines[i]) is not None:
            cands[i] = (unread_number(lines[i]), "", False)
    heights = sorted(lines[i]["x_height"] for i in range(n) if cands[i] is not None)
    tol = heights[len(heights) // 2]
    text = [_joined(l["cells"]) for l in lines]
    first_of = {}  # an entry's line -> its title's first line
    prefix, prefix_at, i = None, None, 0
    while i < n:
        if cands[i] is not None:
            title, first = cands[i][0], i
            if prefix is not None:
                title, first, prefix = prefix + " " + title, prefix_at, None
            out[i] = {"part": "entry", "level": 0, "title": title, "page": cands[i][1]}
            first_of[i] = first
            i += 1
            continue
        # A title too long for one line: up to MAX_WRAP lines with letters between two entries are
        # its first part when the entry after hangs further in than the first of them and does not
        # start with a digit (the number on the title's last line, as LaTeX sets it), else the rest
        # of the entry before's (the number beside its first line).
        j = i
        while j < n and j - i < MAX_WRAP and cands[j] is None and _has_letter(text[j]) and len(text[j]) > 2:
            j += 1
        if i == 0 or cands[i - 1] is None or j == i or j >= n or cands[j] is None:
            i = max(j, i + 1)
            continue
        nxt, own = text[j], text[i]
        hangs = _indent(lines[j]) > _indent(lines[i]) + tol and not nxt[:1].isdigit()
        # the rest of the entry before: set in no further out than its first line, not a numbered
        # entry of its own (its number misread) nor a contents title
        rest = _indent(lines[i]) >= _indent(lines[first_of[i - 1]]) and not own[:1].isdigit() \
            and not is_contents_title(lines[i])
        if not hangs and not rest:
            i = j
            continue
        texts = [clean_title(text[k]) for k in range(i, j)]
        for k in range(i, j):
            out[k] = {"part": "start" if hangs else "continuation", "level": 0, "title": texts[k - i], "page": ""}
        if hangs:
            prefix, prefix_at = " ".join(texts), i
        else:
            out[i - 1]["title"] += " " + " ".join(texts)
        i = j
    entries = sorted(first_of)
    levels = indent_levels([_indent(lines[first_of[e]]) for e in entries], tol)
    for e, level in zip(entries, levels):
        for k in range(first_of[e], e + 1):
            out[k]["level"] = level
    return out


def contents_text(entry):
    """The entry's text: the title, " \u2014 ", the page (the title alone when no number was read)."""
    return entry["title"] + (" \u2014 " + entry["page"] if entry["page"] else "")


def contents_item(entry):
    """The entry's markdown item: "  " x level, "- ", its text."""
    return "  " * entry["level"] + "- " + contents_text(entry)


def _part(line, cells, spans, region_x0):
    return {"cells": cells, "spans": spans, "x0": spans[0][0], "region_x0": region_x0, "x_height": line["x_height"],
            "led": line["led"]}


def _split_at(line):
    """The x where the line parts into two entries side by side (a two-column index read across),
    the widest gap between segments whose sides are both entry candidates; else None."""
    best, gap = None, -1
    cells, spans = line["cells"], line["spans"]
    for k in range(1, len(cells)):
        left, right = _part(line, cells[:k], spans[:k], 0), _part(line, cells[k:], spans[k:], 0)
        g = spans[k][0] - spans[k - 1][1]
        if g > gap and candidate(left) is not None and candidate(right) is not None:
            best, gap = spans[k][0], g
    return best


def column_split(lines):
    """The x of the right column when at least MIN_ENTRIES lines, and half of those of two or more
    segments, part into two entries side by side (an index set in two columns without leaders,
    whose rows the layout paired as a table's); the upper median of their x. Else None."""
    wide = [l for l in lines if len(l["cells"]) >= 2]
    xs = sorted(x for x in (_split_at(l) for l in wide) if x is not None)
    if len(xs) < MIN_ENTRIES or 2 * len(xs) < len(wide):
        return None
    return xs[len(xs) // 2]


def _writes(entry, line):
    """What one (part of a) line writes: its item, nothing (a part of a wrapped title), or, where it is
    no entry, its text as a paragraph."""
    if entry is None:
        return [(False, 0, _joined(line["cells"]))] if _joined(line["cells"]) else []
    return [(True, entry["level"], contents_text(entry))] if entry["part"] == "entry" else []


def contents_writes(lines):
    """The writer's plan, one per line: None (the decoder's choice) or the list of (item, level, text)
    the line writes: an item at its level, or a paragraph. On a contents page read in one column,
    contents_entries' items. On a page whose rows are two entries side by side (column_split), the
    left column's parts and then the right column's, each column's lines planned by
    contents_entries (a column's indents from its own edge), written in that order: each line its
    left part's, the last line with a segment the right column's too."""
    split = column_split(lines)
    if split is None:
        return [None if e is None else _writes(e, l) for e, l in zip(contents_entries(lines), lines)]
    lefts, rights = [], []
    for i, l in enumerate(lines):
        on_left = [k for k, (x0, x1) in enumerate(l["spans"]) if x1 <= split]
        on_right = [k for k in range(len(l["cells"])) if k not in on_left]
        if on_left:
            lefts.append((i, _part(l, [l["cells"][k] for k in on_left], [l["spans"][k] for k in on_left], l["region_x0"])))
        if on_right:
            rights.append((i, _part(l, [l["cells"][k] for k in on_right], [l["spans"][k] for k in on_right], split)))
    parts = lefts + rights
    entries = contents_entries([p for _, p in parts])
    out = [[] for _ in lines]
    last = max(i for i, _ in parts)
    for k, ((i, p), e) in enumerate(zip(parts, entries)):
        out[i if k < len(lefts) else last] += _writes(e, p)
    return out
