#!/usr/bin/env python3
# The late-chunking retrieval check of docs/long-inputs.md: generated documents whose later
# sentences refer back to their subject with "It" (the facts are shared between documents, so a
# sentence alone does not say whose fact it is), queries naming a subject and one of its facts,
# and recall@1 / MRR of the right document when the retrieved unit is a sentence embedded alone
# vs. the same sentence as a late chunk of its document. Standard library only; runs the `embed`
# command. Usage: late_chunking_retrieval.py EMBED_BIN MODEL.gguf [--docs N]
import argparse
import json
import math
import os
import random
import subprocess
import tempfile

# Fictional places (no model has seen facts about them) and facts any of them may have.
NAMES = ["Velmora", "Ostrand", "Kirrafell", "Dunmere", "Saltheim", "Brackwater", "Lindqvar", "Pellatine", "Corvista",
         "Ardenholt", "Mirelund", "Tavistrand", "Quellburg", "Hollowmere", "Zarenka", "Emberly", "Norwick", "Silvaro",
         "Thornbay", "Ravensfjord", "Galmouth", "Istrovia", "Wendholm", "Calderra", "Mossgrave", "Fenwyck", "Orlanth",
         "Brisport", "Yarrowdale", "Kestrelin", "Dorvane", "Ulmsted", "Valcourt", "Greystrand", "Amberwick", "Lorrimore",
         "Sennacot", "Prestvik", "Harrowgate", "Nimbrook"]
KINDS = ["town", "village", "port city", "mountain town", "island town"]
FACTS = [
    ("It is famous for its almond cakes, which bakers sell at the Sunday market.", "almond cakes"),
    ("It has a stone bridge that was built by the Romans and still carries traffic.", "Roman stone bridge"),
    ("It hosts a jazz festival every July that fills the main square with visitors.", "jazz festival in July"),
    ("It lost most of its old houses in a great fire in 1842.", "great fire of 1842"),
    ("It is connected to the capital by a narrow-gauge railway that climbs through the forest.", "narrow-gauge railway"),
    ("It produces a blue cheese that ripens for months in limestone caves.", "blue cheese from caves"),
    ("It elected the country's first woman mayor in 1921.", "first woman mayor"),
    ("It has a lighthouse whose lamp was made in Paris.", "lighthouse lamp from Paris"),
    ("It breeds a small, strong horse that farmers use in the steep vineyards.", "horses in the vineyards"),
    ("It keeps a library of old maps that scholars visit from abroad.", "library of old maps"),
    ("It suffers from floods every spring when the snow melts in the hills.", "spring floods"),
    ("It is the birthplace of a composer who wrote operas about the sea.", "composer of sea operas"),
]


def documents(n_docs, facts_per_doc, seed):
    rng = random.Random(seed)
    docs = []
    for i in range(n_docs):
        name = NAMES[i % len(NAMES)] + ("" if i < len(NAMES) else f" {i // len(NAMES) + 1}")
        facts = rng.sample(range(len(FACTS)), facts_per_doc)
        sentences = [f"{name} is a {rng.choice(KINDS)} in the north, about {rng.randint(20, 300)} kilometres from the coast."]
        sentences += [FACTS[f][0] for f in facts]
        docs.append(dict(name=name, facts=facts, sentences=sentences))
    return docs


def run_embed(binary, model, lines_path, extra):
    out = subprocess.run([binary, model, lines_path, "-f", "jsonl", "--normalize", "2", *extra], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def scores(query_vecs, unit_vecs):
    return [[sum(a * b for a, b in zip(q, u)) for u in unit_vecs] for q in query_vecs]


def evaluate(query_rows, unit_doc, answers):
    """recall@1 and MRR of the right document (a document scores its best unit). Documents that tie
    (the same sentence alone in several of them) share the ranks they cover: expected values."""
    hits, rr = 0.0, 0.0
    for q, (doc, _) in zip(query_rows, answers):
        best = {}
        for s, d in zip(q, unit_doc):
            best[d] = max(best.get(d, -math.inf), s)
        above = sum(1 for d, s in best.items() if s > best[doc])
        tied = sum(1 for d, s in best.items() if s == best[doc])  # the right one included
        hits += (1.0 / tied) if above == 0 else 0.0
        rr += sum(1.0 / (above + k) for k in range(1, tied + 1)) / tied
    return hits / len(answers), rr / len(answers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("embed")
    ap.add_argument("model")
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--facts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    docs = documents(a.docs, a.facts, a.seed)
    queries, answers = [], []
    for d_i, d in enumerate(docs):
        for f in d["facts"][:2]:
            queries.append(f"{d['name']}: {FACTS[f][1]}")
            answers.append((d_i, f))
    with tempfile.TemporaryDirectory() as tmp:
        q_path, s_path, d_path = (os.path.join(tmp, n) for n in ("queries.txt", "sentences.txt", "docs.jsonl"))
        with open(q_path, "w") as f:
            f.write("".join(q + "\n" for q in queries))
        unit_doc = []
        with open(s_path, "w") as f:
            for d_i, d in enumerate(docs):
                for s in d["sentences"][1:]:  # the fact sentences: the units both methods retrieve
                    f.write(s + "\n")
                    unit_doc.append(d_i)
        with open(d_path, "w") as f:
            for d in docs:
                f.write(json.dumps({"id": d["name"], "text": " ".join(d["sentences"])}) + "\n")
        q_vecs = [r["embedding"] for r in run_embed(a.embed, a.model, q_path, [])]
        alone = [r["embedding"] for r in run_embed(a.embed, a.model, s_path, [])]
        late = []
        for r in run_embed(a.embed, a.model, d_path, ["--late-chunking", "--chunk-by", "sentences"]):
            chunks = r["chunks"]
            assert len(chunks) == 1 + a.facts, r["id"]
            late += [c["embedding"] for c in chunks[1:]]
    assert len(late) == len(alone) == len(unit_doc)
    r_alone = evaluate(scores(q_vecs, alone), unit_doc, answers)
    r_late = evaluate(scores(q_vecs, late), unit_doc, answers)
    print(f"{len(docs)} documents, {len(alone)} fact sentences, {len(queries)} queries ({os.path.basename(a.model)})")
    print(f"sentences embedded alone:      recall@1 {r_alone[0]:.3f}  MRR {r_alone[1]:.3f}")
    print(f"sentences as late chunks:      recall@1 {r_late[0]:.3f}  MRR {r_late[1]:.3f}")


if __name__ == "__main__":
    main()
