# How well llama.cpp agrees with itself on gemma-3-270m Q4_K_M: the same file, token ids and
# settings as make_gemma270m.py (pooled_{mean,last}.npy, llama.cpp's AVX2 build), run through the
# AVX-512 build of the same llama.cpp version (tools/bench/setup_venv.sh). llama.cpp rounds the
# activations of quantized matmuls to 8 bits; which way a value near a rounding boundary goes
# depends on the order of the f32 additions before it, which differs between builds, and over 18
# layers these flips add up to differences as large as the quantization error itself. Run with
# the bench virtualenv's python: `$(tools/bench/setup_venv.sh) tools/refgen/make_gemma270m_llama_builds.py`.
# Writes pooled_{mean,last}_llama_avx512.npy and llama_builds.json next to the other references.
import json

import numpy as np

import common
import llama_cpp_ref
import make_gemma270m


def main():
    out_dir = common.FIXTURES / make_gemma270m.NAME
    cases = json.load(open(out_dir / "cases.json"))["cases"]
    ids = [c["ids"] for c in cases]
    report = {"how": "the AVX-512 build of llama.cpp (tools/bench/setup_venv.sh: AVX-512 F/BW/DQ/VL/VBMI/VNNI/BF16, "
                     "AMX off) on the Q4_K_M file, same ids and settings as pooled_*.npy (AVX2 build): embedding mode, "
                     "f32 KV cache, 1 thread, one sequence per decode",
              "source": common.source_line("make_gemma270m_llama_builds.py", "bench virtualenv")}
    for kind in ("mean", "last"):
        other = np.stack(llama_cpp_ref.run_cases(make_gemma270m.gguf_path(), kind, ids, make_gemma270m.N_CTX))
        common.save_npy(out_dir / f"pooled_{kind}_llama_avx512.npy", other)
        cos = common.cosine_rows(np.load(out_dir / f"pooled_{kind}.npy"), other)
        report[f"llamacpp_avx512_vs_avx2_{kind}"] = {"min_cosine": float(cos.min()), "median_cosine": float(np.median(cos))}
    (out_dir / "llama_builds.json").write_text(json.dumps(report, indent=1) + "\n")
    common.log(f"{make_gemma270m.NAME}: llama.cpp build-to-build agreement {report}")


if __name__ == "__main__":
    main()
