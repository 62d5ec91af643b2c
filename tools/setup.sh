#!/usr/bin/env bash
# Installs what building and testing embed needs, from Debian packages only. Idempotent: it
# installs nothing when everything is already there. Used by README.md and .ci/run.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  catch2 nlohmann-json3-dev libutf8proc-dev libcli11-dev libpcre2-dev
  libboost-dev libcpp-httplib-dev    # embed serve (Boost.Beast) and its tests (cpp-httplib client)
  libcurl4-openssl-dev openssl       # models by name from the Hugging Face Hub (source/http.cpp); TLS test certificates
  clang libclang-rt-14-dev          # libFuzzer + sanitizers for tools/fuzz
  chromium chromium-driver python3-selenium   # the playground page's browser test (tests/server/playground_test.py)
  wrk                                # the server's load tests (tools/server/bench, tests/server/abuse_test.py)
  python3 python3-venv python3-pip python3-dev unzip   # python3-dev: the Python module (pyproject.toml)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi
