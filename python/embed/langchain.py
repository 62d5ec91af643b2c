"""A LangChain `Embeddings` backed by an embed.Model (imported only when this module is: it needs
langchain-core). `from embed.langchain import EmbedEmbeddings`."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.embeddings import Embeddings

import embed


class EmbedEmbeddings(Embeddings):
    """Documents and queries embedded in process by embed.

    model: an embed.Model, or what embed.Model takes (a GGUF file, an HF folder, a Hub name ORG/NAME),
    loaded with `threads` and `device`.
    query_prompt_name / document_prompt_name: the prompt of each side (the model's prompts or
    the engine's presets, e.g. "e5-query" / "e5-passage"); None: the model's default prompt.
    encode_kwargs: further Model.encode arguments (dimensions, truncate, batch_size, ...).
    """

    def __init__(
        self,
        model: embed.Model | str | os.PathLike,
        *,
        query_prompt_name: str | None = None,
        document_prompt_name: str | None = None,
        threads: int | None = None,
        device: str = "cpu",
        **encode_kwargs: Any,
    ):
        self.model = model if isinstance(model, embed.Model) else embed.Model(model, threads=threads, device=device)
        self.query_prompt_name = query_prompt_name
        self.document_prompt_name = document_prompt_name
        self.encode_kwargs = encode_kwargs

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(list(texts), prompt_name=self.document_prompt_name, **self.encode_kwargs).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.model.encode([text], prompt_name=self.query_prompt_name, **self.encode_kwargs)[0].tolist()
