# Model.encode: rows bit-identical to the `embed` command's for the same texts and request
# (prompts, dimensions, normalization, truncation, batch size), dtype and shape, numpy ownership.
import numpy as np
import pytest

import embed
from conftest import TEXTS, same_bits, tiny

EMBEDDERS = ["tiny-qwen3-embed", "tiny-gemma3-embed", "tiny-llama"]
# Special-token text of the tiny models' tokenizers (Qwen's, Gemma's, Llama 3's, BERT's).
SPECIAL_TEXT = "a <|endoftext|> b <bos> c <|begin_of_text|> d </s> e [SEP] f"


@pytest.fixture(scope="module", params=EMBEDDERS)
def model(request):
    return embed.Model(tiny(request.param), threads=2)


def test_rows_equal_the_cli_bit_for_bit(model, cli):
    same_bits(model.encode(TEXTS), cli.embed(model.info["path"], TEXTS))


def test_minilm_rows_equal_the_cli_bit_for_bit(minilm, cli):
    m = embed.Model(minilm)
    assert m.info["architecture"] == "bert" and m.info["dim"] == 384
    same_bits(m.encode(TEXTS), cli.embed(minilm, TEXTS))
    same_bits(m.encode(TEXTS, prompt_name="e5-query", dimensions=128), cli.embed(minilm, TEXTS, "--prompt-name", "e5-query", "--dims", "128"))


def test_dtype_shape_and_single_text(model):
    dim = model.info["dim"]
    rows = model.encode(TEXTS)
    assert rows.dtype == np.float32 and rows.shape == (len(TEXTS), dim) and rows.flags.c_contiguous
    one = model.encode(TEXTS[2])
    assert one.shape == (dim,)
    same_bits(one, rows[2])
    assert model.encode([]).shape == (0, dim)
    assert model.encode([], dimensions=8).shape == (0, 8)
    # Any sequence of str: tuples, numpy arrays of str or object (what Ray and pandas hand over).
    same_bits(model.encode(tuple(TEXTS)), rows)
    same_bits(model.encode(np.array(TEXTS)), rows)
    same_bits(model.encode(np.array(TEXTS, dtype=object)), rows)


def test_rows_are_handed_to_numpy_without_a_copy(model):
    rows = model.encode(TEXTS)
    # numpy did not copy (a copy would own its data); the buffer is the engine's, kept alive by
    # the array's base object, and writable like any result.
    assert not rows.flags.owndata and rows.base is not None
    assert rows.flags.writeable
    rows[0, 0] = 42.0
    assert rows[0, 0] == 42.0


def test_normalization(model, cli):
    rows = model.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(rows.astype(np.float64), axis=1), 1.0, rtol=1e-6)
    raw = model.encode(TEXTS, normalize_embeddings=False)
    same_bits(raw, cli.embed(model.info["path"], TEXTS, "--normalize", "-1"))
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)


def test_dimensions_keep_the_first_values_then_normalize(model, cli):
    dims = 16
    rows = model.encode(TEXTS, dimensions=dims)
    assert rows.shape == (len(TEXTS), dims)
    same_bits(rows, cli.embed(model.info["path"], TEXTS, "--dims", str(dims)))
    head = model.encode(TEXTS, normalize_embeddings=False)[:, :dims].astype(np.float64)
    np.testing.assert_allclose(rows, head / np.linalg.norm(head, axis=1, keepdims=True), rtol=1e-6, atol=1e-7)
    with pytest.raises(embed.InvalidInputError, match="dimensions"):
        model.encode(TEXTS, dimensions=model.info["dim"] + 1)


def test_prompts(model, cli):
    path = model.info["path"]
    # A preset name (engine/prompts.h), as the CLI's --prompt-name.
    same_bits(model.encode(TEXTS, prompt_name="e5-query"), cli.embed(path, TEXTS, "--prompt-name", "e5-query"))
    # The prompt text is prepended to each text; it wins over prompt_name.
    same_bits(model.encode(TEXTS, prompt="query: "), model.encode(["query: " + t for t in TEXTS]))
    same_bits(model.encode(TEXTS, prompt="passage: ", prompt_name="e5-query"), model.encode(["passage: " + t for t in TEXTS]))
    with pytest.raises(embed.InvalidInputError, match="no-such-prompt"):
        model.encode(TEXTS, prompt_name="no-such-prompt")


def test_batch_size_does_not_change_rows(model):
    rows = model.encode(TEXTS)
    for batch_size in (1, 2, 5, 100):
        same_bits(model.encode(TEXTS, batch_size=batch_size), rows)
    same_bits(model.encode(TEXTS, batch_tokens=16), rows)
    with pytest.raises(embed.InvalidInputError, match="batch_size"):
        model.encode(TEXTS, batch_size=0)


def test_truncation(model, cli):
    path = model.info["path"]
    long_text = "word " * (model.info["context"] + 10)
    texts = ["short", long_text]
    with pytest.raises(embed.InvalidInputError, match="more than the limit") as e:
        model.encode(texts)
    assert e.value.index == 1
    with pytest.warns(embed.EmbedWarning, match="truncated"):
        rows = model.encode(texts, truncate=True)
    same_bits(rows, cli.embed(path, texts, "--truncate"))


def test_precision(model):
    same_bits(model.encode(TEXTS, precision="float32"), model.encode(TEXTS))
    for other in ("int8", "uint8", "binary", "ubinary", "float16"):
        with pytest.raises(embed.InvalidInputError, match="'float32'"):
            model.encode(TEXTS, precision=other)


def test_progress_bar(model, capfd):
    model.encode(TEXTS, batch_size=3, show_progress_bar=True)
    err = capfd.readouterr().err
    assert "embed: 3/7 texts" in err and err.endswith("embed: 7/7 texts\n")


def test_info(model):
    i = model.info
    assert i["architecture"] in ("qwen3", "gemma-embedding", "llama")
    assert i["dim"] == 64 and i["context"] > 0 and i["pooling"] in ("mean", "last")
    assert model.get_sentence_embedding_dimension() == i["dim"]


def test_tokenize_equals_the_cli(model, cli):
    path = model.info["path"]
    ids = model.tokenize(TEXTS)
    assert ids == cli.tokenize(path, TEXTS)
    assert model.tokenize(TEXTS[0]) == ids[0]
    assert model.tokenize(TEXTS, add_special_tokens=False) == cli.tokenize(path, TEXTS, "--no-special")
    texts = TEXTS + [SPECIAL_TEXT]
    assert model.tokenize(texts, split_special=True) == cli.tokenize(path, texts, "--split-special")


def test_split_special(model, cli):
    # Each model's own special-token text in SPECIAL_TEXT is one token unless split_special.
    assert model.tokenize(SPECIAL_TEXT, split_special=True) != model.tokenize(SPECIAL_TEXT)
    texts = TEXTS + [SPECIAL_TEXT]
    split = model.encode(texts, split_special=True)
    same_bits(split, cli.embed(model.info["path"], texts, "--split-special"))
    assert not np.array_equal(split[-1], model.encode(texts)[-1])
    same_bits(split[:-1], model.encode(TEXTS))
