// locate_model / open_model_file / open_model: a model argument to a GGUF, through the local
// disk, the Hugging Face cache and the Hub, and the converter for HF folders.
#include "source/model_source.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "source/gguf_choice.h"
#include "source/hub_client.h"
#include "source/sha256.h"
#include "tools/convert/convert.h"

#ifndef EMBED_VERSION
#define EMBED_VERSION "dev"
#endif

namespace embed {
namespace fs = std::filesystem;
using source::HubCache;
using source::HubClient;
using source::HubSettings;
using source::RepoFile;

namespace {

using Json = nlohmann::json;
using JsonReader = std::function<Json(const std::string& path)>;

std::string listing(const std::set<std::string>& files) {
  std::string s;
  size_t n = 0;
  for (const std::string& f : files) {
    if (n++ == 12) return s + ", ... (" + std::to_string(files.size()) + " files)";
    s += (s.empty() ? "" : ", ") + f;
  }
  return s.empty() ? "(none)" : s;
}

bool has_suffix(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The files of an HF repository the converter may read, given the repository's files and a reader
// of the JSON files it must look into first: every top-level JSON file (config, tokenizer and
// sentence-transformers configs; all small) and *.model (SentencePiece), the safetensors weights
// or the shards the index names, and the JSON and safetensors files of the folders modules.json
// names. Not README, ONNX, OpenVINO, PyTorch or TensorFlow weights.
std::vector<std::string> hf_files_needed(const std::string& repo, const std::set<std::string>& files, const JsonReader& read_json) {
  if (!files.count("config.json"))
    fail(ErrorKind::Unsupported, repo + " has neither GGUF files nor a config.json: not a model repository embed can run (files: " +
                                     listing(files) + ")");
  if (!files.count("tokenizer.json"))
    fail(ErrorKind::Unsupported, repo + " has no tokenizer.json, which the conversion reads the vocabulary from");
  std::vector<std::string> needed;
  for (const std::string& f : files)
    if (f.find('/') == std::string::npos && (has_suffix(f, ".json") || has_suffix(f, ".model"))) needed.push_back(f);
  if (files.count("model.safetensors")) {
    needed.push_back("model.safetensors");
  } else if (files.count("model.safetensors.index.json")) {
    std::set<std::string> shards;
    const Json index = read_json("model.safetensors.index.json");
    for (const auto& [tensor, shard] : index.at("weight_map").items()) shards.insert(shard.get<std::string>());
    for (const std::string& s : shards) {
      if (!files.count(s)) fail(ErrorKind::Format, repo + ": model.safetensors.index.json names the shard " + s + ", which the repository lacks");
      needed.push_back(s);
    }
  } else {
    const bool bin = files.count("pytorch_model.bin") || files.count("pytorch_model.bin.index.json");
    fail(ErrorKind::Unsupported, repo + " has no safetensors weights" +
                                     std::string(bin ? " (only pytorch_model.bin: embed reads safetensors; pick a repository or revision with model.safetensors)" : ""));
  }
  if (files.count("modules.json"))
    for (const Json& module : read_json("modules.json")) {
      const std::string dir = module.value("path", "");
      if (dir.empty()) continue;
      for (const std::string& f : files)
        if (f.rfind(dir + "/", 0) == 0 && (has_suffix(f, ".json") || has_suffix(f, ".safetensors"))) needed.push_back(f);
    }
  return needed;
}

// hf_files_needed with a malformed modules.json or safetensors index reported as such.
std::vector<std::string> hf_files_checked(const std::string& repo, const std::set<std::string>& files, const JsonReader& read_json) {
  try {
    return hf_files_needed(repo, files, read_json);
  } catch (const Json::exception& e) {
    fail(ErrorKind::Format, repo + ": modules.json or model.safetensors.index.json is not as sentence-transformers / transformers write it: " + e.what());
  }
}

Json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorKind::Io, path + ": cannot open");
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    fail(ErrorKind::Format, path + ": not valid JSON: " + e.what());
  }
}

// Every file under `dir`, as paths relative to it with '/'.
std::set<std::string> local_files(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (fs::is_regular_file(it->path(), ec)) out.insert(it->path().lexically_relative(dir).generic_string());  // not through the links
  return out;
}

// The model a Hub name designates in a cached snapshot, or nullopt when a file is missing there.
// The file list is the cached tree listing when there is one, else the snapshot's own files (a
// snapshot that huggingface_hub, sentence-transformers or llama.cpp filled without one).
std::optional<ModelLocation> from_cache(const HubCache& cache, const HubName& n, const std::string& commit) {
  const std::string snap = cache.snapshot_dir(n.repo, commit);
  std::error_code ec;
  if (!fs::is_directory(snap, ec)) return std::nullopt;
  std::set<std::string> files;
  if (auto tree = cache.read_tree(n.repo, commit))
    for (const RepoFile& f : *tree) files.insert(f.path);
  else
    files = local_files(snap);
  ModelLocation loc;
  loc.name = n.repo;
  loc.commit = commit;
  const std::vector<std::string> candidates = source::gguf_candidates({files.begin(), files.end()});
  if (!n.quant.empty() || !candidates.empty()) {
    const auto choice = source::choose_gguf(candidates, n.quant);
    if (!choice || !fs::exists(snap + "/" + *choice, ec) || source::is_split_gguf(*choice)) return std::nullopt;
    loc.path = snap + "/" + *choice;
    return loc;
  }
  try {
    for (const std::string& f : hf_files_checked(n.repo, files, [&](const std::string& p) { return read_json_file(snap + "/" + p); }))
      if (!fs::exists(snap + "/" + f, ec)) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;  // the Hub's answer will say what is wrong
  }
  loc.kind = ModelLocation::Kind::HfFolder;
  loc.path = snap;
  return loc;
}

const RepoFile& file_named(const std::vector<RepoFile>& files, const std::string& path) {
  for (const RepoFile& f : files)
    if (f.path == path) return f;
  fail(ErrorKind::Io, "the repository's file list has no " + path);
}

// "Q4_K_M (model-Q4_K_M.gguf), Q8_0 (model-Q8_0.gguf)": what a repository offers.
std::string gguf_offer(const std::vector<std::string>& candidates) {
  std::string s;
  for (const std::string& c : candidates)
    if (source::is_first_or_only_part(c)) s += (s.empty() ? "" : ", ") + source::gguf_tag_of(c) + " (" + c + ")";
  return s;
}

// Downloads what the Hub name needs at `commit`: the chosen GGUF, or an HF folder's files.
ModelLocation fetch_from_hub(HubClient& hub, const HubName& n, const std::string& commit) {
  const std::vector<RepoFile> repo_files = hub.list_files(n.repo, commit);
  std::set<std::string> files;
  for (const RepoFile& f : repo_files) files.insert(f.path);
  ModelLocation loc;
  loc.name = n.repo;
  loc.commit = commit;
  const std::vector<std::string> candidates = source::gguf_candidates({files.begin(), files.end()});
  if (!n.quant.empty() || !candidates.empty()) {
    if (candidates.empty())
      fail(ErrorKind::InvalidArgument, n.repo + " has no GGUF files, so no :" + n.quant + " to choose; name it without :" + n.quant +
                                           " to convert its safetensors weights");
    const auto choice = source::choose_gguf(candidates, n.quant);
    if (!choice)
      fail(ErrorKind::InvalidArgument, n.repo + " has no GGUF file with the quantization " + n.quant + "; it has " + gguf_offer(candidates) +
                                           " (name one as " + n.repo + ":TAG)");
    if (source::is_split_gguf(*choice))
      fail(ErrorKind::Unsupported, n.repo + ": " + *choice + " is one part of a split GGUF; embed reads single-file GGUF (merge the parts "
                                            "with llama-gguf-split --merge and pass the file)");
    loc.path = hub.fetch(n.repo, commit, file_named(repo_files, *choice));
    return loc;
  }
  auto fetch_json = [&](const std::string& p) { return read_json_file(hub.fetch(n.repo, commit, file_named(repo_files, p))); };
  for (const std::string& f : hf_files_checked(n.repo, files, fetch_json)) hub.fetch(n.repo, commit, file_named(repo_files, f));
  loc.kind = ModelLocation::Kind::HfFolder;
  loc.path = hub.settings().cache.snapshot_dir(n.repo, commit);
  return loc;
}

ModelLocation locate_on_hub(const HubName& n, const SourceOptions& o) {
  HubClient hub(HubSettings::from_env(), o.progress);
  const HubCache& cache = hub.settings().cache;
  const std::string label = n.repo + (n.quant.empty() ? "" : ":" + n.quant);
  // The cache first: a model whose files are all there is used without a request.
  const auto cached_commit = source::is_commit_hash(n.revision) ? std::optional<std::string>(n.revision) : cache.read_ref(n.repo, n.revision);
  if (cached_commit)
    if (auto loc = from_cache(cache, n, *cached_commit)) return *loc;
  if (hub.settings().offline)
    fail(ErrorKind::Io, label + (n.revision == "main" ? "" : " at " + n.revision) + " is not (completely) in the Hugging Face cache (" +
                            cache.root() + ") and HF_HUB_OFFLINE is set: unset HF_HUB_OFFLINE to download it, or point HF_HUB_CACHE or "
                            "HF_HOME at a cache that has it");
  const std::string commit = source::is_commit_hash(n.revision) ? n.revision : hub.resolve_commit(n.repo, n.revision);
  return fetch_from_hub(hub, n, commit);
}

// $EMBED_CACHE, else ~/.cache/embed (tools/models.sh's cache).
std::string embed_cache_dir() {
  if (const char* c = std::getenv("EMBED_CACHE"); c && *c) return c;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/embed";
}

// Where --cache-gguf keeps the conversion of `loc`: per Hub commit, or for a local folder per
// path and the size and time of each of its files (an edited folder is converted again).
std::string converted_path(const ModelLocation& loc, const std::string& type) {
  const std::string dir = embed_cache_dir() + "/gguf/";
  if (!loc.commit.empty()) return dir + source::repo_folder_name(loc.name) + "/" + loc.commit + "-" + type + ".gguf";
  source::Sha256 key;
  const std::string abs = fs::weakly_canonical(loc.path).string() + "\n" EMBED_VERSION "\n";
  key.update(abs.data(), abs.size());
  std::error_code ec;
  for (const std::string& f : local_files(loc.path)) {
    const fs::path p = fs::path(loc.path) / f;
    const std::string line = f + " " + std::to_string(fs::file_size(p, ec)) + " " +
                             std::to_string(fs::last_write_time(p, ec).time_since_epoch().count()) + "\n";
    key.update(line.data(), line.size());
  }
  return dir + "folders/" + loc.name + "-" + key.hex().substr(0, 16) + "-" + type + ".gguf";
}

gguf::File convert_folder(const ModelLocation& loc, const SourceOptions& o) {
  const auto type = convert::out_type_from_name(o.convert_type);
  if (!type) fail(ErrorKind::InvalidArgument, "convert type '" + o.convert_type + "' is not one of f32, f16, bf16, q8_0");
  convert::ConvertOptions c;
  c.model_dir = loc.path;
  c.type = *type;
  c.name = loc.name.substr(loc.name.find('/') + 1);  // general.name: the model's name, not a snapshot's commit
  if (!o.cache_gguf) return convert::build_gguf(c).to_file(loc.path);
  c.out_path = converted_path(loc, o.convert_type);
  std::error_code ec;
  if (!fs::exists(c.out_path, ec)) {
    fs::create_directories(fs::path(c.out_path).parent_path(), ec);
    const source::FileLock lock(c.out_path + ".lock");
    if (!fs::exists(c.out_path, ec)) convert::convert_hf_to_gguf(c);  // written through a temporary name
  }
  return gguf::File::open(c.out_path);
}

}  // namespace

std::optional<HubName> parse_hub_name(const std::string& arg) {
  const bool prefixed = arg.rfind("hf://", 0) == 0;
  const std::string s = prefixed ? arg.substr(5) : arg;
  // huggingface_hub's repo id rule (validate_repo_id), with the namespace required: word
  // characters, '-' and '.', starting and ending with a word character, no "--" or "..".
  static const std::regex part("[A-Za-z0-9_]([A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?");
  const size_t end = s.find_first_of(":@");
  const std::string repo = s.substr(0, end);
  const size_t slash = repo.find('/');
  auto bad = [&](const std::string& why) -> std::optional<HubName> {
    if (prefixed) fail(ErrorKind::InvalidArgument, "'" + arg + "' is not a Hub name hf://ORG/NAME[@REVISION][:QUANT]: " + why);
    return std::nullopt;
  };
  if (slash == std::string::npos || repo.find('/', slash + 1) != std::string::npos) return bad("the repository must be ORG/NAME");
  const std::string org = repo.substr(0, slash), name = repo.substr(slash + 1);
  if (!std::regex_match(org, part) || !std::regex_match(name, part) || repo.find("--") != std::string::npos ||
      repo.find("..") != std::string::npos)
    return bad("'" + repo + "' has characters a repository id cannot have");
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!prefixed && (has_suffix(lower, ".gguf") || has_suffix(lower, ".safetensors"))) return std::nullopt;  // a file path
  HubName n;
  n.repo = repo;
  static const std::regex quant("[A-Za-z0-9_.-]+");
  for (size_t at = end; at != std::string::npos && at < s.size();) {
    const size_t next = s.find(s[at] == ':' ? '@' : ':', at + 1);
    const std::string value = s.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (s[at] == ':') {
      if (!n.quant.empty() || !std::regex_match(value, quant)) return bad("':" + value + "' is not a quantization tag such as Q8_0");
      n.quant = value;
    } else {
      if (!source::is_safe_repo_path(value) || value.find_first_of(" \t\n") != std::string::npos) return bad("'@" + value + "' is not a revision");
      n.revision = value;
    }
    at = next;
  }
  return n;
}

ModelLocation locate_model(const std::string& argument, const SourceOptions& o) {
  const std::string model = resolve_model_path(argument);  // "default": the installed default model
  std::error_code ec;
  const bool prefixed = model.rfind("hf://", 0) == 0;
  if (!prefixed && fs::exists(model, ec)) {
    ModelLocation loc;
    loc.path = model;
    fs::path p = fs::absolute(model, ec).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    loc.name = p.filename().string();
    if (fs::is_directory(model, ec)) {
      loc.kind = ModelLocation::Kind::HfFolder;
      if (!fs::is_regular_file(fs::path(model) / "config.json", ec))
        fail(ErrorKind::InvalidArgument, model + " is a folder without config.json: not a HuggingFace model folder (give a GGUF file, "
                                                 "a model folder or a Hub name ORG/NAME)");
    } else if (has_suffix(loc.name, ".gguf")) {
      loc.name = loc.name.substr(0, loc.name.size() - 5);
    }
    return loc;
  }
  const std::optional<HubName> name = parse_hub_name(model);
  if (!name) fail(ErrorKind::Io, model + ": no such file or folder (nor a Hugging Face Hub name ORG/NAME)");
  try {
    return locate_on_hub(*name, o);
  } catch (const Error& e) {
    if (!prefixed && std::string(e.what()).rfind("no repository ", 0) == 0)
      fail(e.kind(), "no file or folder " + model + " here, and " + e.what());
    throw;
  }
}

gguf::File open_model_file(const std::string& model, const SourceOptions& o) {
  const ModelLocation loc = locate_model(model, o);
  if (loc.kind == ModelLocation::Kind::Gguf) return gguf::File::open(loc.path);
  return convert_folder(loc, o);
}

Result<std::shared_ptr<const Model>> open_model(const std::string& model, const ModelOptions& mo, const SourceOptions& so) {
  try {
    return Model::load(open_model_file(model, so), mo);
  } catch (const Error& e) {
    return Status{e.kind(), e.what(), -1};
  } catch (const std::bad_alloc&) {
    return Status{ErrorKind::OutOfMemory, "out of memory", -1};
  } catch (const std::exception& e) {
    return Status{ErrorKind::Io, e.what(), -1};
  }
}

}  // namespace embed
