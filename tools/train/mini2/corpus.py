"""Text sources for folio-mini-ocr 2, split by source file: one source in eight is held out.

Sources are this machine's man pages (formatted to plain text by groff) and the documentation files
under /usr/share/doc (READMEs, NEWS, copyright files, changelogs). A source is held out when the
SHA-1 of its name is 0 mod 8, so the split is the same on every machine and never depends on which
packages happen to be installed. `build` formats every source once and caches the texts (gzip JSON)
in WORK, keyed by split; training reads the cache.

    /usr/bin/python3 tools/train/mini2/corpus.py --work train-work/mini2 --max-sources 3000
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import unicodedata

# Mapped before anything else, on training text and on evaluation text alike.
_MAP = {"\u2010": "-", "\u2011": "-", "\u2212": "-", "\u00ad": "", "\u00a0": " ", "\ufb01": "fi", "\ufb02": "fl",
        "\ufb00": "ff", "\ufb03": "ffi", "\ufb04": "ffl", "\t": " ", "\u2002": " ", "\u2003": " ", "\u2009": " "}


def is_held_out(source_name):
    return int(hashlib.sha1(source_name.encode()).hexdigest(), 16) % 8 == 0


def clean(text, charset):
    """Text with ligatures and dash/space variants mapped, other characters outside charset dropped."""
    text = "".join(_MAP.get(ch, ch) for ch in text)
    text = unicodedata.normalize("NFC", text)
    return "".join(ch for ch in text if ch in charset or ch == "\n")


def _man_sources():
    pages = sorted(glob.glob("/usr/share/man/man[1-8]/*.gz"))
    return [("man:" + os.path.basename(p)[:-3], p) for p in pages if not os.path.islink(p)]


def _doc_sources():
    pats = ("README*", "*.txt", "copyright", "NEWS*", "*.md", "changelog.gz", "AUTHORS*", "THANKS*", "TODO*")
    out = set()
    for pat in pats:
        out.update(glob.glob(f"/usr/share/doc/*/{pat}"))
    return [("doc:" + p[len("/usr/share/doc/"):], p) for p in sorted(out) if os.path.isfile(p)]


def _format_man(path):
    try:
        r = subprocess.run(f"zcat '{path}' | groff -man -Tutf8 -P -cbou 2>/dev/null", shell=True,
                           capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        return ""
    return r.stdout.decode("utf-8", errors="ignore")


def _read_doc(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read(300_000).decode("utf-8", errors="ignore")
    except OSError:
        return ""


def _family(name):
    """The package-ish prefix of a source name: gcloud-alpha-iam.1 -> gcloud, doc:libxcb-dri3/.. -> libxcb."""
    return re.split(r"[-_./0-9]", name.split(":", 1)[1], maxsplit=1)[0]


def _diverse(sources, n, per_family=12):
    """The first n sources, at most per_family of one family (one SDK's 900 man pages would
    otherwise be half of all lines)."""
    seen, out = {}, []
    for name, p in sources:
        fam = _family(name)
        if seen.get(fam, 0) < per_family:
            seen[fam] = seen.get(fam, 0) + 1
            out.append((name, p))
        if len(out) == n:
            break
    return out


def build(work, max_sources, seed=1):
    """Formats up to max_sources sources (a seeded sample of man pages and docs) into WORK/corpus.json.gz."""
    path = os.path.join(work, "corpus.json.gz")
    if os.path.exists(path):
        return path
    rng = random.Random(seed)
    man, doc = _man_sources(), _doc_sources()
    rng.shuffle(man)
    rng.shuffle(doc)
    chosen = _diverse(man, max_sources // 2) + _diverse(doc, max_sources // 2)
    corpus = {"train": {}, "heldout": {}}
    for name, p in chosen:
        text = _format_man(p) if name.startswith("man:") else _read_doc(p)
        if len(text) < 400:
            continue
        corpus["heldout" if is_held_out(name) else "train"][name] = text
    return save_json_gz(path, corpus)


def save_json_gz(path, obj):
    """Writes obj as gzip JSON at path, whole or not at all (a temporary file, then a rename)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with gzip.open(path + ".tmp", "wt", encoding="utf-8") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)
    return path


class Corpus:
    """Samples text lines (word-aligned, len_lo..len_hi characters) from one split's sources."""

    def __init__(self, work, split, charset):
        with gzip.open(os.path.join(work, "corpus.json.gz"), "rt", encoding="utf-8") as f:
            texts = json.load(f)[split]
        self.names = sorted(texts)
        self.words = []
        for n in self.names:
            w = clean(texts[n], charset).split()
            if len(w) >= 30:
                self.words.append(w)

    def line(self, rng, len_lo=8, len_hi=80):
        words = rng.choice(self.words)
        i = rng.randrange(len(words))
        target = rng.randint(len_lo, len_hi)
        out = words[i]
        while len(out) < target and i + 1 < len(words):
            i += 1
            if len(out) + 1 + len(words[i]) > len_hi:
                break
            out += " " + words[i]
        return out[:len_hi]


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--max-sources", type=int, default=3000)
    a = ap.parse_args()
    p = build(a.work, a.max_sources)
    with gzip.open(p, "rt", encoding="utf-8") as f:
        c = json.load(f)
    for split, texts in c.items():
        print(split, len(texts), "sources", sum(len(t) for t in texts.values()), "chars")
