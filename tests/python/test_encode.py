# Model.encode: rows bit-identical to the `embed` command's for the same texts and request
# (prompts, dimensions, normalization, truncation, batch size), dtype and shape, numpy ownership.
import json

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


@pytest.mark.parametrize("precision", ["float32", "binary", "ubinary"])
def test_rows_are_handed_to_numpy_without_a_copy(model, precision):
    rows = model.encode(TEXTS, precision=precision)
    # numpy did not copy (a copy would own its data); the buffer is the engine's, kept alive by
    # the array's base object, and writable like any result.
    assert not rows.flags.owndata and rows.base is not None
    assert rows.flags.writeable
    rows[0, 0] = 42
    assert rows[0, 0] == 42


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
    # 0 is outside 1..dim as well (None, not 0, asks for the full width), as for --dims 0.
    with pytest.raises(embed.InvalidInputError, match=f"dimensions 0 is outside 1..{model.info['dim']}"):
        model.encode(TEXTS, dimensions=0)


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


def test_precision_float32_is_the_default(model):
    same_bits(model.encode(TEXTS, precision="float32"), model.encode(TEXTS))
    for other in ("float16", "int4", "Binary"):
        with pytest.raises(embed.InvalidInputError, match="'float32', 'int8', 'uint8', 'binary', 'ubinary'"):
            model.encode(TEXTS, precision=other)


def test_binary_rows_equal_the_cli(model, cli):
    path = model.info["path"]
    for precision, dtype in (("binary", np.int8), ("ubinary", np.uint8)):
        codes = model.encode(TEXTS, precision=precision)
        assert codes.dtype == dtype and codes.shape == (len(TEXTS), (model.info["dim"] + 7) // 8)
        same_bits(codes, cli.embed(path, TEXTS, "--precision", precision))
        same_bits(model.encode(TEXTS, precision=precision, dimensions=12), cli.embed(path, TEXTS, "--precision", precision, "--dims", "12"))
        assert model.encode([], precision=precision, dimensions=12).shape == (0, 2)
    # The bits by hand: dimension d is bit 7 - d % 8 of byte d // 8, set where the value is > 0;
    # binary is that byte - 128 (sentence-transformers' quantize_embeddings).
    floats = model.encode(TEXTS)
    ubits = np.packbits(floats > 0, axis=1)
    same_bits(model.encode(TEXTS, precision="ubinary"), ubits)
    same_bits(model.encode(TEXTS, precision="binary"), (ubits.astype(np.int16) - 128).astype(np.int8))


def test_int8_rows_with_calibration_ranges_equal_the_cli(model, cli, tmp_path):
    path = model.info["path"]
    ranges_file = tmp_path / "ranges.json"
    cli.run("calibrate", path, cli.lines_file(TEXTS * 3, "sample.txt"), "-o", str(ranges_file))
    stored = json.loads(ranges_file.read_text())
    as_array = np.array([stored["min"], stored["max"]], dtype=np.float32)
    for precision, dtype in (("int8", np.int8), ("uint8", np.uint8)):
        want = cli.embed(path, TEXTS[::-1], "--precision", precision, "--ranges", str(ranges_file))
        from_file = model.encode(TEXTS[::-1], precision=precision, ranges=ranges_file)
        assert from_file.dtype == dtype and from_file.shape == (len(TEXTS), model.info["dim"])
        same_bits(from_file, want)
        same_bits(model.encode(TEXTS[::-1], precision=precision, ranges=str(ranges_file)), want)
        same_bits(model.encode(TEXTS[::-1], precision=precision, ranges=as_array), want)
        same_bits(model.encode(TEXTS[::-1], precision=precision, ranges=as_array.tolist()), want)


def test_int8_without_ranges_calibrates_on_the_texts_themselves(model):
    # sentence-transformers' encode(precision="int8") with no calibration: ranges are the
    # per-dimension min and max of these rows, step = (max - min) / 255 (0 -> 1), in float32,
    # uint8 code = clip(floor((x - min) / step), 0, 255), int8 code = that - 128.
    floats = model.encode(TEXTS)
    lo, hi = floats.min(axis=0), floats.max(axis=0)
    steps = (hi - lo) / np.float32(255)
    steps = np.where(steps == 0, np.float32(1), steps)
    want_u8 = np.clip(np.floor((floats - lo) / steps), 0, 255).astype(np.uint8)
    with pytest.warns(embed.EmbedWarning, match="uint8 ranges computed from only 7 texts"):
        same_bits(model.encode(TEXTS, precision="uint8"), want_u8)
    with pytest.warns(embed.EmbedWarning, match="int8 ranges computed from only 7 texts"):
        same_bits(model.encode(TEXTS, precision="int8"), (want_u8.astype(np.int16) - 128).astype(np.int8))
    # The rows' own min and max code to the ends of the scale, in every dimension that varies.
    assert np.all(want_u8.min(axis=0)[hi > lo] == 0) and np.all(want_u8.max(axis=0)[hi > lo] >= 254)
    same_bits(model.encode(TEXTS, precision="int8", ranges=np.stack([lo, hi])), (want_u8.astype(np.int16) - 128).astype(np.int8))
    # One text cannot calibrate (sentence-transformers refuses it too).
    for one in (TEXTS[:1], TEXTS[0]):
        with pytest.raises(embed.InvalidInputError, match="cannot compute int8 ranges from a single text"):
            model.encode(one, precision="int8")
    assert model.encode(TEXTS[0], precision="int8", ranges=np.stack([lo, hi])).shape == (model.info["dim"],)


def test_bad_ranges(model, tmp_path):
    dim = model.info["dim"]
    with pytest.raises(embed.InvalidInputError, match=f"ranges have 5 dimensions but the output has {dim}"):
        model.encode(TEXTS, precision="int8", ranges=np.zeros((2, 5)))
    with pytest.raises(embed.InvalidInputError, match=r"shape \(2, dim\), not shape \(3, 4\)"):
        model.encode(TEXTS, precision="int8", ranges=np.zeros((3, 4)))
    with pytest.raises(embed.InvalidInputError, match="not a finite float32"):
        model.encode(TEXTS, precision="uint8", ranges=np.full((2, dim), np.nan))
    with pytest.raises(embed.InvalidInputError, match="apply to precision 'int8' and 'uint8', not 'binary'"):
        model.encode(TEXTS, precision="binary", ranges=np.zeros((2, dim)))
    bad = tmp_path / "ranges.json"
    bad.write_text('{"embed_quantization_ranges": 1, "dimensions": 2, "min": [0, 0]}')
    with pytest.raises(embed.ModelFormatError, match="not a quantization ranges file"):
        model.encode(TEXTS, precision="int8", ranges=bad)
    with pytest.raises(embed.EmbedIOError):
        model.encode(TEXTS, precision="int8", ranges=tmp_path / "missing.json")


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


TEMPLATE = 'This sentence: "{text}" means in one word: "'


def test_prompt_template_and_kv_embedding_equal_the_cli(cli):
    # Decoders only (KV-Embedding re-routes causal attention).
    for name in ("tiny-qwen3-embed", "tiny-llama"):
        m = embed.Model(tiny(name), threads=2)
        path = m.info["path"]
        same_bits(m.encode(TEXTS, prompt_template=TEMPLATE), cli.embed(path, TEXTS, "--template", TEMPLATE))
        same_bits(m.encode(TEXTS, kv_embedding=True, prompt_template=TEMPLATE),
                  cli.embed(path, TEXTS, "--kv-embedding", "--template", TEMPLATE))
        same_bits(m.encode(TEXTS, kv_embedding=True, kv_layers=(0, 1), kv_bias=2.0, precision="ubinary"),
                  cli.embed(path, TEXTS, "--kv-embedding", "--kv-layers", "0-1", "--kv-bias", "2", "--precision", "ubinary"))
        # Re-routing changes the vectors (else the comparisons above prove little).
        last = m.info["n_layers"] - 1  # the default band (the middle third) ends before the last layer
        assert not np.array_equal(m.encode(TEXTS, kv_embedding=True), m.encode(TEXTS, kv_embedding=True, kv_layers=(last, last)))


def test_pooling_equals_the_cli(cli):
    for name in ("tiny-qwen3-embed", "tiny-llama"):
        m = embed.Model(tiny(name), threads=2)
        path = m.info["path"]
        rows = {}
        for kind in ("mean", "last", "hybrid"):
            rows[kind] = m.encode(TEXTS, pooling=kind)
            same_bits(rows[kind], cli.embed(path, TEXTS, "--pooling", kind))
        with pytest.warns(embed.EmbedWarning, match="cls pooling on a causal model"):  # as the CLI warns
            same_bits(m.encode(TEXTS, pooling="cls"), cli.embed(path, TEXTS, "--pooling", "cls"))
        # hybrid is (last + mean) / 2 before the L2 normalization (docs/cli.md).
        raw = {k: m.encode(TEXTS, pooling=k, normalize_embeddings=False) for k in ("mean", "last", "hybrid")}
        np.testing.assert_allclose(raw["hybrid"], (raw["last"] + raw["mean"]) / 2, rtol=1e-6, atol=1e-6)
        assert not np.array_equal(rows["mean"], rows["last"])
        same_bits(m.encode(TEXTS, kv_embedding=True, pooling="last", kv_bias=2.0, prompt_template=TEMPLATE),
                  cli.embed(path, TEXTS, "--kv-embedding", "--pooling", "last", "--kv-bias", "2", "--template", TEMPLATE))


def test_pooling_errors():
    model = embed.Model(tiny("tiny-qwen3-embed"), threads=2)
    with pytest.raises(embed.InvalidInputError, match="pooling 'max' is unknown"):
        model.encode(TEXTS, pooling="max")
    with pytest.raises(embed.InvalidInputError, match="one vector per token"):
        model.encode(TEXTS, pooling="none")
    with pytest.raises(embed.InvalidInputError, match="use rerank"):
        model.encode(TEXTS, pooling="rank")
    with pytest.raises(embed.InvalidInputError, match="not defined for kv_embedding"):
        model.encode(TEXTS, pooling="cls", kv_embedding=True)


def test_kv_embedding_errors():
    model = embed.Model(tiny("tiny-qwen3-embed"), threads=2)
    with pytest.raises(embed.InvalidInputError, match="kv_layers and kv_bias apply with kv_embedding"):
        model.encode(TEXTS, kv_layers=(0, 1))
    with pytest.raises(embed.InvalidInputError, match="not a band inside"):
        model.encode(TEXTS, kv_embedding=True, kv_layers=(0, 9))
    with pytest.raises(embed.InvalidInputError, match="must be a pair of ints"):
        model.encode(TEXTS, kv_embedding=True, kv_layers=(0, 1, 2))
    with pytest.raises(embed.InvalidInputError, match="kv_bias must be a number"):
        model.encode(TEXTS, kv_embedding=True, kv_bias="1")
    with pytest.raises(embed.InvalidInputError, match="exactly once"):
        model.encode(TEXTS, prompt_template="no slot")


def test_kv_embedding_refused_on_an_encoder(minilm):
    with pytest.raises(embed.InvalidInputError, match="bidirectional already"):
        embed.Model(minilm).encode(TEXTS, kv_embedding=True)
