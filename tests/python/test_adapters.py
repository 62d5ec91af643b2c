# The LangChain and LlamaIndex adapters: run when langchain-core / llama-index-core are installed
# (skipped otherwise; CI does not install them), each checked against Model.encode's rows.
import asyncio

import numpy as np
import pytest

import embed
from conftest import TEXTS, tiny


@pytest.fixture(scope="module")
def model():
    return embed.Model(tiny("tiny-qwen3-embed"), threads=2)


def test_langchain_embeddings(model):
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings

    from embed.langchain import EmbedEmbeddings

    lc = EmbedEmbeddings(model, query_prompt_name="e5-query", document_prompt_name="e5-passage")
    assert isinstance(lc, Embeddings)
    docs = lc.embed_documents(TEXTS)
    assert isinstance(docs, list) and isinstance(docs[0], list) and isinstance(docs[0][0], float)
    assert np.array_equal(np.array(docs, dtype=np.float32), model.encode(TEXTS, prompt_name="e5-passage"))
    query = lc.embed_query(TEXTS[0])
    assert np.array_equal(np.array(query, dtype=np.float32), model.encode(TEXTS[0], prompt_name="e5-query"))
    assert asyncio.run(lc.aembed_query(TEXTS[0])) == query
    by_path = EmbedEmbeddings(tiny("tiny-qwen3-embed"), dimensions=16)
    assert len(by_path.embed_query("x")) == 16


def test_llama_index_embedding(model):
    pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import BaseEmbedding

    from embed.llama_index import EmbedEmbedding

    li = EmbedEmbedding(model, query_prompt_name="e5-query", text_prompt_name="e5-passage", embed_batch_size=3)
    assert isinstance(li, BaseEmbedding)
    texts = li.get_text_embedding_batch(TEXTS)
    assert np.array_equal(np.array(texts, dtype=np.float32), model.encode(TEXTS, prompt_name="e5-passage"))
    query = li.get_query_embedding(TEXTS[0])
    assert np.array_equal(np.array(query, dtype=np.float32), model.encode(TEXTS[0], prompt_name="e5-query"))
    assert asyncio.run(li.aget_query_embedding(TEXTS[0])) == query
    assert li.get_text_embedding(TEXTS[1]) == texts[1]
    assert len(EmbedEmbedding(tiny("tiny-qwen3-embed"), dimensions=8).get_query_embedding("x")) == 8
