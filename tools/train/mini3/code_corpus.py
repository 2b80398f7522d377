"""Code text for folio-mini-ocr 3's training lines: source lines and identifiers from what Debian
installs, split by file like mini2's corpus (corpus.is_held_out on the source name).

Sources: C headers under /usr/include, Python modules under /usr/lib/python3/dist-packages and the
example files under /usr/share/doc/*/examples. None of them is a source of the real-document
evaluation set (realdocs.py typesets man pages and markdown files and takes the PDFs packages ship).
`build` reads a seeded sample once and caches code lines and identifiers (gzip JSON) in WORK:

    /usr/bin/python3 tools/train/mini3/code_corpus.py --work train-work/mini3r

An identifier here is a token a manual sets in monospace inside prose: it holds an underscore, a dot
between names, '::', '->', brackets or a call's parentheses (BZ2_bzopen, os.path.join, std::vector,
argv[1], free()), or is an option (--output, -n).
"""
import argparse
import glob
import gzip
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mini2"))
import corpus as corpus_mod  # noqa: E402

IDENT = re.compile(r"(?:--?[A-Za-z][\w-]*(?:=\w+)?)|(?:[A-Za-z_][\w]*(?:(?:\.|::|->)[A-Za-z_][\w]*)*"
                   r"(?:\(\)|\[[\w.+-]*\])?)")


def _is_identifier(tok):
    if len(tok) < 3 or len(tok) > 40:
        return False
    return (tok.startswith("-") or "_" in tok or "." in tok or "::" in tok or "->" in tok
            or tok.endswith("()") or tok.endswith("]"))


def _sources():
    files = glob.glob("/usr/include/**/*.h", recursive=True)
    files += glob.glob("/usr/lib/python3/dist-packages/**/*.py", recursive=True)
    files += [p for p in glob.glob("/usr/share/doc/*/examples/**/*", recursive=True)
              if os.path.isfile(p) and not p.endswith(".gz") and os.path.getsize(p) < 200_000]
    return sorted(files)


def _code_lines(path, charset):
    try:
        with open(path, "rb") as f:
            text = f.read(100_000).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for raw in text.splitlines():
        line = " ".join(corpus_mod.clean(raw, charset).split())
        # Lines of punctuation alone ("}", "*/", "#", "};") too: a listing has many, and a lone
        # mark is a line of its own for the line finder.
        if (3 <= len(line) <= 90 and sum(c.isalnum() for c in line) >= 2) or 1 <= len(line) <= 3:
            out.append(line)
    return out


def build(work, charset, max_files=2500, seed=3):
    """WORK/code.json.gz: {"train"|"heldout": {"lines": [...], "identifiers": [...]}}."""
    path = os.path.join(work, "code.json.gz")
    if os.path.exists(path):
        return path
    files = _sources()
    random.Random(seed).shuffle(files)
    split = {"train": {"lines": [], "identifiers": set()}, "heldout": {"lines": [], "identifiers": set()}}
    for p in files[:max_files]:
        s = split["heldout" if corpus_mod.is_held_out("code:" + p) else "train"]
        lines = _code_lines(p, charset)
        s["lines"].extend(lines[:400])
        for line in lines:
            s["identifiers"].update(t for t in IDENT.findall(line) if _is_identifier(t))
    for s in split.values():
        s["identifiers"] = sorted(s["identifiers"])
    return corpus_mod.save_json_gz(path, split)


class CodeCorpus:
    """Samples code lines and identifiers of one split."""

    def __init__(self, work, split):
        with gzip.open(os.path.join(work, "code.json.gz"), "rt", encoding="utf-8") as f:
            s = json.load(f)[split]
        self.lines, self.identifiers = s["lines"], s["identifiers"]

    def line(self, rng):
        return rng.choice(self.lines)

    def identifier(self, rng):
        return rng.choice(self.identifiers) if rng.random() < 0.7 else synthetic_identifier(rng)


_WORDS = ("buf len size max min mem config error read write open close init free alloc page line count "
          "file path name type value flag mode data node next prev list table key hash out in tmp ptr "
          "ctx state lock sync queue cache block").split()


def synthetic_identifier(rng):
    """Identifier shapes the harvested ones under-represent: CONSTANT_CASE, prefixed C names,
    dotted attributes with calls, array elements, hex numbers, long options."""
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 4))]
    kind = rng.randrange(7)
    if kind == 0:
        return "_".join(w.upper() for w in words)
    if kind == 1:
        return rng.choice(("BZ2_", "XML_", "SSL_", "pthread_", "g_", "png_", "__")) + "_".join(words)
    if kind == 2:
        return ".".join(words) + ("()" if rng.random() < 0.5 else "")
    if kind == 3:
        return words[0] + f"[{rng.choice(('i', 'n - 1', '0', str(rng.randint(1, 99)), 'j + 1'))}]"
    if kind == 4:
        return f"0x{rng.randrange(1 << rng.choice((8, 16, 32))):0{rng.choice((2, 4, 8))}X}"
    if kind == 5:
        return "--" + "-".join(words) + (f"={rng.choice(_WORDS)}" if rng.random() < 0.3 else "")
    return words[0] + "".join(w.capitalize() for w in words[1:]) + "()"


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mini2"))
    import lines  # noqa: E402
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    build(a.work, set(lines.CHARSET))
    for split in ("train", "heldout"):
        c = CodeCorpus(a.work, split)
        print(split, len(c.lines), "lines", len(c.identifiers), "identifiers")
