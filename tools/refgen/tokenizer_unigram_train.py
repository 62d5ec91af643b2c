#!/usr/bin/env python3
"""Trains the Unigram test vocabulary: an XLM-R-style tokenizer, since no XLM-R / multilingual-e5
tokenizer.json is packaged on PyPI. SentencePiece (pinned) trains a Unigram model with the nmt_nfkc
normalization rule (the rule XLM-R's model uses, so the precompiled_charsmap is the real one) on
the STS-B dev text (en, de, zh); transformers' XLM-R converter turns it into tokenizer.json (fairseq
id layout <s>=0 <pad>=1 </s>=2 <unk>=3, <mask> last, Precompiled normalizer, Metaspace,
RobertaProcessing <s> A </s>).
Usage: $(tools/refgen/setup_venv.sh) tools/refgen/tokenizer_unigram_train.py [out dir]
"""
import csv
import glob
import os
import sys
import tempfile

import json

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as spm_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STSB = os.environ.get("EMBED_STSB_DIR", os.path.join(ROOT, "..", "shared", "data", "stsb"))


def sentences():
    for path in sorted(glob.glob(os.path.join(STSB, "stsb-*-dev.csv"))):
        with open(path, encoding="utf-8") as f:
            for row in csv.reader(f):
                yield from row[:2]


def build(proto, out, max_len=512):
    # SentencePiece ids 0..2 are <unk> <s> </s>; fairseq's layout puts <s> <pad> </s> <unk> first.
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p.piece, p.score) for p in proto.pieces[3:]] + [("<mask>", 0.0)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<s>", "<pad>", "</s>", "<unk>")]
                           + [AddedToken("<mask>", special=True, normalized=False, lstrip=True)])
    tok.save(os.path.join(out, "tokenizer.json"))
    config = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "mask_token": "<mask>", "pad_token": "<pad>",
              "sep_token": "</s>", "unk_token": "<unk>", "model_max_length": max_len, "tokenizer_class": "XLMRobertaTokenizer"}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    print(f"{len(vocab)} pieces, charsmap {len(proto.normalizer_spec.precompiled_charsmap)} bytes", file=sys.stderr)


def train(vocab_size, character_coverage=0.9995):
    """SentencePiece Unigram (nmt_nfkc) trained on the STS-B dev text; returns the ModelProto.
    Characters outside `character_coverage` of the text's character occurrences stay <unk> (the
    Chinese lines alone hold about 2,100 distinct characters: 0.9995 needs a vocabulary above that)."""
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "stsb.txt")
        with open(text, "w", encoding="utf-8") as f:
            n = 0
            for s in sentences():
                f.write(s.replace("\n", " ") + "\n")
                n += 1
        if n < 1000:
            sys.exit(f"only {n} sentences found under {STSB}")
        prefix = os.path.join(tmp, "unigram")
        spm.SentencePieceTrainer.train(
            input=text, model_prefix=prefix, model_type="unigram", vocab_size=vocab_size, hard_vocab_limit=False,
            normalization_rule_name="nmt_nfkc", character_coverage=character_coverage, seed_sentencepiece_size=200000,
            num_threads=1, minloglevel=2)
        proto = spm_pb2.ModelProto()
        with open(prefix + ".model", "rb") as f:
            proto.ParseFromString(f.read())
    return proto


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "tokenizer", "unigram")
    os.makedirs(out, exist_ok=True)
    build(train(6000), out)
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
