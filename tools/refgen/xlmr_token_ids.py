#!/usr/bin/env python3
"""Token-id parity data for XLM-R's tokenizer path through `embed convert`: a multilingual text
file (tests/fixtures/multilingual.txt, one text per '\n'-separated line, >= 300 lines) and the ids
HF gives for each line on the xlmr-tiny folder (the SentencePiece Unigram model with nmt_nfkc's
precompiled charsmap, XLM-R's id layout), with <s> ... </s>, twice: transformers'
XLMRobertaTokenizerFast (`ids`) and the folder's tokenizer.json through `tokenizers` (`ids_tokenizer_json`);
the two differ on whitespace-only lines, trailing whitespace and U+0085 (see main()).
tests/convert/xlmr_reference_test.cpp converts the folder and checks the GGUF's tokenizer
against both.

The lines: STS-B dev sentences in German, Chinese and English, the scripts and forms of
tokenizer_corpus.py (Japanese, Korean, Arabic, Hindi, Thai, Russian, Greek, accented Latin,
emoji with ZWJ / skin tones / flags, combining marks, full-width and half-width forms, NBSP and
other spaces, control and zero-width characters) and seeded mixes of them, plus lines written here
for the cases XLM-R's normalizer changes (NFKC compatibility forms, combining sequences, runs of
spaces that its converter collapses).

Usage:  EMBED_STSB_DIR=... $(tools/refgen/setup_venv.sh) tools/refgen/xlmr_token_ids.py
Writes tests/fixtures/multilingual.txt and tests/convert/fixtures/tokens/xlmr-tiny.json.
"""
import json
import pathlib
import random
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402
import texts  # noqa: E402
import tokenizer_corpus as tc  # noqa: E402

ROOT = HERE.parents[1]
LINES = ROOT / "tests" / "fixtures" / "multilingual.txt"
OUT = ROOT / "tests" / "convert" / "fixtures" / "tokens" / "xlmr-tiny.json"
FOLDER = ROOT / "tests" / "convert" / "fixtures" / "xlmr-tiny"

EXTRA = [
    # NFKC compatibility forms: full-width Latin / digits / punctuation, half-width katakana,
    # ligatures, circled and superscript digits, the ideographic space.
    "Ｆｕｌｌ－ｗｉｄｔｈ：ＡＢＣ　１２３！", "ﾊﾝｶｸ ｶﾀｶﾅ ﾃﾞｽ", "ｱｲｳｴｵ", "ﬁ ﬂ ﬀ ﬃ", "① ② ⑩ ⁵ ₂", "㍻ ㌔ ㎡", "Ⅸ ⅻ",
    "（全角括弧）「かぎ」『二重』", "ＮＦＫＣ　ｔｅｓｔ　ｗｉｔｈ　ｉｄｅｏｇｒａｐｈｉｃ　ｓｐａｃｅｓ",
    # Combining marks: decomposed forms that NFKC composes, and sequences it cannot compose.
    "Cafe\u0301 na\u0308ive re\u0301sume\u0301", "A\u030a\u0301ngstro\u0308m", "q\u0307\u0323 x\u0338",
    "Z\u0351\u0352\u0353algo", "\u0915\u093f\u0924\u093e\u092c", "\u0627\u064e\u0644\u0652\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u0651\u064e\u0629",
    "\u1100\u1161\u11a8\u1100\u1161", "o\u0308\u0304 u\u0308\u0301",
    # NBSP and other spaces, single and in runs (XLM-R's converter collapses runs of ' ').
    "no\u00a0break\u00a0space", "\u00a0\u00a0leading nbsp", "trailing nbsp\u00a0", "a\u202fb\u2007c\u2009d",
    "many     spaces   here", "  two leading", "two trailing  ", "tab\tand\u00a0nbsp\u3000ideographic",
    # Control and format characters.
    "bell\x07 here", "nul\x00inside", "escape\x1b[1m bold", "vt\x0b ff\x0c", "zero\u200bwidth\u200cnon\u200djoiner",
    "bom\ufeff inside", "soft\u00adhyphen", "rtl\u202emark\u202c", "del\x7fchar", "c1\x85next\x9fend",
    # Mixed scripts in one line.
    "Berlin 柏林 ベルリン برلين बर्लिन", "Größe 大小 サイズ حجم आकार 👍🏽", "emoji 👨\u200d👩\u200d👧 family 🇩🇪🇨🇳",
    "日本語とDeutsch und 中文 mixed", "٣ + ४ = 7 (١٢٣ १२३ 123)",
]


def lines():
    rng = random.Random(24)
    out = []
    for lang, count in (("de", 70), ("zh", 70), ("en", 40)):
        rows = texts.stsb_rows(lang)
        out += [rows[i][0] for i in range(0, len(rows), max(1, len(rows) // count))][:count]
    for v in tc.SCRIPTS.values():
        out += v
    out += tc.EMOJI + ["I love it " + e + "!" for e in tc.EMOJI]
    out += [w for w in tc.WHITESPACE if "\n" not in w and "\r" not in w]
    out += tc.CONTROL + EXTRA
    out += [m.replace("\n", " ").replace("\r", " ") for m in tc.mixes(rng, 60)]
    for s in out:
        assert "\n" not in s and "\r" not in s, repr(s)
    return out


def main():
    from transformers import XLMRobertaTokenizerFast
    sample = lines()
    if len(sample) < 300:
        sys.exit(f"only {len(sample)} lines")
    LINES.write_bytes(("\n".join(sample) + "\n").encode("utf-8", "surrogatepass"))
    from tokenizers import Tokenizer
    tok = XLMRobertaTokenizerFast.from_pretrained(str(FOLDER))
    ids = [tok(s)["input_ids"] for s in sample]
    # The folder's tokenizer.json run as written (HF tokenizers; what TEI and transformers 4 run).
    # transformers 5's XLMRobertaTokenizerFast does not: it rebuilds the pipeline from the vocabulary
    # (Precompiled normalizer, WhitespaceSplit + Metaspace), which drops whitespace-only text and
    # trailing whitespace and splits at U+0085, where tokenizer.json's pipeline (Precompiled, runs
    # of ' ' to one, Metaspace) keeps a final U+2581 piece.
    file_tok = Tokenizer.from_file(str(FOLDER / "tokenizer.json"))
    ids_json = [file_tok.encode(s).ids for s in sample]
    differ = [i for i in range(len(sample)) if ids[i] != ids_json[i]]
    unk = sum(i.count(tok.unk_token_id) for i in ids)
    total = sum(len(i) for i in ids)
    data = {"source": common.source_line("xlmr_token_ids.py", f"{type(tok).__name__} on xlmr-tiny"),
            "lines": str(LINES.relative_to(ROOT)), "ids": ids, "ids_tokenizer_json": ids_json,
            "lines_where_the_two_differ": differ}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{len(differ)} lines where XLMRobertaTokenizerFast and tokenizer.json differ: {differ}")
    print(f"{len(sample)} lines, {total} tokens ({unk} <unk>); wrote {LINES.relative_to(ROOT)} and {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
