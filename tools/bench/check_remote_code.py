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

# family: (modeling file under remote_code/, its config class, its model class)
MODELING = {
    "nomic-bert": ("nomic_bert.py", "NomicBertConfig", "NomicBertModel"),
    "jina-bert-v2": ("jina_bert_v2.py", "JinaBertConfig", "JinaBertModel"),
    "gte-new": ("gte_new.py", "NewConfig", "NewModel"),
}
# fixture case: its family
REMOTE_CODE = {"nomic-bert-tiny": "nomic-bert", "jina-bert-v2-tiny": "jina-bert-v2", "gte-new-tiny": "gte-new",
               "gte-new-rms-tiny": "gte-new"}


def add_remote_code(folder, family):
    """Puts the family's modeling file into the HF folder beside config.json and points config.json's
    auto_map (AutoConfig, AutoModel) at it, as the Hub repositories do (tools/bench/families.py's
    build step uses it too)."""
    module, config_class, model_class = MODELING[family]
    folder = pathlib.Path(folder)
    shutil.copy(HERE / "remote_code" / module, folder / module)
    cfg = json.loads((folder / "config.json").read_text())
    stem = module[:-3]
    cfg["auto_map"] = {"AutoConfig": f"{stem}.{config_class}", "AutoModel": f"{stem}.{model_class}"}
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return module


def with_remote_code(folder, out, case):
    """A copy of the committed fixture folder at `out`, with the case's modeling file added."""
    shutil.copytree(folder, out)
    return add_remote_code(out, REMOTE_CODE[case])


def check(case, tmp):
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    folder = tmp / case
    module = with_remote_code(FIXTURES / case, folder, case)
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
    print(f"{case}: {n} vectors through sentence-transformers + remote_code/{module}, "
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
