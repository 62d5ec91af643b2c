# Every bad input is a Python exception carrying the engine's message (and the index of the input
# at fault), never a crash; the model stays usable afterwards.
import _thread
import pathlib
import signal
import threading
import time

import pytest

import embed
from conftest import TEXTS, same_bits, tiny


@pytest.fixture(scope="module")
def model():
    return embed.Model(tiny("tiny-qwen3-embed"), threads=1)


def test_missing_file():
    with pytest.raises(embed.EmbedIOError) as e:
        embed.Model("/nonexistent/model.gguf")
    assert "/nonexistent/model.gguf" in str(e.value) and e.value.kind == "I/O error"
    assert isinstance(e.value, OSError)


def test_not_a_gguf_file(tmp_path: pathlib.Path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a GGUF file at all" * 10)
    with pytest.raises(embed.ModelFormatError) as e:
        embed.Model(bad)
    assert "GGUF" in str(e.value)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(pathlib.Path(tiny("tiny-qwen3-embed")).read_bytes()[:5000])
    with pytest.raises(embed.ModelFormatError):
        embed.Model(truncated)


def test_bad_model_options():
    with pytest.raises(embed.InvalidInputError, match="device 'tpu'"):
        embed.Model(tiny("tiny-qwen3-embed"), device="tpu")
    with pytest.raises(embed.InvalidInputError, match="compute_type"):
        embed.Model(tiny("tiny-qwen3-embed"), compute_type="f8")
    with pytest.raises(embed.InvalidInputError, match="threads"):
        embed.Model(tiny("tiny-qwen3-embed"), threads=0)


def test_cuda_without_the_plugin_is_a_clear_error():
    # The CPU wheel has no CUDA backend; a build with one but no GPU says why instead.
    with pytest.raises(embed.UnsupportedError, match="cannot use device cuda"):
        embed.Model(tiny("tiny-qwen3-embed"), device="cuda")


def test_too_long_without_truncate(model):
    texts = ["fine", "also fine", "word " * (model.info["context"] + 1)]
    with pytest.raises(embed.InvalidInputError) as e:
        model.encode(texts)
    assert e.value.index == 2 and "tokens, more than the limit of" in str(e.value)


def test_text_that_is_not_utf8(model):
    # A lone surrogate (what errors="surrogateescape" decoding leaves for a bad byte).
    bad = b"caf\xe9".decode("utf-8", errors="surrogateescape")
    with pytest.raises(embed.InvalidInputError, match="text 1 is not valid UTF-8") as e:
        model.encode(["fine", bad])
    assert e.value.index == 1
    with pytest.raises(embed.InvalidInputError, match="document 0 is not valid UTF-8"):
        embed.Model(tiny("tiny-bert-rank")).rerank("query", [bad])


def test_an_empty_text_is_refused_as_by_the_command_and_the_server(model):
    with pytest.raises(embed.InvalidInputError, match="text 1 is empty") as e:
        model.encode(["fine", ""])
    assert e.value.index == 1
    with pytest.raises(embed.InvalidInputError, match="document 0 is empty"):
        embed.Model(tiny("tiny-bert-rank")).rerank("query", [""])


def test_default_names_the_default_model(monkeypatch):
    monkeypatch.setenv("EMBED_MODEL", tiny("tiny-bert-rank"))
    m = embed.Model("default")
    assert m.info["path"] == tiny("tiny-bert-rank")
    same_bits(m.encode(TEXTS), embed.Model(tiny("tiny-bert-rank")).encode(TEXTS))
    monkeypatch.setenv("EMBED_MODEL", "")
    monkeypatch.setenv("EMBED_CACHE", "/nonexistent/cache")
    with pytest.raises(embed.EmbedIOError, match="tools/models.sh default"):
        embed.Model("default")


def test_texts_that_are_not_str(model):
    with pytest.raises(TypeError, match="text 1 is bytes, not str"):
        model.encode(["fine", b"bytes"])
    with pytest.raises(TypeError, match="text 0 is int, not str"):
        model.encode([3])
    with pytest.raises(TypeError, match="sequence of str"):
        model.encode(42)


def test_the_model_still_works_after_errors(model):
    rows = model.encode(TEXTS)
    for bad in (["word " * 10000], [b"x"], ["\ud800"]):
        with pytest.raises((embed.EmbedError, TypeError)):
            model.encode(bad)
    same_bits(model.encode(TEXTS), rows)


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler for the test: a process started in the background by a
    non-interactive shell (nohup ... &, some CI runners) inherits SIGINT ignored, and Python then
    leaves it ignored, so no Ctrl-C (nor _thread.interrupt_main) would reach it at all."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_a_long_call(model, python_sigint_handler):
    texts = [t * 2 for t in TEXTS] * 450  # many forward passes with batch_size=1 (at most 127 tokens each)
    model.encode(texts[:20], batch_size=1)  # warm: a first call is slower, and `full` must be a warm call's time
    start = time.perf_counter()
    rows = model.encode(texts, batch_size=1)
    full = time.perf_counter() - start
    assert full > 0.2, f"the call is too short ({full:.3f}s) to interrupt reliably"
    timer = threading.Timer(full * 0.1, _thread.interrupt_main)
    timer.start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        model.encode(texts, batch_size=1)
    assert time.perf_counter() - start < full * 0.6, "Ctrl-C waited for the whole call"
    timer.join()
    same_bits(model.encode(texts, batch_size=1), rows)
