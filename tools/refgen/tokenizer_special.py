"""Test strings for added-token (special and user-defined token) parity, used by tokenizer_refgen.py.

special_cases(tokens): every added token of a vocabulary mixed with ordinary text, with and without
surrounding spaces, alone, doubled, next to punctuation, non-ASCII text and whitespace, plus
near-misses (lowercase, truncated) and long strings that chain all of them with varied separators.

ATTR_TOKENS: extra added tokens with HF's AddedToken attributes (lstrip, rstrip, single_word,
normalized; special or not) that the committed vocabularies lack; attr_cases() exercises them.
"""
import re

# Context words: ASCII, accented (BERT strips accents), CJK (BERT pads with spaces), digits.
AROUND = [("", ""), (" ", " "), ("hello ", " world"), ("hello", "world"), ("Größe ", " 日本語"), ("\n", "\t"),
          ("(", ")"), ("x", "."), ("  ", "  ")]
SEPARATORS = [" ", "", "  ", "\n", "x", " a ", "\t", "日本", ", ", "\u3000"]
GROUP = 8  # tokens per chained string


def _unique(cases):
    """In first-seen order, each string once."""
    return list(dict.fromkeys(cases))


def _variants(t):
    out = [t, t + t, t + " " + t]
    out += [a + t + b for a, b in AROUND[1:]]
    near = {t.lower(), t.upper(), t[:-1], t[1:]} - {t, ""}
    out += sorted(near)
    return out


def special_cases(tokens, isolated=None):
    """`tokens`: the vocabulary's added tokens (text). `isolated`: the subset that gets every
    variant (default: all); the rest appear only in the chained strings."""
    isolated = tokens if isolated is None else isolated
    cases = []
    for t in isolated:
        cases += _variants(t)
    for k in range(0, len(tokens), GROUP):
        group = tokens[k:k + GROUP]
        s = "start"
        for i, t in enumerate(group):
            s += SEPARATORS[(k // GROUP + i) % len(SEPARATORS)] + t
        cases.append(s + " end")
    # Adjacent different tokens, each order, no separator.
    for a, b in zip(isolated, isolated[1:] + isolated[:1]):
        cases.append(a + b)
    return _unique(cases)


UNUSED = re.compile(r"^<unused\d+>$")


def gemma_isolated(tokens):
    """Gemma has 6,249 control tokens, almost all <unusedN>: the named ones get every variant."""
    return [t for t in tokens if not UNUSED.match(t)] + [t for t in tokens if UNUSED.match(t)][:20]


# Added on top of each HF vocabulary (tokenizers' add_tokens / add_special_tokens).
ATTR_TOKENS = [
    dict(content="<ls>", special=True, lstrip=True, normalized=False),
    dict(content="<rs>", special=True, rstrip=True, normalized=False),
    dict(content="<both>", special=False, lstrip=True, rstrip=True, normalized=False),
    dict(content="<sw>", special=False, single_word=True, normalized=False),
    dict(content="swtok", special=False, single_word=True, normalized=False),
    dict(content="Normtok", special=False, normalized=True),
    dict(content="[Nspec]", special=True, normalized=True),
    dict(content="wörd", special=False, normalized=True, single_word=True, lstrip=True),
    dict(content="<ab>", special=False, normalized=False),
    dict(content="<ab><cd>", special=False, normalized=False),
    dict(content="two words", special=False, normalized=False),
]


def attr_cases():
    cases = []
    contexts = [("a", "b"), ("a ", " b"), ("a  ", "  b"), ("a\t", "\nb"), ("", ""), (" ", ""), ("", " "), ("x", ""),
                ("", "y"), ("_", "_"), ("1", "2"), ("é", ""), ("", "-x"), ("a", "\u3000b"), ("\u2000", "\u2000"),
                ("日", "本")]
    for tok in ATTR_TOKENS:
        t = tok["content"]
        cases += [a + t + b for a, b in contexts]
        cases += [t + t, t + " " + t, t.upper(), t.lower(), "x " + t.upper() + " y"]
    cases += ["NORMTOK", "normtok", "\uff2eormtok", "WÖRD here", "a wo\u0308rd", "a wörds", "<ab><cd>", "<ab><c",
              "<ab> <cd>", "<ab><ab><cd>", "two words", "two  words", "<rs>  <ls>", "<ls><rs>", "a <rs> <ls> b",
              "<both>\u3000<both>", "x <ls>  <both>  <rs>  y", "[nspec] [NSPEC]", "swtok swtok_ swtok. ,swtok,"]
    return _unique(cases)
