# Builds every tiny random-weight model (tiny_models.SPECS), records HF transformers reference
# outputs on the shared texts, converts the model with llama.cpp's own converter, and records
# llama.cpp's outputs as a second reference. Writes tests/fixtures/models/<name>/.
# Usage: python make_tiny.py [NAME ...]   (default: all)
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import common
import llama_cpp_ref
import texts
import tiny_models

# Converter hook values (see convert_with_llama_cpp.py): the BPE pre-tokenizer each tokenizer
# was built to match; WordPiece ignores it.
PRE_NAME = {"wordpiece": "default", "qwen-eos": "qwen2", "qwen": "qwen2", "qwen-rerank": "qwen2",
            "llama3": "llama-bpe"}

RERANK_QUERIES = ["What is this text about?", "Wie spät ist es?", "best pizza 🍕", "代码示例"]


def encode(tok, spec, text, text_pair=None, truncate=False):
    enc = tok(text, text_pair, add_special_tokens=True, return_token_type_ids=(spec.family == "bert"),
              truncation=truncate, max_length=spec.max_len if truncate else None)
    case = {"ids": [int(i) for i in enc["input_ids"]]}
    if spec.family == "bert":
        case["type_ids"] = [int(i) for i in enc["token_type_ids"]]
    return case


def plain_cases(spec, tok):
    cases = [dict(tag=tag, text=text) for tag, text in texts.MIXED_TEXTS]
    if spec.family == "bert":
        cases += [dict(tag="pair", text=q, text_pair=d) for q, d in texts.RERANK_PAIRS]
    for case in cases:
        case.update(encode(tok, spec, case["text"], case.get("text_pair")))
    count = lambda t: len(encode(tok, spec, t)["ids"])
    for lang in ("en", "de"):
        text = texts.fit_prefix(count, texts.long_text(400, lang), spec.max_len)
        cases.append(dict(tag=f"max-length-{lang}", text=text, **encode(tok, spec, text)))
    text = texts.long_text(600, "en")
    cases.append(dict(tag="max-length-truncated", text=text, truncated=True,
                      **encode(tok, spec, text, truncate=True)))
    return cases


def rerank_cases(spec, tok):
    pairs = [(RERANK_QUERIES[i % len(RERANK_QUERIES)], text, tag)
             for i, (tag, text) in enumerate(texts.MIXED_TEXTS[:40])]
    pairs += [(q, d, "pair") for q, d in texts.RERANK_PAIRS]
    cases = []
    for query, document, tag in pairs:
        text = texts.RERANK_TEMPLATE.format(query=query, document=document)
        cases.append(dict(tag=tag, text=text, query=query, document=document, **encode(tok, spec, text)))
    query = "Find the sentence about horses."
    count = lambda d: len(encode(tok, spec, texts.RERANK_TEMPLATE.format(query=query, document=d))["ids"])
    for lang in ("en", "de"):
        document = texts.fit_prefix(count, texts.long_text(200, lang), spec.max_len)
        text = texts.RERANK_TEMPLATE.format(query=query, document=document)
        cases.append(dict(tag=f"max-length-{lang}", text=text, query=query, document=document,
                          **encode(tok, spec, text)))
    return cases


def check_cases(spec, cases):
    for i, case in enumerate(cases):
        n = len(case["ids"])
        if n == 0 or n > spec.max_len:
            raise ValueError(f"{spec.name} case {i} ({case['tag']}): {n} tokens, limit {spec.max_len}")
    if sum(len(c["ids"]) == spec.max_len for c in cases) < 2:
        raise ValueError(f"{spec.name}: fewer than 2 cases at the maximum length {spec.max_len}")


def hf_forward(model, spec, case, torch):
    """Final hidden states [n_tokens, d_model] (after the final norm where the model has one) and
    the rank score where the model has one, for one unpadded sequence."""
    ids = torch.tensor([case["ids"]])
    mask = torch.ones_like(ids)
    score = None
    with torch.no_grad():
        if spec.family == "bert":
            out = model(input_ids=ids, token_type_ids=torch.tensor([case["type_ids"]]), attention_mask=mask,
                        output_hidden_states=True)
            hidden = out.hidden_states[-1][0]
            score = float(out.logits[0, 0])
        elif spec.hf_class.endswith("ForCausalLM"):
            hidden = model.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state[0]
            if spec.rank == "qwen3-yes-no":
                logits = model.lm_head(hidden[-1])
                pair = torch.stack([logits[spec.yes_id], logits[spec.no_id]])
                score = float(torch.softmax(pair.double(), dim=0)[0])
        else:
            hidden = model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state[0]
    return hidden.float(), score


def st_pool(hidden, kind, torch):
    """Pooling through sentence-transformers' own Pooling module (lasttoken for 'last')."""
    from sentence_transformers.sentence_transformer.modules import Pooling
    mode = {"mean": "mean", "cls": "cls", "last": "lasttoken"}[kind]
    pool = Pooling(hidden.shape[-1], pooling_mode=mode)
    features = {"token_embeddings": hidden[None], "attention_mask": torch.ones(1, hidden.shape[0], dtype=torch.long)}
    with torch.no_grad():
        return pool(features)["sentence_embedding"][0]


def hf_references(model, spec, cases, torch):
    hidden_rows, pooled, scores = [], {k: [] for k in spec.poolings}, []
    for case in cases:
        hidden, score = hf_forward(model, spec, case, torch)
        hidden_rows.append(hidden.numpy())
        for kind in spec.poolings:
            pooled[kind].append(st_pool(hidden, kind, torch).numpy())
        if spec.rank:
            scores.append(score)
    refs = {"hidden": np.concatenate(hidden_rows), "pooled": {k: np.stack(v) for k, v in pooled.items()}}
    if spec.rank:
        refs["scores_rank"] = np.array(scores, dtype=np.float32)
    return refs


def convert(spec, hf_dir, out_path):
    cmd = [sys.executable, str(Path(__file__).with_name("convert_with_llama_cpp.py")), common.llama_cpp_src()]
    if spec.tokenizer in PRE_NAME:
        cmd += ["--pre", PRE_NAME[spec.tokenizer]]
    if spec.rank == "bert-logit":
        cmd += ["--bert-pooler-as-cls"]
    cmd += ["--", str(hf_dir), "--outtype", "f32", "--outfile", str(out_path), "--model-name", spec.name]
    log_path = out_path.with_suffix(".convert.log")
    with log_path.open("w") as log_file:
        result = subprocess.run(cmd, stdout=log_file, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError(f"{spec.name}: llama.cpp converter failed, see {log_path}:\n"
                           + log_path.read_text()[-3000:])
    return log_path


def check_rerank_template(gguf_path):
    """The reranker cases fill texts.RERANK_TEMPLATE; it must be the template the converter wrote."""
    sys.path.insert(0, f"{common.llama_cpp_src()}/gguf-py")
    import gguf  # llama.cpp's bundled gguf-py, the reader that matches the converter
    field = gguf.GGUFReader(gguf_path).fields["tokenizer.chat_template.rerank"]
    if field.contents() != texts.RERANK_TEMPLATE:
        raise RuntimeError("tokenizer.chat_template.rerank differs from texts.RERANK_TEMPLATE")


def llama_cpp_references(spec, gguf_path, cases, refs):
    """llama.cpp outputs on the same ids, for the cases it can reproduce (BERT: llama.cpp feeds
    token type 0 everywhere, so pair inputs are left out), and their agreement with HF."""
    idx = [i for i, c in enumerate(cases) if not any(c.get("type_ids", []))]
    ids = [cases[i]["ids"] for i in idx]
    n_ctx = max(256, spec.max_len)
    result = {"cases": idx, "arrays": {}, "agreement": {}}
    starts = np.cumsum([0] + [len(c["ids"]) for c in cases])
    hf_hidden = np.concatenate([refs["hidden"][starts[i]:starts[i + 1]] for i in idx])
    lc_hidden = np.concatenate(llama_cpp_ref.run_cases(gguf_path, "none", ids, n_ctx))
    result["agreement"]["hidden"] = common.agreement(hf_hidden, lc_hidden)
    for kind in spec.poolings:
        lc = np.stack(llama_cpp_ref.run_cases(gguf_path, kind, ids, n_ctx))
        result["arrays"][f"llamacpp_pooled_{kind}.npy"] = lc
        result["agreement"][f"pooled_{kind}"] = common.agreement(refs["pooled"][kind][idx], lc)
    if spec.rank:
        out = np.stack(llama_cpp_ref.run_cases(gguf_path, "rank", ids, n_ctx))
        lc = out[:, 0]  # Qwen3: [p_yes, p_no] after softmax; BERT: the single classifier output
        result["arrays"]["llamacpp_scores_rank.npy"] = lc
        result["agreement"]["scores_rank"] = common.agreement(refs["scores_rank"][idx], lc)
    lc_tokens = llama_cpp_ref.tokenize_cases(gguf_path, [cases[i]["text"] for i in idx], n_ctx)
    result["tokenizer_mismatches"] = [i for i, toks in zip(idx, lc_tokens)
                                      if cases[i].get("truncated") is None and list(toks) != cases[i]["ids"]]
    return result


def degeneracy_stats(refs):
    """Guards against useless random models: pooled vectors must differ between texts."""
    stats = {"hidden_std": float(refs["hidden"].std())}
    for kind, arr in refs["pooled"].items():
        cos = common.cosine_rows(arr[:, None, :], arr[None, :, :])
        off = cos[~np.eye(len(arr), dtype=bool)]
        stats[f"pooled_{kind}_mean_pairwise_cosine"] = float(off.mean())
        if off.mean() > 0.98:
            raise RuntimeError(f"pooled_{kind}: texts are nearly indistinguishable (mean cosine {off.mean():.4f})")
    if "scores_rank" in refs:
        stats["scores_rank_std"] = float(refs["scores_rank"].std())
    return stats


def write_fixture(spec, cases, refs, lc, stats, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    common.save_npy(out_dir / "hidden.npy", refs["hidden"])
    for kind, arr in refs["pooled"].items():
        common.save_npy(out_dir / f"pooled_{kind}.npy", arr)
    if spec.rank:
        common.save_npy(out_dir / "scores_rank.npy", refs["scores_rank"])
    for name, arr in lc["arrays"].items():
        common.save_npy(out_dir / name, arr)
    extra = {
        "hf_class": spec.hf_class, "family": spec.family, "max_len": spec.max_len, "seed": spec.seed,
        "config": spec.config, "poolings": list(spec.poolings), "rank": spec.rank, "notes": spec.notes,
        "hidden": "final hidden states after the final norm (BERT: last layer output), all cases concatenated",
        "stats": stats,
        "llamacpp": {"gguf": "model.gguf", "cases": lc["cases"], "agreement": lc["agreement"],
                     "tokenizer_mismatches": lc["tokenizer_mismatches"],
                     "how": "llama-cpp-python embedding mode on the recorded ids, one sequence per decode"},
    }
    source = common.source_line("make_tiny.py", "GGUF by llama.cpp convert_hf_to_gguf.py (llama-cpp-python "
                                "0.3.36 sdist) --outtype f32 via tools/refgen/convert_with_llama_cpp.py")
    common.write_cases(out_dir, spec.name, source, spec.config["hidden_size"], cases, extra)


def make_one(spec, torch):
    import transformers
    work = common.WORK / spec.name
    shutil.rmtree(work, ignore_errors=True)
    hf_dir = work / "hf"
    tiny_models.build_model(spec, hf_dir, torch)
    tok = transformers.AutoTokenizer.from_pretrained(hf_dir)
    model = getattr(transformers, spec.hf_class).from_pretrained(hf_dir, attn_implementation="eager").eval()
    if spec.rank == "qwen3-yes-no":
        spec.yes_id, spec.no_id = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    cases = rerank_cases(spec, tok) if spec.rank == "qwen3-yes-no" else plain_cases(spec, tok)
    check_cases(spec, cases)
    refs = hf_references(model, spec, cases, torch)
    stats = degeneracy_stats(refs)
    gguf_path = work / "model.gguf"
    convert(spec, hf_dir, gguf_path)
    if spec.rank == "qwen3-yes-no":
        check_rerank_template(gguf_path)
    lc = llama_cpp_references(spec, gguf_path, cases, refs)
    out_dir = common.FIXTURES / spec.name
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    shutil.copy(gguf_path, out_dir / "model.gguf")
    common.check_size(out_dir / "model.gguf")
    write_fixture(spec, cases, refs, lc, stats, out_dir)
    common.log(f"{spec.name}: {len(cases)} cases, {refs['hidden'].shape[0]} tokens, stats {stats}, "
               f"llama.cpp agreement {lc['agreement']}, tokenizer mismatches {lc['tokenizer_mismatches']}")


def main(names):
    torch = common.deterministic_torch()
    specs = [s for s in tiny_models.SPECS if not names or s.name in names]
    if names and len(specs) != len(names):
        raise SystemExit(f"unknown model names in {names}; known: {[s.name for s in tiny_models.SPECS]}")
    for spec in specs:
        make_one(spec, torch)


if __name__ == "__main__":
    main(sys.argv[1:])
