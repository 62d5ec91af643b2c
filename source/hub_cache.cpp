// The huggingface_hub cache layout (file_download.py, _tree_cache.py): paths, refs, tree listings,
// snapshot links and blob locks.
#include "source/hub_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"

namespace embed::source {
namespace fs = std::filesystem;
namespace {

std::string expand_user(const std::string& p) {
  if (p.rfind("~/", 0) == 0 || p == "~") {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + p.substr(1);
  }
  return p;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? expand_user(v) : "";
}

// Writes `text` to `path` through a temporary file in the same folder and a rename, so a reader
// never sees half of it.
void write_atomically(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) fail(ErrorKind::Io, tmp.string() + ": cannot write: " + std::strerror(errno));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(ErrorKind::Io, path.string() + ": cannot write: " + ec.message());
  }
}

}  // namespace

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_hex_id(const std::string& id) {
  return (id.size() == 40 || id.size() == 64) &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find_first_of(std::string("\\\0", 2)) != std::string::npos) return false;
  for (size_t begin = 0; begin <= path.size();) {
    const size_t end = std::min(path.find('/', begin), path.size());
    const std::string part = path.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

bool env_truthy(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s == "1" || s == "ON" || s == "YES" || s == "TRUE";
}

std::string hf_home() {
  if (std::string home = env_or_empty("HF_HOME"); !home.empty()) return home;
  const std::string xdg = env_or_empty("XDG_CACHE_HOME");
  return (xdg.empty() ? expand_user("~/.cache") : xdg) + "/huggingface";
}

HubCache HubCache::from_env() {
  if (std::string c = env_or_empty("HF_HUB_CACHE"); !c.empty()) return HubCache(c);
  if (std::string c = env_or_empty("HUGGINGFACE_HUB_CACHE"); !c.empty()) return HubCache(c);
  return HubCache(hf_home() + "/hub");
}

std::string repo_folder_name(const std::string& repo) {
  std::string name = "models--" + repo;
  for (size_t at; (at = name.find('/')) != std::string::npos;) name.replace(at, 1, "--");
  return name;
}

std::string HubCache::repo_dir(const std::string& repo) const { return root_ + "/" + repo_folder_name(repo); }

std::string HubCache::snapshot_dir(const std::string& repo, const std::string& commit) const {
  return repo_dir(repo) + "/snapshots/" + commit;
}

std::string HubCache::blob_path(const std::string& repo, const std::string& etag) const { return repo_dir(repo) + "/blobs/" + etag; }

std::string HubCache::lock_path(const std::string& repo, const std::string& etag) const {
  return root_ + "/.locks/" + repo_folder_name(repo) + "/" + etag + ".lock";
}

std::optional<std::string> HubCache::read_ref(const std::string& repo, const std::string& revision) const {
  std::ifstream in(repo_dir(repo) + "/refs/" + revision);
  std::string commit;
  if (!in || !std::getline(in, commit)) return std::nullopt;
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  return is_commit_hash(commit) ? std::optional<std::string>(commit) : std::nullopt;
}

void HubCache::write_ref(const std::string& repo, const std::string& revision, const std::string& commit) const {
  if (revision == commit || read_ref(repo, revision) == commit) return;
  write_atomically(repo_dir(repo) + "/refs/" + revision, commit);  // no newline, as huggingface_hub writes it
}

std::optional<std::vector<RepoFile>> HubCache::read_tree(const std::string& repo, const std::string& commit) const {
  std::ifstream in(repo_dir(repo) + "/trees/" + commit + ".json");
  if (!in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("format_version", 0) != 1 || !j.contains("files") || !j["files"].is_object()) return std::nullopt;
    std::vector<RepoFile> files;
    for (auto it = j["files"].begin(); it != j["files"].end(); ++it) {
      RepoFile f;
      f.path = it.key();
      f.size = it.value().at("size").get<int64_t>();
      f.blob_id = it.value().at("blob_id").get<std::string>();
      if (it.value().contains("lfs_sha256") && it.value()["lfs_sha256"].is_string()) f.lfs_sha256 = it.value()["lfs_sha256"].get<std::string>();
      if (!is_safe_repo_path(f.path) || !is_hex_id(f.etag())) return std::nullopt;  // listed again from the Hub
      files.push_back(std::move(f));
    }
    std::sort(files.begin(), files.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
    return files;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // as huggingface_hub: a broken cache file is ignored and listed again
  }
}

void HubCache::write_tree(const std::string& repo, const std::string& commit, const std::vector<RepoFile>& files) const {
  nlohmann::json entries = nlohmann::json::object();
  for (const RepoFile& f : files) {
    nlohmann::json e = {{"size", f.size}, {"blob_id", f.blob_id}};
    if (!f.lfs_sha256.empty()) e["lfs_sha256"] = f.lfs_sha256, e["lfs_size"] = f.size;
    entries[f.path] = e;
  }
  const nlohmann::json j = {{"format_version", 1}, {"files", entries}};
  write_atomically(repo_dir(repo) + "/trees/" + commit + ".json", j.dump(1));
}

void HubCache::link_snapshot(const std::string& repo, const std::string& commit, const std::string& path, const std::string& etag,
                             bool new_blob) const {
  const fs::path pointer = fs::path(snapshot_dir(repo, commit)) / path;
  const fs::path blob = blob_path(repo, etag);
  std::error_code ec;
  if (fs::exists(pointer, ec)) return;
  fs::remove(pointer, ec);  // a dangling link (its blob was deleted)
  fs::create_directories(pointer.parent_path(), ec);
  if (!env_truthy("HF_HUB_DISABLE_SYMLINKS")) {
    std::string target = "blobs/" + etag;
    for (size_t levels = 2 + std::count(path.begin(), path.end(), '/'); levels > 0; levels--) target = "../" + target;
    fs::create_symlink(target, pointer, ec);
    if (!ec) return;
  }
  // No symlinks: the new blob moves into the snapshot, an existing one is copied (huggingface_hub's rule).
  if (new_blob) fs::rename(blob, pointer, ec);
  else fs::copy_file(blob, pointer, ec);
  if (ec) fail(ErrorKind::Io, pointer.string() + ": cannot link it to " + blob.string() + ": " + ec.message());
}

FileLock::FileLock(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(ErrorKind::Io, path + ": cannot create the lock file: " + std::strerror(errno));
  while (flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int e = errno;
    ::close(fd_);
    fail(ErrorKind::Io, path + ": cannot lock: " + std::strerror(e));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace embed::source
