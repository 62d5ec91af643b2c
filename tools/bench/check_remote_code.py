#!/usr/bin/env python3
"""Checks tools/bench/remote_code/*.py, the modeling files that give the Hub-remote-code families
(nomic-bert, jina-bert-v2, GTE NewModel) a sentence-transformers peer in tools/bench/families.py.

For each family: the committed tiny fixture folder (tests/convert/fixtures/<case>/) copied to a
temporary folder (the committed one is left as it is), the modeling file put beside config.json and
named by its auto_map, as the Hub repositories do; then
  - transformers' AutoModel loads it with trust_remote_code=True with no missing and no unexpected
    weight (every tensor of model.safetensors is used, none is left at its initial value);
  - sentence-transformers loads it with trust_remote_code=True and encodes the reference texts
    (tests/convert/fixtures/vectors/<case>.json: without and with each prompt), in batches of 8
    so that padding and the attention mask are exercised, in float32;
  - its token ids equal the recorded HF ids, and every vector's cosine to the float64 NumPy
    reference (tools/refgen/<family>_ref.py, which wrote the committed vectors) is >= 0.99999.
Exit status 1 on any failure.

  ~/.cache/embed/venv-refgen/bin/python tools/bench/check_remote_code.py [CASE ...]
"""
import json
import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
MIN_COSINE = 0.99999

# fixture case: (modeling file under remote_code/, its config class, its model class)
REMOTE_CODE = {
    "nomic-bert-tiny": ("nomic_bert.py", "NomicBertConfig", "NomicBertModel"),
    "jina-bert-v2-tiny": ("jina_bert_v2.py", "JinaBertConfig", "JinaBertModel"),
    "gte-new-tiny": ("gte_new.py", "NewConfig", "NewModel"),
    "gte-new-rms-tiny": ("gte_new.py", "NewConfig", "NewModel"),
}


def with_remote_code(folder, out, case):
    """Copies the HF / sentence-transformers folder to `out`, adds the case's modeling file and
    points config.json's auto_map at it (AutoConfig, AutoModel)."""
    module, config_class, model_class = REMOTE_CODE[case]
    shutil.copytree(folder, out)
    shutil.copy(HERE / "remote_code" / module, out / module)
    cfg = json.loads((out / "config.json").read_text())
    stem = module[:-3]
    cfg["auto_map"] = {"AutoConfig": f"{stem}.{config_class}", "AutoModel": f"{stem}.{model_class}"}
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return out


def check(case, tmp):
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    folder = with_remote_code(FIXTURES / case, tmp / case, case)
    failures = []
    model, info = AutoModel.from_pretrained(str(folder), trust_remote_code=True, output_loading_info=True)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        if info.get(kind):
            failures.append(f"{kind}: {sorted(info[kind])[:8]}")
    ref = json.loads((FIXTURES / "vectors" / f"{case}.json").read_text())
    st = SentenceTransformer(str(folder), device="cpu", trust_remote_code=True)
    st.to(torch.float32)
    worst = 1.0
    for v in ref["variants"]:
        prompt = v["prompt"] or None
        texts = [prompt + t if prompt else t for t in ref["texts"]]
        enc = st.preprocess(texts)
        got_ids = [row[m.bool()].tolist() for row, m in zip(enc["input_ids"], enc["attention_mask"])]
        if got_ids != v["ids"]:
            failures.append(f"{v['label']}: token ids differ from the recorded HF ids")
        got = st.encode(ref["texts"], prompt=prompt, batch_size=8, convert_to_numpy=True).astype(np.float64)
        want = np.asarray(v["vectors"], dtype=np.float64)
        cos = (got * want).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
        worst = min(worst, float(cos.min()))
        if cos.min() < MIN_COSINE:
            failures.append(f"{v['label']}: min cosine {cos.min():.9f} < {MIN_COSINE} (text {int(cos.argmin())})")
    n = sum(len(v["ids"]) for v in ref["variants"])
    print(f"{case}: {n} vectors through sentence-transformers + remote_code/{REMOTE_CODE[case][0]}, "
          f"min cosine {worst:.9f} to {ref['reference']} ({'ok' if not failures else 'FAILED'})")
    for f in failures:
        print(f"  {f}")
    return not failures


def main():
    cases = sys.argv[1:] or list(REMOTE_CODE)
    for c in cases:
        if c not in REMOTE_CODE:
            raise SystemExit(f"unknown case {c}: one of {', '.join(REMOTE_CODE)}")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-remote-code-"))
    try:
        ok = [check(c, tmp) for c in cases]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
