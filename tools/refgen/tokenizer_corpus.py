#!/usr/bin/env python3
"""The tokenizer parity corpus: >= 2,000 byte strings, deterministic (seeded), shared by every
vocabulary. STS-B dev sentences (en, de, zh) plus hand-written cases for everything issue 3 lists:
Japanese, Korean, Arabic, Hindi, Thai, accented German/French, emoji (ZWJ, flags, skin tones),
code, numbers of every length, whitespace runs, tabs, newlines, control and zero-width characters,
10,000-character words, the empty string, special-token text, NFD/compatibility forms and invalid
UTF-8 (kept as raw bytes: the engine's rule turns each invalid byte into U+FFFD).
"""
import csv
import os
import random

SEP = b"\n__ggml_vocab_test__\n"

SPECIAL_TEXTS = ["[CLS]", "[SEP]", "[UNK]", "[MASK]", "[PAD]", "<s>", "</s>", "<unk>", "<pad>", "<mask>",
                 "<bos>", "<eos>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
                 "<start_of_turn>", "<end_of_turn>", "<unused0>", "<0x41>", "<b>", "<table>", "[multimodal]"]

SCRIPTS = {
    "ja": ["日本語のテキストです。", "東京は日本の首都です", "カタカナとひらがな、漢字", "ｶﾀｶﾅ半角", "今日はいい天気ですね！"],
    "ko": ["한국어 문장입니다.", "안녕하세요, 세계!", "서울특별시", "ㄱㄴㄷ ㅏㅑ", "\u1100\u1161\u11a8 조합"],
    "ar": ["مرحبا بالعالم", "اللغة العربية جميلة.", "السَّلَامُ عَلَيْكُمْ", "١٢٣٤٥ رقم", "نص مع English"],
    "hi": ["नमस्ते दुनिया", "हिन्दी भाषा का वाक्य।", "क्षत्रिय", "१२३ संख्या", "ज़िंदगी"],
    "th": ["สวัสดีครับ", "ภาษาไทยไม่มีการเว้นวรรค", "กิน ข้าว", "๑๒๓", "ที่นี่"],
    "de": ["Größenordnung Übermäßig", "Fußgängerübergänge", "Die Straße ist schön.", "GROSSBUCHSTABEN ẞ",
           "Führer Ärger Öl"],
    "fr": ["Ça va très bien, merci.", "Élève à l'école", "œuvre cœur", "Noël à Paris", "garçon déjà là"],
    "ru": ["Привет, мир!", "Ёлка и ёж", "МОСКВА", "съешь же ещё этих мягких французских булок", "ѢѣѲѳ"],
    "el": ["Καλημέρα κόσμε", "ΟΔΟΣ σοφός", "ἀλήθεια", "Σίσυφος", "λόγος"],
    "misc": ["İstanbul ıi", "ǅungla ǈ", "ﬁnance ﬂow", "ＡＢＣ１２３", "①②③ ⅫⅣ", "㎏㎞℃", "™®©", "µ Å Ω",
             "e\u0301 a\u0300 o\u0308", "\u1e9b\u0323", "ǆ", "ẞß", "ſtraße", "x\u0338", "\u0041\u030a"],
}

EMOJI = ["😀", "🥰", "🫠", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🧑\u200d💻", "🏳️\u200d🌈", "🇺🇸", "🇯🇵🇩🇪",
         "❤️", "☺︎", "1️⃣", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "🤷‍♀️", "👩🏿‍🚀"]

CODE = ["def f(x):\n    return x ** 2\n", "int main() { printf(\"%d\\n\", 42); }", "for (i = 0; i < n; ++i) a[i] += b[i];",
        "if x != None and y >= 3:\n\tpass", "<div class=\"a\">Hi</div>", "SELECT * FROM t WHERE id=1;",
        "const f = (a, b) => a && b || !c;", "std::vector<int> v{1,2,3};", "#include <stdio.h>",
        "x = {'key': [1, 2.5, -3e10]}", "$ ls -la | grep '^d' > out.txt 2>&1", "a->b; c::d; e?.f ?? g",
        "    indented\n        more\n", "path/to/file_name-v2.tar.gz", "https://example.com/a?b=c&d=e#f",
        "user@example.org", "C:\\Windows\\System32", "~/.bashrc && echo $HOME", "λx.x+1", "i++ --j ===",
        "I'm you're he's we've they'll I'd DON'T CAN'T It'S", "'s 't 're 've 'm 'll 'd", "rock 'n' roll",
        "''quoted'' ``ticks``", "...!!!???", "--- *** ___", "a.b,c;d:e", "(parens) [brackets] {braces}"]

WHITESPACE = [" ", "  ", "   ", " " * 10, " " * 33, "\t", "\t\t", "\n", "\n\n", "\n" * 5, "\n" * 40, "\r\n", "\r\n\r\n",
              " \n ", "\t \n", "a  b", "a   b", "a\tb", "a\nb", "a \n b", "a\n\n\nb", " leading", "trailing ",
              "  both  ", "\u00a0nbsp\u00a0", "\u3000ideographic\u3000space", "\u2028line\u2029para",
              "\u2000\u2001\u2002\u200a", "\u0085next line", "\u000b\u000cvt ff", "x \t\n\r\u00a0 y", " \t ",
              "hello\n", "\nhello", "end with spaces   ", "   ", "\n \n", "a\u3000b"]

CONTROL = ["\x00", "a\x00b", "\x01\x02\x03", "bell\x07", "del\x7f", "esc\x1b[0m", "\x1c\x1d\x1e\x1f",
           "zero\u200bwidth", "zw\u200cnj", "zw\u200dj", "\ufeffbom", "word\u2060joiner", "\u00adsoft\u00adhyphen",
           "\u202eRTL override", "\u200e\u200fmarks", "\ufffd replacement", "\ue000 private", "\U0010fffd",
           "\u0378 unassigned", "\U000e0001 tag"]

INVALID = [b"\xff", b"abc\xffdef", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xf0\x9f\x98", b"\x80\x80",
           b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong", b"\xf4\x90\x80\x80 too big", b"ok \xfe\xfe ok",
           b"\xe6\x97\xa5\xff\xe6\x9c\xac", b"caf\xe9", b"\xf8\x88\x80\x80\x80", b"\x00\xff\x00"]


def numbers(rng):
    out = []
    for n in range(1, 41):
        out.append("".join(rng.choice("0123456789") for _ in range(n)))
    out += ["0", "00", "007", "3.14159", "-42", "+1", "1,000,000", "1.000.000,50", "1e-10", "0x1F", "12:30",
            "2024-01-31", "$100", "50%", "3333", "33333", "1/2", "½ ¼ ¾", "²³", "٣", "१२", "٤٥٦", "Ⅷ"]
    return out


def long_cases():
    return ["a" * 10000, "x" * 9999 + " y", "word " * 2000, "日" * 10000, "ab" * 5000, "9" * 10000,
            "é" * 3000, "😀" * 2500, "a" * 101, "a" * 100, "a" * 99, "supercalifragilistic" * 6]


def stsb_sentences(stsb_dir, per_file):
    out = []
    for lang in ("en", "de", "zh"):
        path = os.path.join(stsb_dir, f"stsb-{lang}-dev.csv")
        with open(path, encoding="utf-8") as f:
            rows = list(csv.reader(f))
        for row in rows[:per_file]:
            out.append(row[0])
    return out


def mixes(rng, count):
    pool = [c for v in SCRIPTS.values() for s in v for c in s] + list("abcXYZ019 .,'!?-_\t\n") + EMOJI
    out = []
    for _ in range(count):
        n = rng.randint(1, 40)
        out.append("".join(rng.choice(pool) for _ in range(n)))
    return out


def corpus(stsb_dir):
    rng = random.Random(20240531)
    texts = ["", "Hello world", " Hello world", "Hello World", "HELLO WORLD", "hello   world  "]
    texts += stsb_sentences(stsb_dir, 600)
    for v in SCRIPTS.values():
        texts += v
    texts += EMOJI + ["I love it " + e + "!" for e in EMOJI]
    texts += CODE + WHITESPACE + CONTROL + numbers(rng) + long_cases()
    texts += [f"{a} {t} {b}" for t in SPECIAL_TEXTS for a, b in [("x", "y")]]
    texts += SPECIAL_TEXTS + [t + t for t in SPECIAL_TEXTS[:6]] + ["<s>Hello</s>", "[CLS] q [SEP] d [SEP]",
                                                                    "<|im_start|>user\nhi<|im_end|>"]
    texts += mixes(rng, 300)
    out = [t.encode("utf-8", "surrogatepass") for t in texts] + INVALID
    return out


def load_inp(path):
    data = open(path, "rb").read()
    parts = data.split(SEP)
    return parts[:-1]


def save_inp(path, cases):
    with open(path, "wb") as f:
        for c in cases:
            assert SEP not in c
            f.write(c + SEP)


def as_text(raw):
    """The documented invalid-UTF-8 rule: every byte that does not start a valid sequence -> U+FFFD."""
    s = raw.decode("utf-8", "surrogateescape")
    return "".join("\ufffd" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in s)
