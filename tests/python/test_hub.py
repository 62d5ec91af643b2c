# embed.Model by name and from an HF folder: a Hub model (against the test hub of tests/hub,
# served in this process) gives the rows of its local file, a cached model is opened without a
# request, an HF folder or Hub repository of one equals its `embed convert` GGUF bit for bit (in
# memory and with cache_gguf), and the Hub's refusals raise the package's exceptions.
import os
import pathlib
import sys

import pytest

import embed
from conftest import ROOT, TEXTS, same_bits

sys.path.insert(0, str(ROOT / "tests" / "hub"))
from hub_fixtures import ST_FOLDER, Fixtures  # noqa: E402
from hub_server import GOOD_TOKEN, LocalHub  # noqa: E402


@pytest.fixture(scope="module")
def hub(embed_bin):
    os.environ.setdefault("EMBED_BIN", embed_bin)
    fixtures = Fixtures()
    test_hub = LocalHub()
    fixtures.add_repos(test_hub)
    yield test_hub, fixtures
    test_hub.close()
    fixtures.close()


@pytest.fixture
def hub_env(hub, tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(("HF_", "HUGGING", "TRANSFORMERS_")):
            monkeypatch.delenv(name)
    test_hub, fixtures = hub
    monkeypatch.setenv("HF_ENDPOINT", test_hub.endpoint)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")  # the test hub is local, whatever proxy is set
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("EMBED_CACHE", str(tmp_path / "embed-cache"))
    test_hub.reset_log()
    return test_hub, fixtures


def test_a_hub_name_gives_the_local_files_rows_and_a_cached_one_asks_nothing(hub_env):
    test_hub, fixtures = hub_env
    by_name = embed.Model("test-org/tiny-gguf:Q8_0", threads=2).encode(TEXTS)
    same_bits(by_name, embed.Model(str(fixtures.gguf["Q8_0"]), threads=2).encode(TEXTS))
    assert len(test_hub.requests("lfs", "GET")) == 1
    test_hub.reset_log()
    same_bits(embed.Model("hf://test-org/tiny-gguf@main:Q8_0", threads=2).encode(TEXTS), by_name)
    assert test_hub.requests() == []


def test_an_hf_folder_and_a_hub_repository_of_one_equal_the_converted_gguf(hub_env, cli, tmp_path):
    for convert_type in ("f16", "f32"):
        out = tmp_path / f"converted-{convert_type}.gguf"
        cli.run("convert", str(ST_FOLDER), str(out), "--type", convert_type)
        want = embed.Model(str(out), threads=2).encode(TEXTS)
        for source in (ST_FOLDER, "test-org/tiny-st"):
            same_bits(embed.Model(source, threads=2, convert_type=convert_type).encode(TEXTS), want)
            same_bits(embed.Model(source, threads=2, convert_type=convert_type, cache_gguf=True).encode(TEXTS), want)
    assert list((tmp_path / "embed-cache" / "gguf").rglob("*.gguf"))


def test_the_hubs_refusals_raise_the_packages_exceptions(hub_env, monkeypatch):
    with pytest.raises(embed.EmbedIOError, match="gated repository"):
        embed.Model("test-org/gated-gguf")
    with pytest.raises(embed.EmbedIOError, match="no repository test-org/nothing"):
        embed.Model("test-org/nothing")
    with pytest.raises(embed.InvalidInputError, match="no GGUF file with the quantization Q5_K_M"):
        embed.Model("test-org/tiny-gguf:Q5_K_M")
    with pytest.raises(embed.InvalidInputError, match="not one of f32, f16, bf16, q8_0"):
        embed.Model(ST_FOLDER, convert_type="q4")
    monkeypatch.setenv("HF_TOKEN", GOOD_TOKEN)
    assert embed.Model("test-org/gated-gguf").get_sentence_embedding_dimension() > 0
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(embed.EmbedIOError, match="HF_HUB_OFFLINE is set"):
        embed.Model("test-org/tiny-gguf:F32")
