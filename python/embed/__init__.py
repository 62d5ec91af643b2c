"""embed: text embeddings and reranking scores from GGUF model files, in process.

The Python face of the engine in the shape sentence-transformers users already write
(`Model.encode`, `Model.rerank`); every option maps onto the engine's one Request type
(engine/request.h), and the heavy lifting happens in C++ with the GIL released. Adapters for
LangChain (`embed.langchain`) and LlamaIndex (`embed.llama_index`) are imported on demand.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Iterable, Sequence

import numpy as np

from embed import _core
from embed.errors import (
    DeviceError,
    EmbedError,
    EmbedIOError,
    EmbedMemoryError,
    InvalidInputError,
    ModelFormatError,
    OverloadedError,
    UnsupportedError,
)

__version__ = _core.__version__
Request = _core.Request

__all__ = [
    "Model",
    "Request",
    "EmbedWarning",
    "EmbedError",
    "InvalidInputError",
    "UnsupportedError",
    "ModelFormatError",
    "EmbedIOError",
    "DeviceError",
    "EmbedMemoryError",
    "OverloadedError",
]

# sentence-transformers' `precision` names (its quantize_embeddings), the engine's output types.
_PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
_POOLINGS = ("mean", "cls", "last", "hybrid")  # one vector per text; none and rank do not give that


class EmbedWarning(UserWarning):
    """A note from the engine about a call (inputs truncated, invalid text repaired)."""


class _ProgressLine:
    """`show_progress_bar`: "embed: 120/500 texts" on stderr, updated after each forward pass."""

    def __init__(self, what: str):
        self.what = what

    def __call__(self, done: int, total: int) -> None:
        sys.stderr.write(f"\rembed: {done}/{total} {self.what}" + ("\n" if done == total else ""))
        sys.stderr.flush()


def _progress(show: bool | None, what: str):
    if show:
        return _ProgressLine(what)
    # A callback also lets Ctrl-C stop a long call; signals only reach the main thread.
    if threading.current_thread() is threading.main_thread():
        return lambda done, total: None
    return None


class Model:
    """A GGUF embedding or reranking model loaded once (mmap) and shared by any number of Python
    threads: each concurrent call runs on its own engine Context, and the GIL is released while
    it computes.

    path: a .gguf file, a HuggingFace / sentence-transformers folder (converted at load), or a
    Hugging Face Hub name "ORG/NAME", "ORG/NAME:QUANT" (a GGUF repository's quantization) or
    "hf://ORG/NAME@REVISION", downloaded into the Hugging Face cache that huggingface_hub and
    sentence-transformers share (HF_HOME, HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE apply).
    threads: CPU threads per call (None: all cores). device: "cpu", "cuda"
    or "cuda:N" (the CUDA backend is a plugin opened only then; see docs/python.md).
    compute_type: "f32" (default), "bf16" or "int8" matmul arithmetic (docs/cli.md --compute-type).
    cache_gguf: convert an HF folder once into embed's cache instead of in memory at each load;
    convert_type: that conversion's weight type, "f16" (default, as `embed convert`), "f32",
    "bf16" or "q8_0".
    """

    def __init__(
        self,
        path: str | os.PathLike,
        threads: int | None = None,
        device: str = "cpu",
        compute_type: str = "f32",
        cache_gguf: bool = False,
        convert_type: str = "f16",
    ):
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InvalidInputError(f"threads must be a positive int or None, not {threads!r}", "invalid argument")
        self._core = _core.Model(os.fspath(path), threads or 0, device, compute_type, bool(cache_gguf), convert_type)
        self.info = self._core.describe()
        self.device = device

    def __repr__(self) -> str:
        i = self.info
        return f"embed.Model({i['path']!r}, architecture={i['architecture']!r}, dim={i['dim']}, device={self.device!r})"

    def get_sentence_embedding_dimension(self) -> int:
        """The width of the vectors encode() returns without `dimensions` (sentence-transformers' name)."""
        return self.info["dim"]

    def encode(
        self,
        texts: str | Sequence[str],
        batch_size: int | None = None,
        normalize_embeddings: bool = True,
        dimensions: int | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        precision: str = "float32",
        ranges=None,
        show_progress_bar: bool | None = None,
        truncate: bool = False,
        batch_tokens: int | None = None,
        split_special: bool = False,
        prompt_template: str | None = None,
        kv_embedding: bool = False,
        kv_layers: tuple[int, int] | None = None,
        kv_bias: float | None = None,
        pooling: str | None = None,
        return_dense: bool = True,
        return_sparse: bool = False,
        return_colbert_vecs: bool = False,
    ):
        """Vectors of `texts` as a float32 array [len(texts), dim] (a single str gives [dim]),
        row i for text i, each bit-identical to what the `embed` command gives for that text.

        batch_size: texts per forward pass at most (None: as many as `batch_tokens` tokens hold,
        4096 by default); vectors do not depend on it. normalize_embeddings: L2-normalize (else
        raw pooled vectors). dimensions: keep the first N values (1..dim; Matryoshka), then normalize.
        prompt_name: one of the model's prompts (info["prompts"]) or an engine preset
        ("e5-query", ...); prompt: the prompt text itself, which wins over prompt_name; neither:
        the model's default prompt, if any. truncate: cut texts longer than the model's context
        instead of raising InvalidInputError. precision: "float32", or quantized rows as
        sentence-transformers' quantize_embeddings makes them: "int8" / "uint8" (one byte per
        dimension, int8 / uint8 array), "binary" / "ubinary" (sign bits packed eight to a byte,
        [n, ceil(dim / 8)] int8 / uint8 array). ranges (int8 / uint8): the per-dimension [min, max]
        to quantize with: the path of an `embed calibrate` file, or an array of shape (2, dim)
        (sentence-transformers' `ranges`); None takes them from these texts' own vectors, as
        sentence-transformers' encode does, so the codes then depend on the batch.
        split_special: read special-token text in the texts ("[SEP]", "<|endoftext|>") as plain
        text, for text you do not control (the command's --split-special). prompt_template: a
        template with one "{text}" slot instead of a prompt, e.g. 'This sentence: "{text}" means in
        one word: "' (--template). kv_embedding: KV-Embedding on a decoder (--kv-embedding; hybrid
        pooling), kv_layers (first, last): its layer band (default: the band stored by
        `embed kv-layers -o`, else the middle third), kv_bias: the re-routed position's logit bias
        (default 1.0). pooling: "mean", "cls", "last" or "hybrid" ((last + mean) / 2) instead of
        the model's own (--pooling); None: the model's, or hybrid with kv_embedding.

        return_sparse / return_colbert_vecs (a model with BGE-M3's sparse / ColBERT heads): the
        read-outs of the same forward pass, answered as FlagEmbedding's BGEM3FlagModel.encode does:
        a dict with "dense_vecs" (the array above, None unless return_dense), "lexical_weights" (per
        text a dict {str(token id): weight}) and "colbert_vecs" (per text a float32 array, one unit
        vector per token after the first); None for what was not asked. A single str gives the
        single text's items. The same numbers as `embed --output dense,sparse,colbert` and the
        server's /embed_sparse and /embed_multi_vector.

        An empty text raises InvalidInputError naming its index, as the command and the server
        refuse it (a vector of the special tokens alone would stand for no text).
        """
        single = isinstance(texts, str)
        if precision not in _PRECISIONS:
            raise InvalidInputError(
                f"precision {precision!r} is not one of {', '.join(map(repr, _PRECISIONS))}",
                "invalid argument",
            )
        if pooling is not None and pooling not in _POOLINGS:
            why = {"none": "gives one vector per token, not per text",
                   "rank": "scores query-document pairs: use rerank()"}.get(pooling, "is unknown")
            raise InvalidInputError(
                f"pooling {pooling!r} {why}; encode takes one of {', '.join(map(repr, _POOLINGS))}",
                "invalid argument",
            )
        request = Request()
        request.pooling = pooling
        request.precision = precision
        if ranges is not None:
            if precision not in ("int8", "uint8"):
                raise InvalidInputError(f"ranges apply to precision 'int8' and 'uint8', not {precision!r}", "invalid argument")
            _set_ranges(request, ranges)
        request.normalize = 2 if normalize_embeddings else -1
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, (int, np.integer))):
            raise InvalidInputError(f"dimensions must be an int or None, not {dimensions!r}", "invalid argument")
        request.dimensions = None if dimensions is None else int(dimensions)  # the engine checks 1..dim
        request.prompt = prompt
        request.prompt_name = prompt_name or ""
        request.truncate = bool(truncate)
        request.split_special = bool(split_special)
        request.prompt_template = prompt_template
        request.kv_embedding = bool(kv_embedding)
        if kv_layers is not None:
            if not (isinstance(kv_layers, (tuple, list)) and len(kv_layers) == 2
                    and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in kv_layers)):
                raise InvalidInputError(f"kv_layers must be a pair of ints (first, last), not {kv_layers!r}", "invalid argument")
            request.kv_layers = (int(kv_layers[0]), int(kv_layers[1]))
        if kv_bias is not None:
            if isinstance(kv_bias, bool) or not isinstance(kv_bias, (int, float, np.floating, np.integer)):
                raise InvalidInputError(f"kv_bias must be a number, not {kv_bias!r}", "invalid argument")
            request.kv_bias = float(kv_bias)
        if return_sparse or return_colbert_vecs or not return_dense:
            dense, lexical, colbert, notes = self._core.encode_outputs(
                [texts] if single else texts,
                request,
                bool(return_dense),
                bool(return_sparse),
                bool(return_colbert_vecs),
                _positive_or_zero("batch_size", batch_size),
                _positive_or_zero("batch_tokens", batch_tokens),
                _progress(show_progress_bar, "texts"),
            )
            _warn(notes)
            out = {"dense_vecs": dense, "lexical_weights": lexical, "colbert_vecs": colbert}
            if single:
                out = {k: (None if v is None else v[0]) for k, v in out.items()}
            return out
        rows, notes = self._core.embed(
            [texts] if single else texts,
            request,
            _positive_or_zero("batch_size", batch_size),
            _positive_or_zero("batch_tokens", batch_tokens),
            _progress(show_progress_bar, "texts"),
        )
        _warn(notes)
        if rows.shape[0] == 0:  # no texts: no forward pass told the width
            width = dimensions or self.info["dim"]
            if precision in ("binary", "ubinary"):
                width = (width + 7) // 8
            return np.empty((0, width), dtype=rows.dtype)
        return rows[0] if single else rows

    def compute_score(
        self,
        sentence_pairs,
        weights_for_different_modes: Sequence[float] | None = None,
        batch_size: int | None = None,
        truncate: bool = True,
        show_progress_bar: bool | None = None,
    ) -> dict:
        """FlagEmbedding's BGEM3FlagModel.compute_score on a model with BGE-M3's sparse and ColBERT
        heads: for each (query, passage) pair the "dense", "sparse", "colbert", "sparse+dense" and
        "colbert+sparse+dense" scores, each a list in pair order (floats for a single pair).
        weights_for_different_modes: [dense, sparse, colbert] (default [1, 1, 1], as FlagEmbedding).
        Pairs that share a query are scored from one pass over that query and their passages; the
        scores are what `embed rerank --score NAME` prints. truncate: cut texts longer than the
        model's context (FlagEmbedding cuts at max_passage_length)."""
        single = isinstance(sentence_pairs, tuple) and len(sentence_pairs) == 2 and all(isinstance(x, str) for x in sentence_pairs)
        pairs = [sentence_pairs] if single else list(sentence_pairs)
        for i, p in enumerate(pairs):
            if not (isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, str) for x in p)):
                raise InvalidInputError(f"sentence_pairs[{i}] is not a (query, passage) pair of str", "invalid argument")
        w = [1.0, 1.0, 1.0] if weights_for_different_modes is None else [float(x) for x in weights_for_different_modes]
        if len(w) != 3:
            raise InvalidInputError(f"weights_for_different_modes must be [dense, sparse, colbert], not {weights_for_different_modes!r}",
                                    "invalid argument")
        request = Request()
        request.truncate = bool(truncate)
        keys = ("dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense")
        out = {k: [0.0] * len(pairs) for k in keys}
        by_query: dict[str, list[int]] = {}
        for i, (q, _) in enumerate(pairs):
            by_query.setdefault(q, []).append(i)
        for q, idx in by_query.items():
            scores = self._core.score_readouts(
                q, [pairs[i][1] for i in idx], w, request, _positive_or_zero("batch_size", batch_size), 0,
                _progress(show_progress_bar, "passages"),
            )
            for k in keys:
                for j, i in enumerate(idx):
                    out[k][i] = float(scores[k][j])
        if single:
            return {k: v[0] for k, v in out.items()}
        return out

    def rerank(
        self,
        query: str,
        documents: Sequence[str],
        top_n: int | None = None,
        truncate: bool = True,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        split_special: bool = False,
    ) -> list[tuple[int, float]]:
        """Scores of `documents` against `query` with a reranker (cross-encoder or yes/no
        reranker), best first, as (document index, score) pairs; top_n keeps the first N. Scores
        are what `embed rerank` prints: P(yes) for yes/no rerankers, the raw logit for
        cross-encoders. truncate (default, like `embed rerank` and sentence-transformers'
        CrossEncoder): cut the document of a pair longer than the model's context. split_special:
        special-token text in the query and documents is plain text (--split-special)."""
        if not isinstance(query, str):
            raise TypeError(f"query is {type(query).__name__}, not str")
        if top_n is not None and (not isinstance(top_n, int) or top_n < 1):
            raise InvalidInputError(f"top_n must be a positive int or None, not {top_n!r}", "invalid argument")
        request = Request()
        request.truncate = bool(truncate)
        request.split_special = bool(split_special)
        scores = self._core.rerank(
            query, documents, request, _positive_or_zero("batch_size", batch_size), 0, _progress(show_progress_bar, "documents")
        )
        order = np.argsort(-scores, kind="stable")[:top_n]
        return [(int(i), float(scores[i])) for i in order]

    def tokenize(self, texts: str | Sequence[str], add_special_tokens: bool = True, split_special: bool = False) -> list[list[int]]:
        """Token ids of each text as the model's tokenizer gives them, no prompt added (what
        `embed tokenize` prints); a single str gives one list. add_special_tokens: the model's
        BOS/CLS/EOS/SEP (False: the command's --no-special); split_special: special-token text is
        plain text (--split-special)."""
        if isinstance(texts, str):
            return self._core.tokenize([texts], bool(add_special_tokens), bool(split_special))[0]
        return self._core.tokenize(texts, bool(add_special_tokens), bool(split_special))


def _set_ranges(request: Request, ranges) -> None:
    """encode's `ranges`: an `embed calibrate` file or a (2, dim) array of per-dimension min, max."""
    if isinstance(ranges, (str, os.PathLike)):
        request.load_ranges(os.fspath(ranges))
        return
    a = np.asarray(ranges, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != 2 or a.shape[1] < 1:
        raise InvalidInputError(f"ranges must be a path or an array of shape (2, dim), not shape {a.shape}", "invalid argument")
    if not np.all(np.isfinite(a)) or np.any(np.abs(a) > np.finfo(np.float32).max):
        raise InvalidInputError("ranges hold a value that is not a finite float32", "invalid argument")
    request.set_ranges(a[0].astype(np.float32).tolist(), a[1].astype(np.float32).tolist())


def _positive_or_zero(name: str, value: int | None) -> int:
    """An optional positive int as the engine's "0 = default"."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidInputError(f"{name} must be a positive int or None, not {value!r}", "invalid argument")
    return int(value)


def _warn(notes: Iterable[str]) -> None:
    for note in notes:
        warnings.warn(note, EmbedWarning, stacklevel=3)
