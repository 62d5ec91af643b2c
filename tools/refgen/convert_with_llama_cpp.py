# Runs llama.cpp's own convert_hf_to_gguf.py (from the cache filled by fetch_llama_cpp_src.sh) on
# a tiny HF folder. It adds exactly two documented hooks and changes nothing else:
#   --pre NAME        : our tokenizers are freshly trained, so the converter's hash table of known
#                       BPE pre-tokenizers cannot know them; when (and only when) the hash lookup
#                       fails, NAME is returned, as a new entry in that table would do.
#   --bert-pooler-as-cls : the converter drops BERT's pooler (dense+tanh), which
#                       BertForSequenceClassification applies before its classifier; the hook
#                       renames pooler.dense to classifier.dense, which the converter's own tensor
#                       map writes as `cls` (the dense+tanh step of llama.cpp's RANK pooling).
# Usage: python convert_with_llama_cpp.py LLAMA_CPP_DIR [--pre NAME] [--bert-pooler-as-cls] -- ARGS
import sys


def install_hooks(pre_name, bert_pooler_as_cls):
    import conversion.base as base
    if pre_name:
        original_pre = base.TextModel.get_vocab_base_pre

        def get_vocab_base_pre(self, tokenizer):
            try:
                return original_pre(self, tokenizer)
            except NotImplementedError:
                base.logger.info(f"refgen hook: unknown BPE pre-tokenizer hash, declared {pre_name!r}")
                return pre_name

        base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    if bert_pooler_as_cls:
        import conversion.bert as bert
        original_filter = bert.BertModel.filter_tensors.__func__

        def filter_tensors(cls, item):
            name, gen = item
            for prefix in ("bert.pooler.dense.", "pooler.dense."):
                if name.startswith(prefix):
                    name = "classifier.dense." + name[len(prefix):]
            return original_filter(cls, (name, gen))

        bert.BertModel.filter_tensors = classmethod(filter_tensors)


def main(argv):
    llama_cpp_dir = argv[1]
    rest = argv[2:]
    split = rest.index("--")
    opts, converter_args = rest[:split], rest[split + 1:]
    pre_name = None
    if "--pre" in opts:
        pre_name = opts[opts.index("--pre") + 1]
    sys.path.insert(0, llama_cpp_dir)
    sys.argv = [f"{llama_cpp_dir}/convert_hf_to_gguf.py"] + converter_args
    import convert_hf_to_gguf  # inserts the bundled gguf-py ahead of any installed gguf
    install_hooks(pre_name, "--bert-pooler-as-cls" in opts)
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main(sys.argv)
