"""A LlamaIndex embedding (`BaseEmbedding`) backed by an embed.Model (imported only when this
module is: it needs llama-index-core). `from embed.llama_index import EmbedEmbedding`."""

from __future__ import annotations

import asyncio
import os
from typing import Any, List, Optional

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import BaseEmbedding

import embed


class EmbedEmbedding(BaseEmbedding):
    """Texts and queries embedded in process by embed.

    model: an embed.Model, or what embed.Model takes (a GGUF file, an HF folder, a Hub name ORG/NAME),
    loaded with `threads` and `device`.
    query_prompt_name / text_prompt_name: the prompt of each side (the model's prompts or the
    engine's presets, e.g. "e5-query" / "e5-passage"); None: the model's default prompt.
    dimensions: Matryoshka truncation. embed_batch_size (LlamaIndex's) is how many texts
    LlamaIndex hands over per call; the engine batches by tokens inside each call.
    """

    query_prompt_name: Optional[str] = None
    text_prompt_name: Optional[str] = None
    dimensions: Optional[int] = None
    _model: Any = PrivateAttr()

    def __init__(
        self,
        model: embed.Model | str | os.PathLike,
        *,
        threads: Optional[int] = None,
        device: str = "cpu",
        **kwargs: Any,
    ):
        loaded = model if isinstance(model, embed.Model) else embed.Model(model, threads=threads, device=device)
        kwargs.setdefault("model_name", loaded.info["path"])
        super().__init__(**kwargs)
        self._model = loaded

    @classmethod
    def class_name(cls) -> str:
        return "EmbedEmbedding"

    def _encode(self, texts: List[str], prompt_name: Optional[str]) -> List[List[float]]:
        return self._model.encode(list(texts), prompt_name=prompt_name, dimensions=self.dimensions).tolist()

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._encode([query], self.query_prompt_name)[0]

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._encode([text], self.text_prompt_name)[0]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._encode(texts, self.text_prompt_name)

    # The engine releases the GIL: a worker thread keeps the event loop free.
    async def _aget_query_embedding(self, query: str) -> List[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> List[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
