# llama.cpp's vectors for all-MiniLM-L6-v2 Q8_0 (the file `embed convert --type q8_0` writes,
# tools/models.sh minilm-gguf q8_0), the reference of compute type int8 (activations quantized to
# Q8_0 blocks and multiplied in integers, as llama.cpp does): the fixture's token ids (HF's,
# cut to 256 as sentence-transformers cuts them), mean pooling, llama.cpp's AVX2 build (refgen
# virtualenv), f32 KV cache, 1 thread, one sequence per decode. Writes llama_q8_0_mean.npy and
# llama_q8_0.json into tests/fixtures/models/minilm-l6-v2/.
#   $(tools/refgen/setup_venv.sh) tools/refgen/make_minilm_llama.py
import hashlib
import json
import subprocess

import numpy as np

import common
import llama_cpp_ref

NAME = "minilm-l6-v2"


def gguf_path():
    return subprocess.run([str(common.REPO_ROOT / "tools/models.sh"), "minilm-gguf", "q8_0"], check=True,
                          capture_output=True, text=True).stdout.strip()


def main():
    out_dir = common.FIXTURES / NAME
    cases = json.load(open(out_dir / "cases.json"))["cases"]
    ids = [c["ids"] for c in cases]
    path = gguf_path()
    pooled = np.stack(llama_cpp_ref.run_cases(path, "mean", ids, 512))
    common.save_npy(out_dir / "llama_q8_0_mean.npy", pooled)
    st = np.load(out_dir / "embeddings_st.npy")
    cos = common.cosine_rows(st, pooled)
    report = {"how": "llama.cpp (llama-cpp-python AVX2 build) on tools/models.sh minilm-gguf q8_0, the ids of cases.json, "
                     "mean pooling, f32 KV cache, 1 thread, one sequence per decode; vectors not normalized",
              "source": common.source_line("make_minilm_llama.py", "refgen virtualenv"),
              "gguf_sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
              "llamacpp_q8_0_vs_sentence_transformers_f32": {"min_cosine": float(cos.min()), "median_cosine": float(np.median(cos))}}
    (out_dir / "llama_q8_0.json").write_text(json.dumps(report, indent=1) + "\n")
    common.log(f"{NAME}: llama.cpp Q8_0 vectors for {len(ids)} cases; vs sentence-transformers {report['llamacpp_q8_0_vs_sentence_transformers_f32']}")


if __name__ == "__main__":
    main()
