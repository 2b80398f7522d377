"""Engine.generate on a text model against `folio generate`; Python threads sharing one Engine
(the GIL released, their requests batched, each answer the lone one); no memory kept per call."""

import subprocess
import threading

import pytest

import folio
from conftest import rss_bytes, sample

PROMPT = "The reference stays pinned while the window slides"


def cli_generate(folio_binary, model, max_tokens):
    out = subprocess.run([folio_binary, "generate", "--model", model, "--prompt", PROMPT, "--max-tokens", str(max_tokens),
                          "--threads", "1"], check=True, capture_output=True).stdout
    return out.decode("utf-8", "replace").rstrip("\n")


@pytest.fixture(scope="module")
def text_engine(tiny_text_model):
    return folio.Engine(tiny_text_model, threads=2)


def test_generate_matches_the_cli(text_engine, tiny_text_model, folio_binary):
    c = text_engine.generate(PROMPT, max_tokens=60)
    assert c.text == cli_generate(folio_binary, tiny_text_model, 60)
    assert (c.completion_tokens, c.finish_reason) == (60, "length") and len(c.tokens) == 60 and c.prompt_tokens > 5
    assert "".join(text_engine.generate_stream(PROMPT, max_tokens=60)) == c.text
    assert not text_engine.reads_documents


def test_text_model_refuses_documents_and_bad_lengths(text_engine):
    with pytest.raises(folio.InvalidInput, match="text model"):
        text_engine.ocr(sample("sample-1page.pdf"))
    with pytest.raises(folio.InvalidInput, match="max_tokens"):
        text_engine.generate(PROMPT, max_tokens=0)
    assert text_engine.generate(PROMPT, max_tokens=3).completion_tokens == 3


def test_threads_share_one_engine_and_batch(text_engine):
    alone = text_engine.generate(PROMPT, max_tokens=320).tokens
    before = text_engine.stats["max_batch_seen"]
    assert before == 1
    answers, errors = [None] * 8, []
    ticks = [0]
    stop = threading.Event()

    def tick():  # runs only while the generating threads have let go of the GIL
        while not stop.is_set():
            ticks[0] += 1
            stop.wait(0.001)

    def run(i):
        try:
            answers[i] = text_engine.generate(PROMPT, max_tokens=320).tokens
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ticker = threading.Thread(target=tick)
    ticker.start()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    ticker.join()
    assert not errors
    assert all(a == alone for a in answers)
    assert text_engine.stats["max_batch_seen"] >= 4
    assert ticks[0] > 10


def test_ocr_from_threads_gets_the_lone_answers(engine):
    alone = engine.ocr(sample("sample-3page.pdf")).markdown
    answers = [None] * 6

    def run(i):
        answers[i] = engine.ocr(sample("sample-3page.pdf")).markdown

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert answers == [alone] * 6


def test_two_hundred_calls_keep_memory_flat():
    # No caches: every call renders, encodes, prefills and decodes afresh.
    engine = folio.Engine(threads=2, reference_cache_bytes=0, prefix_cache_bytes=0)
    with open(sample("sample-typeset.pdf"), "rb") as f:
        data = f.read()
    for _ in range(20):
        engine.ocr(data)
        engine.ocr(sample("sample-1page.pdf"))
    settled = rss_bytes()
    for _ in range(100):
        engine.ocr(data)
        engine.ocr(sample("sample-1page.pdf"))
    grown = rss_bytes() - settled
    assert grown < 4 << 20, f"RSS grew {grown / 2**20:.1f} MiB over 200 calls"
