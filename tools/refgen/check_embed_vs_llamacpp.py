# Checks that GGUFs written by `embed convert` load in llama.cpp and that llama.cpp's vectors agree
# with embed's (cosine per text), on the MiniLM fixture texts. Not run by CI (needs the refgen venv):
#   $(tools/refgen/setup_venv.sh) tools/refgen/check_embed_vs_llamacpp.py
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
import llama_cpp_ref  # noqa: E402

EMBED = common.REPO_ROOT / "build" / "tools" / "embed"


def main():
    # The CLI reads one text per line: texts with line breaks are left out.
    cases = [c for c in json.load(open(common.FIXTURES / "minilm-l6-v2" / "cases.json"))["cases"]
             if "\n" not in c["text"] and "\r" not in c["text"] and c["text"]]
    texts = [c["text"] for c in cases]
    for kind in ("f32", "f16", "q8_0"):
        gguf = subprocess.run([str(common.REPO_ROOT / "tools/models.sh"), "minilm-gguf", kind], check=True,
                              capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = Path(tmp) / "in.txt", Path(tmp) / "out.npy"
            inp.write_text("\n".join(texts) + "\n")
            subprocess.run([str(EMBED), gguf, str(inp), "--normalize", "-1", "--max-tokens", "256", "--truncate",
                            "-t", "2", "-f", "npy", "-o", str(out)], check=True)
            ours = np.load(out)
        ids = [c["ids"] for c in cases]
        theirs = np.stack(llama_cpp_ref.run_cases(gguf, "mean", ids, 512))
        cos = common.cosine_rows(ours, theirs)
        print(f"MiniLM {kind}: llama.cpp loads embed convert's GGUF; cosine embed vs llama.cpp over {len(ids)} texts: "
              f"min {cos.min():.6f}, median {np.median(cos):.6f}")


if __name__ == "__main__":
    main()
