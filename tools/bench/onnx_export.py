#!/usr/bin/env python3
"""Exports an HF BERT-family embedding model to ONNX for the ONNX Runtime peer of
tools/bench/compare.py: model.onnx (fp32, torch.onnx.export of transformers' AutoModel, output
last_hidden_state; pooling and normalization stay outside, as FastEmbed does them) and
model-int8.onnx (onnxruntime.quantization: quant_pre_process, then quantize_dynamic of the
MatMul weights to int8 with one scale per output channel; activations are quantized to uint8 per
tensor at run time, the u8s8 combination ONNX Runtime recommends on x86). Per-channel because
per-tensor weights (optimum's per_channel=False recipe) cost MiniLM's vectors too much: cosine
0.867-0.977 to sentence-transformers f32 on the agreement texts, against 0.991-0.994 per channel.
Checks the fp32 export against PyTorch on a few texts before writing anything and prints the
output folder. Run with the onnx venv:

  $(tools/bench/setup_venv.sh onnx) tools/bench/onnx_export.py HF_FOLDER [OUT_DIR]

OUT_DIR defaults to $EMBED_CACHE/onnx/<folder name>-<versions> (nothing is committed); an
existing complete export is reused.
"""
import hashlib
import os
import shutil
import sys
import tempfile

QUANTIZATION = {"per_channel": True, "op_types_to_quantize": ["MatMul"]}
CHECK_TEXTS = ["A man is playing a guitar.", "The quick brown fox jumps over the lazy dog near the river bank.", "x"]


def out_dir_for(hf_folder):
    import onnx
    import onnxruntime
    import torch
    import transformers
    versions = f"torch {torch.__version__} transformers {transformers.__version__} onnx {onnx.__version__} " \
               f"ort {onnxruntime.__version__} {sorted(QUANTIZATION.items())}"
    tag = hashlib.sha256(versions.encode()).hexdigest()[:10]
    cache = os.environ.get("EMBED_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "embed"))
    return os.path.join(cache, "onnx", f"{os.path.basename(os.path.normpath(hf_folder))}-{tag}")


def export_fp32(hf_folder, path):
    import torch
    import transformers
    model = transformers.AutoModel.from_pretrained(hf_folder, torch_dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_folder)
    sample = tokenizer(CHECK_TEXTS[:2], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
    torch.onnx.export(model, (), path, kwargs={n: sample[n] for n in names}, input_names=names,
                      output_names=["last_hidden_state"], dynamo=True, external_data=False,
                      dynamic_shapes={n: {0: batch, 1: seq} for n in names}, opset_version=18)
    return model, tokenizer


def check_against_torch(model, tokenizer, path):
    """Max abs difference of last_hidden_state on padded and unpadded batches (must be f32 noise)."""
    import numpy as np
    import onnxruntime as ort
    import torch
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst = 0.0
    for texts in (CHECK_TEXTS, CHECK_TEXTS[1:2]):
        enc = tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            want = model(**enc).last_hidden_state.numpy()
        got = session.run(None, {k: v.numpy() for k, v in enc.items()})[0]
        mask = enc["attention_mask"].numpy()[:, :, None] > 0
        worst = max(worst, float(np.max(np.abs(np.where(mask, got - want, 0.0)))))
    if worst > 1e-3:
        raise SystemExit(f"onnx_export: the ONNX model differs from PyTorch by {worst:g} (max abs, last_hidden_state)")
    return worst


def quantize_int8(fp32_path, int8_path, tmp):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = os.path.join(tmp, "model-pre.onnx")
    here = os.getcwd()
    os.chdir(tmp)  # both leave scratch files in the working directory
    try:
        quant_pre_process(fp32_path, pre, skip_symbolic_shape=True)  # its symbolic pass stops on the dynamo export
        quantize_dynamic(pre, int8_path, weight_type=QuantType.QInt8, **QUANTIZATION)
    finally:
        os.chdir(here)


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    hf_folder = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else out_dir_for(hf_folder)
    fp32, int8 = os.path.join(out, "model.onnx"), os.path.join(out, "model-int8.onnx")
    if not (os.path.isfile(fp32) and os.path.isfile(int8)):
        with tempfile.TemporaryDirectory() as tmp:
            model, tokenizer = export_fp32(hf_folder, os.path.join(tmp, "model.onnx"))
            worst = check_against_torch(model, tokenizer, os.path.join(tmp, "model.onnx"))
            print(f"onnx_export: fp32 export matches PyTorch to {worst:.2e} (max abs)", file=sys.stderr)
            quantize_int8(os.path.join(tmp, "model.onnx"), os.path.join(tmp, "model-int8.onnx"), tmp)
            os.makedirs(out, exist_ok=True)
            for name in ("model.onnx", "model-int8.onnx"):
                shutil.move(os.path.join(tmp, name), os.path.join(out, name))
    print(out)


if __name__ == "__main__":
    main()
