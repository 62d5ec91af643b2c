// GGUF v3 writer: header, key-values, tensor directory, aligned data.
#include "gguf/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/mman.h>

namespace embed::gguf {
namespace {

template <class T> void append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void append_string(std::vector<uint8_t>& out, const std::string& s) {
  append<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

uint64_t padded(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct CountingSink {
  size_t n = 0;
  void write(const void*, size_t k) { n += k; }
};

struct PointerSink {
  uint8_t* at;
  void write(const void* p, size_t n) {
    std::memcpy(at, p, n);
    at += n;
  }
};

struct VectorSink {
  std::vector<uint8_t>& out;
  void write(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
};

struct FileSink {
  std::FILE* f;
  std::string path;
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) fail(ErrorKind::Io, path + ": write failed");
  }
};

// Writes `path` through path.tmp (removed if `body` throws), renamed into place once complete.
template <class Body> void write_via_tmp(const std::string& path, Body&& body) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail(ErrorKind::Io, tmp + ": cannot create: " + std::strerror(errno));
  FileSink sink{f, tmp};
  try {
    body(sink);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) fail(ErrorKind::Io, tmp + ": write failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(ErrorKind::Io, path + ": cannot rename from " + tmp);
}

}  // namespace

Writer::Writer(uint32_t alignment) : alignment_(alignment) {
  EMBED_CHECK(alignment && (alignment & (alignment - 1)) == 0, "alignment must be a power of two");
  if (alignment != kDefaultAlignment) set<uint32_t>("general.alignment", alignment);
}

void Writer::put(const std::string& key, ValueType type, std::vector<uint8_t> payload) {
  for (Entry& e : kvs_)
    if (e.key == key) {
      e.type = type;
      e.payload = std::move(payload);
      return;
    }
  kvs_.push_back(Entry{key, type, std::move(payload)});
}

template <class T> void Writer::set(const std::string& key, T value) {
  std::vector<uint8_t> p;
  if constexpr (std::is_same_v<T, bool>) append<uint8_t>(p, value ? 1 : 0);
  else append<T>(p, value);
  put(key, value_type_of<T>(), std::move(p));
}

void Writer::set_string(const std::string& key, const std::string& value) {
  std::vector<uint8_t> p;
  append_string(p, value);
  put(key, ValueType::STRING, std::move(p));
}

template <class T> void Writer::set_array(const std::string& key, const std::vector<T>& values) {
  std::vector<uint8_t> p;
  append<uint32_t>(p, static_cast<uint32_t>(value_type_of<T>()));
  append<uint64_t>(p, values.size());
  for (const T& v : values) {
    if constexpr (std::is_same_v<T, bool>) append<uint8_t>(p, v ? 1 : 0);
    else append<T>(p, v);
  }
  put(key, ValueType::ARRAY, std::move(p));
}

void Writer::set_string_array(const std::string& key, const std::vector<std::string>& values) {
  std::vector<uint8_t> p;
  append<uint32_t>(p, static_cast<uint32_t>(ValueType::STRING));
  append<uint64_t>(p, values.size());
  for (const std::string& v : values) append_string(p, v);
  put(key, ValueType::ARRAY, std::move(p));
}

std::optional<uint64_t> Writer::array_count(const std::string& key) const {
  for (const Entry& e : kvs_)
    if (e.key == key && e.type == ValueType::ARRAY) {
      uint64_t n = 0;
      std::memcpy(&n, e.payload.data() + 4, 8);  // after the element type
      return n;
    }
  return std::nullopt;
}

void Writer::add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne, const void* data,
                        size_t nbytes) {
  const auto* b = static_cast<const uint8_t*>(data);
  add_tensor(name, type, ne, std::vector<uint8_t>(b, b + nbytes));
}

void Writer::add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne, std::vector<uint8_t> data) {
  EMBED_CHECK(!ne.empty() && ne.size() <= kMaxDims, "tensor rank must be 1..4");
  int64_t rows = 1;
  for (size_t i = 1; i < ne.size(); i++) rows *= ne[i];
  const size_t expect = row_bytes(type, ne[0]) * static_cast<size_t>(rows);
  if (data.size() != expect)
    fail(ErrorKind::InvalidArgument, "gguf writer: tensor '" + name + "' has " + std::to_string(data.size()) +
                                         " bytes, its type and shape need " + std::to_string(expect));
  tensors_.push_back(Tensor{name, type, ne, std::move(data)});
}

template <class Sink> void Writer::emit(Sink& sink) const {
  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  append<uint32_t>(head, 3);
  append<int64_t>(head, static_cast<int64_t>(tensors_.size()));
  append<int64_t>(head, static_cast<int64_t>(kvs_.size()));
  for (const Entry& e : kvs_) {
    append_string(head, e.key);
    append<uint32_t>(head, static_cast<uint32_t>(e.type));
    head.insert(head.end(), e.payload.begin(), e.payload.end());
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    append_string(head, t.name);
    append<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) append<int64_t>(head, d);
    append<uint32_t>(head, static_cast<uint32_t>(t.type));
    append<uint64_t>(head, offset);
    offset = padded(offset + t.data.size(), alignment_);
  }
  if (!tensors_.empty()) head.resize(padded(head.size(), alignment_), 0);
  sink.write(head.data(), head.size());
  static const uint8_t zeros[4096] = {};
  for (const Tensor& t : tensors_) {
    sink.write(t.data.data(), t.data.size());
    size_t pad = padded(t.data.size(), alignment_) - t.data.size();
    while (pad) {
      const size_t n = std::min(pad, sizeof(zeros));
      sink.write(zeros, n);
      pad -= n;
    }
  }
}

std::vector<uint8_t> Writer::to_bytes() const {
  std::vector<uint8_t> out;
  VectorSink sink{out};
  emit(sink);
  return out;
}

File Writer::to_file(std::string label) const {
  CountingSink count;
  emit(count);
  const size_t size = std::max<size_t>(count.n, 1);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail(ErrorKind::OutOfMemory, label + ": cannot allocate " + std::to_string(size) + " bytes for the converted model");
  std::shared_ptr<void> owner(p, [size](void* q) { munmap(q, size); });
  PointerSink sink{static_cast<uint8_t*>(p)};
  emit(sink);
  return File::from_owned(owner, static_cast<const uint8_t*>(p), count.n, std::move(label));
}

void Writer::write_file(const std::string& path) const {
  write_via_tmp(path, [&](FileSink& sink) { emit(sink); });
}

void write_with_metadata(const File& source, const Writer& edits, const std::string& path) {
  EMBED_CHECK(edits.tensors_.empty(), "write_with_metadata: edits carry key-values only");
  for (const Writer::Entry& e : edits.kvs_) EMBED_CHECK(e.key != "general.alignment", "write_with_metadata: the alignment stays the source's");
  const std::vector<TensorInfo>& tensors = source.tensors();
  if (tensors.empty()) fail(ErrorKind::InvalidArgument, source.path() + ": has no tensors, nothing to copy");
  uint64_t directory = tensors[0].info_offset;  // where the key-values end
  for (const TensorInfo& t : tensors) directory = std::min(directory, t.info_offset);
  const std::vector<KeyValue>& kvs = source.metadata();
  auto edited = [&](const std::string& key) {
    return std::any_of(edits.kvs_.begin(), edits.kvs_.end(), [&](const Writer::Entry& e) { return e.key == key; });
  };
  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  append<uint32_t>(head, 3);
  append<int64_t>(head, static_cast<int64_t>(tensors.size()));
  const size_t count_at = head.size();
  append<int64_t>(head, 0);
  int64_t n_kv = 0;
  for (size_t i = 0; i < kvs.size(); i++) {
    // A value runs from its offset (after the type) to the next entry's key length, 8 + key + 4
    // bytes before that entry's value.
    const uint64_t end = i + 1 < kvs.size() ? kvs[i + 1].value.offset - 4 - kvs[i + 1].key.size() - 8 : directory;
    if (edited(kvs[i].key)) continue;
    append_string(head, kvs[i].key);
    append<uint32_t>(head, static_cast<uint32_t>(kvs[i].value.type));
    head.insert(head.end(), source.base() + kvs[i].value.offset, source.base() + end);
    n_kv++;
  }
  for (const Writer::Entry& e : edits.kvs_) {
    append_string(head, e.key);
    append<uint32_t>(head, static_cast<uint32_t>(e.type));
    head.insert(head.end(), e.payload.begin(), e.payload.end());
    n_kv++;
  }
  std::memcpy(head.data() + count_at, &n_kv, sizeof n_kv);
  for (const TensorInfo& t : tensors) {
    append_string(head, t.name);
    append<uint32_t>(head, t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; d++) append<int64_t>(head, t.ne[d]);
    append<uint32_t>(head, static_cast<uint32_t>(t.type));
    append<uint64_t>(head, t.offset);
  }
  head.resize(padded(head.size(), source.alignment()), 0);

  write_via_tmp(path, [&](FileSink& sink) {
    sink.write(head.data(), head.size());
    sink.write(source.base() + source.data_offset(), source.size() - source.data_offset());
  });
}

#define EMBED_WRITER_INSTANTIATE(T)                                   \
  template void Writer::set<T>(const std::string&, T);               \
  template void Writer::set_array<T>(const std::string&, const std::vector<T>&);
EMBED_WRITER_INSTANTIATE(uint8_t)
EMBED_WRITER_INSTANTIATE(int8_t)
EMBED_WRITER_INSTANTIATE(uint16_t)
EMBED_WRITER_INSTANTIATE(int16_t)
EMBED_WRITER_INSTANTIATE(uint32_t)
EMBED_WRITER_INSTANTIATE(int32_t)
EMBED_WRITER_INSTANTIATE(uint64_t)
EMBED_WRITER_INSTANTIATE(int64_t)
EMBED_WRITER_INSTANTIATE(float)
EMBED_WRITER_INSTANTIATE(double)
EMBED_WRITER_INSTANTIATE(bool)
#undef EMBED_WRITER_INSTANTIATE

}  // namespace embed::gguf
