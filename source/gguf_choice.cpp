// llama.cpp's -hf file choice (find_best_model in common/download.cpp), on a sorted file list.
#include "source/gguf_choice.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace embed::source {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<std::string> gguf_candidates(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    const std::string name = lower(base_name(p));
    if (!ends_with(name, ".gguf")) continue;
    bool skip = false;
    for (const char* not_a_model : {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"})
      skip = skip || name.find(not_a_model) != std::string::npos;
    if (!skip) out.push_back(p);
  }
  return out;
}

namespace {

// Whether `path` shows `tag` followed by '.' or '-' (llama.cpp's regex "<tag>[.-]", any case);
// with `whole`, only where the tag also starts after a separator or at the start of the name.
bool shows_tag(const std::string& path, const std::string& tag, bool whole) {
  const std::string l = lower(path), t = lower(tag);
  for (size_t at = l.find(t); at != std::string::npos; at = l.find(t, at + 1)) {
    const size_t after = at + t.size();
    const bool ends = after < l.size() && (l[after] == '.' || l[after] == '-');
    const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(l[at - 1]));
    if (ends && (!whole || starts)) return true;
  }
  return false;
}

// A split GGUF's parts after the first are never chosen (llama.cpp downloads them with it).
bool later_part(const std::string& path) {
  static const std::regex part("-([0-9]{5})-of-[0-9]{5}\\.gguf$", std::regex::icase);
  std::smatch m;
  return std::regex_search(path, m, part) && m[1] != "00001";
}

}  // namespace

std::optional<std::string> choose_gguf(const std::vector<std::string>& candidates, const std::string& tag) {
  if (tag.empty()) {
    for (const char* preferred : {"Q4_K_M", "Q8_0"})
      if (auto p = choose_gguf(candidates, preferred)) return p;
    for (const std::string& p : candidates)
      if (!later_part(p)) return p;
    return std::nullopt;
  }
  // The tag as a whole word first ("F16" is not the end of "BF16"), then anywhere as llama.cpp
  // searches: both pick llama.cpp's file whenever only one file shows the tag.
  for (const bool whole : {true, false})
    for (const std::string& p : candidates)
      if (!later_part(p) && shows_tag(p, tag, whole)) return p;
  return std::nullopt;
}

bool is_first_or_only_part(const std::string& path) { return !later_part(path); }

std::string gguf_tag_of(const std::string& path) {
  std::string stem = base_name(path);
  stem = stem.substr(0, stem.size() - std::min<size_t>(stem.size(), 5));  // ".gguf"
  static const std::regex split("-[0-9]{5}-of-[0-9]{5}$");
  stem = std::regex_replace(stem, split, "");
  const size_t cut = stem.find_last_of(".-");
  return cut == std::string::npos ? stem : stem.substr(cut + 1);
}

bool is_split_gguf(const std::string& path) {
  static const std::regex split("-[0-9]{5}-of-[0-9]{5}\\.gguf$", std::regex::icase);
  return std::regex_search(path, split);
}

}  // namespace embed::source
