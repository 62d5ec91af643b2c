#!/usr/bin/env bash
# `embed tokenize` end to end: a vocabulary GGUF written by embed-vocab-gguf from the Unigram
# fixture, the first corpus cases that fit on one line, ids compared with HF's (unigram.out);
# --no-special drops the added <s> and </s>; the special-token strings (unigram.special.inp) match
# HF by default and with --split-special; a missing file exits non-zero with a message.
#   cli_test.sh <build dir> <fixtures dir>
set -euo pipefail
build="$1" fixtures="$2/tokenizer"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$build/tools/embed-vocab-gguf" "$fixtures/unigram" "$tmp/vocab.gguf" 2>/dev/null
# Cases 1..200 of corpus.inp that hold no newline, and their expected ids.
python3 - "$fixtures" "$tmp" <<'PY'
import sys
fx, tmp = sys.argv[1], sys.argv[2]
cases = open(fx + "/corpus.inp", "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1]
want = open(fx + "/unigram.out", encoding="utf-8").read().split("\n")
with open(tmp + "/in.txt", "wb") as i, open(tmp + "/want.txt", "w") as w, open(tmp + "/want_nospecial.txt", "w") as n:
    for c, ids in list(zip(cases, want))[1:200]:
        if b"\n" in c or b"\r" in c:
            continue
        i.write(c + b"\n")
        w.write(ids + "\n")
        n.write(" ".join(ids.split()[1:-1]) + "\n")
cases = open(fx + "/unigram.special.inp", "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1]
want = open(fx + "/unigram.special.out", encoding="utf-8").read().split("\n")
split = open(fx + "/unigram.special.split.out", encoding="utf-8").read().split("\n")
with open(tmp + "/sp.txt", "wb") as i, open(tmp + "/want_sp.txt", "w") as w, open(tmp + "/want_split.txt", "w") as n:
    for c, a, b in zip(cases, want, split):
        if b"\n" in c or b"\r" in c:
            continue
        i.write(c + b"\n")
        w.write(a + "\n")
        n.write(b + "\n")
PY
# Never a vacuous pass: both inputs must hold real cases.
[ "$(wc -l < "$tmp/in.txt")" -ge 100 ] && [ "$(wc -l < "$tmp/sp.txt")" -ge 30 ] || { echo "too few cases read from the fixtures"; exit 1; }
"$build/tools/embed" tokenize "$tmp/vocab.gguf" "$tmp/in.txt" > "$tmp/got.txt" 2>/dev/null
diff "$tmp/want.txt" "$tmp/got.txt" > "$tmp/diff.txt" || { echo "embed tokenize differs from HF:"; head -20 "$tmp/diff.txt"; exit 1; }
"$build/tools/embed" tokenize --no-special "$tmp/vocab.gguf" "$tmp/in.txt" > "$tmp/got2.txt" 2>/dev/null
diff "$tmp/want_nospecial.txt" "$tmp/got2.txt" > /dev/null || { echo "--no-special output differs"; exit 1; }
"$build/tools/embed" tokenize "$tmp/vocab.gguf" "$tmp/sp.txt" > "$tmp/got_sp.txt" 2>/dev/null
diff "$tmp/want_sp.txt" "$tmp/got_sp.txt" > /dev/null || { echo "special-token lines differ from HF"; exit 1; }
"$build/tools/embed" tokenize --split-special "$tmp/vocab.gguf" "$tmp/sp.txt" > "$tmp/got_split.txt" 2>/dev/null
diff "$tmp/want_split.txt" "$tmp/got_split.txt" > /dev/null || { echo "--split-special lines differ from HF"; exit 1; }
[ "$(wc -l < "$tmp/in.txt")" = "$("$build/tools/embed" tokenize --pieces "$tmp/vocab.gguf" "$tmp/in.txt" 2>/dev/null | wc -l)" ] \
  || { echo "--pieces does not print one line per input line"; exit 1; }
if "$build/tools/embed" tokenize "$tmp/missing.gguf" "$tmp/in.txt" 2> "$tmp/err.txt"; then
  echo "missing model file did not fail"; exit 1
fi
grep -q "missing.gguf" "$tmp/err.txt" || { echo "error message does not name the file"; exit 1; }
echo "cli_test: $(wc -l < "$tmp/in.txt") corpus lines and $(wc -l < "$tmp/sp.txt") special-token lines match HF"
