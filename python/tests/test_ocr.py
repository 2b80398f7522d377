"""Engine.ocr and Engine.ocr_stream on the shipped model, against `folio ocr` on the same files."""

import json
import os
import shutil
import subprocess

import pytest

import folio
from conftest import ROOT, sample


def cli_ocr(folio_binary, tmp_path, *args):
    out = tmp_path / "cli.json"
    md = subprocess.run([folio_binary, "ocr", *args, "--json", str(out), "--quiet", "--threads", "1"], check=True,
                        capture_output=True, text=True, errors="replace").stdout
    return md, json.loads(out.read_text())


def test_reads_the_typeset_sample_as_the_cli_does(engine, folio_binary, tmp_path):
    doc = engine.ocr(sample("sample-typeset.pdf"))
    md, cli = cli_ocr(folio_binary, tmp_path, sample("sample-typeset.pdf"))
    assert doc.markdown.startswith("# Reading Long Documents on a Small Machine")
    assert "## How a page is read" in doc.markdown
    assert doc.markdown.rstrip("\n") == md.rstrip("\n")
    assert [p.markdown for p in doc.pages] == [p["markdown"] for p in cli["pages"]]
    page = doc.pages[0]
    assert (page.number, page.width, page.height) == (1, cli["pages"][0]["width"], cli["pages"][0]["height"])
    assert page.source.endswith("sample-typeset.pdf") and page.source_page == 1
    assert [(b.label, b.text) for b in page.blocks] == [(b["label"], b["text"]) for b in cli["pages"][0]["blocks"]]
    assert [b.label for b in page.blocks][:4] == ["title", "text", "text", "sub_title"]
    assert doc.model == "folio-mini-ocr-3" and engine.model == "folio-mini-ocr-3"
    assert doc.stats["pages"] == 1 and doc.stats["decode_tokens"] > 10
    assert str(doc) == doc.markdown


def test_bytes_read_as_the_file_does(engine):
    path = sample("sample-3page.pdf")
    with open(path, "rb") as f:
        data = f.read()
    from_bytes = engine.ocr(data)
    from_path = engine.ocr(path)
    assert from_bytes.markdown == from_path.markdown
    assert [p.source for p in from_bytes.pages] == ["document"] * 3
    assert len(from_path.pages) == 3


def test_pages_are_chosen_across_inputs(engine):
    doc = engine.ocr([sample("sample-1page.pdf"), sample("sample-3page.pdf")], pages=[2, 4])
    assert [(p.number, p.source_page) for p in doc.pages] == [(1, 1), (2, 3)]
    assert doc.pages[0].source.endswith("sample-3page.pdf")
    assert engine.ocr(sample("sample-3page.pdf"), pages="2-3").markdown == engine.ocr(sample("sample-3page.pdf"), pages=range(2, 4)).markdown


def test_stream_yields_each_page_in_order_as_the_whole_reads_them(engine):
    whole = engine.ocr(sample("sample-3page.pdf"))
    streamed = list(engine.ocr_stream(sample("sample-3page.pdf")))
    assert [p.number for p in streamed] == [1, 2, 3]
    assert [p.markdown for p in streamed] == [p.markdown for p in whole.pages]


def test_stream_with_text_yields_what_the_cli_streams(engine, folio_binary):
    events = list(engine.ocr_stream(sample("sample-3page.pdf"), text=True))
    pieces = [e for e in events if isinstance(e, str)]
    assert [e.number for e in events if isinstance(e, folio.Page)] == [1, 2, 3]
    cli = subprocess.run([folio_binary, "ocr", sample("sample-3page.pdf"), "--stream", "--quiet", "--threads", "1"],
                         check=True, capture_output=True, text=True).stdout
    assert len(pieces) >= 1 and "".join(pieces) == cli.rstrip("\n")


def test_leaving_a_stream_early_cancels_the_rest(engine):
    for page in engine.ocr_stream(sample("sample-3page.pdf")):
        assert page.number == 1
        break
    assert engine.ocr(sample("sample-1page.pdf")).pages  # the engine goes on


def test_a_directory_reads_its_images_in_name_order(engine, tmp_path):
    page = os.path.join(ROOT, "tests", "fixtures", "mini2", "layout_page.png")
    for name in ("b.png", "a.PNG", "notes.txt"):
        shutil.copy(page, tmp_path / name)
    doc = engine.ocr(str(tmp_path))
    assert [os.path.basename(p.source) for p in doc.pages] == ["a.PNG", "b.png"]
    assert doc.pages[0].markdown == doc.pages[1].markdown == engine.ocr(page).markdown
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(folio.InvalidInput, match="has no .png, .jpg or .jpeg images"):
        engine.ocr(str(empty))


def test_errors_carry_the_clis_messages_and_break_nothing(engine, tmp_path):
    with pytest.raises(FileNotFoundError, match="input '/no/such/file.pdf' does not exist"):
        engine.ocr("/no/such/file.pdf")
    with pytest.raises(folio.InvalidInput, match="not a PDF, PNG or JPEG|unsupported"):
        engine.ocr(b"plain text, not a document")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    with pytest.raises(folio.InvalidInput, match="broken.pdf"):
        engine.ocr(str(broken))
    with pytest.raises(ValueError, match="page 9"):
        engine.ocr(sample("sample-3page.pdf"), pages="9")
    with pytest.raises(TypeError):
        engine.ocr(12345)
    assert engine.ocr(sample("sample-1page.pdf")).pages[0].markdown


def test_bad_options_are_named(tmp_path):
    with pytest.raises(TypeError, match="kv_dtyp"):
        folio.Engine(kv_dtyp="q8")
    with pytest.raises(folio.InvalidInput, match="kv_dtype"):
        folio.Engine(kv_dtype="q9")
    with pytest.raises(folio.InvalidInput, match="window"):
        folio.Engine(window=-3)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        folio.Engine(str(tmp_path / "no-model"))
    with pytest.raises(folio.InvalidInput, match="config.json|model"):
        folio.Engine(str(tmp_path))


@pytest.mark.parametrize("options", [dict(policy="full", kv_dtype="f32"), dict(policy="rolling", resident_pages=2),
                                     dict(kv_dtype="q8", threads=1)])
def test_kv_options_reach_the_engine(options):
    doc = folio.Engine(**options).ocr(sample("sample-3page.pdf"))
    assert len(doc.pages) == 3 and all(p.markdown for p in doc.pages)


def test_a_gguf_text_model_with_its_mmproj_reads_as_the_cli_does(folio_binary, tmp_path):
    # A tiny random Unlimited-OCR checkpoint, converted to llama.cpp's pair of files.
    subprocess.run([folio_binary, "make-model", "--arch", "unlimited-ocr", "--preset", "tiny", "--seed", "1", "--out",
                    str(tmp_path / "m")], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([folio_binary, "convert", "--model", str(tmp_path / "m"), "--out", str(tmp_path / "text.gguf"),
                    "--mmproj-out", str(tmp_path / "mmproj.gguf")], check=True, capture_output=True)
    engine = folio.Engine(str(tmp_path / "text.gguf"), mmproj=str(tmp_path / "mmproj.gguf"), threads=1)
    doc = engine.ocr(sample("sample-1page.pdf"), max_tokens=200)
    _, cli = cli_ocr(folio_binary, tmp_path, sample("sample-1page.pdf"), "--model", str(tmp_path / "text.gguf"), "--mmproj",
                     str(tmp_path / "mmproj.gguf"), "--max-tokens", "200")
    assert engine.model == "text.gguf" and engine.reads_documents
    assert doc.stats["decode_tokens"] == 200
    # Random weights write bytes that are not UTF-8: both JSONs carry them as U+FFFD.
    assert [p.markdown for p in doc.pages] == [p["markdown"] for p in cli["pages"]]


def test_a_closed_engine_refuses_calls_and_a_stream_keeps_what_it_reads_alive():
    with folio.Engine(threads=1) as engine:
        stream = engine.ocr_stream(sample("sample-3page.pdf"))
        first = next(stream)
    with pytest.raises(folio.Error, match="closed"):
        engine.ocr(sample("sample-1page.pdf"))
    # The stream started before close() reads on: its job keeps the engine's model alive.
    rest = list(stream)
    assert [p.number for p in [first] + rest] == [1, 2, 3]


def test_figures_come_with_their_pictures_boxes_and_captions(engine):
    page = os.path.join(ROOT, "tests", "fixtures", "mini2", "figure_page.png")
    doc = engine.ocr(page)
    assert [f.file for f in doc.figures] == [f"page-1-figure-{k}.png" for k in (1, 2, 3)]
    for f in doc.figures:
        assert f.page == 1 and f.png.startswith(b"\x89PNG")
        width, height = int.from_bytes(f.png[16:20], "big"), int.from_bytes(f.png[20:24], "big")
        assert [width, height] == [f.box[2] - f.box[0], f.box[3] - f.box[1]]
        assert f"]({f.file})" in doc.markdown
    assert doc.figures[0].caption.startswith("Figure 1: Decode rate")
    assert doc.figures[2].caption == "Figure 2: A terminal."
    assert folio.Figure is type(doc.figures[0])
