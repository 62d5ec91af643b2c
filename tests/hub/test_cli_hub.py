"""`embed` against a Hugging Face Hub served by this test (hub_server.LocalHub): models by name
(ORG/NAME, ORG/NAME:QUANT, hf://ORG/NAME@REVISION), huggingface_hub's cache layout, resumed
downloads, cache reuse without a request, offline mode, TLS, and every error the brief names.
Runs with the Python standard library: python3 tests/hub/test_cli_hub.py [TestClass ...]."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from hub_fixtures import ST_FOLDER, Fixtures, isolated_env, run_embed, vectors  # noqa: E402
from hub_server import GOOD_TOKEN, NO_ACCESS_TOKEN, Fault, LocalHub  # noqa: E402

FIXTURES: Fixtures | None = None


def setUpModule():
    global FIXTURES
    FIXTURES = Fixtures()


def tearDownModule():
    FIXTURES.close()


class HubTest(unittest.TestCase):
    tls = None

    @classmethod
    def setUpClass(cls):
        cls.hub = LocalHub(tls=cls.tls)
        FIXTURES.add_repos(cls.hub)

    @classmethod
    def tearDownClass(cls):
        cls.hub.close()

    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-hub-test-"))
        self.env = isolated_env(self.tmp, self.hub)
        self.hub.reset_log()
        self.hub.faults.clear()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def local(self, tag="Q8_0", *flags) -> bytes:
        return vectors(FIXTURES.gguf[tag], FIXTURES, self.env, self.tmp, *flags)

    def by_name(self, name, *flags) -> bytes:
        return vectors(name, FIXTURES, self.env, self.tmp, *flags)

    def repo_dir(self, repo) -> pathlib.Path:
        return pathlib.Path(self.env["HF_HUB_CACHE"]) / ("models--" + repo.replace("/", "--"))

    def assert_cached(self, repo, path, revision="main"):
        """huggingface_hub's layout: refs/<revision> = commit, snapshots/<commit>/<path> a relative
        symlink to ../../blobs/<etag>, the blob's bytes the file's."""
        commit = self.hub.repos[repo].commit
        root = self.repo_dir(repo)
        self.assertEqual((root / "refs" / revision).read_text(), commit)
        pointer = root / "snapshots" / commit / path
        self.assertTrue(pointer.is_symlink(), pointer)
        f = self.hub.repos[repo].files[path]
        etag = f.sha256 if f.lfs else f.blob_id
        self.assertEqual(os.readlink(pointer), "../" * (2 + path.count("/")) + "blobs/" + etag)
        self.assertEqual((root / "blobs" / etag).read_bytes(), f.data)

    def fails(self, args, code, *phrases, env=None):
        done = run_embed(args, env or self.env, check=False)
        self.assertEqual(done.returncode, code, done.stderr)
        for p in phrases:
            self.assertIn(p, done.stderr)
        return done.stderr


class Download(HubTest):
    def test_gguf_by_name_gives_the_local_files_vectors_and_the_hub_cache_layout(self):
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))
        self.assert_cached("test-org/tiny-gguf", "tiny-Q8_0.gguf")
        commit = self.hub.repos["test-org/tiny-gguf"].commit
        tree = json.loads((self.repo_dir("test-org/tiny-gguf") / "trees" / f"{commit}.json").read_text())
        self.assertEqual(tree["format_version"], 1)
        self.assertEqual(set(tree["files"]), set(self.hub.repos["test-org/tiny-gguf"].files))
        # The model info, every page of the file list (4 entries a page), one HEAD, and the bytes
        # from the LFS store, which never sees a token.
        hub = [(r["method"], r["path"].split("?")[0]) for r in self.hub.requests("hub")]
        self.assertEqual(hub[0], ("GET", "/api/models/test-org/tiny-gguf/revision/main"))
        self.assertEqual(hub[-1], ("HEAD", f"/test-org/tiny-gguf/resolve/{commit}/tiny-Q8_0.gguf"))
        self.assertEqual(len(hub), 1 + 2 + 1, hub)  # 8 files in 2 pages
        self.assertEqual(len(self.hub.requests("lfs", "GET")), 1)
        self.assertTrue(all(r["user_agent"].startswith("embed/") for r in self.hub.requests()))
        # The shared snapshot holds the one file fetched.
        self.assertEqual([p.name for p in (self.repo_dir("test-org/tiny-gguf") / "snapshots" / commit).iterdir()], ["tiny-Q8_0.gguf"])

    def test_a_cached_model_is_used_without_a_request(self):
        first = self.by_name("test-org/tiny-gguf:Q8_0")
        self.hub.reset_log()
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), first)
        self.assertEqual(self.by_name("test-org/tiny-gguf"), first)  # llama.cpp's choice: no Q4_K_M, so Q8_0
        self.assertEqual(self.hub.requests(), [])

    def test_without_symlinks_the_file_moves_into_the_snapshot(self):
        self.env["HF_HUB_DISABLE_SYMLINKS"] = "1"
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))
        f = self.hub.repos["test-org/tiny-gguf"].files["tiny-Q8_0.gguf"]
        pointer = self.repo_dir("test-org/tiny-gguf") / "snapshots" / self.hub.repos["test-org/tiny-gguf"].commit / "tiny-Q8_0.gguf"
        self.assertFalse(pointer.is_symlink())
        self.assertEqual(pointer.read_bytes(), f.data)
        self.assertFalse((self.repo_dir("test-org/tiny-gguf") / "blobs" / f.sha256).exists())  # moved, as huggingface_hub does
        self.hub.reset_log()
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))
        self.assertEqual(self.hub.requests(), [])

    def test_quantization_tags_choose_as_llama_cpp(self):
        self.assertEqual(self.by_name("test-org/tiny-gguf:f16"), self.local("F16"))  # any case; the mmproj file is skipped
        self.assertEqual(self.by_name("test-org/tiny-gguf:BF16"), self.local("BF16"))
        self.assertEqual(self.by_name("test-org/tiny-gguf"), self.local("Q8_0"))
        self.assertNotEqual(self.local("F16"), self.local("Q8_0"))  # the choice is visible in the vectors

    def test_revisions_branches_tags_and_commits(self):
        commit = self.hub.repos["test-org/tiny-gguf"].commit
        self.assertEqual(self.by_name("hf://test-org/tiny-gguf@v1.0:F32"), self.local("F32"))
        self.assert_cached("test-org/tiny-gguf", "tiny-F32.gguf", revision="v1.0")
        self.hub.reset_log()
        self.assertEqual(self.by_name(f"hf://test-org/tiny-gguf:F32@{commit}"), self.local("F32"))
        self.assertEqual(self.hub.requests(), [])  # a commit needs no lookup
        self.fails(["hf://test-org/tiny-gguf@no-such-branch", FIXTURES.input], 4, "has no revision matching 'no-such-branch'")

    def test_a_renamed_repository_is_followed(self):
        self.hub.renamed["old-org/tiny"] = "test-org/tiny-gguf"
        self.assertEqual(self.by_name("old-org/tiny:F16"), self.local("F16"))
        self.assertTrue(any(r["path"].startswith("/old-org/tiny/resolve/") for r in self.hub.requests("hub", "HEAD")))
        self.assertTrue((self.repo_dir("old-org/tiny") / "refs" / "main").exists())  # cached under the name asked for, as huggingface_hub

    def test_a_sentence_transformers_repository_runs_as_its_converted_gguf(self):
        converted = self.tmp / "converted.gguf"
        run_embed(["convert", ST_FOLDER, converted], self.env)
        want = vectors(converted, FIXTURES, self.env, self.tmp)
        self.assertEqual(self.by_name("test-org/tiny-st"), want)
        commit = self.hub.repos["test-org/tiny-st"].commit
        snapshot = self.repo_dir("test-org/tiny-st") / "snapshots" / commit
        got = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if not p.is_dir())
        wanted = sorted(str(p.relative_to(ST_FOLDER)) for p in ST_FOLDER.rglob("*") if not p.is_dir())
        self.assertEqual(got, wanted)  # what the converter reads: no README, no onnx/
        self.assert_cached("test-org/tiny-st", "2_Dense/model.safetensors")
        self.hub.reset_log()
        self.assertEqual(self.by_name("test-org/tiny-st"), want)
        self.assertEqual(self.hub.requests(), [])

    def test_sharded_weights_are_fetched_through_their_index(self):
        self.assertEqual(self.by_name("test-org/tiny-st-sharded"), self.by_name("test-org/tiny-st"))
        shards = [r["path"] for r in self.hub.requests("hub", "HEAD") if "/test-org/tiny-st-sharded/" in r["path"]]
        self.assertEqual(sum(p.endswith("-of-00002.safetensors") for p in shards), 2)

    def test_cache_gguf_converts_once(self):
        converted = self.tmp / "converted.gguf"
        run_embed(["convert", ST_FOLDER, converted, "--type", "q8_0"], self.env)
        want = vectors(converted, FIXTURES, self.env, self.tmp)
        self.assertEqual(self.by_name("test-org/tiny-st", "--cache-gguf", "--convert-type", "q8_0"), want)
        commit = self.hub.repos["test-org/tiny-st"].commit
        cached = pathlib.Path(self.env["EMBED_CACHE"]) / "gguf" / "models--test-org--tiny-st" / f"{commit}-q8_0.gguf"
        stamp = cached.stat().st_mtime_ns
        self.hub.reset_log()
        self.assertEqual(self.by_name("test-org/tiny-st", "--cache-gguf", "--convert-type", "q8_0"), want)
        self.assertEqual(cached.stat().st_mtime_ns, stamp)
        self.assertEqual(self.hub.requests(), [])

    def test_convert_info_and_tokenize_take_names(self):
        mine, theirs = self.tmp / "by-name.gguf", self.tmp / "local.gguf"
        run_embed(["convert", "test-org/tiny-st", mine, "--name", "tiny"], self.env)
        run_embed(["convert", ST_FOLDER, theirs, "--name", "tiny"], self.env)
        self.assertEqual(mine.read_bytes(), theirs.read_bytes())
        info = run_embed(["info", "test-org/tiny-gguf:F16"], self.env).stdout
        self.assertIn("test-org/tiny-gguf:F16 = ", info)
        self.assertIn("tiny-F16.gguf", info)
        by_name = run_embed(["tokenize", "test-org/tiny-gguf:F16", FIXTURES.input], self.env).stdout
        self.assertEqual(by_name, run_embed(["tokenize", FIXTURES.gguf["F16"], FIXTURES.input], self.env).stdout)
        self.assertEqual(len(by_name.splitlines()), 5)

    def test_serve_takes_a_name_and_reports_it(self):
        proc = subprocess.Popen([os.environ.get("EMBED_BIN", str(pathlib.Path(__file__).resolve().parents[2] / "build/tools/embed")),
                                 "serve", "test-org/tiny-gguf:Q8_0", "-p", "0", "-t", "2"], env=self.env, stderr=subprocess.PIPE, text=True)
        try:
            port = None
            for line in proc.stderr:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    port = int(m.group(1))
                    break
            self.assertIsNotNone(port, "embed serve did not start")
            models = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=30))
            self.assertEqual([m["id"] for m in models["data"]], ["test-org/tiny-gguf"])
            body = json.dumps({"input": ["A man is playing a guitar."], "model": "test-org/tiny-gguf"}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", body, {"Content-Type": "application/json"})
            served = json.load(urllib.request.urlopen(req, timeout=30))["data"][0]["embedding"]
            line = run_embed([FIXTURES.gguf["Q8_0"], "-"], self.env, input="A man is playing a guitar.\n").stdout
            self.assertEqual(served, json.loads(line)["embedding"])
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    def test_max_memory_estimates_a_named_model_from_its_fetched_files(self):
        # Under --max-memory a model's first load is estimated before it happens, so the bound holds
        # during that load; a Hub name has no file to estimate from until it is fetched, so it is
        # fetched into the cache first (once: the load then finds it there) and estimated from it.
        proc = subprocess.Popen([os.environ.get("EMBED_BIN", str(pathlib.Path(__file__).resolve().parents[2] / "build/tools/embed")),
                                 "serve", "--model", "a=test-org/tiny-gguf:Q8_0", "--max-memory", "4G", "-p", "0", "-t", "2"],
                                env=self.env, stderr=subprocess.PIPE, text=True)
        try:
            port = None
            for line in proc.stderr:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    port = int(m.group(1))
                    break
            self.assertIsNotNone(port, "embed serve did not start")
            self.assertEqual(self.hub.requests("lfs", "GET"), [], "a model loads on first use, not at start")
            body = json.dumps({"input": ["A man is playing a guitar."], "model": "a"}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", body, {"Content-Type": "application/json"})
            served = json.load(urllib.request.urlopen(req, timeout=60))["data"][0]["embedding"]
            line = run_embed([FIXTURES.gguf["Q8_0"], "-"], self.env, input="A man is playing a guitar.\n").stdout
            self.assertEqual(served, json.loads(line)["embedding"])
            self.assertEqual(len(self.hub.requests("lfs", "GET")), 1, "the estimate's fetch and the load share one download")
        finally:
            proc.terminate()
            _, log = proc.communicate(timeout=60)
        # The log names an expectation only for a non-zero estimate (MiB, rounded).
        self.assertRegex(log, r"loaded model 'a' \(test-org/tiny-gguf:Q8_0\): \d+ MiB resident, expected about \d+ MiB \(estimated from its file\)")


class Resume(HubTest):
    def q8(self):
        return self.hub.repos["test-org/tiny-gguf"].files["tiny-Q8_0.gguf"]

    def test_a_cut_connection_resumes_where_it_stopped(self):
        size = len(self.q8().data)
        self.hub.faults[self.q8().sha256] = Fault(cut_after=size // 3, cut_times=2)
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))
        ranges = [r["range"] for r in self.hub.requests("lfs", "GET")]
        self.assertEqual(ranges, [None, f"bytes={size // 3}-", f"bytes={2 * (size // 3)}-"])
        self.assert_cached("test-org/tiny-gguf", "tiny-Q8_0.gguf")

    def test_a_partial_file_from_an_earlier_run_is_resumed(self):
        f = self.q8()
        blobs = self.repo_dir("test-org/tiny-gguf") / "blobs"
        blobs.mkdir(parents=True)
        (blobs / f"{f.sha256}.incomplete").write_bytes(f.data[:1000])
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))
        self.assertEqual([r["range"] for r in self.hub.requests("lfs", "GET")], ["bytes=1000-"])
        self.assertFalse((blobs / f"{f.sha256}.incomplete").exists())
        self.assert_cached("test-org/tiny-gguf", "tiny-Q8_0.gguf")

    def test_a_server_that_ignores_range_gets_the_file_again(self):
        f = self.q8()
        blobs = self.repo_dir("test-org/tiny-gguf") / "blobs"
        blobs.mkdir(parents=True)
        (blobs / f"{f.sha256}.incomplete").write_bytes(f.data[:1000])
        self.hub.faults[f.sha256] = Fault(ignore_range=True)
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))
        self.assert_cached("test-org/tiny-gguf", "tiny-Q8_0.gguf")


class Errors(HubTest):
    def test_no_such_repository(self):
        self.fails(["test-org/no-such-model", FIXTURES.input], 4, "no file or folder test-org/no-such-model here",
                   "no repository test-org/no-such-model on " + self.hub.endpoint, "HF_TOKEN")

    def test_gated_without_a_token_or_without_access(self):
        self.fails(["test-org/gated-gguf", FIXTURES.input], 4, "gated", "HF_TOKEN", self.hub.endpoint + "/test-org/gated-gguf")
        self.env["HF_TOKEN"] = NO_ACCESS_TOKEN
        self.fails(["test-org/gated-gguf", FIXTURES.input], 4, "gated", "has no access")
        self.env["HF_TOKEN"] = "hf_" + "x" * 34
        self.fails(["test-org/gated-gguf", FIXTURES.input], 4, "invalid credentials")

    def test_gated_with_a_token_and_the_token_stays_on_the_hub(self):
        self.env["HF_TOKEN"] = GOOD_TOKEN
        self.hub.reset_log()
        self.assertEqual(self.by_name("test-org/gated-gguf"), self.local("Q8_0"))
        self.assertTrue(all(r["authorization"] == f"Bearer {GOOD_TOKEN}" for r in self.hub.requests("hub")))
        self.assertTrue(self.hub.requests("lfs") and all(r["authorization"] is None for r in self.hub.requests("lfs")))

    def test_the_token_file_is_read(self):
        home = pathlib.Path(self.env["HF_HOME"])
        home.mkdir(parents=True)
        (home / "token").write_text(GOOD_TOKEN + "\n")
        self.assertEqual(self.by_name("test-org/gated-gguf"), self.local("Q8_0"))
        self.env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
        shutil.rmtree(self.env["HF_HUB_CACHE"])
        self.fails(["test-org/gated-gguf", FIXTURES.input], 4, "gated")

    def test_no_file_with_that_quantization_lists_those_there(self):
        self.fails(["test-org/tiny-gguf:Q5_K_M", FIXTURES.input], 3, "no GGUF file with the quantization Q5_K_M",
                   "BF16 (tiny-BF16.gguf), F16 (tiny-F16.gguf), F32 (tiny-F32.gguf), Q4_0 (tiny-Q4_0-00001-of-00002.gguf), Q8_0 (tiny-Q8_0.gguf)")
        self.fails(["test-org/tiny-gguf:Q4_0", FIXTURES.input], 1, "split GGUF")
        self.fails(["test-org/tiny-st:Q8_0", FIXTURES.input], 3, "has no GGUF files")
        self.fails(["test-org/pytorch-only", FIXTURES.input], 1, "no safetensors weights", "pytorch_model.bin")

    def test_no_network_says_what_to_set(self):
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.env["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
        self.fails(["test-org/tiny-gguf", FIXTURES.input], 4, "cannot reach the Hugging Face Hub", "HF_ENDPOINT", "HF_HUB_OFFLINE=1")

    def test_a_checksum_mismatch_leaves_nothing_to_use(self):
        f = self.hub.repos["test-org/tiny-gguf"].files["tiny-F32.gguf"]
        self.hub.faults[f.sha256] = Fault(corrupt=True)
        self.fails(["test-org/tiny-gguf:F32", FIXTURES.input], 1, "checksum mismatch for tiny-F32.gguf", f.sha256, "not used")
        root = self.repo_dir("test-org/tiny-gguf")
        self.assertEqual(list((root / "blobs").iterdir()), [])
        self.assertFalse((root / "snapshots" / self.hub.repos["test-org/tiny-gguf"].commit / "tiny-F32.gguf").exists())
        self.hub.faults.clear()
        self.assertEqual(self.by_name("test-org/tiny-gguf:F32"), self.local("F32"))

    def test_a_file_list_that_points_outside_the_cache_is_refused(self):
        self.hub.add_repo("test-org/escape", {"../../escape-Q8_0.gguf": FIXTURES.gguf["Q8_0"].read_bytes()})
        self.fails(["test-org/escape", FIXTURES.input], 1, "cannot be a file of the repository")
        self.assertFalse((pathlib.Path(self.env["HF_HUB_CACHE"]) / "escape-Q8_0.gguf").exists())
        self.assertEqual(self.hub.requests("lfs"), [])

    def test_an_input_file_after_a_name_is_asked_for(self):
        self.fails(["test-org/tiny-gguf"], 2, "if it is a model name, give an input file after it")
        self.fails(["hf://test-org", FIXTURES.input], 3, "is not a Hub name")
        self.assertEqual(self.hub.requests(), [])


class Offline(HubTest):
    def test_offline_uses_the_cache_and_asks_nothing(self):
        want = self.by_name("test-org/tiny-gguf:Q8_0")
        self.hub.reset_log()
        self.env["HF_HUB_OFFLINE"] = "1"
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), want)
        self.fails(["test-org/tiny-gguf:F16", FIXTURES.input], 4, "HF_HUB_OFFLINE is set", self.env["HF_HUB_CACHE"])
        self.fails(["test-org/tiny-st", FIXTURES.input], 4, "HF_HUB_OFFLINE is set")
        self.assertEqual(self.hub.requests(), [])


def make_certificate(folder: pathlib.Path):
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return str(cert), str(key)


class Tls(HubTest):
    @classmethod
    def setUpClass(cls):
        cls.certs = pathlib.Path(tempfile.mkdtemp(prefix="embed-hub-tls-"))
        cls.tls = make_certificate(cls.certs)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.certs, ignore_errors=True)

    def test_https_with_the_servers_certificate_and_without(self):
        self.assertTrue(self.hub.endpoint.startswith("https://"))
        self.fails(["test-org/tiny-gguf", FIXTURES.input], 4, "cannot reach the Hugging Face Hub", "certificate")
        self.env["CURL_CA_BUNDLE"] = self.tls[0]  # read before REQUESTS_CA_BUNDLE and SSL_CERT_FILE
        self.assertEqual(self.by_name("test-org/tiny-gguf:Q8_0"), self.local("Q8_0"))


class Progress(HubTest):
    def test_a_bar_on_a_terminal_and_a_line_in_a_log(self):
        done = run_embed(["test-org/tiny-gguf:F16", FIXTURES.input, "-o", self.tmp / "a.jsonl"], self.env)
        self.assertIn("embed: downloading test-org/tiny-gguf/tiny-F16.gguf (", done.stderr)
        self.assertNotIn("\r", done.stderr)
        # script(1) gives the command a terminal; its transcript is what the terminal showed.
        command = " ".join(f"'{a}'" for a in [os.environ.get("EMBED_BIN", str(pathlib.Path(__file__).resolve().parents[2] / "build/tools/embed")),
                                               "test-org/tiny-gguf:F32", str(FIXTURES.input), "-o", str(self.tmp / "b.jsonl")])
        shown = subprocess.run(["script", "-qec", command, "/dev/null"], env=self.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(shown.returncode, 0, shown.stdout)
        self.assertRegex(shown.stdout, r"test-org/tiny-gguf/tiny-F32\.gguf \[#+\] 100% ")
        self.env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        done = run_embed(["test-org/tiny-gguf:BF16", FIXTURES.input, "-o", self.tmp / "c.jsonl"], self.env)
        self.assertNotIn("downloading", done.stderr)


class RealModel(HubTest):
    """README's by-name command on the real all-MiniLM-L6-v2 files (tools/models.sh minilm, the
    folder the PyPI wheel holds, served as the Hub repository): the matrix command 1 prints."""

    @classmethod
    def setUpClass(cls):
        folder = os.environ.get("EMBED_MINILM_DIR", "")
        gguf = os.environ.get("EMBED_MINILM_GGUF_F16", "")
        if not (os.path.isfile(os.path.join(folder, "model.safetensors")) and os.path.isfile(gguf)):
            raise RuntimeError("the real MiniLM is needed: export EMBED_MINILM_DIR=$(tools/models.sh minilm) "
                               "EMBED_MINILM_GGUF_F16=$(tools/models.sh minilm-gguf f16)")
        cls.folder, cls.gguf = pathlib.Path(folder), gguf
        super().setUpClass()
        cls.hub.add_folder("sentence-transformers/all-MiniLM-L6-v2", folder)

    def test_readmes_named_model_prints_command_1s_matrix(self):
        sentences = pathlib.Path(__file__).resolve().parents[2] / "examples" / "sentences.txt"
        named = run_embed(["sentence-transformers/all-MiniLM-L6-v2", "--similarity", sentences], self.env).stdout
        self.assertEqual(named, run_embed([self.gguf, "--similarity", sentences], self.env).stdout)
        self.assertIn("1.000  0.804", named)  # README's first row
        commit = self.hub.repos["sentence-transformers/all-MiniLM-L6-v2"].commit
        snapshot = self.repo_dir("sentence-transformers/all-MiniLM-L6-v2") / "snapshots" / commit
        fetched = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if not p.is_dir())
        self.assertEqual(fetched, ["1_Pooling/config.json", "config.json", "config_sentence_transformers.json", "data_config.json",
                                   "model.safetensors", "modules.json", "sentence_bert_config.json", "special_tokens_map.json",
                                   "tokenizer.json", "tokenizer_config.json"])  # not README.md, vocab.txt, .gitattributes


class LocalFolder(unittest.TestCase):
    """An HF folder on disk (no hub): run directly, in memory or through the cache."""

    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-folder-test-"))
        self.env = isolated_env(self.tmp, None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_folder_equals_its_conversion_bit_for_bit(self):
        for t in ("f16", "f32", "q8_0"):
            converted = self.tmp / f"converted-{t}.gguf"
            run_embed(["convert", ST_FOLDER, converted, "--type", t], self.env)
            want = vectors(converted, FIXTURES, self.env, self.tmp)
            flags = [] if t == "f16" else ["--convert-type", t]
            self.assertEqual(vectors(ST_FOLDER, FIXTURES, self.env, self.tmp, *flags), want, t)
            self.assertEqual(vectors(ST_FOLDER, FIXTURES, self.env, self.tmp, "--cache-gguf", *flags), want, t)
        info = run_embed(["info", ST_FOLDER], self.env).stdout
        self.assertIn("an HF folder converted in memory", info.splitlines()[0])
        self.assertIn("dense_2.weight", info)
        cached = list((pathlib.Path(self.env["EMBED_CACHE"]) / "gguf" / "folders").glob("bert-dense-tiny-*-f16.gguf"))
        self.assertEqual(len(cached), 1)
        self.assertEqual(cached[0].read_bytes(), (self.tmp / "converted-f16.gguf").read_bytes())

    def test_kv_layers_writes_a_folders_conversion_with_its_band(self):
        folder = ST_FOLDER.parent / "qwen3-embedding-tiny"  # a decoder
        texts = self.tmp / "texts.txt"
        words = "the a cat dog runs sits on mat under tree blue red green big small house car road river".split()
        texts.write_text("".join(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(3 + i % 9)) + "\n" for i in range(60)))
        run_embed(["convert", folder, self.tmp / "converted.gguf"], self.env)
        run_embed(["kv-layers", self.tmp / "converted.gguf", texts, "-o", self.tmp / "from-file.gguf"], self.env)
        run_embed(["kv-layers", folder, texts, "-o", self.tmp / "from-folder.gguf"], self.env)
        self.assertEqual((self.tmp / "from-folder.gguf").read_bytes(), (self.tmp / "from-file.gguf").read_bytes())

    def test_no_such_path(self):
        done = run_embed([self.tmp / "nothing-here", FIXTURES.input], self.env, check=False)
        self.assertEqual(done.returncode, 4)
        self.assertIn("nothing-here: no such file or folder", done.stderr)
        done = run_embed([self.tmp, FIXTURES.input], self.env, check=False)
        self.assertIn("without config.json", done.stderr)


if __name__ == "__main__":
    unittest.main()
