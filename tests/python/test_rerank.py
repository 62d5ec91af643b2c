# Model.rerank: (index, score) pairs best first, equal to `embed rerank` (same order, same float32
# scores) for a cross-encoder and a yes/no reranker; top_n; truncation of long documents.
import numpy as np
import pytest

import embed
from conftest import TEXTS, tiny

QUERY = "who plays the guitar?"


@pytest.fixture(scope="module", params=["tiny-bert-rank", "tiny-qwen3-rerank"])
def reranker(request):
    return embed.Model(tiny(request.param), threads=2)


def test_rerank_equals_the_cli(reranker, cli):
    got = reranker.rerank(QUERY, TEXTS)
    want = cli.rerank(reranker.info["path"], QUERY, TEXTS)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [np.float32(s) for _, s in got] == [s for _, s in want]
    assert sorted(i for i, _ in got) == list(range(len(TEXTS)))
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True)


def test_top_n_and_batching(reranker, cli):
    full = reranker.rerank(QUERY, TEXTS)
    assert reranker.rerank(QUERY, TEXTS, top_n=3) == full[:3]
    assert reranker.rerank(QUERY, TEXTS, top_n=100) == full
    assert reranker.rerank(QUERY, TEXTS, batch_size=1) == full
    assert reranker.rerank(QUERY, []) == []
    assert cli.rerank(reranker.info["path"], QUERY, TEXTS, "--top-n", "3") == [(i, np.float32(s)) for i, s in full[:3]]
    with pytest.raises(embed.InvalidInputError, match="top_n"):
        reranker.rerank(QUERY, TEXTS, top_n=0)


def test_long_documents_are_cut_unless_truncate_is_false(reranker, cli):
    docs = ["short document", "word " * (reranker.info["context"] + 10)]
    got = reranker.rerank(QUERY, docs)
    assert [(i, np.float32(s)) for i, s in got] == cli.rerank(reranker.info["path"], QUERY, docs)
    with pytest.raises(embed.InvalidInputError, match="more than the limit") as e:
        reranker.rerank(QUERY, docs, truncate=False)
    assert e.value.index == 1


def test_split_special_equals_the_cli(reranker, cli):
    docs = TEXTS + ["a <|endoftext|> b [SEP] c </s> d"]
    got = reranker.rerank(QUERY + " [SEP] <|endoftext|>", docs, split_special=True)
    want = cli.rerank(reranker.info["path"], QUERY + " [SEP] <|endoftext|>", docs, "--split-special")
    assert [(i, np.float32(s)) for i, s in got] == want


def test_an_embedding_model_cannot_rerank():
    with pytest.raises(embed.EmbedError) as e:
        embed.Model(tiny("tiny-qwen3-embed")).rerank(QUERY, TEXTS)
    assert "rank" in str(e.value)
