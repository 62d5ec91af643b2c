"""huggingface_hub's own client (pinned in tools/hub/requirements.txt, its virtualenv made by
tools/hub/setup_venv.sh) and `embed` share one Hugging Face cache: against the same test hub,
each downloads into the layout the other reads, so a model fetched by one is used by the other
without a byte fetched (counted by the hub), and both lay the same files out the same way.
huggingface_hub runs in a child process (its settings are read at import) with
$EMBED_HUB_PYTHON: python3 tests/hub/test_hf_interop.py."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from hub_fixtures import ROOT, ST_FOLDER, Fixtures, isolated_env, run_embed, vectors  # noqa: E402
from hub_server import LocalHub  # noqa: E402

FIXTURES: Fixtures | None = None
HUB: LocalHub | None = None


def hub_python() -> str:
    python = os.environ.get("EMBED_HUB_PYTHON", os.path.expanduser("~/.cache/embed/venv-hub/bin/python"))
    if not os.access(python, os.X_OK):
        raise RuntimeError(f"huggingface_hub's virtualenv is missing ({python}): run tools/hub/setup_venv.sh (tools/test.sh does)")
    return python


def setUpModule():
    global FIXTURES, HUB
    FIXTURES = Fixtures()
    HUB = LocalHub()
    FIXTURES.add_repos(HUB)


def tearDownModule():
    HUB.close()
    FIXTURES.close()


def layout(repo_dir: pathlib.Path) -> dict:
    """A cache folder as data: refs, blobs (name -> size), snapshot entries (path -> link target)."""
    out = {"refs": {}, "blobs": {}, "snapshots": {}}
    for p in sorted(repo_dir.rglob("*")):
        rel = p.relative_to(repo_dir)
        if rel.parts[0] == "refs" and p.is_file():
            out["refs"][str(rel)] = p.read_text()
        elif rel.parts[0] == "blobs":
            out["blobs"][rel.name] = p.stat().st_size
        elif rel.parts[0] == "snapshots" and p.is_symlink():
            out["snapshots"][str(rel)] = os.readlink(p)
    return out


class Interop(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-hf-interop-"))
        self.env = isolated_env(self.tmp, HUB)
        HUB.reset_log()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def hf(self, code: str, env=None) -> str:
        """Runs `code` with huggingface_hub imported as hh; returns what it prints."""
        done = subprocess.run([hub_python(), "-c", "import huggingface_hub as hh, json\n" + code], env=env or self.env,
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def repo_dir(self, repo: str, env=None) -> pathlib.Path:
        return pathlib.Path((env or self.env)["HF_HUB_CACHE"]) / ("models--" + repo.replace("/", "--"))

    def test_the_client_is_the_pinned_one(self):
        pinned = (ROOT / "tools" / "hub" / "requirements.txt").read_text()
        self.assertIn(f"huggingface_hub=={self.hf('print(hh.__version__)').strip()}", pinned)

    def test_huggingface_hub_downloads_and_embed_uses_them_without_a_request(self):
        self.hf("hh.snapshot_download('test-org/tiny-st')\nhh.hf_hub_download('test-org/tiny-gguf', 'tiny-Q8_0.gguf')")
        self.assertTrue(HUB.requests("lfs", "GET"))  # huggingface_hub did download through the test hub
        HUB.reset_log()
        converted = self.tmp / "converted.gguf"
        run_embed(["convert", ST_FOLDER, converted], self.env)
        self.assertEqual(vectors("test-org/tiny-st", FIXTURES, self.env, self.tmp), vectors(converted, FIXTURES, self.env, self.tmp))
        self.assertEqual(vectors("test-org/tiny-gguf:Q8_0", FIXTURES, self.env, self.tmp),
                         vectors(FIXTURES.gguf["Q8_0"], FIXTURES, self.env, self.tmp))
        self.assertEqual(HUB.requests(), [])

    def test_embed_downloads_and_huggingface_hub_uses_them_without_a_byte_fetched(self):
        vectors("test-org/tiny-gguf:F16", FIXTURES, self.env, self.tmp)
        vectors("test-org/tiny-st", FIXTURES, self.env, self.tmp)
        HUB.reset_log()
        offline = dict(self.env, HF_HUB_OFFLINE="1")
        path = self.hf("print(hh.hf_hub_download('test-org/tiny-gguf', 'tiny-F16.gguf'))", offline).strip()
        self.assertEqual(pathlib.Path(path).read_bytes(), FIXTURES.gguf["F16"].read_bytes())
        fetched = sorted(str(p.relative_to(ST_FOLDER)) for p in ST_FOLDER.rglob("*") if p.is_file())
        folder = self.hf(f"print(hh.snapshot_download('test-org/tiny-st', allow_patterns={fetched!r}))", offline).strip()
        self.assertEqual(sorted(str(p.relative_to(folder)) for p in pathlib.Path(folder).rglob("*") if p.is_file()), fetched)
        self.assertEqual(HUB.requests(), [])
        # Online, huggingface_hub checks each file's metadata and downloads nothing.
        self.hf("hh.hf_hub_download('test-org/tiny-gguf', 'tiny-F16.gguf')\n"
                f"hh.snapshot_download('test-org/tiny-st', allow_patterns={fetched!r})")
        self.assertTrue(HUB.requests("hub"))
        self.assertEqual(HUB.requests("lfs"), [])
        self.assertEqual([r for r in HUB.requests("hub", "GET") if "/resolve/" in r["path"]], [])
        # Its cache scanner finds both repositories whole, with nothing to warn about.
        report = json.loads(self.hf(
            "r = hh.scan_cache_dir()\n"
            "print(json.dumps({'warnings': [str(w) for w in r.warnings], 'repos': {x.repo_id: {'refs': sorted(x.refs), "
            "'files': sorted(f.file_name for rev in x.revisions for f in rev.files), 'size': x.size_on_disk} for x in r.repos}}))"))
        self.assertEqual(report["warnings"], [])
        self.assertEqual(report["repos"]["test-org/tiny-gguf"]["files"], ["tiny-F16.gguf"])
        self.assertEqual(report["repos"]["test-org/tiny-gguf"]["refs"], ["main"])
        self.assertEqual(report["repos"]["test-org/tiny-gguf"]["size"], FIXTURES.gguf["F16"].stat().st_size)
        self.assertEqual(len(report["repos"]["test-org/tiny-st"]["files"]), len(fetched))

    def test_both_lay_out_the_same_files_the_same_way(self):
        theirs = dict(self.env, HF_HUB_CACHE=str(self.tmp / "theirs"))
        fetched = sorted(str(p.relative_to(ST_FOLDER)) for p in ST_FOLDER.rglob("*") if p.is_file())
        self.hf(f"hh.snapshot_download('test-org/tiny-st', allow_patterns={fetched!r})\n"
                "hh.hf_hub_download('test-org/tiny-gguf', 'tiny-Q8_0.gguf')\n"
                "hh.hf_hub_download('test-org/tiny-gguf', 'tiny-Q8_0.gguf', revision='v1.0')", theirs)
        vectors("test-org/tiny-st", FIXTURES, self.env, self.tmp)
        vectors("test-org/tiny-gguf:Q8_0", FIXTURES, self.env, self.tmp)
        vectors("hf://test-org/tiny-gguf@v1.0:Q8_0", FIXTURES, self.env, self.tmp)
        for repo in ("test-org/tiny-st", "test-org/tiny-gguf"):
            self.assertEqual(layout(self.repo_dir(repo)), layout(self.repo_dir(repo, theirs)), repo)
        # The tree listing huggingface_hub caches for a snapshot is the one embed caches.
        commit = HUB.repos["test-org/tiny-st"].commit
        ours = json.loads((self.repo_dir("test-org/tiny-st") / "trees" / f"{commit}.json").read_text())
        self.assertEqual(ours, json.loads((self.repo_dir("test-org/tiny-st", theirs) / "trees" / f"{commit}.json").read_text()))


if __name__ == "__main__":
    unittest.main()
