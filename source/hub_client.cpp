// HubClient: requests, the Hub's error conventions (X-Error-Code, 401 for missing and private
// repositories alike), resumable downloads into the cache (file_download.py's flow).
#include "source/hub_client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "source/progress.h"
#include "source/sha256.h"

#ifndef EMBED_VERSION
#define EMBED_VERSION "dev"
#endif

namespace embed::source {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxRedirects = 10;
constexpr int kDownloadRetries = 5;  // transfers cut or stalled in a row (huggingface_hub's http_get)

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) i++;
  return s.substr(i);
}

double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end || d <= 0) fail(ErrorKind::InvalidArgument, std::string(name) + "='" + v + "' is not a positive number of seconds");
  return d;
}

std::optional<std::string> token_from_env() {
  if (env_truthy("HF_HUB_DISABLE_IMPLICIT_TOKEN")) return std::nullopt;
  for (const char* var : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
    if (const char* v = std::getenv(var); v && *v) return trimmed(v);
  const char* token_path = std::getenv("HF_TOKEN_PATH");
  std::ifstream in(token_path && *token_path ? std::string(token_path) : hf_home() + "/token");
  std::string token;
  if (in && std::getline(in, token) && !trimmed(token).empty()) return trimmed(token);
  return std::nullopt;
}

// scheme://host[:port] with the port spelled out, lower case: two URLs of one origin share it.
std::string origin(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "";
  std::string scheme = url.substr(0, scheme_end);
  const size_t host_start = scheme_end + 3;
  const size_t host_end = url.find_first_of("/?#", host_start);
  std::string authority = url.substr(host_start, host_end == std::string::npos ? std::string::npos : host_end - host_start);
  if (const size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : authority) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (authority.find(':', authority.rfind(']') == std::string::npos ? 0 : authority.rfind(']')) == std::string::npos)
    authority += scheme == "https" ? ":443" : ":80";
  return scheme + "://" + authority;
}

// A Location header made absolute against the URL that sent it.
std::string resolve_location(const std::string& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  const size_t scheme_end = base.find("://");
  const size_t path_start = base.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  const std::string root = path_start == std::string::npos ? base : base.substr(0, path_start);
  if (!location.empty() && location[0] == '/') return root + location;
  const std::string path = path_start == std::string::npos ? "/" : base.substr(path_start, base.find_first_of("?#", path_start) - path_start);
  return root + path.substr(0, path.rfind('/') + 1) + location;
}

// The rel="next" target of a Link header (the tree listing's pagination), or "".
std::string next_link(const std::optional<std::string>& link) {
  if (!link) return "";
  size_t at = 0;
  while ((at = link->find('<', at)) != std::string::npos) {
    const size_t end = link->find('>', at);
    if (end == std::string::npos) break;
    const size_t next = link->find('<', end);
    const std::string params = link->substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
      return link->substr(at + 1, end - at - 1);
    at = end;
  }
  return "";
}

// huggingface_hub's etag normalization: no weak prefix, no quotes.
std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

// The message of an error answer: X-Error-Message, else the JSON body's "error", else the body.
std::string server_message(const HttpResponse& r) {
  if (auto m = r.headers.get("X-Error-Message")) return *m;
  try {
    const nlohmann::json j = nlohmann::json::parse(r.body);
    if (j.is_object() && j.contains("error")) {
      if (j["error"].is_string()) return j["error"].get<std::string>();
      return j["error"].dump();
    }
  } catch (const nlohmann::json::exception&) {
  }
  return trimmed(r.body.substr(0, 200));
}

}  // namespace

std::string url_quote(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) out += static_cast<char>(c);
    else out += '%', out += hex[c >> 4], out += hex[c & 15];
  }
  return out;
}

HubSettings HubSettings::from_env() {
  HubSettings s;
  if (const char* e = std::getenv("HF_ENDPOINT"); e && *e) s.endpoint = e;
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  s.token = token_from_env();
  s.offline = env_truthy("HF_HUB_OFFLINE") || env_truthy("TRANSFORMERS_OFFLINE");
  s.etag_timeout = env_seconds("HF_HUB_ETAG_TIMEOUT", 10);
  s.download_timeout = env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
  s.cache = HubCache::from_env();
  return s;
}

namespace {

// The Hub's refusal as a message that says what to do (huggingface_hub's hf_raise_for_status
// reads the same X-Error-Code values).
[[noreturn]] void fail_answer(const HubSettings& s, const std::string& repo, const std::string& what, const HttpResponse& r) {
  const std::string code = r.headers.get("X-Error-Code").value_or("");
  const std::string message = server_message(r);
  const std::string page = s.endpoint + "/" + repo;
  const std::string said = message.empty() ? "" : " (the Hub said: " + message + ")";
  if (code == "GatedRepo")
    fail(ErrorKind::Io, s.token ? repo + " is a gated repository and the account of this token (HF_TOKEN) has no access to it yet: "
                                      "request access at " + page + said
                                : repo + " is a gated repository: accept its conditions at " + page +
                                      ", then set HF_TOKEN to an access token of that account (or run `hf auth login`)" + said);
  if (code == "RevisionNotFound")
    fail(ErrorKind::Io, repo + " has no revision matching " + what + " (a branch, tag or commit)" + said);
  if (code == "EntryNotFound") fail(ErrorKind::Io, repo + " has no file " + what + said);
  if (r.status == 401 && message == "Invalid credentials in Authorization header")
    fail(ErrorKind::Io, s.endpoint + " refused the token (HF_TOKEN or the token file): invalid credentials");
  // A missing repository and a private one look alike to a caller without access (401 or 404).
  if (code == "RepoNotFound" || r.status == 401 || r.status == 404)
    fail(ErrorKind::Io, s.token ? "no repository " + repo + " on " + s.endpoint + " that this token can read" + said
                                : "no repository " + repo + " on " + s.endpoint +
                                      " (if it is private or gated, set HF_TOKEN to an access token that can read it)" + said);
  if (r.status == 403) fail(ErrorKind::Io, s.endpoint + " refused access to " + what + " of " + repo + " (HTTP 403)" + said);
  if (r.status == 429) fail(ErrorKind::Io, s.endpoint + " is rate-limiting requests (HTTP 429); try again later" + said);
  fail(ErrorKind::Io, s.endpoint + " answered HTTP " + std::to_string(r.status) + " for " + what + " of " + repo + said);
}

[[noreturn]] void fail_unreachable(const HubSettings& s, const std::string& repo, const TransportError& e) {
  fail(ErrorKind::Io, "cannot reach the Hugging Face Hub to fetch " + repo + ": " + e.what() +
                          ". Check the network (and https_proxy), set HF_ENDPOINT to a mirror that can be reached, or set "
                          "HF_HUB_OFFLINE=1 to use only models already in the cache (" + s.cache.root() + ")");
}

}  // namespace

std::vector<std::string> HubClient::headers(bool with_token) const {
  std::vector<std::string> h = {"User-Agent: embed/" EMBED_VERSION "; hf_hub-compatible", "Accept-Encoding: identity"};
  if (with_token && s_.token) h.push_back("Authorization: Bearer " + *s_.token);
  return h;
}

HttpResponse HubClient::get_json(const std::string& url, const std::string& repo, const std::string& what) {
  HttpRequest req;
  req.url = url;
  req.headers = headers(true);
  req.headers.push_back("Accept: application/json");
  req.connect_timeout = req.read_timeout = s_.etag_timeout;
  req.follow_redirects = true;  // a renamed repository answers with a redirect on the same host
  HttpResponse r;
  try {
    r = http_request(req);
  } catch (const TransportError& e) {
    fail_unreachable(s_, repo, e);
  }
  if (r.status >= 400) fail_answer(s_, repo, what, r);
  if (r.status != 200) fail(ErrorKind::Io, url + ": unexpected HTTP " + std::to_string(r.status));
  return r;
}

std::string HubClient::resolve_commit(const std::string& repo, const std::string& revision) {
  const HttpResponse r = get_json(s_.endpoint + "/api/models/" + repo + "/revision/" + url_quote(revision, false), repo, "'" + revision + "'");
  std::string sha;
  try {
    sha = nlohmann::json::parse(r.body).at("sha").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Format, r.url + ": the model information has no commit id ('sha'): " + e.what() +
                                " (is HF_ENDPOINT a Hugging Face Hub?)");
  }
  if (!is_commit_hash(sha)) fail(ErrorKind::Format, r.url + ": '" + sha + "' is not a commit id");
  s_.cache.write_ref(repo, revision, sha);
  return sha;
}

std::vector<RepoFile> HubClient::list_files(const std::string& repo, const std::string& commit) {
  if (auto cached = s_.cache.read_tree(repo, commit)) return *cached;
  std::vector<RepoFile> files;
  std::string url = s_.endpoint + "/api/models/" + repo + "/tree/" + commit + "?recursive=true&expand=false";
  while (!url.empty()) {
    const HttpResponse r = get_json(url, repo, "the file list");
    try {
      for (const nlohmann::json& e : nlohmann::json::parse(r.body)) {
        if (e.at("type").get<std::string>() != "file") continue;
        RepoFile f;
        f.path = e.at("path").get<std::string>();
        f.size = e.at("size").get<int64_t>();
        f.blob_id = e.at("oid").get<std::string>();
        if (e.contains("lfs") && e["lfs"].is_object()) f.lfs_sha256 = e["lfs"].at("oid").get<std::string>();
        // Paths and ids become file names in the cache: nothing may point outside it.
        if (!is_safe_repo_path(f.path) || !is_hex_id(f.etag()) || f.size < 0)
          fail(ErrorKind::Format, r.url + ": the file list names '" + f.path + "' (" + f.etag() + "), which cannot be a file of the repository");
        files.push_back(std::move(f));
      }
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorKind::Format, r.url + ": a file list the Hub's format does not describe: " + e.what());
    }
    url = next_link(r.headers.get("Link"));
    if (!url.empty()) url = resolve_location(r.url, url);
  }
  std::sort(files.begin(), files.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  s_.cache.write_tree(repo, commit, files);
  return files;
}

// HEAD resolve/COMMIT/PATH, following redirects on the same origin only: a redirect to another
// host (the LFS store, a CDN) carries the metadata itself and is where the bytes come from.
HubClient::FileMetadata HubClient::head(const std::string& repo, const std::string& commit, const RepoFile& file) {
  std::string url = s_.endpoint + "/" + repo + "/resolve/" + commit + "/" + url_quote(file.path, true);
  const std::string what = "'" + file.path + "' at " + commit.substr(0, 10);
  for (int hop = 0; hop <= kMaxRedirects; hop++) {
    HttpRequest req;
    req.method = "HEAD";
    req.url = url;
    req.headers = headers(true);
    req.connect_timeout = req.read_timeout = s_.etag_timeout;
    HttpResponse r;
    try {
      r = http_request(req);
    } catch (const TransportError& e) {
      fail_unreachable(s_, repo, e);
    }
    if (r.status >= 400) fail_answer(s_, repo, what, r);
    const bool redirect = r.status >= 300 && r.status < 400 && r.headers.get("Location");
    if (redirect && origin(resolve_location(url, *r.headers.get("Location"))) == origin(url)) {
      url = resolve_location(url, *r.headers.get("Location"));
      continue;
    }
    FileMetadata m;
    const auto repo_commit = r.headers.get("X-Repo-Commit");
    const auto etag = r.headers.get("X-Linked-Etag") ? r.headers.get("X-Linked-Etag") : r.headers.get("ETag");
    const auto size = r.headers.get("X-Linked-Size") ? r.headers.get("X-Linked-Size") : (redirect ? std::nullopt : r.headers.get("Content-Length"));
    if (!repo_commit || !etag || !size)
      fail(ErrorKind::Format, url + " answered without " + std::string(!repo_commit ? "X-Repo-Commit" : !etag ? "an ETag" : "the file's size") +
                                  ": it does not look like a Hugging Face Hub (check HF_ENDPOINT, the proxy and TLS settings)");
    if (*repo_commit != commit) fail(ErrorKind::Format, url + ": the Hub answered for commit " + *repo_commit + ", not " + commit);
    m.etag = normalize_etag(*etag);
    if (!is_hex_id(m.etag)) fail(ErrorKind::Format, url + ": the ETag '" + m.etag + "' is not a content id (sha256 or git sha1)");
    m.size = std::strtoll(size->c_str(), nullptr, 10);
    m.location = redirect ? resolve_location(url, *r.headers.get("Location")) : url;
    // The blob is named by the file's own ETag, as huggingface_hub names it (for an LFS file the
    // sha256 the listing gives, which the download is checked against); the sizes must agree.
    if (m.size != file.size)
      fail(ErrorKind::Format, repo + ": " + file.path + " is listed with " + std::to_string(file.size) + " bytes but served with " +
                                  std::to_string(m.size));
    return m;
  }
  fail(ErrorKind::Io, repo + ": more than " + std::to_string(kMaxRedirects) + " redirects for " + what);
}

std::string HubClient::fetch(const std::string& repo, const std::string& commit, const RepoFile& file) {
  const std::string pointer = s_.cache.snapshot_dir(repo, commit) + "/" + file.path;
  std::error_code ec;
  if (fs::exists(pointer, ec)) return pointer;
  if (s_.offline) fail(ErrorKind::Io, repo + ": " + file.path + " is not in the cache and HF_HUB_OFFLINE is set");
  const FileMetadata meta = head(repo, commit, file);
  const std::string blob = s_.cache.blob_path(repo, meta.etag);
  if (fs::exists(blob, ec)) {
    s_.cache.link_snapshot(repo, commit, file.path, meta.etag, false);
    return pointer;
  }
  const FileLock lock(s_.cache.lock_path(repo, meta.etag));
  bool fresh = false;
  if (!fs::exists(blob, ec)) {  // another process may have written it while this one waited
    download(repo, file, meta, blob);
    fresh = true;
  }
  s_.cache.link_snapshot(repo, commit, file.path, meta.etag, fresh);
  return pointer;
}

namespace {

// An open partial download: appended to, hashed as it grows.
struct PartialFile {
  std::string path;
  std::FILE* f = nullptr;
  Sha256 hash;
  int64_t have = 0;

  // Opens `path` for appending; the bytes an earlier, interrupted run left there are hashed so
  // the download resumes after them.
  explicit PartialFile(std::string p) : path(std::move(p)) {
    if (std::FILE* in = std::fopen(path.c_str(), "rb")) {
      std::vector<char> buf(1 << 20);
      for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), in)) > 0;) hash.update(buf.data(), n), have += static_cast<int64_t>(n);
      std::fclose(in);
    }
    f = std::fopen(path.c_str(), "ab");
    if (!f) fail(ErrorKind::Io, path + ": cannot write: " + std::strerror(errno));
  }
  ~PartialFile() {
    if (f) std::fclose(f);
  }
  void restart() {  // the server sends the whole file again
    std::fflush(f);
    if (ftruncate(fileno(f), 0) != 0) fail(ErrorKind::Io, path + ": cannot truncate: " + std::strerror(errno));
    hash = Sha256();
    have = 0;
  }
  bool append(const char* d, size_t n) {
    if (std::fwrite(d, 1, n, f) != n) return false;
    hash.update(d, n);
    have += static_cast<int64_t>(n);
    return true;
  }
  void close() {
    const bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
    std::fclose(f);
    f = nullptr;
    if (!ok) fail(ErrorKind::Io, path + ": cannot write: " + std::strerror(errno));
  }
};

// The first byte of a 206 answer's Content-Range ("bytes 100-199/200"), or -1.
int64_t range_start(const HttpHeaders& h) {
  const auto cr = h.get("Content-Range");
  if (!cr || cr->rfind("bytes ", 0) != 0) return -1;
  return std::strtoll(cr->c_str() + 6, nullptr, 10);
}


// One GET of what `part` lacks (a Range after its bytes): the answer, with `bad_range` set when
// a 206 does not start where asked. Throws TransportError when the transfer breaks off.
HttpResponse get_rest(HttpRequest req, PartialFile& part, DownloadProgress& bar, bool& bad_range) {
  if (part.have > 0) req.headers.push_back("Range: bytes=" + std::to_string(part.have) + "-");
  bool write_failed = false;
  req.on_response = [&](long status, const HttpHeaders& h) {
    if (status == 206 && range_start(h) != part.have) return !(bad_range = true);
    if (status == 200 && part.have > 0) part.restart();  // the Range was ignored: start over
    return status == 200 || status == 206;
  };
  req.on_data = [&](const char* d, size_t n) {
    if (!part.append(d, n)) return !(write_failed = true);
    bar.update(part.have);
    return true;
  };
  try {
    return http_request(req);
  } catch (const TransportError&) {
    if (write_failed) fail(ErrorKind::Io, part.path + ": cannot write: " + std::strerror(errno));
    throw;
  }
}

// The size and, for an LFS file, the sha256 of a finished download; a file that fails is deleted.
void check_download(PartialFile& part, const RepoFile& file, int64_t size, const std::string& what) {
  std::error_code ec;
  if (part.have != size) {
    fs::remove(part.path, ec);
    fail(ErrorKind::Io, "downloading " + what + ": received " + std::to_string(part.have) + " bytes, the Hub said " +
                            std::to_string(size) + "; the partial file was deleted, run again");
  }
  if (file.lfs_sha256.empty()) return;
  const std::string digest = part.hash.hex();
  if (digest != file.lfs_sha256) {
    fs::remove(part.path, ec);
    fail(ErrorKind::Format, "checksum mismatch for " + what + ": its sha256 is " + digest + ", the Hub lists " + file.lfs_sha256 +
                                "; the download was deleted and not used (run again; if it persists, the mirror or proxy alters files)");
  }
}

}  // namespace

// GET the file into blobs/<etag>.incomplete (the name older huggingface_hub versions resume from
// too), resuming with Range after a cut connection or an earlier run, retrying while bytes keep
// arriving; then the size and, for an LFS file, the sha256 are checked before the rename to
// blobs/<etag>. A file that fails the check is deleted: it is never used.
void HubClient::download(const std::string& repo, const RepoFile& file, const FileMetadata& meta, const std::string& blob) {
  std::error_code ec;
  fs::create_directories(fs::path(blob).parent_path(), ec);
  PartialFile part(blob + ".incomplete");
  if (part.have > meta.size) part.restart();
  DownloadProgress bar(progress_);
  bar.start(repo + "/" + file.path, meta.size, part.have);
  HttpRequest req;
  req.url = meta.location;
  req.headers = headers(origin(meta.location) == origin(s_.endpoint + "/"));  // no token for another host (a signed URL)
  req.follow_redirects = true;
  req.connect_timeout = s_.etag_timeout;
  req.read_timeout = s_.download_timeout;
  const std::string what = file.path + " of " + repo;
  for (int failures = 0;;) {
    const int64_t before = part.have;
    bool bad_range = false;
    HttpResponse r;
    try {
      r = get_rest(req, part, bar, bad_range);
    } catch (const TransportError& e) {
      failures = part.have > before ? 1 : failures + 1;
      if (!e.retryable() || failures > kDownloadRetries) {
        std::fflush(part.f);
        fail(ErrorKind::Io, "downloading " + what + " failed: " + e.what() + "; the " + std::to_string(part.have) +
                                " bytes received are kept in " + part.path + " and the next run resumes after them");
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (bad_range || r.status == 416) {  // no usable range answer: fetch the whole file once more
      if (++failures > kDownloadRetries) fail(ErrorKind::Io, "downloading " + what + ": the server keeps answering the resume request wrongly");
      part.restart();
      continue;
    }
    if (r.status >= 400) fail_answer(s_, repo, "'" + file.path + "' (download)", r);
    if (r.status != 200 && r.status != 206)
      fail(ErrorKind::Io, "downloading " + what + ": unexpected HTTP " + std::to_string(r.status) + " from " + meta.location);
    break;
  }
  bar.finish(part.have);
  part.close();
  check_download(part, file, meta.size, what);
  fs::rename(part.path, blob, ec);
  if (ec) fail(ErrorKind::Io, blob + ": cannot move the download into place: " + ec.message());
}

}  // namespace embed::source
