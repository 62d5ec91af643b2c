// The Hugging Face Hub's HTTP API as huggingface_hub uses it for downloads: a revision's commit
// (api/models/REPO/revision/REV), the file list (api/models/REPO/tree/COMMIT, paginated), and each
// file through resolve/COMMIT/PATH (HEAD for its ETag, X-Repo-Commit and X-Linked-Size, a redirect
// to the LFS store; GET with Range to resume), into the shared cache (source/hub_cache.h) with the
// LFS sha256 checked before the file is used. Settings come from huggingface_hub's variables.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "source/hub_cache.h"
#include "source/http.h"

namespace embed::source {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, without a trailing '/'
  std::optional<std::string> token;                   // HF_TOKEN, HUGGING_FACE_HUB_TOKEN, then the token file
  bool offline = false;                               // HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE): no HTTP at all
  double etag_timeout = 10;                           // HF_HUB_ETAG_TIMEOUT: metadata requests
  double download_timeout = 10;                       // HF_HUB_DOWNLOAD_TIMEOUT: seconds without a byte
  HubCache cache{""};
  static HubSettings from_env();
};

class HubClient {
 public:
  HubClient(HubSettings settings, bool show_progress) : s_(std::move(settings)), progress_(show_progress) {}
  const HubSettings& settings() const { return s_; }

  // The commit `revision` (branch, tag or commit) of `repo` names now; refs/<revision> is updated.
  std::string resolve_commit(const std::string& repo, const std::string& revision);
  // Every file of `repo` at `commit`, sorted by path: trees/<commit>.json when cached, else listed
  // (all pages) and cached there.
  std::vector<RepoFile> list_files(const std::string& repo, const std::string& commit);
  // snapshots/<commit>/<file.path>, downloaded when absent (resumed from an earlier partial
  // download); throws naming the repository and file on any failure, leaving no unchecked file.
  std::string fetch(const std::string& repo, const std::string& commit, const RepoFile& file);

 private:
  struct FileMetadata {
    std::string etag, location;
    int64_t size = -1;
  };
  std::vector<std::string> headers(bool with_token) const;
  HttpResponse get_json(const std::string& url, const std::string& repo, const std::string& what);
  FileMetadata head(const std::string& repo, const std::string& commit, const RepoFile& file);
  void download(const std::string& repo, const RepoFile& file, const FileMetadata& meta, const std::string& blob);

  HubSettings s_;
  bool progress_;
};

// huggingface_hub's quoting: a revision percent-encoded whole ("refs/pr/1" -> "refs%2Fpr%2F1"),
// a file path with its '/' kept.
std::string url_quote(const std::string& s, bool keep_slash);

}  // namespace embed::source
