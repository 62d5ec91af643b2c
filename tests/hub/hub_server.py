"""A Hugging Face Hub served by the tests themselves (Python standard library only).

It answers the routes huggingface_hub and `embed` call for downloads, with the Hub's headers and
error conventions (docs/cli.md, /work notes: hub-and-apis.md §1-§2):
  GET  /api/models/ORG/NAME[/revision/REV]      model info: id, sha (the commit), gated, siblings
  GET  /api/models/ORG/NAME/tree/REV[/PATH]     file list, paginated with Link: <...>; rel="next"
  HEAD /ORG/NAME/resolve/REV/PATH               ETag, X-Repo-Commit, Content-Length; LFS files answer
  GET  /ORG/NAME/resolve/REV/PATH               302 to the LFS store (another port, so another origin)
                                                with X-Linked-Etag (sha256) and X-Linked-Size
and an "LFS store" on a second port: GET /lfs/SHA256 with Range support. Errors carry X-Error-Code
(RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo) and X-Error-Message as the Hub sends them.

Every request is recorded (server, method, path, headers) so tests can count them, and faults can
be injected per LFS object: cut the connection after N bytes, serve corrupted bytes, ignore Range.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import socketserver
import ssl
import threading
import urllib.parse
from dataclasses import dataclass, field

LFS_SUFFIXES = (".gguf", ".safetensors", ".model", ".bin", ".onnx")
GOOD_TOKEN = "hf_" + "testaccess" + "0" * 24  # can read every repository, gated ones too
NO_ACCESS_TOKEN = "hf_" + "testnoaccess" + "0" * 22  # a valid account that did not accept the gated terms


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class RepoFileData:
    path: str
    data: bytes

    @property
    def lfs(self) -> bool:
        return self.path.endswith(LFS_SUFFIXES)

    @property
    def blob_id(self) -> str:
        return git_blob_sha1(self.data)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def tree_entry(self) -> dict:
        e = {"type": "file", "oid": self.blob_id, "size": len(self.data), "path": self.path}
        if self.lfs:
            e["lfs"] = {"oid": self.sha256, "size": len(self.data), "pointerSize": 134}
        return e


@dataclass
class Repo:
    repo_id: str
    files: dict[str, RepoFileData]
    gated: bool = False
    refs: dict[str, str] = field(default_factory=dict)  # branch or tag -> commit
    commit: str = ""


@dataclass
class Fault:
    cut_after: int | None = None  # close the connection after this many body bytes
    cut_times: int = 1            # ... on this many requests
    corrupt: bool = False         # flip one byte in every answer
    ignore_range: bool = False    # answer 200 with the whole file to a Range request


class LocalHub:
    """The two servers (hub, LFS store) on 127.0.0.1, in threads; `endpoint` is HF_ENDPOINT."""

    def __init__(self, tls: tuple[str, str] | None = None, page_size: int = 4):
        self.repos: dict[str, Repo] = {}
        self.log: list[dict] = []
        self.faults: dict[str, Fault] = {}  # by sha256
        self.renamed: dict[str, str] = {}  # old repository id -> new: answered with a redirect on the same host
        self.page_size = page_size
        self.lock = threading.Lock()
        self._hub = _Server(("127.0.0.1", 0), _HubHandler, self)
        self._lfs = _Server(("127.0.0.1", 0), _LfsHandler, self)
        scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._hub.socket = context.wrap_socket(self._hub.socket, server_side=True)
            scheme = "https"
        self.endpoint = f"{scheme}://127.0.0.1:{self._hub.server_address[1]}"
        self.lfs_base = f"http://127.0.0.1:{self._lfs.server_address[1]}"
        self._threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (self._hub, self._lfs)]
        for t in self._threads:
            t.start()

    def close(self) -> None:
        for s in (self._hub, self._lfs):
            s.shutdown()
            s.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- repositories ----
    def add_repo(self, repo_id: str, files: dict[str, bytes], gated: bool = False, tags: tuple[str, ...] = ()) -> Repo:
        data = {p: RepoFileData(p, b) for p, b in files.items()}
        digest = hashlib.sha1(repo_id.encode())
        for p in sorted(data):
            digest.update(p.encode() + data[p].sha256.encode())
        repo = Repo(repo_id, data, gated, commit=digest.hexdigest())
        repo.refs = {"main": repo.commit, **{t: repo.commit for t in tags}}
        self.repos[repo_id] = repo
        return repo

    def add_folder(self, repo_id: str, folder: str, extra: dict[str, bytes] | None = None, **kw) -> Repo:
        files = {}
        for root, _, names in os.walk(folder):
            for n in names:
                full = os.path.join(root, n)
                with open(full, "rb") as f:
                    files[os.path.relpath(full, folder).replace(os.sep, "/")] = f.read()
        files.update(extra or {})
        return self.add_repo(repo_id, files, **kw)

    # ---- the request log ----
    def requests(self, server: str | None = None, method: str | None = None) -> list[dict]:
        with self.lock:
            return [r for r in self.log if (server is None or r["server"] == server) and (method is None or r["method"] == method)]

    def reset_log(self) -> None:
        with self.lock:
            self.log.clear()

    def record(self, server: str, handler: http.server.BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.log.append({"server": server, "method": handler.command, "path": handler.path,
                             "range": handler.headers.get("Range"), "authorization": handler.headers.get("Authorization"),
                             "user_agent": handler.headers.get("User-Agent")})

    def blob(self, sha256: str) -> RepoFileData | None:
        for repo in self.repos.values():
            for f in repo.files.values():
                if f.lfs and f.sha256 == sha256:
                    return f
        return None


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, hub: LocalHub):
        super().__init__(address, handler)
        self.hub = hub


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_name = ""

    def log_message(self, *args):  # quiet
        pass

    @property
    def hub(self) -> LocalHub:
        return self.server.hub

    def answer(self, status: int, body: bytes = b"", headers: dict | None = None, content_type: str = "application/json"):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status: int, code: str | None, message: str, extra: dict | None = None):
        headers = {"X-Error-Message": message, **(extra or {})}
        if code:
            headers["X-Error-Code"] = code
        self.answer(status, json.dumps({"error": message}).encode(), headers)


class _HubHandler(_Handler):
    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def token(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else None

    def route(self):
        self.hub.record("hub", self)
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        token = self.token()
        if token is not None and token not in (GOOD_TOKEN, NO_ACCESS_TOKEN):
            return self.error(401, None, "Invalid credentials in Authorization header")
        at = 2 if parts[:2] == ["api", "models"] else 0
        old = "/".join(parts[at:at + 2])
        if old in self.hub.renamed:  # a renamed repository: the Hub redirects, relative, to the new name
            target = url.path.replace("/" + old + "/", "/" + self.hub.renamed[old] + "/", 1) + ("?" + url.query if url.query else "")
            return self.answer(307, b"", {"Location": target})
        if len(parts) >= 4 and parts[0] == "api" and parts[1] == "models":
            return self.api(parts[2] + "/" + parts[3], parts[4:], url.query)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        self.error(404, None, "Not Found")

    def find_repo(self, repo_id: str) -> Repo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            # Anonymous callers get 401 (a private repository looks the same), authenticated ones 404.
            self.error(404 if self.token() else 401, "RepoNotFound", "Repository not found")
        return repo

    def find_commit(self, repo: Repo, revision: str) -> str | None:
        if revision in repo.refs:
            return repo.refs[revision]
        if revision == repo.commit:
            return revision
        self.error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return None

    def api(self, repo_id: str, rest: list[str], query: str):
        repo = self.find_repo(repo_id)
        if repo is None:
            return
        if not rest or rest[0] == "revision":
            commit = self.find_commit(repo, rest[1] if len(rest) > 1 else "main")
            if commit:
                info = {"id": repo_id, "modelId": repo_id, "sha": commit, "private": False, "gated": "manual" if repo.gated else False,
                        "disabled": False, "siblings": [{"rfilename": p} for p in sorted(repo.files)]}
                self.answer(200, json.dumps(info).encode())
            return
        if rest[0] == "tree" and len(rest) >= 2:
            commit = self.find_commit(repo, rest[1])
            if commit:
                self.tree(repo, "/".join(rest[2:]), urllib.parse.parse_qs(query))
            return
        self.error(404, None, "Not Found")

    def tree(self, repo: Repo, prefix: str, query: dict):
        entries, dirs = [], set()
        for p in sorted(repo.files):
            if prefix and not p.startswith(prefix + "/"):
                continue
            parts = p.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in dirs and (not prefix or d.startswith(prefix + "/")):
                    dirs.add(d)
                    entries.append({"type": "directory", "oid": git_blob_sha1(d.encode()), "size": 0, "path": d})
            entries.append(repo.files[p].tree_entry())
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start:start + self.hub.page_size]
        headers = {}
        if start + self.hub.page_size < len(entries):
            q = {k: v[0] for k, v in query.items()}
            q["cursor"] = str(start + self.hub.page_size)
            headers["Link"] = f'<{self.hub.endpoint}{urllib.parse.urlsplit(self.path).path}?{urllib.parse.urlencode(q)}>; rel="next"'
        self.answer(200, json.dumps(page).encode(), headers)

    def resolve(self, repo_id: str, revision: str, path: str):
        repo = self.find_repo(repo_id)
        if repo is None:
            return
        if repo.gated:
            if self.token() is None:
                return self.error(401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access to it and be "
                                                    "authenticated to access it. Please log in.")
            if self.token() != GOOD_TOKEN:
                return self.error(403, "GatedRepo", f"Access to model {repo_id} is restricted and you are not in the authorized list.")
        commit = self.find_commit(repo, revision)
        if commit is None:
            return
        f = repo.files.get(path)
        if f is None:
            return self.error(404, "EntryNotFound", f"{path} does not exist on \"{revision}\"", {"X-Repo-Commit": commit})
        if f.lfs:
            location = f"{self.hub.lfs_base}/lfs/{f.sha256}?signature=test"
            body = f"Found. Redirecting to {location}".encode()
            return self.answer(302, body, {"Location": location, "X-Repo-Commit": commit, "X-Linked-Etag": f'"{f.sha256}"',
                                           "X-Linked-Size": str(len(f.data)), "ETag": f'"{f.blob_id}"'}, "text/plain")
        self.answer(200, f.data, {"ETag": f'"{f.blob_id}"', "X-Repo-Commit": commit, "Accept-Ranges": "bytes"}, "text/plain")


class _LfsHandler(_Handler):
    def do_GET(self):
        self.hub.record("lfs", self)
        parts = urllib.parse.urlsplit(self.path).path.split("/")
        f = self.hub.blob(parts[-1]) if len(parts) == 3 and parts[1] == "lfs" else None
        if f is None:
            return self.error(404, None, "no such object")
        fault = self.hub.faults.get(f.sha256, Fault())
        data = f.data
        if fault.corrupt:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        start, status, headers = 0, 200, {"Accept-Ranges": "bytes", "ETag": f'"{f.sha256}"'}
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and not fault.ignore_range:
            start = int(rng[len("bytes="):].split("-")[0])
            if start >= len(data):
                return self.answer(416, b"", {"Content-Range": f"bytes */{len(data)}"})
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        body = data[start:]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with self.hub.lock:
            cut = fault.cut_after is not None and fault.cut_times > 0
            if cut:
                fault.cut_times -= 1
        if cut and fault.cut_after < len(body):
            self.wfile.write(body[:fault.cut_after])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # the connection drops in the middle of the body
            return
        self.wfile.write(body)
