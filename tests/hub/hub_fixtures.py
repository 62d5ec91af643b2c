"""The repositories of the test hub (hub_server.LocalHub), built from committed fixtures, and what
the hub tests share: the embed command, an isolated environment per test, vectors as bytes.

  test-org/tiny-gguf     GGUF files of tests/convert/fixtures/bert-dense-tiny converted by `embed
                         convert` (F32, F16, BF16, Q8_0), an mmproj file and a split Q4_0 pair that
                         must never be chosen, a README; tags v1.0 and main
  test-org/tiny-st       the sentence-transformers folder itself (Pooling, Dense, prompts), plus a
                         README and an onnx/ folder that embed must not download
  test-org/tiny-st-sharded  the same with its weights in two safetensors shards and their index
  test-org/gated-gguf    a gated copy of the Q8_0 file
  test-org/pytorch-only  config and tokenizer with pytorch_model.bin weights only
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile

from hub_server import LocalHub

ROOT = pathlib.Path(__file__).resolve().parents[2]
ST_FOLDER = ROOT / "tests" / "convert" / "fixtures" / "bert-dense-tiny"
TYPES = {"F32": "f32", "F16": "f16", "BF16": "bf16", "Q8_0": "q8_0"}
TEXTS = ["A man is playing a guitar.", "Someone is playing an acoustic guitar on a stage.", "Café crème, naïve résumé.",
         "東京は日本の首都です。", "a"]


def embed_bin() -> str:
    path = os.environ.get("EMBED_BIN", str(ROOT / "build" / "tools" / "embed"))
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"the embed command is needed ({path}); build it or set EMBED_BIN")
    return path


class Fixtures:
    """The GGUF conversions and the input file, made once in a temporary folder."""

    def __init__(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="embed-hub-fixtures-"))
        self.gguf = {}
        for tag, t in TYPES.items():
            out = self.dir / f"tiny-{tag}.gguf"
            subprocess.run([embed_bin(), "convert", str(ST_FOLDER), str(out), "--type", t], check=True, capture_output=True)
            self.gguf[tag] = out
        self.input = self.dir / "input.txt"
        self.input.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def add_repos(self, hub: LocalHub) -> None:
        read = lambda p: pathlib.Path(p).read_bytes()
        gguf_files = {f"tiny-{tag}.gguf": read(p) for tag, p in self.gguf.items()}
        gguf_files.update({
            "README.md": b"# tiny-gguf\nA test repository.\n",
            "mmproj-tiny-F16.gguf": read(self.gguf["F16"]),
            "tiny-Q4_0-00001-of-00002.gguf": b"GGUF split part 1",
            "tiny-Q4_0-00002-of-00002.gguf": b"GGUF split part 2",
        })
        hub.add_repo("test-org/tiny-gguf", gguf_files, tags=("v1.0",))
        hub.add_folder("test-org/tiny-st", str(ST_FOLDER), extra={"README.md": b"# tiny-st\n", "onnx/model.onnx": b"not needed" * 100})
        sharded = {p: f.data for p, f in hub.repos["test-org/tiny-st"].files.items() if p != "model.safetensors" and not p.startswith("onnx/")}
        sharded.update(shard_safetensors(read(ST_FOLDER / "model.safetensors")))
        hub.add_repo("test-org/tiny-st-sharded", sharded)
        hub.add_repo("test-org/gated-gguf", {"tiny-Q8_0.gguf": read(self.gguf["Q8_0"]), "README.md": b"# gated\n"}, gated=True)
        hub.add_repo("test-org/pytorch-only", {"config.json": read(ST_FOLDER / "config.json"), "tokenizer.json": read(ST_FOLDER / "tokenizer.json"),
                                               "pytorch_model.bin": b"\x80\x02 pickled weights"})


def shard_safetensors(data: bytes) -> dict[str, bytes]:
    """A safetensors file split in two shards with the index transformers writes."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    names = sorted(k for k in header if k != "__metadata__")
    parts = [names[: len(names) // 2], names[len(names) // 2:]]
    files, weight_map = {}, {}
    for i, part in enumerate(parts, 1):
        shard = f"model-{i:05d}-of-{len(parts):05d}.safetensors"
        head, blob = {}, b""
        for name in part:
            begin, end = header[name]["data_offsets"]
            head[name] = dict(header[name], data_offsets=[len(blob), len(blob) + end - begin])
            blob += body[begin:end]
            weight_map[name] = shard
        encoded = json.dumps(head).encode()
        encoded += b" " * (-len(encoded) % 8)
        files[shard] = len(encoded).to_bytes(8, "little") + encoded + blob
    files["model.safetensors.index.json"] = json.dumps({"metadata": {"total_size": len(body)}, "weight_map": weight_map}).encode()
    return files


def isolated_env(tmp: pathlib.Path, hub: LocalHub | None) -> dict:
    """An environment with its own caches and no token: HF_HUB_CACHE, EMBED_CACHE and HOME under `tmp`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_", "EMBED_CACHE"))}
    env.update({"HOME": str(tmp / "home"), "HF_HOME": str(tmp / "hf-home"), "HF_HUB_CACHE": str(tmp / "hf-cache"),
                "EMBED_CACHE": str(tmp / "embed-cache"), "HF_HUB_DISABLE_TELEMETRY": "1",
                "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"})  # the test hub is local, whatever proxy is set
    if hub is not None:
        env["HF_ENDPOINT"] = hub.endpoint
    return env


def run_embed(args, env, check=True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([embed_bin(), *map(str, args)], env=env, capture_output=True, text=True, timeout=300, **kw)
    if check and done.returncode != 0:
        raise AssertionError(f"embed {' '.join(map(str, args))} failed ({done.returncode}): {done.stderr}")
    return done


def vectors(model, fixtures: Fixtures, env, tmp: pathlib.Path, *flags) -> bytes:
    """The raw float32 rows `embed MODEL input.txt` writes."""
    out = tmp / "rows.raw"
    run_embed([model, fixtures.input, "-f", "raw", "-o", out, "--threads", "2", *flags], env)
    return out.read_bytes()
