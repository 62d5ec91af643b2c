# BGE-M3's sparse and ColBERT read-outs from Python (encode(return_sparse=..., return_colbert_vecs=...)
# and compute_score), on a BGE-M3-shaped XLM-R folder this test writes (random weights; the
# committed XLM-R-layout Unigram vocabulary; sparse_linear.pt / colbert_linear.pt in torch.save's
# layout: tests/fixtures/m3_folder.py): FlagEmbedding's answer shape, and the
# same floats as the `embed` command's --output and `embed rerank --score`, with the scores worked
# from the read-outs by FlagEmbedding's formulas (m3.py) written out below.
import importlib.util
import json

import numpy as np
import pytest

import embed
from conftest import ROOT

TEXTS = ["Die Katze sitzt auf der Matte.", "A man is playing a guitar.", "日本語のテキストです。"]
QUERY = "Wer sitzt auf der Matte?"
D = 32

_spec = importlib.util.spec_from_file_location("m3_folder", ROOT / "tests" / "fixtures" / "m3_folder.py")
m3_folder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(m3_folder)


def _folder(tmp, name, seed, heads):
    return m3_folder.write(str(tmp / name), seed, heads)


@pytest.fixture(scope="module")
def m3(tmp_path_factory):
    return _folder(tmp_path_factory.mktemp("m3"), "m3", 3, True)


def _cli_outputs(cli, model, texts):
    return [json.loads(line) for line in cli.run(model, cli.lines_file(texts), "--output", "dense,sparse,colbert").splitlines()]


def test_encode_answers_flagembedding_shape_with_the_commands_floats(m3, cli):
    model = embed.Model(m3, threads=2)
    assert model.info["sparse_head"] is True and model.info["colbert_dim"] == 16
    out = model.encode(TEXTS, return_sparse=True, return_colbert_vecs=True)
    assert set(out) == {"dense_vecs", "lexical_weights", "colbert_vecs"}
    rows = _cli_outputs(cli, m3, TEXTS)
    assert all(len(row["sparse"]) >= 3 for row in rows)  # the comparisons below compare something
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
    assert scores["sparse"][0] > 0  # the query shares weighted ids with the first document
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
