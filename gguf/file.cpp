// GGUF parsing and validation. Every read goes through Cursor, which checks the bytes left;
// every size computed from file values uses checked arithmetic. Errors name the field and the
// file offset. Typed metadata access (getters) lives at the end of this file.
#include "gguf/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <tuple>

namespace embed::gguf {
namespace {

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

// Rounds x up to a multiple of `align` (a power of two); false on overflow.
bool pad_to(uint64_t x, uint64_t align, uint64_t* out) {
  uint64_t t;
  if (add_overflows(x, align - 1, &t)) return false;
  *out = t & ~(align - 1);
  return true;
}

size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    default: return 0;
  }
}

bool is_valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

// Keys and names come from the file: quote them with control and non-ASCII bytes escaped and
// long ones cut, so an error message can neither flood nor drive a terminal.
std::string quoted(std::string_view s) {
  constexpr size_t kShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kShown; i++) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x20 && ch < 0x7F && ch != '\\' && ch != '\'') {
      out += static_cast<char>(ch);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  if (s.size() > kShown) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out + "'";
}

// The address alignment a tensor's data needs so that its blocks can be read through their
// natural types (f16 scales, f32 values, ...): the largest power of two dividing the block size,
// at most 8. Files aligned to 8 or more (the default is 32) always satisfy it.
uint64_t natural_alignment(const TypeTraits& tr) {
  uint64_t a = 1;
  while (a < 8 && tr.block_bytes % (a * 2) == 0) a *= 2;
  return a;
}

[[noreturn]] void format_error(const std::string& path, uint64_t offset, const std::string& what) {
  fail(ErrorKind::Format, path + ": invalid GGUF at offset " + std::to_string(offset) + ": " + what);
}

class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* base, size_t size) : path_(path), base_(base), size_(size) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  [[noreturn]] void error(uint64_t at, const std::string& what) const { format_error(path_, at, what); }

  void need(uint64_t n, const char* what) const {
    if (n > left())
      error(pos_, std::string("file ends inside ") + what + " (needs " + std::to_string(n) + " bytes, " +
                      std::to_string(left()) + " left)");
  }

  template <class T> T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string_view read_string(const char* what, uint64_t cap) {
    const size_t at = pos_;
    const uint64_t len = read<uint64_t>(what);
    if (len > cap)
      error(at, std::string(what) + " length " + std::to_string(len) + " exceeds the limit of " + std::to_string(cap));
    if (len > left())
      error(at, std::string(what) + " length " + std::to_string(len) + " exceeds the " + std::to_string(left()) +
                    " bytes left in the file");
    std::string_view s(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return s;
  }

  const uint8_t* skip(uint64_t n, const char* what) {
    need(n, what);
    const uint8_t* p = base_ + pos_;
    pos_ += n;
    return p;
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
};

template <class T> T load_unaligned(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

// Parses the sections of a GGUF file in order into a File's members. One object per parse.
class FileParser {
 public:
  explicit FileParser(File& f) : f_(f), c_(f.path_, f.base_, f.size_) {}

  void run() {
    const auto [n_tensors, n_kv] = header();
    for (uint64_t i = 0; i < n_kv; i++) key_value(i);
    alignment();
    for (uint64_t i = 0; i < n_tensors; i++) tensor_info(i);
    place_tensors();
  }

 private:
  [[noreturn]] void bad(uint64_t at, const std::string& what) const { c_.error(at, what); }

  std::pair<uint64_t, uint64_t> header();
  void key_value(uint64_t index);
  MetaValue scalar_or_string(ValueType type, const std::string& where);
  ArrayValue array(const std::string& where);
  void alignment();
  void tensor_info(uint64_t index);
  void read_shape(TensorInfo& t, const std::string& where);
  void place_tensors();
  void check_overlaps() const;

  File& f_;
  Cursor c_;
};

std::pair<uint64_t, uint64_t> FileParser::header() {
  if (f_.size_ < 4 || std::memcmp(f_.base_, "GGUF", 4) != 0) {
    if (f_.size_ >= 4 && std::memcmp(f_.base_, "FUGG", 4) == 0) bad(0, "bad magic: big-endian GGUF is not supported");
    bad(0, "bad magic: not a GGUF file (expected the bytes 'GGUF')");
  }
  c_.skip(4, "magic");
  f_.version_ = c_.read<uint32_t>("version");
  if ((f_.version_ & 0xFFFFu) == 0 && f_.version_ != 0)
    bad(4, "version " + std::to_string(f_.version_) + " looks byte-swapped: big-endian files are not supported");
  if (f_.version_ < 2 || f_.version_ > 3)
    bad(4, "unsupported GGUF version " + std::to_string(f_.version_) + " (supported: 2 and 3)");

  const size_t counts_at = c_.pos();
  const int64_t n_tensors = c_.read<int64_t>("tensor count");
  const int64_t n_kv = c_.read<int64_t>("metadata count");
  // A key-value pair needs at least 8 (key length) + 1 (key) + 4 (type) + 1 (value) bytes; a
  // tensor entry at least 8 + 1 (name) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
  if (n_tensors < 0 || static_cast<uint64_t>(n_tensors) > c_.left() / 33)
    bad(counts_at, "tensor count " + std::to_string(n_tensors) + " is impossible for the " +
                       std::to_string(c_.left()) + " bytes left");
  if (n_kv < 0 || static_cast<uint64_t>(n_kv) > c_.left() / 14)
    bad(counts_at + 8, "metadata count " + std::to_string(n_kv) + " is impossible for the " +
                           std::to_string(c_.left()) + " bytes left");
  if (static_cast<uint64_t>(n_tensors) > kMaxTensorCount)
    bad(counts_at, "tensor count " + std::to_string(n_tensors) + " exceeds the limit of " + std::to_string(kMaxTensorCount));
  if (static_cast<uint64_t>(n_kv) > kMaxMetadataCount)
    bad(counts_at + 8, "metadata count " + std::to_string(n_kv) + " exceeds the limit of " + std::to_string(kMaxMetadataCount));
  return {static_cast<uint64_t>(n_tensors), static_cast<uint64_t>(n_kv)};
}

void FileParser::key_value(uint64_t index) {
  const size_t key_at = c_.pos();
  const std::string_view key = c_.read_string("metadata key", kMaxKeyBytes);
  if (key.empty()) bad(key_at, "metadata key " + std::to_string(index) + " is empty");
  if (f_.kv_index_.count(key)) bad(key_at, "duplicate metadata key " + quoted(key));
  const std::string where = "key " + quoted(key);
  const size_t type_at = c_.pos();
  const uint32_t raw_type = c_.read<uint32_t>("metadata value type");
  if (!is_valid_value_type(raw_type)) bad(type_at, where + ": unknown value type " + std::to_string(raw_type));
  const auto type = static_cast<ValueType>(raw_type);
  MetaValue mv = type == ValueType::ARRAY ? MetaValue{type, c_.pos(), array(where)} : scalar_or_string(type, where);
  f_.kvs_.push_back(KeyValue{std::string(key), std::move(mv)});
  f_.kv_index_.emplace(key, f_.kvs_.size() - 1);  // `key` views the file bytes, which never move
}

MetaValue FileParser::scalar_or_string(ValueType type, const std::string& where) {
  MetaValue mv{type, c_.pos(), uint64_t{0}};
  switch (type) {
    case ValueType::U8: mv.v = uint64_t{c_.read<uint8_t>("u8 value")}; break;
    case ValueType::U16: mv.v = uint64_t{c_.read<uint16_t>("u16 value")}; break;
    case ValueType::U32: mv.v = uint64_t{c_.read<uint32_t>("u32 value")}; break;
    case ValueType::U64: mv.v = c_.read<uint64_t>("u64 value"); break;
    case ValueType::I8: mv.v = int64_t{c_.read<int8_t>("i8 value")}; break;
    case ValueType::I16: mv.v = int64_t{c_.read<int16_t>("i16 value")}; break;
    case ValueType::I32: mv.v = int64_t{c_.read<int32_t>("i32 value")}; break;
    case ValueType::I64: mv.v = c_.read<int64_t>("i64 value"); break;
    case ValueType::F32: mv.v = double{c_.read<float>("f32 value")}; break;
    case ValueType::F64: mv.v = c_.read<double>("f64 value"); break;
    case ValueType::BOOL: {
      const uint8_t b = c_.read<uint8_t>("bool value");
      if (b > 1) bad(mv.offset, where + ": bool value " + std::to_string(b) + " is neither 0 nor 1");
      mv.v = b != 0;
      break;
    }
    case ValueType::STRING: mv.v = c_.read_string("string value", kMaxStringBytes); break;
    case ValueType::ARRAY: bad(mv.offset, where + ": array where a scalar was expected");  // not reached
  }
  return mv;
}

ArrayValue FileParser::array(const std::string& where) {
  ArrayValue a;
  const size_t type_at = c_.pos();
  const uint32_t et = c_.read<uint32_t>("array element type");
  if (et == static_cast<uint32_t>(ValueType::ARRAY)) bad(type_at, where + ": nested arrays are not allowed");
  if (!is_valid_value_type(et)) bad(type_at, where + ": unknown array element type " + std::to_string(et));
  a.elem_type = static_cast<ValueType>(et);
  const size_t count_at = c_.pos();
  a.count = c_.read<uint64_t>("array length");
  if (a.count > kMaxArrayElems)
    bad(count_at, where + ": array length " + std::to_string(a.count) + " exceeds the limit of " +
                      std::to_string(kMaxArrayElems));
  // Strings need at least their 8-byte length each; check before allocating anything.
  const uint64_t min_elem = a.elem_type == ValueType::STRING ? 8 : scalar_size(a.elem_type);
  uint64_t min_bytes;
  if (mul_overflows(a.count, min_elem, &min_bytes) || min_bytes > c_.left())
    bad(count_at, where + ": array of " + std::to_string(a.count) + " " + value_type_name(a.elem_type) +
                      " does not fit in the " + std::to_string(c_.left()) + " bytes left");
  if (a.elem_type == ValueType::STRING) {
    a.strings.reserve(static_cast<size_t>(a.count));
    for (uint64_t j = 0; j < a.count; j++) a.strings.push_back(c_.read_string("array string", kMaxStringBytes));
    return a;
  }
  a.data = c_.skip(min_bytes, "array data");
  if (a.elem_type == ValueType::BOOL)
    for (uint64_t j = 0; j < a.count; j++)
      if (a.data[j] > 1)
        bad(count_at + 8 + j, where + ": bool array element " + std::to_string(j) + " is " + std::to_string(a.data[j]) +
                                  ", neither 0 nor 1");
  return a;
}

void FileParser::alignment() {
  const MetaValue* a = f_.find_value("general.alignment");
  if (!a) return;
  if (a->type != ValueType::U32)
    bad(a->offset, std::string("general.alignment must be u32, found ") + value_type_name(a->type));
  const uint64_t al = std::get<uint64_t>(a->v);
  if (al == 0 || (al & (al - 1)) != 0) bad(a->offset, "general.alignment " + std::to_string(al) + " is not a power of two");
  if (al > kMaxAlignment)
    bad(a->offset, "general.alignment " + std::to_string(al) + " is larger than the limit of " +
                       std::to_string(kMaxAlignment));
  f_.alignment_ = static_cast<uint32_t>(al);
}

void FileParser::tensor_info(uint64_t index) {
  TensorInfo t;
  t.info_offset = c_.pos();
  const std::string_view name = c_.read_string("tensor name", kMaxKeyBytes);
  if (name.empty()) bad(t.info_offset, "tensor " + std::to_string(index) + " has an empty name");
  const std::string where = "tensor " + quoted(name);
  if (name.size() >= kMaxTensorName)
    bad(t.info_offset, where + ": name is " + std::to_string(name.size()) + " bytes, the limit is " +
                           std::to_string(kMaxTensorName - 1));
  if (f_.tensor_index_.count(name)) bad(t.info_offset, "duplicate tensor name " + quoted(name));
  t.name = std::string(name);
  read_shape(t, where);
  const size_t off_at = c_.pos();
  t.offset = c_.read<uint64_t>("tensor offset");
  if (t.offset % f_.alignment_ != 0)
    bad(off_at, where + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                    std::to_string(f_.alignment_));
  f_.tensors_.push_back(std::move(t));
  f_.tensor_index_.emplace(name, f_.tensors_.size() - 1);  // `name` views the file bytes
}

// n_dims, dims, type; then the byte size, with every product checked.
void FileParser::read_shape(TensorInfo& t, const std::string& where) {
  const size_t dims_at = c_.pos();
  t.n_dims = c_.read<uint32_t>("tensor n_dims");
  if (t.n_dims < 1 || t.n_dims > kMaxDims)
    bad(dims_at, where + ": n_dims " + std::to_string(t.n_dims) + " is outside 1.." + std::to_string(kMaxDims));
  uint64_t n_elems = 1;
  for (uint32_t d = 0; d < t.n_dims; d++) {
    const size_t at = c_.pos();
    t.ne[d] = c_.read<int64_t>("tensor dimension");
    if (t.ne[d] <= 0) bad(at, where + ": dimension " + std::to_string(d) + " is " + std::to_string(t.ne[d]) + " (must be > 0)");
    if (mul_overflows(n_elems, static_cast<uint64_t>(t.ne[d]), &n_elems) ||
        n_elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(at, where + ": element count overflows at dimension " + std::to_string(d));
  }
  const size_t type_at = c_.pos();
  const uint32_t raw_type = c_.read<uint32_t>("tensor type");
  if (is_retired_type(raw_type))
    bad(type_at, where + ": tensor type " + std::to_string(raw_type) + " has been removed from ggml");
  const auto traits = type_traits(raw_type);
  if (!traits) bad(type_at, where + ": unknown tensor type " + std::to_string(raw_type));
  t.type = static_cast<TensorType>(raw_type);
  if (t.ne[0] % traits->block_elems != 0)
    bad(dims_at, where + ": ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " + traits->name +
                     " block size " + std::to_string(traits->block_elems));
  const uint64_t blocks = n_elems / traits->block_elems;
  if (mul_overflows(blocks, traits->block_bytes, &t.nbytes)) bad(dims_at, where + ": byte size overflows");
}

void FileParser::place_tensors() {
  // The data section starts at the next multiple of the alignment (only if there are tensors).
  uint64_t data_start = c_.pos();
  if (!f_.tensors_.empty() && (!pad_to(c_.pos(), f_.alignment_, &data_start) || data_start > f_.size_))
    bad(c_.pos(), "the data section (at " + std::to_string(data_start) + ") starts beyond the end of the file (" +
                      std::to_string(f_.size_) + " bytes)");
  f_.data_offset_ = data_start;
  const uint64_t data_size = f_.size_ - f_.data_offset_;
  for (TensorInfo& t : f_.tensors_) {
    const std::string where = "tensor " + quoted(t.name);
    uint64_t end;
    if (add_overflows(t.offset, t.nbytes, &end) || end > data_size)
      bad(t.info_offset, where + ": data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
                             ") lies outside the " + std::to_string(data_size) + "-byte data section");
    const uint64_t need = natural_alignment(*type_traits(static_cast<uint32_t>(t.type)));
    if ((f_.data_offset_ + t.offset) % need != 0)
      bad(t.info_offset, where + ": data at file offset " + std::to_string(f_.data_offset_ + t.offset) +
                             " is not aligned to the " + std::to_string(need) + " bytes its type " +
                             type_name(t.type) + " needs");
    t.data = f_.base_ + f_.data_offset_ + t.offset;
  }
  check_overlaps();
}

// Overlap check on tensors sorted by offset; identical offsets with identical extents are a
// deliberate share (tied weights) and allowed. Comparing neighbours suffices: a tensor that
// overlaps any earlier one overlaps its predecessor, whose extent is the largest so far.
void FileParser::check_overlaps() const {
  const auto& ts = f_.tensors_;
  std::vector<size_t> order(ts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(ts[a].offset, ts[a].nbytes) < std::tie(ts[b].offset, ts[b].nbytes);
  });
  for (size_t k = 1; k < order.size(); k++) {
    const TensorInfo& p = ts[order[k - 1]];
    const TensorInfo& q = ts[order[k]];
    const bool same = p.offset == q.offset && p.nbytes == q.nbytes;
    if (!same && p.offset + p.nbytes > q.offset)  // both ends are within the data section: no overflow
      bad(q.info_offset, "tensor " + quoted(q.name) + " overlaps tensor " + quoted(p.name));
  }
}

const char* value_type_name(ValueType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "invalid";
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (uint32_t i = 0; i < n_dims; i++) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

File File::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::Io, path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(ErrorKind::Io, path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::Io, path + ": not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    fail(ErrorKind::Format, path + ": invalid GGUF: the file is empty");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (map == MAP_FAILED) fail(ErrorKind::Io, path + ": cannot mmap: " + std::strerror(e));
  File f;
  f.path_ = path;
  f.owner_ = std::shared_ptr<void>(map, [size](void* p) { munmap(p, size); });
  f.base_ = static_cast<const uint8_t*>(map);
  f.size_ = size;
  f.mapped_ = true;
  f.parse();
  return f;
}

void File::release_pages(const void* p, size_t n) const {
  const auto at = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(base_);
  if (!mapped_ || at < base || n > size_ || at - base > size_ - n) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (at + page - 1) & ~(page - 1), last = (at + n) & ~(page - 1);
  // Advice only: a mapping that refuses it just keeps its pages.
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

File File::from_buffer(const uint8_t* data, size_t size, std::string label) {
  File f;
  f.path_ = std::move(label);
  f.base_ = data;
  f.size_ = size;
  f.parse();
  return f;
}

File File::from_bytes(std::vector<uint8_t> bytes, std::string label) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  File f;
  f.path_ = std::move(label);
  f.base_ = owned->data();
  f.size_ = owned->size();
  f.owner_ = owned;
  f.parse();
  return f;
}

File File::from_owned(std::shared_ptr<const void> owner, const uint8_t* data, size_t size, std::string label) {
  File f;
  f.path_ = std::move(label);
  f.base_ = data;
  f.size_ = size;
  f.owner_ = std::const_pointer_cast<void>(std::move(owner));
  f.parse();
  return f;
}

void File::parse() { FileParser(*this).run(); }

const MetaValue* File::find_value(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const MetaValue& File::require(std::string_view key) const {
  const MetaValue* v = find_value(key);
  if (!v) fail(ErrorKind::Format, path_ + ": missing metadata key " + quoted(key));
  return *v;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

template <class T> const char* cpp_type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) return "string";
  else if constexpr (std::is_floating_point_v<T>) return sizeof(T) == 4 ? "f32" : "f64";
  else return value_type_name(value_type_of<T>());
}

[[noreturn]] void type_mismatch(const std::string& path, std::string_view key, const char* expected, const MetaValue& v,
                                const std::string& extra = "") {
  fail(ErrorKind::Format, path + ": metadata key " + quoted(key) + ": expected " + expected + ", found " +
                              value_type_name(v.type) + extra);
}

std::string shortest(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

template <class T> T convert_integer(const std::string& path, std::string_view key, const MetaValue& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.v)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      type_mismatch(path, key, cpp_type_name<T>(), v, " with value " + std::to_string(*u) + " out of range");
    return static_cast<T>(*u);
  }
  if (const auto* s = std::get_if<int64_t>(&v.v)) {
    if (*s < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (*s > 0 && static_cast<uint64_t>(*s) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
      type_mismatch(path, key, cpp_type_name<T>(), v, " with value " + std::to_string(*s) + " out of range");
    return static_cast<T>(*s);
  }
  type_mismatch(path, key, cpp_type_name<T>(), v);
}

template <class T> T convert_value(const std::string& path, std::string_view key, const MetaValue& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.type != ValueType::BOOL) type_mismatch(path, key, "bool", v);
    return std::get<bool>(v.v);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
    if (v.type != ValueType::STRING) type_mismatch(path, key, "string", v);
    return T(std::get<std::string_view>(v.v));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.type != ValueType::F32 && v.type != ValueType::F64) type_mismatch(path, key, cpp_type_name<T>(), v);
    const double d = std::get<double>(v.v);
    // An f64 beyond float's range would silently become infinity.
    if (std::isfinite(d) && std::fabs(d) > static_cast<double>(std::numeric_limits<T>::max()))
      type_mismatch(path, key, cpp_type_name<T>(), v, " with value " + shortest(d) + " out of range");
    return static_cast<T>(d);
  } else {
    static_assert(std::is_integral_v<T>);
    return convert_integer<T>(path, key, v);
  }
}

const ArrayValue& require_array(const std::string& path, std::string_view key, const MetaValue& v, ValueType elem) {
  if (v.type != ValueType::ARRAY) type_mismatch(path, key, "array", v);
  const ArrayValue& a = std::get<ArrayValue>(v.v);
  if (a.elem_type != elem)
    fail(ErrorKind::Format, path + ": metadata key " + quoted(key) + ": expected array of " + value_type_name(elem) +
                                ", found array of " + value_type_name(a.elem_type));
  return a;
}

}  // namespace

template <class T> T File::get(std::string_view key) const { return convert_value<T>(path_, key, require(key)); }

template <class T> std::optional<T> File::find(std::string_view key) const {
  const MetaValue* v = find_value(key);
  if (!v) return std::nullopt;
  return convert_value<T>(path_, key, *v);
}

std::optional<ArrayValue> File::find_array(std::string_view key) const {
  const MetaValue* v = find_value(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::ARRAY) type_mismatch(path_, key, "array", *v);
  return std::get<ArrayValue>(v->v);
}

template <class T> std::vector<T> File::get_array(std::string_view key) const {
  const ArrayValue& a = require_array(path_, key, require(key), value_type_of<T>());
  std::vector<T> out(static_cast<size_t>(a.count));
  for (size_t i = 0; i < out.size(); i++) {
    if constexpr (std::is_same_v<T, bool>) out[i] = a.data[i] != 0;
    else out[i] = load_unaligned<T>(a.data + i * sizeof(T));
  }
  return out;
}

const std::vector<std::string_view>& File::get_string_array(std::string_view key) const {
  return require_array(path_, key, require(key), ValueType::STRING).strings;
}

std::vector<std::pair<std::string, std::string>> File::shared_tensors() const {
  // Sort by (type, shape, first bytes) so candidates are neighbours; compare only within a run.
  auto key = [&](const TensorInfo& t) {
    uint64_t head = 0;
    std::memcpy(&head, t.data, std::min<uint64_t>(8, t.nbytes));
    return std::make_tuple(static_cast<uint32_t>(t.type), t.ne[0], t.ne[1], t.ne[2], t.ne[3], head);
  };
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(tensors_[a]) < key(tensors_[b]); });
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t k = 1; k < order.size(); k++) {
    const TensorInfo& a = tensors_[order[k - 1]];
    const TensorInfo& b = tensors_[order[k]];
    if (key(a) != key(b)) continue;
    if (a.offset == b.offset || std::memcmp(a.data, b.data, a.nbytes) == 0) out.emplace_back(a.name, b.name);
  }
  return out;
}

#define EMBED_GGUF_INSTANTIATE(T)                                        \
  template T File::get<T>(std::string_view) const;                       \
  template std::optional<T> File::find<T>(std::string_view) const;
EMBED_GGUF_INSTANTIATE(uint8_t)
EMBED_GGUF_INSTANTIATE(int8_t)
EMBED_GGUF_INSTANTIATE(uint16_t)
EMBED_GGUF_INSTANTIATE(int16_t)
EMBED_GGUF_INSTANTIATE(uint32_t)
EMBED_GGUF_INSTANTIATE(int32_t)
EMBED_GGUF_INSTANTIATE(uint64_t)
EMBED_GGUF_INSTANTIATE(int64_t)
EMBED_GGUF_INSTANTIATE(float)
EMBED_GGUF_INSTANTIATE(double)
EMBED_GGUF_INSTANTIATE(bool)
EMBED_GGUF_INSTANTIATE(std::string)
EMBED_GGUF_INSTANTIATE(std::string_view)
#undef EMBED_GGUF_INSTANTIATE

#define EMBED_GGUF_INSTANTIATE_ARRAY(T) template std::vector<T> File::get_array<T>(std::string_view) const;
EMBED_GGUF_INSTANTIATE_ARRAY(uint8_t)
EMBED_GGUF_INSTANTIATE_ARRAY(int8_t)
EMBED_GGUF_INSTANTIATE_ARRAY(uint16_t)
EMBED_GGUF_INSTANTIATE_ARRAY(int16_t)
EMBED_GGUF_INSTANTIATE_ARRAY(uint32_t)
EMBED_GGUF_INSTANTIATE_ARRAY(int32_t)
EMBED_GGUF_INSTANTIATE_ARRAY(uint64_t)
EMBED_GGUF_INSTANTIATE_ARRAY(int64_t)
EMBED_GGUF_INSTANTIATE_ARRAY(float)
EMBED_GGUF_INSTANTIATE_ARRAY(double)
EMBED_GGUF_INSTANTIATE_ARRAY(bool)
#undef EMBED_GGUF_INSTANTIATE_ARRAY

}  // namespace embed::gguf
