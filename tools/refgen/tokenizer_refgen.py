#!/usr/bin/env python3
"""Reference token ids for the tokenizer parity tests (tests/tokenizer/), from the pinned
HuggingFace `tokenizers` (MiniLM WordPiece, Qwen3 byte-level BPE, the Unigram fixture) and
llama.cpp through `llama-cpp-python` (Gemma-3 SentencePiece, from its GGUF).

Writes tests/fixtures/tokenizer/:
  corpus.inp               the shared corpus (tokenizer_corpus.py), cases split by __ggml_vocab_test__
  <vocab>.out              ids with the model's special tokens, special-token text NOT parsed
  templates.inp, <vocab>.templates.out   ids with special-token text parsed (templates)
  pairs.inp, <vocab>.pairs.out           "ids | type ids" of encode(a, b) for cross-encoders
  minilm.offsets.out       byte offsets "b:e" of each token (HF char offsets converted to bytes)
  qwen-llama3.out, qwen-gpt2.out   the Qwen vocabulary under the llama3 (ignore_merges) and gpt-2
                           pre-tokenizers (HF, tokenizer.json edited accordingly)
  qwen-default.out         the Qwen vocabulary with tokenizer.ggml.pre = "default" (llama.cpp; the
                           GGUF is written by build/tools/embed-vocab-gguf)
Usage (HF_HUB_OFFLINE=1): $(tools/refgen/setup_venv.sh) tools/refgen/tokenizer_refgen.py
Needs tools/models.sh minilm, qwen-vocab and gemma3-270m (paths from the EMBED_* variables or the cache).
"""
import os
import subprocess
import sys

import tokenizers
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_corpus as tc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")

TEMPLATES = [
    "<|im_start|>system\nJudge whether the Document meets the requirements.<|im_end|>\n<|im_start|>user\n"
    "<Query>: what is a panda?\n<Document>: The giant panda is a bear.<|im_end|>\n<|im_start|>assistant\n"
    "<think>\n\n</think>\n\n",
    "Instruct: Given a web search query, retrieve relevant passages\nQuery:what is a panda?<|endoftext|>",
    "[CLS] the query [SEP] the document [SEP]", "[MASK] is the capital of France.", "a [UNK] b [PAD]",
    "<s> hello </s></s> world </s>", "<mask> is here", "hello <mask>", "x<unk>y", "<pad><pad>",
    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<bos>text", "text<eos>", "<unused5> x",
    "no specials at all", "", "<|endoftext|>", "<think>reason</think>answer", "[SEP][SEP]", "<b>bold</b> <table>",
]
PAIRS = [("what is a panda?", "The giant panda is a bear native to China."), ("", "empty query"), ("q", ""),
         ("Größe", "Straße"), ("日本", "中文"), ("How old are you?", "I'm 6 years old."),
         ("a " * 20, "b " * 30), ("emoji 😀", "flags 🇺🇸🇯🇵")]


def cache(var, name):
    if os.environ.get(var):
        return os.environ[var]
    return subprocess.check_output([os.path.join(ROOT, "tools", "models.sh"), name], text=True).strip()


def hf_tokenizer(path):
    t = Tokenizer.from_file(path)
    t.no_padding()
    t.no_truncation()
    return t


def write_lines(name, lines):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")


def ids_line(ids):
    return " ".join(str(i) for i in ids)


def byte_offsets(text, offsets):
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8")))
    return " ".join(f"{starts[b]}:{starts[e]}" for b, e in offsets)


def hf_vocab(name, path, corpus, templates, pairs, offsets=False):
    t = hf_tokenizer(path)
    t.encode_special_tokens = True  # parse_special=false: special-token text is plain text
    encs = [t.encode(tc.as_text(raw)) for raw in corpus]
    write_lines(f"{name}.out", [ids_line(e.ids) for e in encs])
    if offsets:
        write_lines(f"{name}.offsets.out",
                    [byte_offsets(tc.as_text(raw), e.offsets) for raw, e in zip(corpus, encs)])
    t.encode_special_tokens = False
    write_lines(f"{name}.templates.out", [ids_line(t.encode(s).ids) for s in templates])
    t.encode_special_tokens = True
    lines = []
    for a, b in pairs:
        e = t.encode(a, b)
        lines.append(ids_line(e.ids) + " | " + ids_line(e.type_ids))
    write_lines(f"{name}.pairs.out", lines)


def pre_variants(qwen_dir, corpus):
    """The Qwen vocabulary under the other byte-level pre-tokenizers."""
    import copy
    import json
    import tempfile
    base = json.load(open(os.path.join(qwen_dir, "tokenizer.json"), encoding="utf-8"))
    llama3 = copy.deepcopy(base)
    llama3["normalizer"] = None
    llama3["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = base["pre_tokenizer"]["pretokenizers"][0][
        "pattern"]["Regex"].replace(r"\p{N}|", r"\p{N}{1,3}|")
    llama3["model"]["ignore_merges"] = True
    gpt2 = copy.deepcopy(base)
    gpt2["normalizer"] = None
    gpt2["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    with tempfile.TemporaryDirectory() as tmp:
        for name, j in (("llama3", llama3), ("gpt2", gpt2)):
            path = os.path.join(tmp, name + ".json")
            json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)
            t = hf_tokenizer(path)
            t.encode_special_tokens = True
            write_lines(f"qwen-{name}.out", [ids_line(t.encode(tc.as_text(r)).ids) for r in corpus])
        from llama_cpp import Llama
        gguf = os.path.join(tmp, "qwen-default.gguf")
        tool = os.path.join(os.environ.get("EMBED_BUILD", os.path.join(ROOT, "build")), "tools", "embed-vocab-gguf")
        subprocess.check_call([tool, qwen_dir, gguf, "--arch", "qwen2", "--pre", "default"])
        m = Llama(gguf, vocab_only=True, verbose=False)
        write_lines("qwen-default.out", [ids_line(m.tokenize(tc.as_text(r).encode("utf-8"), add_bos=False,
                                                             special=False)) for r in corpus])


def gemma(path, corpus, templates):
    from llama_cpp import Llama
    import llama_cpp
    m = Llama(path, vocab_only=True, verbose=False)
    write_lines("gemma.out", [ids_line(m.tokenize(tc.as_text(r).encode("utf-8"), add_bos=True, special=False))
                              for r in corpus])
    write_lines("gemma.templates.out", [ids_line(m.tokenize(s.encode("utf-8"), add_bos=True, special=True))
                                        for s in templates])
    return llama_cpp.__version__


def main():
    os.makedirs(OUT, exist_ok=True)
    corpus = tc.corpus(os.environ.get("EMBED_STSB_DIR", os.path.join(ROOT, "..", "shared", "data", "stsb")))
    tc.save_inp(os.path.join(OUT, "corpus.inp"), corpus)
    tc.save_inp(os.path.join(OUT, "templates.inp"), [s.encode("utf-8") for s in TEMPLATES])
    tc.save_inp(os.path.join(OUT, "pairs.inp"), [(a + "\t" + b).encode("utf-8") for a, b in PAIRS])
    minilm = os.path.join(cache("EMBED_MINILM_DIR", "minilm"), "tokenizer.json")
    qwen = os.path.join(cache("EMBED_QWEN_VOCAB_DIR", "qwen-vocab"), "tokenizer.json")
    hf_vocab("minilm", minilm, corpus, TEMPLATES, PAIRS, offsets=True)
    hf_vocab("qwen", qwen, corpus, TEMPLATES, PAIRS)
    hf_vocab("unigram", os.path.join(OUT, "unigram", "tokenizer.json"), corpus, TEMPLATES, PAIRS)
    pre_variants(os.path.dirname(qwen), corpus)
    llama_version = gemma(cache("EMBED_GEMMA_GGUF", "gemma3-270m"), corpus, TEMPLATES)
    write_lines("VERSIONS", [f"tokenizers {tokenizers.__version__}", f"llama-cpp-python {llama_version}",
                             f"cases {len(corpus)}"])
    print(f"{len(corpus)} cases written to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
