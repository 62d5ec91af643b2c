# Late chunking reference (tests/fixtures/late_chunking/): the tiny models rebuilt in PyTorch with
# the seeded weights of their committed GGUF files (tiny_models.build_model), and late chunking
# written here from the rules of docs/long-inputs.md, independently of the C++ code: each text
# encoded whole, or past max_tokens in overlapping windows (the leading special tokens repeated
# in every window), each chunk's vector the mean of its tokens' final hidden states, taken from
# the window that shows the chunk with the most context (before it for a causal model, else the
# fewer of before and after), token by token when no window holds the whole chunk.
# Usage: python make_late_chunking.py   (writes cases.json and vectors.npy)
import json
import shutil

import numpy as np

import common
import tiny_models

OUT = common.REPO_ROOT / "tests" / "fixtures" / "late_chunking"

STORY = ("Marie Curie was born in Warsaw in 1867. She moved to Paris to study physics and mathematics at the Sorbonne. "
         "There she met Pierre, and they married in 1895. Together they discovered two new elements, polonium and radium. "
         "She was the first woman to win a Nobel Prize. Later she became the first person to win it twice! "
         "Her notebooks are still radioactive today? They are kept in lead boxes in Paris.")
LONG = " ".join([STORY, "The city of Berlin has about 3.7 million inhabitants and many lakes and parks.",
                 "It became the capital again in 1990, after the reunification of Germany.",
                 "Its famous gate stands at the end of a long avenue lined with lime trees.",
                 "Tourists come to see it in every season, and in winter a market fills the square next to it.",
                 "The river Spree runs through the centre, and boats carry visitors past the old museums on its island.",
                 STORY.replace("Marie Curie", "The scientist")])

CASES = [
    dict(model="tiny-bert-rank", text=STORY, rule="tokens", chunk_tokens=7),
    dict(model="tiny-bert-rank", text=LONG, rule="tokens", chunk_tokens=10),           # windows
    dict(model="tiny-bert-rank", text=LONG, rule="sentences"),                         # windows, long sentences token by token
    dict(model="tiny-bert-rank", text=STORY, spans=[[0, 38], [39, 105], [200, 260]]),  # given spans, with gaps
    dict(model="tiny-bert-rank", text="First part about cats.\n<<<CHUNK>>>\nSecond part, about dogs and their owners.\n"
                                      "<<<CHUNK>>>\nThird.", rule="separator"),
    dict(model="tiny-qwen3-embed", text=LONG, rule="tokens", chunk_tokens=12),         # causal windows
    dict(model="tiny-qwen3-embed", text=STORY, rule="sentences"),
    # A chunk longer than a window: pooled token by token, each from its best window.
    dict(model="tiny-bert-rank", text=LONG, spans=[[0, 330], [331, 400], [700, 760]]),
    dict(model="tiny-qwen3-embed", text=LONG, spans=[[40, 600], [601, 650]]),
]
SEPARATOR = "<<<CHUNK>>>"


def is_space(c):
    return c in " \t\n\r\f\v"


def sentence_spans(t):
    """(model text, chunk ranges in it, reported spans) by sentence ends and line breaks."""
    ranges, start, i = [], 0, 0

    def cut(at):
        nonlocal start, i
        while at < len(t) and is_space(t[at]):
            at += 1
        if t[start:at].strip():
            ranges.append([start, at])
            start = at
        elif ranges:
            ranges[-1][1] = at
            start = at
        i = max(at, i + 1)

    while i < len(t):
        c = t[i]
        if c == "\n":
            cut(i + 1)
        elif c in ".!?" and (i + 1 == len(t) or is_space(t[i + 1])):
            cut(i + 1)
        elif c in "\u3002\uff01\uff1f":
            cut(i + 1)
        else:
            i += 1
    if start < len(t):
        cut(len(t))
    spans = [[a, len(t[a:b].rstrip(" \t\n\r\f\v")) + a] for a, b in ranges]
    return t, ranges, spans


def separator_spans(t):
    text, ranges, spans, pos, first = "", [], [], 0, True
    while True:
        found = t.find(SEPARATOR, pos)
        a, b = pos, len(t) if found < 0 else found
        if not first and a < b and t[a] == "\r":
            a += 1
        if not first and a < b and t[a] == "\n":
            a += 1
        if found >= 0 and b > a and t[b - 1] == "\n":
            b -= 1
        if found >= 0 and b > a and t[b - 1] == "\r":
            b -= 1
        if t[a:b].strip():
            if text:
                text += "\n"
                ranges[-1][1] = len(text)
            ranges.append([len(text), len(text) + b - a])
            text += t[a:b]
            spans.append([a, b])
        if found < 0:
            return text, ranges, spans
        pos, first = found + len(SEPARATOR), False


def windows_over(body, cap, overlap):
    w, s = [], 0
    while s + cap < body:
        w.append((s, s + cap))
        s += cap - overlap
    w.append((max(0, body - cap), body))
    return w


def context(causal, ws, we, a, b):
    return a - ws if causal else min(a - ws, we - b)


def late_chunks(spec, tok, model, torch, case):
    max_tokens, causal = spec.max_len, spec.family != "bert"
    overlap = max_tokens // 4
    if "spans" in case:
        text, ranges, spans = case["text"], case["spans"], case["spans"]
    elif case["rule"] == "sentences":
        text, ranges, spans = sentence_spans(case["text"])
    elif case["rule"] == "separator":
        text, ranges, spans = separator_spans(case["text"])
    else:
        text, ranges, spans = case["text"], None, None
    enc = tok(text, add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids, offsets, special = enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]
    head = 0
    while head < len(ids) and special[head]:
        head += 1
    tail = 0
    while tail < len(ids) - head and special[len(ids) - 1 - tail]:
        tail += 1
    body = len(ids) - head - tail
    def start_of(t):  # the token's first character that is not white space
        a, b = offsets[head + t]
        while a < b and is_space(text[a]):
            a += 1
        return a

    starts = [start_of(t) for t in range(body)]
    if ranges is None:  # every chunk_tokens tokens
        n = case["chunk_tokens"]
        chunks = [(a, min(body, a + n)) for a in range(0, body, n)]
        spans = [[starts[a], offsets[head + b - 1][1]] for a, b in chunks]
    else:
        chunks = []
        for lo, hi in ranges:
            inside = [t for t in range(body) if lo <= starts[t] < hi]
            assert inside and inside == list(range(inside[0], inside[-1] + 1)), (case, lo, hi)
            chunks.append((inside[0], inside[-1] + 1))
    wins = [(0, body)] if len(ids) <= max_tokens else windows_over(body, max_tokens - head - tail, overlap)
    hidden = {}

    def window_rows(w):
        if w not in hidden:
            a, b = wins[w]
            seq = ids[:head] + ids[head + a:head + b] + ids[len(ids) - tail:]
            t = torch.tensor([seq])
            with torch.no_grad():
                if spec.family == "bert":
                    out = model.bert(input_ids=t, token_type_ids=torch.zeros_like(t), attention_mask=torch.ones_like(t))
                else:
                    out = model.model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False)
            hidden[w] = out.last_hidden_state[0].double().numpy()
        return hidden[w]

    def best(a, b):
        fits = [w for w, (ws, we) in enumerate(wins) if ws <= a and b <= we]
        return max(fits, key=lambda w: (context(causal, wins[w][0], wins[w][1], a, b), -w)) if fits else None

    vectors = []
    for a, b in chunks:
        w = best(a, b)
        rows = [window_rows(w)[head + t - wins[w][0]] for t in range(a, b)] if w is not None else \
               [window_rows(best(t, t + 1))[head + t - wins[best(t, t + 1)][0]] for t in range(a, b)]
        vectors.append(np.mean(rows, axis=0))
    return spans, vectors, len(wins), any(best(a, b) is None for a, b in chunks)


def main():
    torch = common.deterministic_torch()
    import transformers
    models = {}
    out_cases, rows = [], []
    for case in CASES:
        spec = next(s for s in tiny_models.SPECS if s.name == case["model"])
        if spec.name not in models:
            hf_dir = common.WORK / "late_chunking" / spec.name
            shutil.rmtree(hf_dir, ignore_errors=True)
            tiny_models.build_model(spec, hf_dir, torch)
            model = getattr(transformers, spec.hf_class).from_pretrained(hf_dir, attn_implementation="eager").eval()
            models[spec.name] = (transformers.AutoTokenizer.from_pretrained(hf_dir), model)
        tok, model = models[spec.name]
        spans, vectors, n_windows, token_by_token = late_chunks(spec, tok, model, torch, case)
        entry = {k: v for k, v in case.items() if k != "spans"}
        if "spans" in case:
            entry["given_spans"] = case["spans"]
        entry.update(first_row=len(rows), spans=spans, windows=n_windows, token_by_token=token_by_token,
                     max_tokens=spec.max_len, overlap=spec.max_len // 4)
        out_cases.append(entry)
        rows += vectors
        common.log(f"{case['model']} {case.get('rule', 'spans')}: {len(spans)} chunks, {n_windows} windows"
                   f"{', a chunk token by token' if token_by_token else ''}")
    OUT.mkdir(parents=True, exist_ok=True)
    common.save_npy(OUT / "vectors.npy", np.stack(rows))
    doc = {"source": common.source_line("make_late_chunking.py"),
           "what": "late chunking of each text: chunk spans (code points) and unnormalized chunk vectors (rows of "
                   "vectors.npy from first_row), the mean of the chunk's final hidden states in fp32 PyTorch",
           "cases": out_cases}
    (OUT / "cases.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
