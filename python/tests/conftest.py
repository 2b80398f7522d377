"""Fixtures for the Python module's tests: the repository's samples, the folio binary (for the
CLI's answers, an independent path through the engine: Generator rather than the scheduler), a
tiny random text model made by it, and one shared engine on the shipped model."""

import os
import subprocess

import pytest

import folio

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def sample(name: str) -> str:
    return os.path.join(ROOT, "examples", name)


@pytest.fixture(scope="session")
def folio_binary() -> str:
    path = os.environ.get("FOLIO_BINARY", os.path.join(ROOT, "build", "folio"))
    assert os.access(path, os.X_OK), f"folio binary not found at {path} (set FOLIO_BINARY)"
    return path


@pytest.fixture(scope="session")
def engine() -> folio.Engine:
    return folio.Engine(threads=2)


@pytest.fixture(scope="session")
def tiny_text_model(folio_binary, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("tiny") / "model")
    subprocess.run([folio_binary, "make-model", "--arch", "llama", "--preset", "tiny", "--seed", "5", "--dtype", "f32",
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    return out


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
