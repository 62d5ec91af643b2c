# The input texts shared by every reference fixture: a fixed mixed list (scripts, emoji, code,
# numbers, one-token inputs, whitespace oddities) and builders for inputs at a model's maximum
# length. Texts are data only; tokenization belongs to the reference tokenizer of each model.
import csv
import os
from pathlib import Path

# shared/ lies beside the repository checkout (as for developers and CI); EMBED_SHARED overrides.
SHARED = Path(os.environ.get("EMBED_SHARED", Path(__file__).resolve().parents[3] / "shared"))
STSB_DIR = SHARED / "data" / "stsb"

# Each entry is (tag, text). Tags say why the case exists; they are stored in cases.json.
MIXED_TEXTS = [
    ("en", "A man is playing a guitar."),
    ("en", "The quick brown fox jumps over the lazy dog."),
    ("en", "Embeddings turn text into vectors that can be compared with a cosine."),
    ("en-question", "How many people live in Berlin?"),
    ("en-long-sentence", "In 1969, after years of preparation, two astronauts walked on the Moon while a third "
                         "circled above them, and hundreds of millions of people watched it live on television."),
    ("en-apostrophes", "I've been told he's there, 'RE you sure? We'Ve a'lL seen it, don't worry."),
    ("en-caps", "THE RESULTS ARE IN: Acme Corp. Beats Estimates By 12%!"),
    ("de-accents", "Ein Mann mit einem Schutzhelm tanzt. Über die Brücke fährt ein großer Lkw."),
    ("fr-accents", "L'élève a dû répondre à la question: où est la bibliothèque? Ça dépend."),
    ("es", "El niño comió una manzana y bebió agua fría en la mañana."),
    ("pt", "A ação não é fácil, mas vamos conseguir juntos."),
    ("vi-combining", "Tie\u0302\u0301ng Vie\u0323\u0302t co\u0301 da\u0302\u0301u (decomposed NFD)."),
    ("vi-precomposed", "Tiếng Việt có dấu (precomposed NFC)."),
    ("zh", "一个戴着硬帽子的人在跳舞。"),
    ("zh-long", "我想在苹果公司工作，因为那里的工程师正在研究新的人工智能模型和向量检索系统。"),
    ("ja", "東京は日本の首都です。ひらがなとカタカナも使います。"),
    ("ko", "안녕하세요, 만나서 반갑습니다."),
    ("ar", "القطة تجلس على السجادة الحمراء."),
    ("he", "שלום עולם, זה מבחן."),
    ("hi", "नमस्ते दुनिया, यह एक परीक्षण वाक्य है।"),
    ("th", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ"),
    ("ru", "Съешь же ещё этих мягких французских булок, да выпей чаю."),
    ("el", "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο."),
    ("mixed-scripts", "Hello 世界 مرحبا Привет नमस्ते 🌍"),
    ("emoji", "I love pizza 🍕🍕🍕 and sushi 🍣!"),
    ("emoji-zwj", "Family: 👨\u200d👩\u200d👧\u200d👦, rainbow flag: 🏳️\u200d🌈, cloud face: 😶\u200d🌫️"),
    ("emoji-flags", "Flags: 🇩🇪 🇫🇷 🇯🇵 🇺🇸 and skin tones: 👍🏽 👋🏿"),
    ("emoji-only", "🚀🔥💯"),
    ("code-python", "def add(a, b):\n    return a + b  # sum of two numbers\n"),
    ("code-cpp", "for (int i = 0; i < n; ++i) { sum += x[i] * y[i]; }"),
    ("code-json", '{"name": "embed", "version": 3, "tags": ["gguf", "cuda"], "ok": true}'),
    ("code-shell", "cmake -S . -B build -G Ninja && ctest --test-dir build -LE cuda"),
    ("url-email", "Visit https://example.com/path?q=1&lang=en or write to someone@example.org."),
    ("numbers", "3 33 333 3333 33333 333333 3.14159 -2.5e-3 1,000,000 0x1F"),
    ("numbers-dates", "On 2024-02-29 at 23:59:59 the price was $1,234.56 (≈ €1.140,00)."),
    ("math", "∀x ∈ ℝ: x² ≥ 0, and ∑ᵢ aᵢ·bᵢ ≤ ‖a‖‖b‖."),
    ("punct", "...!!!???---===***'''```\"\"\""),
    ("repeat", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
    ("one-token-word", "hello"),
    ("one-token-letter", "a"),
    ("one-token-digit", "7"),
    ("one-token-punct", "."),
    ("one-token-cjk", "我"),
    ("ws-leading", "   leading spaces"),
    ("ws-trailing", "trailing spaces   "),
    ("ws-inner", "many     spaces\tand\ttabs"),
    ("ws-newlines", "line one\nline two\n\nline four\r\nwindows line"),
    ("ws-only", " "),
    ("ws-nbsp-zwsp", "non\u00a0breaking and zero\u200bwidth"),
    ("control-chars", "bell\u0007 and escape\u001b characters"),
    ("accents-caps", "ÀÉÎÕÜ àéîõü Ñ ñ Ç ç ß ẞ"),
    ("fullwidth", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ １２３"),
    ("query-style", "query: what is the capital of France?"),
    ("passage-style", "passage: Paris is the capital and largest city of France."),
    ("stsb-pair-a", "A young child is riding a horse."),
    ("stsb-pair-b", "A child is riding a horse."),
    ("stsb-neg", "A woman is slicing an onion."),
    ("markdown", "# Title\n\n* item one\n* item **two**\n\n| a | b |\n|---|---|"),
]

# (query, document) pairs for cross-encoders and rerankers: relevant, irrelevant, multilingual.
RERANK_PAIRS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("What is the capital of France?", "A man is playing a guitar."),
    ("How do I bake bread?", "Mix flour, water, salt and yeast, let it rise, then bake it for 40 minutes."),
    ("How do I bake bread?", "The stock market closed higher on Friday."),
    ("Who wrote Faust?", "Johann Wolfgang von Goethe schrieb den Faust."),
    ("什么是向量检索？", "向量检索通过比较嵌入向量的相似度来查找文档。"),
    ("emoji 🚀 launch", "The rocket 🚀 launched at dawn."),
    ("python sum function", "def add(a, b):\n    return a + b"),
    ("A child is riding a horse.", "A young child is riding a horse."),
    ("A woman is slicing an onion.", "A man is playing a flute."),
]

# llama.cpp's converter writes this Qwen3-Reranker prompt as tokenizer.chat_template.rerank
# (conversion/qwen.py, Qwen3Model.set_gguf_parameters); the reranker cases fill it.
RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
    "Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n"
    "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: {query}\n<Document>: {document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")


def stsb_rows(lang="en"):
    """Rows (sentence1, sentence2, score) of the STS-B dev split: csv module defaults, no header."""
    path = STSB_DIR / f"stsb-{lang}-dev.csv"
    with path.open(newline="", encoding="utf-8") as f:
        return [(r[0], r[1], float(r[2])) for r in csv.reader(f)]


def long_text(n_sentences=400, lang="en"):
    """A deterministic long text: the first STS-B sentences joined by spaces."""
    rows = stsb_rows(lang)
    sentences = []
    for a, b, _ in rows:
        sentences.extend((a, b))
    return " ".join(sentences[:n_sentences])


def fit_prefix(count_tokens, text, target):
    """A character prefix of text whose token count is exactly target.

    count_tokens(str) -> int is close to non-decreasing in the prefix length; we find the first
    prefix that reaches the target and scan forward for one (not ending in whitespace) that hits it.
    """
    lo, hi = 0, len(text)
    if count_tokens(text) < target:
        raise ValueError(f"text too short: {count_tokens(text)} tokens < {target}")
    while lo < hi:  # smallest prefix with count >= target
        mid = (lo + hi) // 2
        if count_tokens(text[:mid]) >= target:
            hi = mid
        else:
            lo = mid + 1
    for end in range(lo, min(len(text), lo + 200) + 1):
        if not text[end - 1].isspace() and count_tokens(text[:end]) == target:
            return text[:end]
    raise ValueError(f"no prefix with exactly {target} tokens")
