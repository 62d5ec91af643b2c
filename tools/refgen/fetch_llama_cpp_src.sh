#!/usr/bin/env bash
# Fetches llama.cpp's own Python converter (convert_hf_to_gguf.py + its bundled gguf-py) from the
# llama-cpp-python sdist on PyPI into the cache, and prints the unpacked llama.cpp folder.
# The converter is run from there, never copied into this repository (it is an independent reference).
set -euo pipefail
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache="${EMBED_CACHE:-$HOME/.cache/embed}"
dest="$cache/llama-cpp-src-$version"
if [ ! -f "$dest/convert_hf_to_gguf.py" ] || [ ! -d "$dest/gguf-py/gguf" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$version" >&2
  sdist=""
  for candidate in "$tmp"/llama_cpp_python-"$version".tar.gz "$tmp"/llama-cpp-python-"$version".tar.gz; do
    if [ -f "$candidate" ]; then sdist="$candidate"; fi
  done
  if [ -z "$sdist" ]; then
    echo "fetch_llama_cpp_src.sh: no sdist for llama-cpp-python==$version in $tmp" >&2
    exit 1
  fi
  tar -xzf "$sdist" -C "$tmp"
  src="$(find "$tmp" -maxdepth 4 -type f -path '*/vendor/llama.cpp/convert_hf_to_gguf.py' | head -1)"
  if [ -z "$src" ]; then
    echo "fetch_llama_cpp_src.sh: vendor/llama.cpp/convert_hf_to_gguf.py missing from $sdist" >&2
    exit 1
  fi
  rm -rf "$dest"
  mv "$(dirname "$src")" "$dest"
fi
echo "$dest"
