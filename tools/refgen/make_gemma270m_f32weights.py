# A second reference for gemma-3-270m: llama.cpp run on the same weights decoded to f32 by
# gguf-py (an implementation independent of ours). llama.cpp's quantized matmuls quantize the
# activations to 8 bits (Q8_0 / Q8_K blocks) and its GELU goes through an f16 table, so its
# Q4_K_M vectors differ from an exact evaluation of the file's weights; with f32 weights the
# activations stay f32, which makes this the reference for exactness. Writes
# pooled_{mean,last}_f32weights.npy and f32weights.json (llama.cpp Q4_K_M vs f32-weight cosines)
# into tests/fixtures/models/gemma3-270m-q4km/. Needs make_gemma270m.py's cases.json.
import json

import gguf
import numpy as np
from gguf import GGUFReader, GGUFWriter

import common
import llama_cpp_ref
import make_gemma270m


def write_f32_copy(src, dst):
    reader = GGUFReader(src)
    writer = GGUFWriter(str(dst), reader.fields["general.architecture"].contents())
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), kind)
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        writer.add_tensor(t.name, values, raw_shape=[int(x) for x in reversed(t.shape)],
                          raw_dtype=gguf.GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    out_dir = common.FIXTURES / make_gemma270m.NAME
    cases = json.load(open(out_dir / "cases.json"))["cases"]
    ids = [c["ids"] for c in cases]
    f32_path = common.WORK / "gemma-3-270m-dequantized-f32.gguf"
    f32_path.parent.mkdir(parents=True, exist_ok=True)
    write_f32_copy(make_gemma270m.gguf_path(), f32_path)
    report = {"how": "gguf-py dequantize of every tensor to f32, same metadata; llama.cpp embedding mode, "
                     "f32 KV cache, 1 thread, one sequence per decode",
              "source": common.source_line("make_gemma270m_f32weights.py")}
    for kind in ("mean", "last"):
        f32 = np.stack(llama_cpp_ref.run_cases(f32_path, kind, ids, make_gemma270m.N_CTX))
        common.save_npy(out_dir / f"pooled_{kind}_f32weights.npy", f32)
        quant = np.load(out_dir / f"pooled_{kind}.npy")
        cos = common.cosine_rows(quant, f32)
        report[f"llamacpp_q4km_vs_f32weights_{kind}"] = {"min_cosine": float(cos.min()), "median_cosine": float(np.median(cos))}
    (out_dir / "f32weights.json").write_text(json.dumps(report, indent=1) + "\n")
    f32_path.unlink()
    common.log(f"{make_gemma270m.NAME}: f32-weight references written; {report}")


if __name__ == "__main__":
    main()
