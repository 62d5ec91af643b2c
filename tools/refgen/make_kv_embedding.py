# KV-Embedding reference (arXiv 2601.01046) on the tiny decoder models: HF transformers with the
# re-routing written here by hand, for tests/models/kv_embedding_test.cpp. The models are rebuilt
# from their seeded specs (tiny_models.py) and must reproduce the committed hidden.npy first; then,
# at the chosen layers, each sequence's last key (after RoPE, at its own position) and value are
# prepended as one extra position every query attends to, with `bias` added to its logit; pooling
# is hybrid ((last + mean) / 2 of the final hidden states) or last / mean.
# Writes tests/fixtures/models/<name>/kv_embedding.json, kv_*.npy and layer_last.npy (each layer's
# last-token states, for Context::layer_states).
# Usage: python make_kv_embedding.py [NAME ...]   (default: all of MODELS)
import json
import shutil
import sys

import numpy as np

import common
import tiny_models

MODELS = ["tiny-llama", "tiny-qwen2", "tiny-qwen3-embed", "tiny-gemma3"]
# (layers first-last, bias, pooling): the default band of a 2-layer model (the middle third: layer
# 0), both layers, and a negative bias.
CONFIGS = [((0, 0), 1.0, "hybrid"), ((0, 1), 2.0, "hybrid"), ((1, 1), -0.5, "last"), ((0, 1), 1.0, "mean")]
# More per model, after CONFIGS. tiny-gemma3 (layers 0-4 sliding with an 8-token window, layer 5
# global): its default band (the middle third: layers 2-3, both sliding), a band across the last
# sliding layers into the global one, and the global layer alone.
EXTRA_CONFIGS = {"tiny-gemma3": [((2, 3), 1.0, "hybrid"), ((3, 5), 1.0, "hybrid"), ((5, 5), 2.0, "last")]}

ROUTE = {"layers": (0, -1), "bias": 0.0}


def rerouting_attention(original, torch):
    """An eager attention that, at the layers in ROUTE, adds the prefix position. The prefix logit
    gets no mask: on a sliding-window layer (Gemma 3's local layers, whose attention_mask is the
    windowed causal mask) every query still sees the prefix, as every query of the method does."""
    def attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        first, last = ROUTE["layers"]
        if not first <= module.layer_idx <= last:
            return original(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
        assert attention_mask is not None, "eager attention without a causal mask"
        assert kwargs.get("softcap") is None, "attention logit soft-capping is not written here"
        groups = module.num_key_value_groups
        key = key.repeat_interleave(groups, dim=1)      # [b, heads, n, d]
        value = value.repeat_interleave(groups, dim=1)
        logits = query @ key.transpose(2, 3) * scaling + attention_mask[:, :, :, : key.shape[-2]]
        prefix = query @ key[:, :, -1:, :].transpose(2, 3) * scaling + ROUTE["bias"]  # the last token's key
        probs = torch.softmax(torch.cat([prefix, logits], dim=-1).float(), dim=-1).to(query.dtype)
        out = probs[..., :1] @ value[:, :, -1:, :] + probs[..., 1:] @ value
        return out.transpose(1, 2).contiguous(), probs
    return attention


def twonn(points, discard=0.1):
    """TwoNN (Facco et al. 2017) in numpy, for engine/intrinsic_dim.cpp: mu = r2 / r1 per point
    (duplicates left out), sorted; the line through the origin fitted to (log mu_i, -log(1 - i / N))
    over all but the largest `discard` fraction. Distances are sums of squared differences, as the
    engine computes them: the |x|^2 + |y|^2 - 2 x.y form leaves ~1e-13 of rounding between equal
    rows (tiny-gemma3's cases 58 and 60 have the same ids), so duplicates were not left out."""
    x = points.astype(np.float64)
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    near = np.sort(d2, axis=1)[:, :2]
    keep = near[:, 0] > 0
    mu = np.sort(np.sqrt(near[keep, 1] / near[keep, 0]))
    n = len(mu)
    k = max(1, min(n - 1, int(np.floor(n * (1 - discard)))))
    xs = np.log(mu[:k])
    ys = -np.log(1 - np.arange(1, k + 1) / n)
    return float((xs * ys).sum() / (xs * xs).sum())


def pool(hidden, kind):
    if kind == "last":
        return hidden[-1]
    if kind == "mean":
        return hidden.mean(0)
    return (hidden[-1] + hidden.mean(0)) / 2


def make_one(name, torch):
    import transformers
    spec = next(s for s in tiny_models.SPECS if s.name == name)
    fixture = common.FIXTURES / name
    cases = json.loads((fixture / "cases.json").read_text())["cases"]
    work = common.WORK / f"kv-{name}"
    shutil.rmtree(work, ignore_errors=True)
    tiny_models.build_model(spec, work / "hf", torch)
    model = getattr(transformers, spec.hf_class).from_pretrained(work / "hf", attn_implementation="eager").eval()
    modeling = sys.modules[type(model.model.layers[0].self_attn).__module__]
    modeling.eager_attention_forward = rerouting_attention(modeling.eager_attention_forward, torch)

    def hidden_of(ids):
        with torch.no_grad():
            t = torch.tensor([ids])
            return model.model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False).last_hidden_state[0].float()

    # The rebuilt model is the committed one: its plain hidden states equal hidden.npy.
    ROUTE["layers"] = (0, -1)
    plain = np.concatenate([hidden_of(c["ids"]).numpy() for c in cases])
    committed = np.load(fixture / "hidden.npy")
    if plain.shape != committed.shape or np.abs(plain - committed).max() > 1e-5:
        raise SystemExit(f"{name}: the rebuilt model does not reproduce hidden.npy")
    # Per-layer states for Context::layer_states (`embed kv-layers`): the residual stream after each
    # block at each case's last token, before the final norm, from forward hooks on the blocks.
    per_layer = [[] for _ in model.model.layers]
    hooks = [block.register_forward_hook(lambda mod, args, out, l=l: per_layer[l].append(
        (out[0] if isinstance(out, tuple) else out)[0, -1].float().numpy().copy())) for l, block in enumerate(model.model.layers)]
    for c in cases:
        hidden_of(c["ids"])
    for h in hooks:
        h.remove()
    common.save_npy(fixture / "layer_last.npy", np.stack([row for layer in per_layer for row in layer]))
    layer_twonn = [twonn(np.stack(layer)) for layer in per_layer]
    entries = []
    for (first, last), bias, kind in CONFIGS + EXTRA_CONFIGS.get(name, []):
        ROUTE["layers"], ROUTE["bias"] = (first, last), bias
        rows = np.stack([pool(hidden_of(c["ids"]), kind).numpy() for c in cases])
        file = f"kv_{kind}_L{first}-{last}_b{bias:g}.npy"
        common.save_npy(fixture / file, rows)
        entries.append({"file": file, "layers": [first, last], "bias": bias, "pooling": kind})
    meta = {"source": common.source_line("make_kv_embedding.py"), "rows": "pooled, not normalized; one per case of cases.json",
            "rope": "the re-routed key keeps the rotation of its own (last) position", "configs": entries,
            "layer_last": {"file": "layer_last.npy", "rows": "layer-major (row = layer * cases + case): the residual stream "
                           "after each block at the case's last token, before the final norm; no re-routing",
                           "twonn": layer_twonn, "twonn_note": "TwoNN of each layer's rows over all cases, numpy, discard 0.1"}}
    (fixture / "kv_embedding.json").write_text(json.dumps(meta, indent=1) + "\n")
    common.log(f"{name}: {len(entries)} KV-Embedding references for {len(cases)} cases")


def main(names):
    torch = common.deterministic_torch()
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model names {unknown}; known: {MODELS}")
    for name in names or MODELS:
        make_one(name, torch)


if __name__ == "__main__":
    main(sys.argv[1:])
