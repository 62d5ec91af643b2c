# BGE-M3's sparse and ColBERT read-outs from Python (encode(return_sparse=..., return_colbert_vecs=...)
# and compute_score), on a BGE-M3-shaped XLM-R folder this test writes (random weights; the
# committed XLM-R-layout Unigram vocabulary; sparse_linear.pt / colbert_linear.pt in torch.save's
# layout, written by tools/fuzz/make_torch_seed.py's writer): FlagEmbedding's answer shape, and the
# same floats as the `embed` command's --output and `embed rerank --score`, with the scores worked
# from the read-outs by FlagEmbedding's formulas (m3.py) written out below.
import importlib.util
import json
import shutil
import struct

import numpy as np
import pytest

import embed
from conftest import ROOT

D, FF, VOCAB, MAX_POS, PAD = 32, 64, 6002, 40, 1
TEXTS = ["Die Katze sitzt auf der Matte.", "A man is playing a guitar.", "日本語のテキストです。"]
QUERY = "Wer sitzt auf der Matte?"

_spec = importlib.util.spec_from_file_location("make_torch_seed", ROOT / "tools" / "fuzz" / "make_torch_seed.py")
_torch_seed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_torch_seed)


def _safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _folder(tmp, name, seed, heads):
    rng = np.random.default_rng(seed)
    n = lambda shape, scale, center=0.0: (center + scale * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    t = {"embeddings.word_embeddings.weight": n((VOCAB, D), 0.5), "embeddings.position_embeddings.weight": n((MAX_POS, D), 0.5),
         "embeddings.token_type_embeddings.weight": n((1, D), 0.05), "embeddings.LayerNorm.weight": n((D,), 0.1, 1.0),
         "embeddings.LayerNorm.bias": n((D,), 0.05)}
    b = "encoder.layer.0."
    for p in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
        t[b + p + ".weight"], t[b + p + ".bias"] = n((D, D), 0.18), n((D,), 0.05)
    t[b + "attention.output.LayerNorm.weight"], t[b + "attention.output.LayerNorm.bias"] = n((D,), 0.1, 1.0), n((D,), 0.05)
    t[b + "intermediate.dense.weight"], t[b + "intermediate.dense.bias"] = n((FF, D), 0.18), n((FF,), 0.05)
    t[b + "output.dense.weight"], t[b + "output.dense.bias"] = n((D, FF), 0.12), n((D,), 0.05)
    t[b + "output.LayerNorm.weight"], t[b + "output.LayerNorm.bias"] = n((D,), 0.1, 1.0), n((D,), 0.05)
    path = tmp / name
    path.mkdir()
    config = {"architectures": ["XLMRobertaModel"], "hidden_size": D, "num_hidden_layers": 1, "num_attention_heads": 4,
              "intermediate_size": FF, "max_position_embeddings": MAX_POS, "type_vocab_size": 1, "pad_token_id": PAD,
              "vocab_size": VOCAB, "layer_norm_eps": 1e-5, "position_embedding_type": "absolute"}
    (path / "config.json").write_text(json.dumps(config))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(ROOT / "tests" / "fixtures" / "tokenizer" / "unigram" / f, path / f)
    _safetensors(path / "model.safetensors", t)
    if heads:
        _torch_seed.torch_save_bytes(path / "sparse_linear.pt", {"weight": ([1, D], n((1, D), 0.5).ravel().tolist()),
                                                                 "bias": ([1], [0.1])})
        _torch_seed.torch_save_bytes(path / "colbert_linear.pt", {"weight": ([16, D], n((16, D), 0.5).ravel().tolist()),
                                                                  "bias": ([16], n((16,), 0.5).tolist())})
    return str(path)


@pytest.fixture(scope="module")
def m3(tmp_path_factory):
    return _folder(tmp_path_factory.mktemp("m3"), "m3", 40, True)


def _cli_outputs(cli, model, texts):
    return [json.loads(line) for line in cli.run(model, cli.lines_file(texts), "--output", "dense,sparse,colbert").splitlines()]


def test_encode_answers_flagembedding_shape_with_the_commands_floats(m3, cli):
    model = embed.Model(m3, threads=2)
    assert model.info["sparse_head"] is True and model.info["colbert_dim"] == 16
    out = model.encode(TEXTS, return_sparse=True, return_colbert_vecs=True)
    assert set(out) == {"dense_vecs", "lexical_weights", "colbert_vecs"}
    rows = _cli_outputs(cli, m3, TEXTS)
    assert out["dense_vecs"].dtype == np.float32 and out["dense_vecs"].shape == (3, D)
    # The dense rows of the same pass are plain encode()'s, bit for bit.
    assert np.array_equal(out["dense_vecs"], model.encode(TEXTS))
    for i, row in enumerate(rows):
        assert np.array_equal(out["dense_vecs"][i], np.array(row["dense"], dtype=np.float32))
        want = {str(e["index"]): np.float32(e["value"]) for e in row["sparse"]}
        got = out["lexical_weights"][i]
        assert list(got) == list(want)  # ascending token ids, as FlagEmbedding's dict is built
        assert all(np.float32(got[k]) == want[k] for k in want)
        assert out["colbert_vecs"][i].dtype == np.float32
        assert np.array_equal(out["colbert_vecs"][i], np.array(row["colbert"], dtype=np.float32))
    # Only what is asked for; a single str gives the single text's items.
    only = model.encode(TEXTS[1], return_dense=False, return_sparse=True)
    assert only["dense_vecs"] is None and only["colbert_vecs"] is None
    assert only["lexical_weights"] == out["lexical_weights"][1]


def test_compute_score_is_the_commands_score_and_flagembeddings_formulas(m3, cli):
    model = embed.Model(m3, threads=2)
    w = [0.4, 0.2, 0.4]
    scores = model.compute_score([(QUERY, d) for d in TEXTS], weights_for_different_modes=w)
    q = _cli_outputs(cli, m3, [QUERY])[0]
    docs = _cli_outputs(cli, m3, TEXTS)
    for name in ("dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense"):
        ranked = cli.rerank(m3, QUERY, TEXTS, "--score", name, "--weights", "0.4,0.2,0.4")
        for index, score in ranked:
            assert np.float32(scores[name][index]) == score, name
    for i, p in enumerate(docs):
        dense = float(np.dot(np.array(q["dense"], dtype=np.float64), np.array(p["dense"], dtype=np.float64)))
        pw = {e["index"]: e["value"] for e in p["sparse"]}
        sparse = sum(e["value"] * pw[e["index"]] for e in q["sparse"] if e["index"] in pw)
        qc, pc = np.array(q["colbert"], dtype=np.float64), np.array(p["colbert"], dtype=np.float64)
        colbert = float((qc @ pc.T).max(axis=1).mean())
        assert scores["dense"][i] == pytest.approx(dense, rel=1e-6, abs=1e-7)
        assert scores["sparse"][i] == pytest.approx(sparse, rel=1e-6, abs=1e-7)
        assert scores["colbert"][i] == pytest.approx(colbert, rel=1e-6, abs=1e-7)
        assert scores["sparse+dense"][i] == pytest.approx((w[1] * sparse + w[0] * dense) / (w[0] + w[1]), rel=1e-6, abs=1e-7)
        assert scores["colbert+sparse+dense"][i] == pytest.approx((w[0] * dense + w[1] * sparse + w[2] * colbert) / sum(w), rel=1e-6,
                                                                   abs=1e-7)
    one = model.compute_score((QUERY, TEXTS[0]), weights_for_different_modes=w)
    assert one["colbert"] == scores["colbert"][0]


def test_readouts_a_model_lacks_raise_naming_the_head(tmp_path):
    plain = embed.Model(_folder(tmp_path, "plain", 41, False), threads=2)
    with pytest.raises(embed.InvalidInputError, match="no sparse head"):
        plain.encode(TEXTS, return_sparse=True)
    with pytest.raises(embed.InvalidInputError, match="no ColBERT head"):
        plain.encode(TEXTS, return_colbert_vecs=True)
    with pytest.raises(embed.InvalidInputError, match="none asked for"):
        plain.encode(TEXTS, return_dense=False)
