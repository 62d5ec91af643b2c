# Small tokenizers for the tiny random-weight models, trained with the `tokenizers` (and
# `sentencepiece`) libraries on STS-B text, with the HF tokenizer.json semantics the real model
# families use. Each builder saves an HF tokenizer folder and returns nothing else.
import re
import shutil

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from texts import RERANK_TEMPLATE, stsb_rows

# Pre-tokenizer regexes of the real tokenizer.json files (HF spelling, case-insensitive group).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_PLAIN_ADDED = ["<think>", "</think>"]  # added but not special in Qwen3's tokenizer.json


def training_corpus(languages=("en", "de"), zh_sentences=0):
    corpus = []
    for lang in languages:
        for a, b, _ in stsb_rows(lang):
            corpus.extend((a, b))
    if zh_sentences:
        for a, b, _ in stsb_rows("zh")[:zh_sentences]:
            corpus.extend((a, b))
    return corpus


def save_hf(tok, out_dir, max_len, **special):
    from transformers import PreTrainedTokenizerFast
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_len, **special)
    hf.save_pretrained(out_dir)


def build_wordpiece(out_dir, vocab_size, max_len):
    """BERT uncased WordPiece: BertNormalizer (lowercase, accents stripped), [CLS] A [SEP] B [SEP]."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    ascii_printable = [chr(c) for c in range(33, 127)]  # as in real BERT vocabularies
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials,
                                        initial_alphabet=ascii_printable,
                                        continuing_subword_prefix="##", show_progress=False)
    # Few Chinese sentences: every character seen enters the alphabet (a limit_alphabet cut breaks
    # frequency ties at random), and the rest of the CJK range stays [UNK].
    tok.train_from_iterator(training_corpus(("en", "de"), zh_sentences=40), trainer)
    # The trainer numbers "##" pieces in hash-map order; renumber in a fixed order (specials first,
    # then sorted) so reruns give identical ids. WordPiece matching does not depend on ids.
    learned = tok.get_vocab()
    ordered = specials + sorted(t for t in learned if t not in specials)
    tok.model = models.WordPiece(vocab={t: i for i, t in enumerate(ordered)}, unk_token="[UNK]",
                                 continuing_subword_prefix="##", max_input_chars_per_word=100)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.WordPiece(prefix="##")
    save_hf(tok, out_dir, max_len, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
            cls_token="[CLS]", mask_token="[MASK]")


def _train_byte_bpe(pattern, vocab_size, specials, normalizer, ignore_merges, extra_lines=()):
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, ignore_merges=ignore_merges))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(training_corpus(("en", "de"), zh_sentences=100) + list(extra_lines), trainer)
    return tok


def build_qwen_bpe(out_dir, vocab_size, max_len, append_eos, with_rerank_words=False):
    """Qwen2/Qwen3 byte-level BPE (NFC, single digits). append_eos: Qwen3-Embedding's
    TemplateProcessing that appends <|endoftext|>; otherwise the plain ByteLevel post-processor.
    with_rerank_words: "yes"/"no" must be single tokens, and the rerank prompt is weighted into
    the training text so that it takes few tokens, as it does in the real vocabulary."""
    extra = []
    if with_rerank_words:
        prompt_lines = [line for line in re.split(r"<[^>]*>", RERANK_TEMPLATE) if line.strip()]
        extra = (["yes", "no", "|"] + prompt_lines) * 300
    tok = _train_byte_bpe(QWEN2_PATTERN, vocab_size, QWEN_SPECIALS, normalizers.NFC(), False, extra)
    tok.add_tokens(QWEN_PLAIN_ADDED)
    eos = tok.token_to_id("<|endoftext|>")
    if append_eos:
        tok.post_processor = processors.TemplateProcessing(
            single="$A:0 <|endoftext|>:0", pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
            special_tokens=[("<|endoftext|>", eos)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    if with_rerank_words:
        for word in ("yes", "no"):
            if tok.token_to_id(word) is None:
                raise RuntimeError(f"reranker tokenizer lacks the single token {word!r}")
    save_hf(tok, out_dir, max_len, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def build_llama3_bpe(out_dir, vocab_size, max_len):
    """Llama-3 byte-level BPE (no normalizer, digits in groups of 3, ignore_merges) adding BOS."""
    specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    tok = _train_byte_bpe(LLAMA3_PATTERN, vocab_size, specials, None, True)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A:0",
                                      pair="<|begin_of_text|> $A:0 <|begin_of_text|>:1 $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    save_hf(tok, out_dir, max_len, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")


def build_gemma_spm(out_dir, vocab_size, max_len, work_dir):
    """Gemma-style SentencePiece BPE with byte fallback, split digits, no dummy prefix; the HF
    tokenizer is transformers' own conversion of tokenizer.model (GemmaTokenizer, adds <bos>)."""
    import sentencepiece as spm
    from transformers import GemmaTokenizer
    work_dir.mkdir(parents=True, exist_ok=True)
    prefix = work_dir / "tokenizer"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_corpus(("en", "de"))), model_prefix=str(prefix),
        vocab_size=vocab_size, model_type="bpe", byte_fallback=True, split_digits=True,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
        bos_piece="<bos>", unk_piece="<unk>", user_defined_symbols=["<mask>"], add_dummy_prefix=False,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True, character_coverage=0.9995, num_threads=1,
        seed_sentencepiece_size=100000, minloglevel=2)
    spm_dir = work_dir / "spm"
    spm_dir.mkdir(exist_ok=True)
    shutil.copy(f"{prefix}.model", spm_dir / "tokenizer.model")
    hf = GemmaTokenizer.from_pretrained(spm_dir, add_bos_token=True, add_eos_token=False,
                                        model_max_length=max_len)
    hf.save_pretrained(out_dir)
    shutil.copy(f"{prefix}.model", out_dir / "tokenizer.model")
