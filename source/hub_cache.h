// The Hugging Face Hub cache as huggingface_hub lays it out (HF_HUB_CACHE / HF_HOME), so files
// that huggingface_hub, sentence-transformers, transformers or llama.cpp downloaded are used as
// they are, and files embed downloads are theirs too:
//   <root>/models--ORG--NAME/refs/<revision>            the commit a branch or tag pointed to
//   <root>/models--ORG--NAME/blobs/<etag>               contents (sha256 for LFS files, git sha1 otherwise)
//   <root>/models--ORG--NAME/snapshots/<commit>/<path>  relative symlink to ../../blobs/<etag>
//   <root>/models--ORG--NAME/trees/<commit>.json        the repository's file list at that commit
//   <root>/.locks/models--ORG--NAME/<etag>.lock         held while a blob is written
// Paths and files only: no network here (source/hub_client.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace embed::source {

// One file of a repository at a commit (the Hub's tree listing).
struct RepoFile {
  std::string path;        // "1_Pooling/config.json"
  int64_t size = 0;
  std::string blob_id;     // git blob sha1
  std::string lfs_sha256;  // LFS object id (sha256 of the contents); empty for a regular git file
  // The blob's name in the cache (huggingface_hub's etag): the sha256 of an LFS file, else the git sha1.
  const std::string& etag() const { return lfs_sha256.empty() ? blob_id : lfs_sha256; }
};

// "models--ORG--NAME": a repository's folder in the cache.
std::string repo_folder_name(const std::string& repo);

// A path inside a repository that stays inside a snapshot folder: relative, '/'-separated, no
// empty, "." or ".." component, no backslash or NUL.
bool is_safe_repo_path(const std::string& path);
// A content id the cache names a blob by: 40 (git sha1) or 64 (sha256) lower-case hex digits.
bool is_hex_id(const std::string& id);

// A 40-digit lower-case hex commit id.
bool is_commit_hash(const std::string& s);

class HubCache {
 public:
  explicit HubCache(std::string root) : root_(std::move(root)) {}
  // HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, where HF_HOME defaults
  // to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (huggingface_hub's constants.py).
  static HubCache from_env();
  const std::string& root() const { return root_; }

  std::string repo_dir(const std::string& repo) const;  // <root>/models--ORG--NAME
  std::string snapshot_dir(const std::string& repo, const std::string& commit) const;
  std::string blob_path(const std::string& repo, const std::string& etag) const;
  std::string lock_path(const std::string& repo, const std::string& etag) const;

  // refs/<revision>: the commit, or nullopt when absent or not a commit id.
  std::optional<std::string> read_ref(const std::string& repo, const std::string& revision) const;
  void write_ref(const std::string& repo, const std::string& revision, const std::string& commit) const;  // atomic

  // trees/<commit>.json in huggingface_hub's format (format_version 1), sorted by path; nullopt
  // when absent, unreadable or of another format version.
  std::optional<std::vector<RepoFile>> read_tree(const std::string& repo, const std::string& commit) const;
  void write_tree(const std::string& repo, const std::string& commit, const std::vector<RepoFile>& files) const;

  // snapshots/<commit>/<path> -> the blob: a relative symlink, or (HF_HUB_DISABLE_SYMLINKS, or a file
  // system without symlinks) the blob moved there when it was just downloaded, else a copy.
  void link_snapshot(const std::string& repo, const std::string& commit, const std::string& path, const std::string& etag,
                     bool new_blob) const;

 private:
  std::string root_;
};

// An exclusive flock(2) on `path` (created with its parent folders) for the object's lifetime:
// the lock huggingface_hub's filelock takes on the same file.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// HF_HOME: $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface, unless set.
std::string hf_home();

// A truthy environment value as huggingface_hub reads one: 1, ON, YES, TRUE (any case).
bool env_truthy(const char* name);

}  // namespace embed::source
