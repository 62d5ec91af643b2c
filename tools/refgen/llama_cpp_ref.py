# Runs a GGUF through llama.cpp (llama-cpp-python, embedding mode) on given token ids, one
# sequence per decode with the KV cache cleared, and returns pooled or per-token outputs. It also
# tokenizes with llama.cpp's own tokenizer so fixtures can record where it agrees with HF.
import numpy as np

POOLING = {"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4}
KV_F32 = 0  # GGML_TYPE_F32: the default f16 KV cache would round K and V to half precision


class LlamaCppRunner:
    def __init__(self, gguf_path, pooling, n_ctx):
        import llama_cpp
        self.lib = llama_cpp
        self.pooling = pooling
        self.llm = llama_cpp.Llama(
            model_path=str(gguf_path), embedding=True, pooling_type=POOLING[pooling],
            n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=1, n_threads_batch=1,
            type_k=KV_F32, type_v=KV_F32, verbose=False)
        if self.llm.pooling_type() != POOLING[pooling]:
            raise RuntimeError(f"llama.cpp context pooling {self.llm.pooling_type()} != {pooling}")
        self.n_embd = self.llm.n_embd()
        self.n_cls_out = llama_cpp.llama_model_n_cls_out(self.llm.model)

    def run(self, ids):
        """Pooled vector (n_embd floats; rank: n_cls_out floats) or [n_tokens, n_embd] for none."""
        llm = self.llm
        llm._batch.reset()
        llm._ctx.kv_cache_clear()
        llm._batch.add_sequence(list(ids), 0, True)
        llm._ctx.decode(llm._batch)
        ctx = llm._ctx.ctx
        if self.pooling == "none":
            rows = []
            for i in range(len(ids)):
                ptr = self.lib.llama_get_embeddings_ith(ctx, i)
                rows.append(np.ctypeslib.as_array(ptr, shape=(self.n_embd,)).copy())
            out = np.stack(rows)
        else:
            width = self.n_cls_out if self.pooling == "rank" else self.n_embd
            ptr = self.lib.llama_get_embeddings_seq(ctx, 0)
            out = np.ctypeslib.as_array(ptr, shape=(width,)).copy()
        llm._ctx.kv_cache_clear()
        return out.astype(np.float32)

    def tokenize(self, text):
        """llama.cpp tokenization with add_special=true, parse_special=true (as llama-embedding)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def close(self):
        self.llm.close()


def run_cases(gguf_path, pooling, id_lists, n_ctx):
    runner = LlamaCppRunner(gguf_path, pooling, n_ctx)
    try:
        return [runner.run(ids) for ids in id_lists]
    finally:
        runner.close()


def tokenize_cases(gguf_path, texts, n_ctx):
    runner = LlamaCppRunner(gguf_path, "none", n_ctx)
    try:
        return [runner.tokenize(t) for t in texts]
    finally:
        runner.close()
