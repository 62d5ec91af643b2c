#!/usr/bin/env python3
# Reference outputs of the converter's tiny HF folders (tests/convert/fixtures/<case>/), computed
# by sentence-transformers (folders with modules.json, every prompt) or HF transformers (decoders:
# last and mean hidden state; cross-encoders and rerankers: scores). Writes
# tests/convert/fixtures/vectors/<case>.json, which tests/convert/convert_vectors_test.cpp
# compares with the engine's outputs on the folders converted by `embed convert`.
"""Usage:  EMBED_SHARED=/path/to/shared $(tools/refgen/setup_venv.sh) tools/refgen/convert_vectors.py [CASE ...]

Every case records the texts, and per variant (a prompt, or a pooling) the HF tokenizer's ids of
each input and the reference output, so that the test can check the converted weights alone
(same ids) and the whole GGUF including its vocabulary and prompts (end to end).
"""
import json
import os
import pathlib
import sys

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
import texts as shared_texts  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
OUT = FIXTURES / "vectors"
MAX_TOKENS = 120  # below every tiny model's context (128) with room for a prompt

# What each folder is and how its reference is made.
CASES = {
    "bert-dense-tiny": "sentence-transformers",
    "qwen2-tiny": "sentence-transformers",
    "qwen3-embedding-tiny": "sentence-transformers",
    "embeddinggemma-tiny": "sentence-transformers",
    "llama-tiny": "decoder",
    "gemma3-tiny": "decoder",
    "bert-cls-tiny": "cross-encoder",
    "qwen3-reranker-tiny": "yes-no-reranker",
    "xlmr-tiny": "sentence-transformers",
    "xlmr-cls-tiny": "cross-encoder",
    "bge-m3-tiny": "bge-m3",
    "splade-tiny": "sparse-encoder",
    "qwen2-bidir-tiny": "bidirectional-decoder",
    "mpnet-tiny": "sentence-transformers",
    "t5-gtr-tiny": "sentence-transformers",
    "t5-gated-tiny": "sentence-transformers",
    "modern-bert-tiny": "sentence-transformers",
    "modern-bert-cls-tiny": "cross-encoder",
}
# The XLM-R folders' vocabulary is multilingual: their texts add German and Chinese STS-B lines
# and the scripts, forms and characters of issue 24 (Japanese, Arabic, Hindi, emoji, combining
# marks, full-width forms, NBSP, a control character); what the tiny vocabulary lacks is <unk>.
MULTILINGUAL = ["Die Katze sitzt auf der Matte.", "日本語のテキストです。", "مرحبا بالعالم", "नमस्ते दुनिया",
                "emoji 👍🏽 and 👨\u200d👩\u200d👧", "e\u0301te\u0301 cafe\u0301", "ＡＢＣ１２３ full width",
                "non\u00a0breaking\u00a0space", "tab\there\x07bell"]
M3_WEIGHTS = [0.4, 0.2, 0.4]
# Long-context folders that also get one text of exactly LONG_TOKENS tokens in one pass
# (tests/convert/fixtures/long/<case>.json; nomic-bert's is made by make_nomic_bert.py): the texts'
# ids run together between one [CLS] and one [SEP], the reference computed in float64.
LONG_CASES = ("modern-bert-tiny",)
LONG_TOKENS = 8192
# Cases whose vectors are checked to differ between texts (check_distinct).
DISTINCT_CHECKED = ("xlmr-tiny", "bge-m3-tiny", "qwen2-bidir-tiny")  # compute_score's weights_for_different_modes (dense, sparse, colbert)


def sample_texts():
    """16 STS-B sentences, 4 short lines and one long line of 3 sentences (past every sliding
    window of the tiny models)."""
    rows = shared_texts.stsb_rows("en")
    picked = [rows[i][0] for i in range(0, 400, 25)]
    return picked + ["Hello world", "The quick brown fox jumps over the lazy dog.", "a", "Numbers 12345 and 3.14!",
                     " ".join(r[0] for r in rows[200:203])]


def multilingual_texts():
    return (sample_texts()[:12] + [shared_texts.stsb_rows(lang)[i][0] for lang in ("de", "zh") for i in (5, 50, 500)]
            + MULTILINGUAL)


def sample_pairs():
    rows = shared_texts.stsb_rows("en")
    return [(rows[i][0], rows[i][1]) for i in range(3, 300, 37)]


def rounded(v):
    return [float(f"{x:.8g}") for x in np.asarray(v, dtype=np.float64).ravel()]


def check_distinct(name, vectors, ids, limit=0.999):
    """Texts of different token ids must give clearly different vectors, or a test against them
    could not tell a wrong model from the right one (the bound is 100 times the tests' 1 - 0.99999)."""
    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    c = v @ v.T
    for i in range(len(ids)):
        for j in range(len(ids)):
            if ids[i] == ids[j]:
                c[i, j] = -1
    worst = float(c.max())
    if worst > limit:
        raise RuntimeError(f"{name}: two different texts give vectors of cosine {worst:.6f}")
    return worst


def check_lengths(name, ids):
    for i, seq in enumerate(ids):
        if not 0 < len(seq) <= MAX_TOKENS:
            raise RuntimeError(f"{name}: input {i} has {len(seq)} tokens (limit {MAX_TOKENS})")


def sentence_transformers_case(folder, sample):
    import torch
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"dtype": torch.float32})
    normalized = any(type(m).__name__ == "Normalize" for m in st)
    # The folder's own prompts (sentence-transformers adds empty "query"/"document" ones in memory).
    cfg = folder / "config_sentence_transformers.json"
    prompts = (json.loads(cfg.read_text()).get("prompts") or {}) if cfg.is_file() else {}
    variants = []
    for name in [None] + list(prompts):
        prompt = "" if name is None else prompts[name]
        # prompt="" keeps a default_prompt_name from applying to the no-prompt variant.
        vectors = st.encode(sample, prompt=prompt, convert_to_numpy=True)
        ids = [st.tokenize([prompt + t])["input_ids"][0].tolist() for t in sample]
        check_lengths(folder.name, ids)
        if folder.name in DISTINCT_CHECKED:
            worst = check_distinct(folder.name, vectors, ids)
            print(f"{folder.name} {name}: largest cosine between two texts' vectors {worst:.4f}")
        variants.append({"label": f"prompt {name}" if name else "no prompt", "pooling": None, "prompt_name": name,
                         "prompt": prompt, "ids": ids, "vectors": [rounded(v) for v in vectors]})
    return {"normalized": normalized, "default_prompt_name": st.default_prompt_name, "variants": variants}


def decoder_case(folder, sample):
    """Final-norm hidden states: the last token's (what LAST pooling gives) and their mean."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
    ids = [tok(t)["input_ids"] for t in sample]
    check_lengths(folder.name, ids)
    last, mean = [], []
    for seq in ids:
        with torch.no_grad():
            h = model(torch.tensor([seq])).last_hidden_state[0].double().numpy()
        last.append(rounded(h[-1]))
        mean.append(rounded(h.mean(axis=0)))
    return {"normalized": False, "variants": [
        {"label": "last hidden state", "pooling": "last", "prompt_name": None, "prompt": "", "ids": ids, "vectors": last},
        {"label": "mean hidden state", "pooling": "mean", "prompt_name": None, "prompt": "", "ids": ids, "vectors": mean}]}


def cross_encoder_case(folder, sample):
    """Sequence-classification logits (BERT: dense -> tanh pooler -> classifier; XLM-R:
    RobertaClassificationHead dense -> tanh -> out_proj): single texts (token type 0), and
    query/document pairs scored by sentence-transformers' CrossEncoder (identity activation: the
    logit; its default sigmoid is recorded beside), which must equal the model's own logits."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    ids = [tok(t)["input_ids"] for t in sample]
    check_lengths(folder.name, ids)
    pairs = sample_pairs() + ([(multilingual_texts()[12], multilingual_texts()[15]), (MULTILINGUAL[1], MULTILINGUAL[0])]
                              if folder.name.startswith("xlmr") else [])
    with torch.no_grad():
        single = [model(torch.tensor([seq])).logits[0].double().numpy() for seq in ids]
        own = []
        for q, d in pairs:
            enc = tok(q, d, return_tensors="pt", return_token_type_ids=True)  # BERT: document tokens have type 1
            own.append(float(model(**enc).logits[0, 0]))
    ce = CrossEncoder(str(folder), device="cpu", model_kwargs={"dtype": torch.float32})
    logits = ce.predict(pairs, activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    sigmoid = ce.predict(pairs, activation_fn=torch.nn.Sigmoid(), convert_to_numpy=True)
    worst = float(np.max(np.abs(np.asarray(logits, dtype=np.float64) - np.asarray(own))))
    if worst > 1e-5:
        raise RuntimeError(f"{folder.name}: CrossEncoder logits differ from the model's by {worst}")
    return {"normalized": False, "pairs": [list(p) for p in pairs], "pair_scores": rounded(logits),
            "pair_sigmoid": rounded(sigmoid), "variants": [
                {"label": "classifier logit", "pooling": "rank", "prompt_name": None, "prompt": "", "ids": ids,
                 "vectors": [rounded(v) for v in single]}]}


def flag_embedding_m3():
    """FlagEmbedding 1.4.2's BGEM3FlagModel (the class FlagEmbedding/inference/embedder/
    encoder_only/m3.py defines as M3Embedder), imported without the package __init__ files: they
    import every model family, and the decoder rerankers import transformers.modeling_attn_mask_utils,
    which transformers 5 no longer has. The m3 module's own import chain reaches FlagEmbedding's
    fine-tuning classes, which import `datasets` (not pinned here: it pulls pyarrow and pandas) and
    use it only inside training code and annotations: a module holding only the class name those
    annotations mention stands in, so any real use (load_dataset, ...) would fail instead of
    computing anything. Nothing on the inference path is replaced."""
    import importlib.machinery
    import importlib.util
    import pathlib
    import types
    if importlib.util.find_spec("datasets") is None and "datasets" not in sys.modules:
        placeholder = types.ModuleType("datasets")
        placeholder.Dataset = type("Dataset", (), {})
        placeholder.__spec__ = importlib.machinery.ModuleSpec("datasets", None)
        sys.modules["datasets"] = placeholder
    root = pathlib.Path(importlib.util.find_spec("FlagEmbedding").origin).parent
    for pkg in ("FlagEmbedding", "FlagEmbedding.inference", "FlagEmbedding.inference.embedder",
                "FlagEmbedding.inference.embedder.encoder_only"):
        if pkg not in sys.modules:
            module = types.ModuleType(pkg)
            module.__path__ = [str(root.joinpath(*pkg.split(".")[1:]))]
            sys.modules[pkg] = module
    from FlagEmbedding.inference.embedder.encoder_only.m3 import M3Embedder
    return M3Embedder


def bge_m3_case(folder, sample):
    """BGE-M3: the dense vector from sentence-transformers (CLS, Normalize), and FlagEmbedding's
    BGEM3FlagModel (f32) for all three outputs and compute_score on query/document pairs."""
    case = sentence_transformers_case(folder, sample)
    BGEM3FlagModel = flag_embedding_m3()
    m3 = BGEM3FlagModel(str(folder), use_fp16=False, devices="cpu")
    out = m3.encode(sample, batch_size=4, max_length=MAX_TOKENS, return_dense=True, return_sparse=True,
                    return_colbert_vecs=True)
    case["m3"] = {
        "dense": [rounded(v) for v in out["dense_vecs"]],
        "sparse": [{k: float(f"{float(w):.8g}") for k, w in sorted(lw.items(), key=lambda kv: int(kv[0]))}
                   for lw in out["lexical_weights"]],
        "colbert": [[rounded(r) for r in np.asarray(c)] for c in out["colbert_vecs"]],
    }
    pairs = sample_pairs()[:4] + [(multilingual_texts()[12], multilingual_texts()[15])]
    scores = m3.compute_score(pairs, max_passage_length=MAX_TOKENS, weights_for_different_modes=M3_WEIGHTS)
    case["m3_pairs"] = [list(p) for p in pairs]
    case["m3_weights"] = M3_WEIGHTS
    case["m3_scores"] = {k: rounded(v) for k, v in scores.items()}
    import torch
    # How far from 0 the per-token sparse values W_s h + b_s come: the non-zero id set must not
    # hang on rounding.
    head = torch.load(folder / "sparse_linear.pt", map_location="cpu", weights_only=True)
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    body = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
    margin = np.inf
    for t in sample:
        with torch.no_grad():
            h = body(**tok(t, return_tensors="pt")).last_hidden_state[0]
        margin = min(margin, float((h @ head["weight"].T + head["bias"]).abs().min()))
    if margin < 1e-5:  # ten times the float32 difference between PyTorch and the engine (about 1e-6)
        raise RuntimeError(f"{folder.name}: a sparse value is {margin} from 0; reseed")
    case["min_abs_sparse_value"] = margin
    case["pipeline"] = "sentence-transformers"
    return case


def sparse_encoder_case(folder, sample):
    """SPLADE: sentence-transformers' SparseEncoder (MLMTransformer + SpladePooling max/relu) on the
    folder, each text's non-zero vocabulary weights; checked here against the formula computed
    from BertForMaskedLM's logits (max over tokens of log1p(relu(logits)))."""
    import torch
    from sentence_transformers import SparseEncoder
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    se = SparseEncoder(str(folder), device="cpu", model_kwargs={"dtype": torch.float32})
    kinds = [type(m).__name__ for m in se]
    if kinds != ["MLMTransformer", "SpladePooling"]:
        raise RuntimeError(f"{folder.name}: SparseEncoder built {kinds}")
    emb = se.encode(sample, convert_to_tensor=True, convert_to_sparse_tensor=False).double().numpy()
    tok = AutoTokenizer.from_pretrained(folder)
    mlm = AutoModelForMaskedLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = [tok(t)["input_ids"] for t in sample]
    check_lengths(folder.name, ids)
    sparse, margin = [], np.inf
    for i, seq in enumerate(ids):
        with torch.no_grad():
            logits = mlm(torch.tensor([seq])).logits[0].double()
        best = logits.max(dim=0).values.numpy()
        formula = np.log1p(np.maximum(best, 0))
        if np.max(np.abs(formula - emb[i])) > 1e-5 * max(1.0, np.max(np.abs(formula))):
            raise RuntimeError(f"{folder.name}: SparseEncoder differs from log1p(relu(MLM logits)) max on text {i}")
        margin = min(margin, float(np.min(np.abs(best))))  # no id sits at the edge of the non-zero set
        nz = np.nonzero(emb[i] > 0)[0]
        sparse.append({str(int(k)): float(f"{emb[i][k]:.8g}") for k in nz})
    if margin < 1e-5:  # ten times the float32 difference between PyTorch and the engine (about 1e-6)
        raise RuntimeError(f"{folder.name}: a max logit is {margin} from 0: the non-zero set would hang on rounding; reseed")
    active = [len(r) for r in sparse]
    print(f"{folder.name}: {min(active)}..{max(active)} non-zero of {emb.shape[1]}; smallest |max logit| {margin:.3g}")
    return {"normalized": False, "variants": [], "sparse_ids": ids, "sparse": sparse, "vocab_size": int(emb.shape[1]),
            "min_abs_max_logit": margin}


def bidirectional_decoder_case(folder, sample):
    """gte-Qwen2's reading of a Qwen2Model whose config.json says is_causal: false: every token
    attends to the whole sequence. transformers (pinned 5.24.0) reads that field itself: its
    Qwen2Model built from this config.json runs without the causal mask. The reference is then
    sentence-transformers on the folder (last token, Normalize), and two checks, on HF's model one
    sequence at a time, keep it honest:
      * the model without a mask equals the same model given an explicit 4-D boolean mask of all
        True (batch, 1, query, key; transformers uses a 4-D mask as given, eager attention adds it
        as 0 / -inf) to 1e-5: what HF computes is bidirectional attention;
      * with a lower-triangular 4-D mask (causal) the last-token state differs by far more, and
        under the all-True mask the first token's state changes when a later token does.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer
    case = sentence_transformers_case(folder, sample)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    if getattr(model.config, "is_causal", None) is not False:
        raise RuntimeError(f"{folder.name}: the loaded config lost is_causal: false")

    def run(seq, mask):
        with torch.no_grad():
            return model(torch.tensor([seq]), attention_mask=mask).last_hidden_state[0].double()

    unmasked_gap, causal_gap = 0.0, 0.0
    for text, want in zip(sample, case["variants"][0]["vectors"]):
        seq = tok(text)["input_ids"]
        n = len(seq)
        full = torch.ones(1, 1, n, n, dtype=torch.bool)
        h = run(seq, full)
        unmasked_gap = max(unmasked_gap, float((run(seq, None) - h).abs().max()))
        causal_gap = max(causal_gap, float((run(seq, torch.tril(full))[-1] - h[-1]).abs().max()))
        last = h[-1].numpy() / np.linalg.norm(h[-1].numpy())
        if np.dot(last, np.asarray(want)) < 0.99999:
            raise RuntimeError(f"{folder.name}: sentence-transformers' vector is not the all-True mask's last token")
        if n > 2:
            other = list(seq)
            other[-2] = (other[-2] + 1) % model.config.vocab_size
            if torch.equal(run(other, full)[0], h[0]):
                raise RuntimeError(f"{folder.name}: the first token does not see a later one under the all-True mask")
    if unmasked_gap > 1e-5:
        raise RuntimeError(f"{folder.name}: HF's unmasked run differs from the all-True mask by {unmasked_gap}")
    if causal_gap < 1e-2:
        raise RuntimeError(f"{folder.name}: bidirectional and causal outputs agree ({causal_gap}); the fixture tests nothing")
    print(f"{folder.name}: |unmasked - all-True mask| {unmasked_gap:.3g}; |bidirectional - causal| last token {causal_gap:.3g}")
    case["pipeline"] = "sentence-transformers"
    case["check"] = {"max_abs_unmasked_vs_all_true_mask": unmasked_gap, "max_abs_bidirectional_vs_causal_last": causal_gap}
    return case


def yes_no_reranker_case(folder, sample):
    """Qwen3-Reranker: softmax over the LM head's "yes" / "no" logits at the last token of the
    converter's prompt (the template written into the GGUF) filled with a query and a document."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    sys.path.insert(0, str(ROOT / "tools" / "refgen"))
    from texts import RERANK_TEMPLATE
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    pairs = sample_pairs()
    ids, probs = [], []
    for q, d in pairs:
        seq = tok(RERANK_TEMPLATE.replace("{query}", q).replace("{document}", d), add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([seq])).logits[0, -1].double()
        probs.append(torch.softmax(torch.stack([logits[yes], logits[no]]), 0).numpy())
        ids.append(seq)
    return {"normalized": False, "pairs": [list(p) for p in pairs], "pair_scores": rounded([p[0] for p in probs]),
            "variants": [{"label": "P(yes), P(no)", "pooling": "rank", "prompt_name": None, "prompt": "", "ids": ids,
                          "vectors": [rounded(p) for p in probs]}]}


def long_case(name, case):
    """One LONG_TOKENS-token input through sentence-transformers' whole pipeline, in float64."""
    import torch
    from sentence_transformers import SentenceTransformer
    plain = case["variants"][0]["ids"]
    cls, sep = plain[0][0], plain[0][-1]
    body = []
    while len(body) < LONG_TOKENS - 2:
        for seq in plain:
            body.extend(seq[1:-1])
    ids = [cls] + body[:LONG_TOKENS - 2] + [sep]
    st = SentenceTransformer(str(FIXTURES / name), device="cpu", model_kwargs={"dtype": torch.float64})
    st = st.double()
    with torch.no_grad():
        features = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
        vector = st(features)["sentence_embedding"][0].numpy()
    return {"case": name, "reference": "sentence-transformers (float64)", "source": common.source_line("convert_vectors.py"),
            "normalized": case["normalized"], "variants": [{"label": f"{LONG_TOKENS} tokens", "pooling": None, "prompt_name": None,
                                                           "prompt": "", "ids": [ids], "vectors": [rounded(vector)]}]}


def main():
    common.deterministic_torch()
    names = sys.argv[1:] or list(CASES)
    sample = sample_texts()
    OUT.mkdir(parents=True, exist_ok=True)
    makers = {"sentence-transformers": sentence_transformers_case, "decoder": decoder_case,
              "cross-encoder": cross_encoder_case, "yes-no-reranker": yes_no_reranker_case, "bge-m3": bge_m3_case,
              "sparse-encoder": sparse_encoder_case, "bidirectional-decoder": bidirectional_decoder_case}
    for name in names:
        kind = CASES[name]
        case = {"case": name, "reference": kind, "source": common.source_line("convert_vectors.py"), "texts": sample}
        texts = multilingual_texts() if name in ("xlmr-tiny", "xlmr-cls-tiny", "bge-m3-tiny") else sample
        if name == "splade-tiny":  # the WordPiece vocabulary is en/de: no other scripts
            texts = sample + [shared_texts.stsb_rows("de")[i][0] for i in (5, 50, 500)]
        case["texts"] = texts
        case.update(makers[kind](FIXTURES / name, texts))
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(case, indent=None, ensure_ascii=False) + "\n")
        print(f"{path.relative_to(ROOT)}: {len(case['variants'])} variants, {path.stat().st_size} bytes")
        if name in LONG_CASES:
            path = FIXTURES / "long" / f"{name}.json"
            path.write_text(json.dumps(long_case(name, case), indent=None) + "\n")
            print(f"{path.relative_to(ROOT)}: one text of {LONG_TOKENS} tokens, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
