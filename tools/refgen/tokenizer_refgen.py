#!/usr/bin/env python3
"""Reference token ids for the tokenizer parity tests (tests/tokenizer/), from the pinned
HuggingFace `tokenizers` (MiniLM WordPiece, Qwen3 byte-level BPE, the Unigram fixture) and
llama.cpp through `llama-cpp-python` (Gemma-3 SentencePiece, from its GGUF).

Every expectation is in the default mode (HF: encode_special_tokens false; llama.cpp:
parse_special true): special-token text in the input is read as the special token. ".split"
files are HF's split_special_tokens mode (llama.cpp: parse_special false).

Writes tests/fixtures/tokenizer/:
  corpus.inp               the shared corpus (tokenizer_corpus.py), cases split by __ggml_vocab_test__
  <vocab>.out              ids with the model's special tokens
  templates.inp, <vocab>.templates.out   prompt templates
  pairs.inp, <vocab>.pairs.out           "ids | type ids" of encode(a, b) for cross-encoders
  <vocab>.special.inp, .special.out, .special.split.out   every added token of the vocabulary
                           mixed with text (tokenizer_special.py)
  attrs.json, attrs.inp, <vocab>.attrs.out, <vocab>.attrs.split.out   the HF vocabularies with
                           extra added tokens carrying lstrip / rstrip / single_word / normalized
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
import tokenizer_special as ts  # noqa: E402

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


def added_contents(path):
    import json
    return [a["content"] for a in json.load(open(path, encoding="utf-8"))["added_tokens"]]


def check_coverage(name, want_ids, outputs):
    """Every added token must occur in the default-mode ids of the special-token strings."""
    seen = {int(i) for line in outputs for i in line.split()}
    missing = sorted(set(want_ids) - seen)
    if missing:
        raise RuntimeError(f"{name}: added tokens never produced by the special strings: {missing[:20]}")


def hf_special(name, t, tokens):
    cases = ts.special_cases(tokens)
    tc.save_inp(os.path.join(OUT, f"{name}.special.inp"), [c.encode("utf-8") for c in cases])
    t.encode_special_tokens = False
    out = [ids_line(t.encode(c).ids) for c in cases]
    check_coverage(name, [t.token_to_id(x) for x in tokens], out)
    write_lines(f"{name}.special.out", out)
    t.encode_special_tokens = True
    write_lines(f"{name}.special.split.out", [ids_line(t.encode(c).ids) for c in cases])
    t.encode_special_tokens = False
    return len(cases)


def hf_attrs(name, path, cases):
    """The vocabulary plus ts.ATTR_TOKENS; returns the added entries as HF numbered them."""
    from tokenizers import AddedToken
    t = hf_tokenizer(path)
    before = set(t.get_added_tokens_decoder())
    for spec in ts.ATTR_TOKENS:
        tok = AddedToken(spec["content"], single_word=spec.get("single_word", False), lstrip=spec.get("lstrip", False),
                         rstrip=spec.get("rstrip", False), normalized=spec.get("normalized", True),
                         special=spec["special"])
        (t.add_special_tokens if spec["special"] else t.add_tokens)([tok])
    entries = []
    for i, a in sorted(t.get_added_tokens_decoder().items()):
        if i in before:
            continue
        entries.append({"id": i, "content": a.content, "single_word": a.single_word, "lstrip": a.lstrip,
                        "rstrip": a.rstrip, "normalized": a.normalized, "special": a.special})
    if len(entries) != len(ts.ATTR_TOKENS):
        raise RuntimeError(f"{name}: {len(entries)} attribute tokens added, expected {len(ts.ATTR_TOKENS)}")
    t.encode_special_tokens = False
    write_lines(f"{name}.attrs.out", [ids_line(t.encode(c).ids) for c in cases])
    t.encode_special_tokens = True
    write_lines(f"{name}.attrs.split.out", [ids_line(t.encode(c).ids) for c in cases])
    return entries


def hf_vocab(name, path, corpus, templates, pairs, offsets=False):
    t = hf_tokenizer(path)
    encs = [t.encode(tc.as_text(raw)) for raw in corpus]
    write_lines(f"{name}.out", [ids_line(e.ids) for e in encs])
    if offsets:
        write_lines(f"{name}.offsets.out",
                    [byte_offsets(tc.as_text(raw), e.offsets) for raw, e in zip(corpus, encs)])
    write_lines(f"{name}.templates.out", [ids_line(t.encode(s).ids) for s in templates])
    lines = []
    for a, b in pairs:
        e = t.encode(a, b)
        lines.append(ids_line(e.ids) + " | " + ids_line(e.type_ids))
    write_lines(f"{name}.pairs.out", lines)
    return hf_special(name, t, added_contents(path))


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
            write_lines(f"qwen-{name}.out", [ids_line(t.encode(tc.as_text(r)).ids) for r in corpus])
        from llama_cpp import Llama
        gguf = os.path.join(tmp, "qwen-default.gguf")
        tool = os.path.join(os.environ.get("EMBED_BUILD", os.path.join(ROOT, "build")), "tools", "embed-vocab-gguf")
        subprocess.check_call([tool, qwen_dir, gguf, "--arch", "qwen2", "--pre", "default"])
        m = Llama(gguf, vocab_only=True, verbose=False)
        write_lines("qwen-default.out", [ids_line(m.tokenize(tc.as_text(r).encode("utf-8"), add_bos=False,
                                                             special=True)) for r in corpus])


def gguf_added_tokens(path):
    """Control, user-defined and unknown tokens: what llama.cpp splits out of text."""
    from gguf import GGUFReader
    f = GGUFReader(path).fields
    toks, types = f["tokenizer.ggml.tokens"], f["tokenizer.ggml.token_type"]
    out = []
    for i, (ti, yi) in enumerate(zip(toks.data, types.data)):
        if int(types.parts[yi][0]) in (2, 3, 4):
            out.append((i, bytes(toks.parts[ti]).decode("utf-8")))
    return out


def gemma(path, corpus, templates):
    from llama_cpp import Llama
    import llama_cpp
    m = Llama(path, vocab_only=True, verbose=False)
    tok = lambda s, special: ids_line(m.tokenize(s.encode("utf-8"), add_bos=True, special=special))
    write_lines("gemma.out", [tok(tc.as_text(r), True) for r in corpus])
    write_lines("gemma.templates.out", [tok(s, True) for s in templates])
    added = gguf_added_tokens(path)
    tokens = [t for _, t in added]
    cases = ts.special_cases(tokens, ts.gemma_isolated(tokens))
    tc.save_inp(os.path.join(OUT, "gemma.special.inp"), [c.encode("utf-8") for c in cases])
    out = [tok(c, True) for c in cases]
    check_coverage("gemma", [i for i, _ in added], out)
    write_lines("gemma.special.out", out)
    write_lines("gemma.special.split.out", [tok(c, False) for c in cases])
    return llama_cpp.__version__, len(cases)


def main():
    os.makedirs(OUT, exist_ok=True)
    corpus = tc.corpus(os.environ.get("EMBED_STSB_DIR", os.path.join(ROOT, "..", "shared", "data", "stsb")))
    tc.save_inp(os.path.join(OUT, "corpus.inp"), corpus)
    tc.save_inp(os.path.join(OUT, "templates.inp"), [s.encode("utf-8") for s in TEMPLATES])
    tc.save_inp(os.path.join(OUT, "pairs.inp"), [(a + "\t" + b).encode("utf-8") for a, b in PAIRS])
    minilm = os.path.join(cache("EMBED_MINILM_DIR", "minilm"), "tokenizer.json")
    qwen = os.path.join(cache("EMBED_QWEN_VOCAB_DIR", "qwen-vocab"), "tokenizer.json")
    unigram = os.path.join(OUT, "unigram", "tokenizer.json")
    n_special = {"minilm": hf_vocab("minilm", minilm, corpus, TEMPLATES, PAIRS, offsets=True),
                 "qwen": hf_vocab("qwen", qwen, corpus, TEMPLATES, PAIRS),
                 "unigram": hf_vocab("unigram", unigram, corpus, TEMPLATES, PAIRS)}
    pre_variants(os.path.dirname(qwen), corpus)
    llama_version, n_special["gemma"] = gemma(cache("EMBED_GEMMA_GGUF", "gemma3-270m"), corpus, TEMPLATES)
    attr_cases = ts.attr_cases()
    tc.save_inp(os.path.join(OUT, "attrs.inp"), [c.encode("utf-8") for c in attr_cases])
    attrs = {name: hf_attrs(name, path, attr_cases) for name, path in (("minilm", minilm), ("qwen", qwen),
                                                                         ("unigram", unigram))}
    import json
    with open(os.path.join(OUT, "attrs.json"), "w", encoding="utf-8") as f:
        json.dump(attrs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    write_lines("VERSIONS", [f"tokenizers {tokenizers.__version__}", f"llama-cpp-python {llama_version}",
                             f"cases {len(corpus)}"] +
                [f"special {k} {v}" for k, v in n_special.items()] + [f"attrs {len(attr_cases)}"])
    print(f"{len(corpus)} cases written to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
