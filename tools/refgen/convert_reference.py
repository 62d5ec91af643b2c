#!/usr/bin/env python3
# Runs llama.cpp's own converter (convert_hf_to_gguf.py from the llama-cpp-python==0.3.36 sdist)
# on the converter test folders and MiniLM, and writes what `embed convert` must produce as
# tests/convert/fixtures/expected/<case>-<type>.json; with --embed BIN it also diffs BIN's output.
"""Reference expectations for `embed convert`.

Usage:  $(tools/refgen/setup_venv.sh) tools/refgen/convert_reference.py [--embed build/tools/embed] [--cases ...]

For each case and type (f32, f16, bf16, q8_0) llama.cpp's converter writes a GGUF; the JSON keeps
its model metadata (general.architecture/type/file_type/quantization_version/size_label and every
`<arch>.*` key), its tokenizer scalars, and per tensor: ggml type, ne, byte count, the first 68
bytes and a 64-bit checksum of all bytes (see wsum64). Deliberate differences of `embed convert`
are applied to the expectation and listed in the JSON under "deviations":
  * --type q8_0 keeps token_embd in f16 (llama.cpp quantizes it);
  * a BERT classifier also gets `cls` from pooler.dense (llama.cpp drops the pooler, so its RANK
    head skips the tanh dense layer HF applies) and pooling_type RANK;
  * sentence-transformers Dense modules are written for every architecture (llama.cpp writes them
    only for EmbeddingGemma, and only with --sentence-transformers-dense-modules, which this
    script passes), with dense_<n>.bias and `<arch>.dense_<n>_activation` when the module has them;
  * general.name and the model-card keys (general.license, datasets, tags, ...) are not compared.
Those replacement tensors are encoded here with gguf-py (gguf.quants), independently of embed.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
EXPECTED = FIXTURES / "expected"
CACHE = pathlib.Path(os.environ.get("EMBED_CACHE", pathlib.Path.home() / ".cache" / "embed"))
SDIST_VERSION = "0.3.36"
TYPES = ("f32", "f16", "bf16", "q8_0")
CASES = ("minilm", "bert-cls-tiny", "bert-dense-tiny", "qwen2-tiny", "qwen3-embedding-tiny", "qwen3-reranker-tiny",
         "llama-tiny", "embeddinggemma-tiny", "gemma3-tiny", "xlmr-tiny", "xlmr-cls-tiny", "bge-m3-tiny", "qwen2-bidir-tiny",
         "jina-bert-v2-tiny", "nomic-bert-tiny", "modern-bert-tiny", "modern-bert-cls-tiny", "t5-gtr-tiny", "t5-gated-tiny")
# Not here: jina-bert-v2-cls-tiny. llama.cpp's converter does not register
# JinaBertForSequenceClassification (only JinaBertModel / JinaBertForMaskedLM).
# Not here: splade-tiny. llama.cpp's converter refuses a SparseEncoder folder ("Only MEAN, CLS, and
# LAST pooling types supported", for its SpladePooling module).
MODEL_GENERAL_KEYS = ("general.architecture", "general.type", "general.file_type", "general.quantization_version",
                      "general.size_label")

# Runs convert_hf_to_gguf.main() with the vendored gguf-py first on the path. The tiny folders'
# cut vocabularies are unknown to llama.cpp's pre-tokenizer hash table, so an unrecognised hash
# falls back to the family's name (tokenizer keys are the tokenizer library's concern).
DRIVER = r"""
import os, sys
vendor = sys.argv[1]
sys.path.insert(0, os.path.join(vendor, "gguf-py"))
sys.path.insert(0, vendor)
import conversion.base as base
orig = base.TextModel.get_vocab_base_pre
def get_vocab_base_pre(self, tokenizer):
    try:
        return orig(self, tokenizer)
    except NotImplementedError:
        return os.environ["EMBED_REF_PRE_FALLBACK"]
base.TextModel.get_vocab_base_pre = get_vocab_base_pre
# llama.cpp pins transformers==4.57.6 (requirements-convert_hf_to_gguf.txt), which has no
# nomic_bert: AutoConfig fails and the converter reads config.json (n_embd, n_layer, ...). This
# venv's transformers 5 registers a NomicBertConfig that keeps those fields but reports its own
# defaults as hidden_size / num_hidden_layers (768 / 12), which the converter would write. The
# model types of PRE_457_UNKNOWN fail here as they do under the pinned version.
PRE_457_UNKNOWN = {"nomic_bert"}
class AutoConfigAsPinned:
    @staticmethod
    def from_pretrained(path, *args, **kwargs):
        import json, pathlib
        model_type = json.loads((pathlib.Path(path) / "config.json").read_text()).get("model_type")
        if model_type in PRE_457_UNKNOWN:
            raise ValueError(f"model type {model_type!r} is not known to transformers 4.57.6")
        return AutoConfigAsPinned.wrapped.from_pretrained(path, *args, **kwargs)
AutoConfigAsPinned.wrapped, base.AutoConfig = base.AutoConfig, AutoConfigAsPinned
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[2:]
import convert_hf_to_gguf
convert_hf_to_gguf.main()
"""


def vendor_dir():
    fetched = CACHE / f"llama-cpp-src-{SDIST_VERSION}"  # fetch_llama_cpp_src.sh's copy of the same sdist
    if (fetched / "convert_hf_to_gguf.py").is_file() and (fetched / "conversion").is_dir():
        return fetched
    base = CACHE / "sdist" / f"llama_cpp_python-{SDIST_VERSION}" / "vendor" / "llama.cpp"
    if not (base / "convert_hf_to_gguf.py").is_file():
        (CACHE / "sdist").mkdir(parents=True, exist_ok=True)
        tgz = CACHE / "sdist" / f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
        if not tgz.is_file():
            subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                                   "-d", str(CACHE / "sdist"), f"llama-cpp-python=={SDIST_VERSION}"])
        prefix = f"llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp/"
        with tarfile.open(tgz) as t:
            members = [m for m in t.getmembers() if m.name.startswith(prefix + "convert_hf_to_gguf.py")
                       or m.name.startswith(prefix + "gguf-py/") or m.name.startswith(prefix + "conversion/")]
            t.extractall(CACHE / "sdist", members=members)
    return base


def case_dir(case):
    if case == "minilm":
        return pathlib.Path(subprocess.check_output([str(ROOT / "tools" / "models.sh"), "minilm"], text=True).strip())
    return FIXTURES / case


def wsum64(data: bytes) -> int:
    """Checksum shared with tests/convert: sum over 8-byte little-endian words w_i (zero-padded) of
    (w_i xor i*0x9E3779B97F4A7C15) * (2i+1) mod 2^64, plus the byte length. The odd multiplier
    makes every single-word change visible."""
    pad = (-len(data)) % 8
    w = np.frombuffer(data + b"\0" * pad, dtype="<u8")
    i = np.arange(len(w), dtype=np.uint64)
    with np.errstate(over="ignore"):
        terms = (w ^ (i * np.uint64(0x9E3779B97F4A7C15))) * (np.uint64(2) * i + np.uint64(1))
        return int((terms.sum(dtype=np.uint64) + np.uint64(len(data))) & np.uint64(0xFFFFFFFFFFFFFFFF))


def tensor_entry(qtype_name, ne, raw: bytes):
    return {"type": qtype_name, "ne": [int(x) for x in ne], "nbytes": len(raw), "head": raw[:68].hex(),
            "wsum64": f"{wsum64(raw):016x}"}


def field_value(field):
    import gguf
    v = field.contents()
    if isinstance(v, float):
        return float(np.float32(v))
    return v


def read_gguf(path):
    import gguf
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    meta, tok, tok_arrays = {}, {}, {}
    for key, field in r.fields.items():
        if key.startswith("GGUF."):
            continue
        if key.startswith("tokenizer."):
            if field.types and field.types[0] == gguf.GGUFValueType.ARRAY and not key.startswith("tokenizer.chat_templates"):
                tok_arrays[key] = len(field.data)
            else:
                tok[key] = field_value(field)
        elif key in MODEL_GENERAL_KEYS or key.startswith(arch + "."):
            meta[key] = field_value(field)
    tensors = {}
    for t in r.tensors:
        tensors[t.name] = tensor_entry(t.tensor_type.name, [int(x) for x in t.shape], bytes(t.data.tobytes()))
    return arch, meta, tok, tok_arrays, tensors


def encode_like_gguf_py(values: np.ndarray, qname: str):
    """values in torch order (out, in): (ggml type name, raw bytes) as gguf-py writes them."""
    import gguf
    q = getattr(gguf.GGMLQuantizationType, qname)
    data = gguf.quants.quantize(values.astype(np.float32), q)
    return np.ascontiguousarray(data).tobytes()


def weight_type(requested, ne0):
    if requested == "q8_0":
        return "Q8_0" if ne0 % 32 == 0 else "F16"
    return requested.upper()


def apply_deviations(case, folder, gtype, meta, tensors, arch):
    from safetensors.torch import load_file as torch_load
    import gguf
    load_file = lambda path: {k: v.float().numpy() for k, v in torch_load(path).items()}
    notes = []
    weights = None
    if gtype == "q8_0" and "token_embd.weight" in tensors:
        weights = weights or load_file(str(folder / "model.safetensors"))
        key = next(k for k in weights if k.endswith(("embed_tokens.weight", "word_embeddings.weight", "tok_embeddings.weight"))
                   or k == "shared.weight")
        emb = weights[key].astype(np.float32)
        tensors["token_embd.weight"] = tensor_entry("F16", emb.shape[::-1], encode_like_gguf_py(emb, "F16"))
        notes.append("token_embd.weight stays F16 under --type q8_0")
    cfg = json.loads((folder / "config.json").read_text())
    if arch == "bert" and cfg["architectures"][0] == "BertForSequenceClassification":
        weights = weights or load_file(str(folder / "model.safetensors"))
        w = weights["bert.pooler.dense.weight"].astype(np.float32)
        b = weights["bert.pooler.dense.bias"].astype(np.float32)
        qname = weight_type(gtype, w.shape[1])
        tensors["cls.weight"] = tensor_entry(qname, w.shape[::-1], encode_like_gguf_py(w, qname))
        tensors["cls.bias"] = tensor_entry("F32", b.shape, encode_like_gguf_py(b, "F32"))
        meta["bert.pooling_type"] = 4
        notes.append("cls.weight/cls.bias from bert.pooler.dense and pooling_type RANK for the classifier head")
    if arch == "bert" and cfg["architectures"][0] == "XLMRobertaForSequenceClassification" and "bert.pooling_type" not in meta:
        meta["bert.pooling_type"] = 4
        notes.append("pooling_type RANK for the classifier head (llama.cpp writes cls / cls.output but no pooling type)")
    if not any(name.startswith("dense_") for name in tensors):
        notes += add_dense_modules(folder, gtype, meta, tensors, arch)
    notes += add_readout_heads(folder, gtype, meta, tensors, arch, cfg)
    if arch == "qwen2" and cfg.get("is_causal") is False and f"{arch}.attention.causal" not in meta:
        meta[f"{arch}.attention.causal"] = False
        notes.append("qwen2.attention.causal = false from config.json's is_causal (llama.cpp's converter does not read it: "
                     "its file would run causal)")
    notes += family_deviations(folder, gtype, meta, tensors, arch, cfg)
    if notes:
        n_params = sum(int(np.prod(t["ne"])) for t in tensors.values())
        meta["general.size_label"] = gguf.size_label(n_params, 0, 0, 0)
    return notes


def family_deviations(folder, gtype, meta, tensors, arch, cfg):
    """The issue #25 families (docs/convert.md, "Deliberate differences"): nomic-bert's
    context_length is n_positions (llama.cpp writes the trained 2048; docs/long-inputs.md);
    ModernBERT's norm_eps under attention.layer_norm_epsilon, the key llama.cpp's modern-bert loader
    reads (its converter writes layer_norm_rms_epsilon); t5encoder: the pooling type from 1_Pooling
    (llama.cpp's T5 converter writes none), no layer_norm_epsilon beside the RMS key (T5's norms are
    RMSNorm; llama.cpp's t5encoder loader reads only that), and block 0's attn_rel_b kept in F32 in
    every type (a table of heads x buckets added straight to the attention logits)."""
    from safetensors.torch import load_file as torch_load
    notes = []
    if arch == "nomic-bert" and meta.get("nomic-bert.context_length") != cfg["n_positions"]:
        meta["nomic-bert.context_length"] = cfg["n_positions"]
        notes.append(f"nomic-bert.context_length = n_positions ({cfg['n_positions']}), not the trained length")
    if cfg["architectures"][0] == "ModernBertForSequenceClassification" and "modern-bert.pooling_type" not in meta:
        meta["modern-bert.pooling_type"] = 4
        notes.append("pooling_type RANK for the classifier head (llama.cpp writes classifier.pooling_type but no pooling type)")
    if arch == "modern-bert" and "modern-bert.attention.layer_norm_rms_epsilon" in meta:
        meta["modern-bert.attention.layer_norm_epsilon"] = meta.pop("modern-bert.attention.layer_norm_rms_epsilon")
        notes.append("norm_eps as modern-bert.attention.layer_norm_epsilon (the key llama.cpp's loader reads), "
                     "not layer_norm_rms_epsilon")
    if arch == "t5encoder":
        pooling = None
        for mod in json.loads((folder / "modules.json").read_text()) if (folder / "modules.json").is_file() else []:
            if mod["type"].endswith("Pooling"):
                pc = json.loads((folder / mod["path"] / "config.json").read_text())
                pooling = 1 if pc.get("pooling_mode_mean_tokens") else 2 if pc.get("pooling_mode_cls_token") else None
        meta["t5encoder.pooling_type"] = pooling or 1
        notes.append(f"t5encoder.pooling_type = {pooling or 1} (from 1_Pooling; mean without one)")
        if meta.pop("t5encoder.attention.layer_norm_epsilon", None) is not None:
            notes.append("no t5encoder.attention.layer_norm_epsilon beside layer_norm_rms_epsilon")
        weights = {k: v.float().numpy() for k, v in torch_load(str(folder / "model.safetensors")).items()}
        table = weights["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"].astype(np.float32)
        if tensors["enc.blk.0.attn_rel_b.weight"]["type"] != "F32":
            tensors["enc.blk.0.attn_rel_b.weight"] = tensor_entry("F32", table.shape[::-1], encode_like_gguf_py(table, "F32"))
            notes.append("enc.blk.0.attn_rel_b.weight stays F32")
    return notes


def add_readout_heads(folder, gtype, meta, tensors, arch, cfg):
    """Heads llama.cpp's converter drops and embed keeps (engine/arch/spec.h): BGE-M3's
    sparse_linear.pt / colbert_linear.pt as cls.sparse.* / cls.colbert.* with the bge-m3 formula
    keys, and a BertForMaskedLM's MLM head as mlm.* with sparse_formula splade."""
    import torch
    from safetensors.torch import load_file as torch_load
    notes = []
    for file, head, key in (("sparse_linear.pt", "cls.sparse", "sparse_formula"), ("colbert_linear.pt", "cls.colbert", "colbert_formula")):
        if not (folder / file).is_file():
            continue
        sd = torch.load(folder / file, map_location="cpu", weights_only=True)
        w, b = sd["weight"].float().numpy(), sd["bias"].float().numpy()
        qname = weight_type(gtype, w.shape[1])
        tensors[f"{head}.weight"] = tensor_entry(qname, w.shape[::-1], encode_like_gguf_py(w, qname))
        tensors[f"{head}.bias"] = tensor_entry("F32", b.shape, encode_like_gguf_py(b, "F32"))
        meta[f"{arch}.{key}"] = "bge-m3"
        notes.append(f"{head}.weight/.bias from {file} and {arch}.{key} = bge-m3")
    if cfg["architectures"][0] == "BertForMaskedLM":
        weights = {k: v.float().numpy() for k, v in torch_load(str(folder / "model.safetensors")).items()}
        names = {"mlm.dense.weight": "cls.predictions.transform.dense.weight", "mlm.dense.bias": "cls.predictions.transform.dense.bias",
                 "mlm.norm.weight": "cls.predictions.transform.LayerNorm.weight",
                 "mlm.norm.bias": "cls.predictions.transform.LayerNorm.bias", "mlm.output.weight": "cls.predictions.decoder.weight",
                 "mlm.output.bias": "cls.predictions.bias"}
        for name, hf in names.items():
            if hf not in weights:
                continue
            v = weights[hf].astype(np.float32)
            qname = weight_type(gtype, v.shape[1]) if v.ndim == 2 else "F32"
            tensors[name] = tensor_entry(qname, v.shape[::-1], encode_like_gguf_py(v, qname))
        meta[f"{arch}.sparse_formula"] = "splade"
        notes.append("mlm.* from cls.predictions.* (the MLM head; decoder tied when absent) and bert.sparse_formula = splade")
    return notes


def add_dense_modules(folder, gtype, meta, tensors, arch):
    """Dense modules of modules.json that llama.cpp's converter left out: dense_<n> (+ bias), the
    feature keys llama.cpp uses for EmbeddingGemma and the activation when it is not Identity."""
    from safetensors.torch import load_file as torch_load
    path = folder / "modules.json"
    if not path.is_file():
        return []
    notes, n = [], 2
    for mod in json.loads(path.read_text()):
        if not mod["type"].endswith("Dense"):
            continue
        cfg = json.loads((folder / mod["path"] / "config.json").read_text())
        weights = {k: v.float().numpy() for k, v in torch_load(str(folder / mod["path"] / "model.safetensors")).items()}
        w = weights["linear.weight"].astype(np.float32)
        qname = weight_type(gtype, w.shape[1])
        tensors[f"dense_{n}.weight"] = tensor_entry(qname, w.shape[::-1], encode_like_gguf_py(w, qname))
        if "linear.bias" in weights:
            b = weights["linear.bias"].astype(np.float32)
            tensors[f"dense_{n}.bias"] = tensor_entry("F32", b.shape, encode_like_gguf_py(b, "F32"))
        meta[f"{arch}.dense_{n}_feat_in"] = cfg["in_features"]
        meta[f"{arch}.dense_{n}_feat_out"] = cfg["out_features"]
        activation = cfg.get("activation_function", "torch.nn.modules.activation.Tanh").rsplit(".", 1)[-1].lower()
        if activation != "identity":
            meta[f"{arch}.dense_{n}_activation"] = activation
        notes.append(f"dense_{n} from {mod['path']} ({activation}{', bias' if 'linear.bias' in weights else ''})")
        n += 1
    return notes


def with_t5_spiece_model(folder, tmp):
    """llama.cpp's converter reads a T5 vocabulary from spiece.model / tokenizer.model only (real
    GTR-T5 and sentence-t5 folders ship spiece.model); the tiny T5 folders commit tokenizer.json
    only, so llama.cpp gets a copy of the folder with the SentencePiece model retrained by the same
    deterministic call (convert_make_fixtures.t5_spiece_model), checked piece for piece and score
    for score against tokenizer.json."""
    import sentencepiece as spm
    sys.path.insert(0, str(ROOT / "tools" / "refgen"))
    import convert_make_fixtures
    model = convert_make_fixtures.t5_spiece_model()
    sp = spm.SentencePieceProcessor(model_file=str(model))
    vocab = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
    if len(vocab) != sp.get_piece_size() or any(vocab[i][0] != sp.id_to_piece(i) or
                                                 (i >= 3 and vocab[i][1] != float(np.float32(sp.get_score(i))))
                                                 for i in range(len(vocab))):
        raise RuntimeError(f"{folder.name}: the retrained SentencePiece model is not tokenizer.json's vocabulary")
    copy = pathlib.Path(tmp) / ("spm-" + folder.name)
    if not copy.exists():
        import shutil
        shutil.copytree(folder, copy)
        shutil.copyfile(model, copy / "spiece.model")
    return copy


def with_sentencepiece_model(folder, tmp):
    """llama.cpp's converter reads an XLM-R vocabulary from sentencepiece.bpe.model (as bge-m3 and
    multilingual-e5 ship it); from tokenizer.json alone it expects a bare Precompiled normalizer,
    not the Sequence(Precompiled, Replace) that HF's XLM-R conversion writes. The tiny XLM-R
    folders commit tokenizer.json only, so for llama.cpp a copy of the folder gets the SentencePiece
    model retrained by the same deterministic call (convert_make_fixtures.xlmr_proto), checked
    piece for piece and score for score against tokenizer.json."""
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file() and json.loads(cfg.read_text()).get("tokenizer_class") == "T5Tokenizer" and \
            not (folder / "spiece.model").is_file():
        return with_t5_spiece_model(folder, tmp)
    if not cfg.is_file() or json.loads(cfg.read_text()).get("tokenizer_class") != "XLMRobertaTokenizer":
        return folder
    if (folder / "sentencepiece.bpe.model").is_file():
        return folder
    sys.path.insert(0, str(ROOT / "tools" / "refgen"))
    import convert_make_fixtures
    proto = convert_make_fixtures.xlmr_proto()
    vocab = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
    pieces = [(p.piece, p.score) for p in proto.pieces[3:]]
    if [(v[0], v[1]) for v in vocab[4:-1]] != [(p, float(__import__("numpy").float32(s_))) for p, s_ in pieces] and \
            [v[0] for v in vocab[4:-1]] != [p for p, _ in pieces]:
        raise RuntimeError(f"{folder.name}: the retrained SentencePiece model is not tokenizer.json's vocabulary")
    copy = pathlib.Path(tmp) / ("spm-" + folder.name)
    if not copy.exists():
        import shutil
        shutil.copytree(folder, copy)
        (copy / "sentencepiece.bpe.model").write_bytes(proto.SerializeToString())
    return copy


def pre_fallback(folder, tok):
    """The pre-tokenizer name llama.cpp's hash table gives the real models of the folder's family
    (the tiny vocabularies are not in it): ModernBERT's byte-level BPE is "modern-bert"; the other
    BPE folders are Qwen-style, WordPiece folders "jina-v2-en"."""
    if json.loads((folder / "config.json").read_text()).get("model_type") == "modernbert":
        return "modern-bert"
    return "qwen2" if tok["model"]["type"] == "BPE" else "jina-v2-en"


def run_reference(vendor, folder, gtype, out):
    folder = with_sentencepiece_model(folder, out.parent)
    tok = json.loads((folder / "tokenizer.json").read_text())
    env = dict(os.environ, HF_HUB_OFFLINE="1", EMBED_REF_PRE_FALLBACK=pre_fallback(folder, tok))
    subprocess.run([sys.executable, "-c", DRIVER, str(vendor), str(folder), "--outfile", str(out), "--outtype", gtype,
                    "--sentence-transformers-dense-modules"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def compare(expected, embed_bin, folder, gtype, tmp):
    out = pathlib.Path(tmp) / "embed.gguf"
    subprocess.run([embed_bin, "convert", str(folder), str(out), "--type", gtype], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, meta, tok, tok_arrays, tensors = read_gguf(str(out))
    problems = []
    # Tokenizer keys: every key llama.cpp writes must be there with its value (arrays: length).
    for k, v in expected["tokenizer"].items():
        if tok.get(k) != v:
            problems.append(f"tokenizer key {k}: expected {str(v)[:60]!r}, embed wrote {str(tok.get(k))[:60]!r}")
    for k, n in expected["tokenizer_array_lengths"].items():
        if tok_arrays.get(k) != n:
            problems.append(f"tokenizer array {k}: expected {n} entries, embed wrote {tok_arrays.get(k)}")
    for k in (tok.keys() - expected["tokenizer"].keys()) | (tok_arrays.keys() - expected["tokenizer_array_lengths"].keys()):
        problems.append(f"tokenizer key {k}: embed wrote it, llama.cpp does not")
    for k, v in expected["metadata"].items():
        if meta.get(k) != v:
            problems.append(f"key {k}: expected {v!r}, embed wrote {meta.get(k)!r}")
    for k in meta.keys() - expected["metadata"].keys():
        problems.append(f"key {k}: embed wrote {meta[k]!r}, llama.cpp does not")
    for name, t in expected["tensors"].items():
        got = tensors.get(name)
        if got is None:
            problems.append(f"tensor {name}: missing")
        elif got != t:
            diff = [f for f in ("type", "ne", "nbytes", "wsum64") if got[f] != t[f]]
            problems.append(f"tensor {name}: {', '.join(f'{f} {t[f]} vs {got[f]}' for f in diff)}")
    for name in tensors.keys() - expected["tensors"].keys():
        problems.append(f"tensor {name}: embed wrote it, not expected")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--embed", help="embed binary to diff against the expectations")
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--types", nargs="*", default=list(TYPES))
    args = ap.parse_args()
    vendor = vendor_dir()
    sys.path.insert(0, str(vendor / "gguf-py"))  # the same gguf-py the reference converter runs with
    EXPECTED.mkdir(parents=True, exist_ok=True)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            folder = case_dir(case)
            for gtype in args.types:
                ref = pathlib.Path(tmp) / f"{case}-{gtype}.gguf"
                run_reference(vendor, folder, gtype, ref)
                arch, meta, tok, tok_arrays, tensors = read_gguf(str(ref))
                deviations = apply_deviations(case, folder, gtype, meta, tensors, arch)
                expected = {"case": case, "type": gtype, "source": f"llama-cpp-python=={SDIST_VERSION} convert_hf_to_gguf.py",
                            "deviations": deviations, "metadata": meta, "tokenizer": tok,
                            "tokenizer_array_lengths": tok_arrays, "tensors": dict(sorted(tensors.items()))}
                (EXPECTED / f"{case}-{gtype}.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
                line = f"{case:22s} {gtype:5s} {len(tensors):4d} tensors, {len(meta):2d} model keys"
                if args.embed:
                    problems = compare(expected, args.embed, folder, gtype, tmp)
                    failures += bool(problems)
                    line += "  embed: " + ("identical" if not problems else f"{len(problems)} differences")
                    for p in problems[:20]:
                        line += "\n    " + p
                print(line, flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
