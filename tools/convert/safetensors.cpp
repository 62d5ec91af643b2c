// safetensors parsing and validation: 8-byte header length, JSON header, tensor directory
// checked against the file size; the shard index of sharded checkpoints.
#include "tools/convert/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "gguf/fp16.h"

namespace embed::convert {
namespace {

using Json = nlohmann::ordered_json;

struct DtypeInfo {
  const char* name;
  StDtype dtype;
  uint32_t bytes;
};
constexpr DtypeInfo kDtypes[] = {
    {"F64", StDtype::F64, 8}, {"F32", StDtype::F32, 4}, {"F16", StDtype::F16, 2},  {"BF16", StDtype::BF16, 2},
    {"I64", StDtype::I64, 8}, {"I32", StDtype::I32, 4}, {"I16", StDtype::I16, 2},  {"I8", StDtype::I8, 1},
    {"U8", StDtype::U8, 1},   {"BOOL", StDtype::Bool, 1},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  fail(ErrorKind::Format, where + ": " + what);
}

// Reads [begin, end) from the header entry; both must be integers within the data section.
void read_offsets(const Json& entry, const std::string& where, uint64_t data_size, uint64_t& begin, uint64_t& end) {
  const auto it = entry.find("data_offsets");
  if (it == entry.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
      !(*it)[1].is_number_unsigned())
    bad(where, "'data_offsets' must be two non-negative integers");
  begin = (*it)[0].get<uint64_t>();
  end = (*it)[1].get<uint64_t>();
  if (begin > end || end > data_size)
    bad(where, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside the " +
                   std::to_string(data_size) + "-byte data section");
}

std::vector<int64_t> read_shape(const Json& entry, const std::string& where) {
  const auto it = entry.find("shape");
  if (it == entry.end() || !it->is_array()) bad(where, "'shape' must be an array");
  if (it->size() > 8) bad(where, "shape has " + std::to_string(it->size()) + " dimensions (at most 8)");
  std::vector<int64_t> shape;
  for (const Json& d : *it) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40))
      bad(where, "shape entries must be integers in [0, 2^40]");
    shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }
  return shape;
}

// Byte size of `shape` elements of `elem_bytes` each, or nullopt on overflow.
bool checked_nbytes(const std::vector<int64_t>& shape, uint64_t elem_bytes, uint64_t& out) {
  unsigned __int128 n = elem_bytes;
  for (int64_t d : shape) {
    n *= static_cast<uint64_t>(d);
    if (n > (static_cast<unsigned __int128>(1) << 62)) return false;
  }
  out = static_cast<uint64_t>(n);
  return true;
}

}  // namespace

int64_t StTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string StTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::Io, path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::Io, path + ": not a regular file");
  }
  SafetensorsFile f;
  f.path_ = path;
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ < 8) {
    ::close(fd);
    bad(path, "file is " + std::to_string(f.size_) + " bytes, too small for a safetensors header");
  }
  void* map = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (map == MAP_FAILED) fail(ErrorKind::Io, path + ": cannot mmap: " + std::strerror(e));
  const uint64_t size = f.size_;
  f.owner_ = std::shared_ptr<const void>(map, [size](const void* p) { munmap(const_cast<void*>(p), size); });
  f.base_ = static_cast<const uint8_t*>(map);
  f.parse();
  return f;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<uint8_t> bytes, std::string label) {
  SafetensorsFile f;
  f.path_ = std::move(label);
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  f.base_ = owned->data();
  f.size_ = owned->size();
  f.owner_ = owned;
  if (f.size_ < 8) bad(f.path_, "file is " + std::to_string(f.size_) + " bytes, too small for a safetensors header");
  f.parse();
  return f;
}

void SafetensorsFile::parse() {
  uint64_t header_len = 0;
  std::memcpy(&header_len, base_, 8);  // little-endian on every platform this builds for
  if (header_len > kMaxSafetensorsHeader || header_len > size_ - 8)
    bad(path_, "header length " + std::to_string(header_len) + " exceeds the file (" + std::to_string(size_) +
                   " bytes) or the 100 MB limit");
  const char* text = reinterpret_cast<const char*>(base_ + 8);
  Json header = Json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) bad(path_, "header is not valid JSON");
  if (!header.is_object()) bad(path_, "header must be a JSON object");
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size_ - data_start;

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) bad(path_, "'__metadata__' must be an object");
      continue;
    }
    const std::string where = path_ + ": tensor '" + it.key() + "'";
    if (it.key().empty()) bad(path_, "a tensor has an empty name");
    if (!it.value().is_object()) bad(where, "entry must be an object");
    const auto dt = it.value().find("dtype");
    if (dt == it.value().end() || !dt->is_string()) bad(where, "'dtype' must be a string");
    StTensor t;
    t.name = it.key();
    t.dtype_name = dt->get<std::string>();
    t.shape = read_shape(it.value(), where);
    t.file = path_;
    uint64_t begin = 0, end = 0;
    read_offsets(it.value(), where, data_size, begin, end);
    if (const DtypeInfo* info = find_dtype(t.dtype_name)) {
      t.dtype = info->dtype;
      uint64_t expect = 0;
      if (!checked_nbytes(t.shape, info->bytes, expect) || expect != end - begin)
        bad(where, "shape " + t.shape_string() + " of " + t.dtype_name + " needs " + std::to_string(expect) +
                       " bytes, data_offsets give " + std::to_string(end - begin));
    }
    t.data = base_ + data_start + begin;
    t.nbytes = end - begin;
    ranges.emplace_back(begin, end);
    if (!index_.emplace(t.name, tensors_.size()).second) bad(where, "appears twice");
    tensors_.push_back(std::move(t));
  }
  // Overlapping tensors would alias each other's bytes; the format forbids it.
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); i++)
    if (ranges[i].first < ranges[i - 1].second && ranges[i].first != ranges[i].second)
      bad(path_, "tensor data ranges overlap at byte " + std::to_string(ranges[i].first));
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void WeightSet::add_file(SafetensorsFile f) {
  files_.push_back(std::make_unique<SafetensorsFile>(std::move(f)));
  for (const StTensor& t : files_.back()->tensors()) {
    if (!index_.emplace(t.name, &t).second)
      fail(ErrorKind::Format, "tensor '" + t.name + "' appears in two shards: " + index_[t.name]->file + " and " + t.file);
    order_.push_back(&t);
  }
}

// Shard names come from a JSON file: a plain file name is required, so that a hostile index
// cannot point outside the model folder.
static std::vector<std::string> shards_from_index(const std::string& index_path, Json& weight_map) {
  std::ifstream in(index_path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, index_path + ": cannot open");
  Json index = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) bad(index_path, "not a JSON object");
  const auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object() || wm->empty()) bad(index_path, "'weight_map' must be a non-empty object");
  std::vector<std::string> shards;
  std::set<std::string> seen;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string()) bad(index_path, "weight_map['" + it.key() + "'] must be a file name");
    const std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos ||
        shard == "." || shard == "..")
      bad(index_path, "weight_map['" + it.key() + "'] = '" + shard + "' is not a plain file name in the model folder");
    if (seen.insert(shard).second) shards.push_back(shard);
  }
  weight_map = *wm;
  return shards;
}

WeightSet WeightSet::open_folder(const std::string& model_dir) {
  namespace fs = std::filesystem;
  const fs::path dir(model_dir);
  WeightSet set;
  if (fs::is_regular_file(dir / "model.safetensors")) {
    set.add_file(SafetensorsFile::open((dir / "model.safetensors").string()));
    return set;
  }
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::is_regular_file(index_path)) {
    Json weight_map;
    for (const std::string& shard : shards_from_index(index_path.string(), weight_map)) {
      if (!fs::is_regular_file(dir / shard))
        fail(ErrorKind::InvalidArgument, index_path.string() + " names shard '" + shard + "', which is missing");
      set.add_file(SafetensorsFile::open((dir / shard).string()));
    }
    for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
      const StTensor* t = set.find(it.key());
      if (!t || fs::path(t->file).filename() != it.value().get<std::string>())
        bad(index_path.string(), "tensor '" + it.key() + "' is not in its shard " + it.value().get<std::string>());
    }
    return set;
  }
  std::string hint;
  if (fs::exists(dir / "pytorch_model.bin") || fs::exists(dir / "pytorch_model.bin.index.json"))
    hint = " (found pytorch_model.bin: only safetensors weights are read; re-save the model with safetensors)";
  fail(ErrorKind::InvalidArgument,
       model_dir + ": no weights: neither model.safetensors nor model.safetensors.index.json" + hint);
}

const StTensor* WeightSet::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<float> read_as_f32(const StTensor& t) {
  const size_t n = static_cast<size_t>(t.n_elements());
  std::vector<float> out(n);
  switch (t.dtype) {
    case StDtype::F32:
      std::memcpy(out.data(), t.data, n * 4);
      break;
    case StDtype::F16:
      for (size_t i = 0; i < n; i++) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    case StDtype::BF16:
      for (size_t i = 0; i < n; i++) {
        uint16_t b;
        std::memcpy(&b, t.data + 2 * i, 2);
        out[i] = bf16_to_f32(b);
      }
      break;
    default:
      fail(ErrorKind::Unsupported, t.file + ": tensor '" + t.name + "' has dtype " + t.dtype_name +
                                       "; the converter reads F32, F16 and BF16 weights");
  }
  return out;
}

}  // namespace embed::convert
