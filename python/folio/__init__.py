"""folio: documents to markdown, and text generation, in this process.

    import folio
    engine = folio.Engine()                       # the shipped OCR model (folio-mini-ocr 3)
    doc = engine.ocr("manual.pdf", pages="1-20")
    print(doc.markdown)
    for page in engine.ocr_stream("manual.pdf"):  # pages as they are decoded
        print(page.number, page.markdown[:80])

An Engine loads its model once. Any number of Python threads may use one Engine at once: folio
works with the GIL released and decodes their requests together in one batch, each answer the
same as if it ran alone. Options are `folio ocr`'s, '_' for '-' (Engine.options() lists them).
docs/python.md has the whole API.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence, Union

from ._folio import Busy, Error, InvalidInput, Unsupported, _Engine

__all__ = ["Engine", "Document", "Page", "Block", "Figure", "Completion", "Error", "InvalidInput", "Unsupported", "Busy"]

Source = Union[str, os.PathLike, bytes, bytearray, memoryview]

# How long one wait on the engine lasts before Python gets the GIL back (Ctrl-C is seen then).
_POLL_MS = 100


@dataclass
class Block:
    """A block of a page: its label ("title", "text", "table", ...; "" when the model gives none),
    its text, and its boxes in page pixels and normalised to 0..999."""

    label: str
    text: str
    boxes: List[List[int]] = field(default_factory=list)
    boxes_normalized: List[List[int]] = field(default_factory=list)


@dataclass
class Page:
    """One page as read: number (1-based, across all inputs), size in pixels as rendered, its
    markdown and blocks, and where it came from (source file name, page within it)."""

    number: int
    width: int
    height: int
    markdown: str
    blocks: List[Block]
    source: str
    source_page: int

    @staticmethod
    def _from_json(j: dict) -> "Page":
        blocks = [Block(b.get("label", ""), b.get("text", ""), b.get("boxes", []), b.get("boxes_normalized", []))
                  for b in j.get("blocks", [])]
        return Page(j["page"], j["width"], j["height"], j["markdown"], blocks, j.get("source", ""), j.get("source_page", 0))


@dataclass
class Figure:
    """A figure of a read page (a plot, diagram, screenshot or photograph): its picture as PNG bytes
    cropped from the page, its box in page pixels and normalised to 0..999, the page's number, its
    caption (or "Figure N") and the name the markdown links it by ("page-P-figure-K.png")."""

    page: int
    png: bytes
    box: List[int]
    box_normalized: List[int]
    caption: str
    file: str


@dataclass
class Document:
    """A read document: its markdown, pages, figures, statistics (tokens, times, KV bytes) and
    warnings. `json` is what `folio ocr --json` and POST /v1/ocr give for the same input."""

    markdown: str
    pages: List[Page]
    stats: dict
    usage: dict
    warnings: List[str]
    model: str
    json: dict
    figures: List[Figure] = field(default_factory=list)

    def __str__(self) -> str:
        return self.markdown


@dataclass
class Completion:
    """A generated text: the text, its token ids, why it stopped ("eos", "length", "context"...)
    and the token counts."""

    text: str
    tokens: List[int]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int

    def __str__(self) -> str:
        return self.text


def _inputs(source: Union[Source, Sequence[Source]]) -> list:
    items = source if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise InvalidInput("no file to read")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, (bytes, bytearray, memoryview)):
            out.append((f"document-{i + 1}" if len(items) > 1 else "document", bytes(item)))
        elif isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if not os.path.exists(path):
                raise FileNotFoundError(2, f"input '{path}' does not exist", path)
            out.append(path)
        else:
            raise TypeError(f"an input must be a path or bytes, got {type(item).__name__}")
    return out


def _page_range(pages) -> str:
    if pages is None:
        return ""
    if isinstance(pages, str):
        return pages
    if isinstance(pages, int):
        return str(pages)
    if isinstance(pages, range):
        pages = list(pages)
    return ",".join(str(int(p)) for p in pages)


def _shipped_model() -> str:
    """The shipped model inside an installed package, else "" (the engine looks next to the
    folio build and in its source tree)."""
    if os.environ.get("FOLIO_MODEL"):
        return os.environ["FOLIO_MODEL"]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "folio-mini-ocr-3")
    return here if os.path.exists(os.path.join(here, "config.json")) else ""


class Engine:
    """One model, loaded once: `model` is a model directory, a GGUF text model (with mmproj= for
    OCR), or None for the shipped OCR model. `options` are folio ocr's options, '_' for '-'
    (threads=2, policy="rswa", window=128, kv_dtype="q8", ...): Engine.options() lists them.

    Raises InvalidInput (a ValueError) naming the option or file at fault, TypeError for an
    option that does not exist."""

    def __init__(self, model: Optional[Union[str, os.PathLike]] = None, **options):
        known = dict(_Engine.option_names())
        unknown = sorted(k for k in options if k not in known)
        if unknown:
            raise TypeError(f"Engine() got unknown option(s) {', '.join(unknown)}; options: {', '.join(known)}")
        values = {}
        for k, v in options.items():
            if v is None:
                continue
            values[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        path = os.fspath(model) if model is not None else _shipped_model()
        if path and not os.path.exists(path):
            raise FileNotFoundError(2, f"model '{path}' does not exist", path)
        self._engine = _Engine(path, values)

    def close(self) -> None:
        """Ends the engine: its model and KV are freed once no stream or call still uses them;
        later calls raise folio.Error. `with folio.Engine() as engine:` closes it at the end."""
        self._engine = None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _live(self) -> _Engine:
        if self._engine is None:
            raise Error("the engine is closed")
        return self._engine

    @staticmethod
    def options() -> dict:
        """{option: what it sets} for every option Engine() takes."""
        return dict(_Engine.option_names())

    @property
    def model(self) -> str:
        """The loaded model's name (its directory's)."""
        return self._live().model_id

    @property
    def reads_documents(self) -> bool:
        """Whether the model is an OCR model (ocr() works) rather than a text model."""
        return self._live().reads_documents

    @property
    def stats(self) -> dict:
        """The scheduler's figures now: running, queued, max_batch_seen, steps, tokens, KV bytes."""
        return self._live().stats()

    def _start_ocr(self, source, pages, max_tokens):
        return self._live().start_ocr(_inputs(source), _page_range(pages), max_tokens)

    def ocr(self, source: Union[Source, Sequence[Source]], pages=None, max_tokens: Optional[int] = None) -> Document:
        """Reads PDFs and images (paths, directories of images read in name order, or bytes; a
        list reads them as one document) into a Document. pages: "1-3,5", an int, or a list of page numbers across the inputs (1-based).
        max_tokens: generated tokens per pass at most (default: as the model needs)."""
        job = self._start_ocr(source, pages, max_tokens)
        try:
            while not job.poll(_POLL_MS)[1]:
                pass
            return _document(json.loads(job.result_json()))
        finally:
            job.cancel()

    def ocr_stream(self, source: Union[Source, Sequence[Source]], pages=None, max_tokens: Optional[int] = None,
                   text: bool = False) -> Iterator[Union[Page, str]]:
        """As ocr(), yielding each Page as soon as it is final, in order. With text=True it also
        yields the model's text (str pieces) as it is decoded, in pass order, as `folio ocr --stream`
        prints it. Leaving the loop early cancels the rest."""
        job = self._start_ocr(source, pages, max_tokens)
        try:
            done = False
            held = b""
            while not done:
                fresh, done = job.poll(_POLL_MS)
                if text:
                    held += job.take_text()
                    piece, held = _complete_utf8(held)
                    if piece:
                        yield piece
                for i in fresh:
                    yield Page._from_json(json.loads(job.page_json(i)))
            job.result_json()  # raises when a pass failed
            if text and held:
                yield held.decode("utf-8", "replace")
        finally:
            job.cancel()

    def generate(self, prompt: str, max_tokens: Optional[int] = None, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int = 0, add_bos: bool = True) -> Completion:
        """Generates after `prompt` (greedy at temperature 0: the same text however many threads
        generate at once)."""
        run = self._live().start_text(prompt, max_tokens, temperature, top_p, seed, add_bos)
        pieces = []
        while not run.done():
            pieces.append(run.poll(_POLL_MS))
        r = run.result()
        return Completion(b"".join(pieces).decode("utf-8", "replace"), r["tokens"], r["finish_reason"], r["prompt_tokens"],
                          r["completion_tokens"])

    def generate_stream(self, prompt: str, max_tokens: Optional[int] = None, temperature: float = 0.0, top_p: float = 1.0,
                        seed: int = 0, add_bos: bool = True) -> Iterator[str]:
        """As generate(), yielding the text as it comes (whole UTF-8 characters)."""
        run = self._live().start_text(prompt, max_tokens, temperature, top_p, seed, add_bos)
        held = b""
        while not run.done():
            held += run.poll(_POLL_MS)
            text, held = _complete_utf8(held)
            if text:
                yield text
        run.result()
        if held:
            yield held.decode("utf-8", "replace")


def _complete_utf8(b: bytes):
    """(the text of the whole characters at the start of b, the bytes of an unfinished one)."""
    for cut in range(len(b), max(len(b) - 4, -1), -1):
        try:
            return b[:cut].decode("utf-8"), b[cut:]
        except UnicodeDecodeError:
            continue
    return b.decode("utf-8", "replace"), b""


def _figures(j: dict) -> List[Figure]:
    out = []
    for p in j.get("pages", []):
        for b in p.get("blocks", []):
            if b.get("data", "").startswith("data:image/png;base64,"):
                out.append(Figure(p["page"], base64.b64decode(b["data"].split(",", 1)[1]), (b.get("boxes") or [[]])[0],
                                  (b.get("boxes_normalized") or [[]])[0], b.get("caption", ""), b.get("file", "")))
    return out


def _document(j: dict) -> Document:
    pages = [Page._from_json(p) for p in j.get("pages", [])]
    return Document(j.get("markdown", ""), pages, j.get("stats", {}), j.get("usage", {}), j.get("warnings", []),
                    j.get("model", ""), j, _figures(j))
