// libFuzzer entry for the GGUF reader: parses arbitrary bytes, then drives every accessor that
// reads file-controlled data (typed getters, arrays of every element type, shared_tensors, row
// dequantization) and checks the reader's promises about what it accepted. Owns no logic.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/quants.h"

using namespace embed;
using namespace embed::gguf;

namespace {

// A broken promise of the reader (not a rejected file): report it as a crash.
[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_reader_fuzz: reader accepted a file that breaks: %s (%s)\n", what, detail.c_str());
  std::abort();
}

template <class T> void try_get(const File& f, const std::string& key) {
  try {
    (void)f.get<T>(key);
  } catch (const Error&) {
  }
  try {
    (void)f.find<T>(key);
  } catch (const Error&) {
  }
}

template <class T> void try_array(const File& f, const std::string& key) {
  try {
    const std::vector<T> v = f.get_array<T>(key);
    const auto a = f.find_array(key);
    if (!a || a->count != v.size()) broken("get_array size differs from the stored count", key);
  } catch (const Error&) {
  }
}

void exercise_metadata(const File& f) {
  for (const KeyValue& kv : f.metadata()) {
    const std::string& k = kv.key;
    if (f.find_value(k) != &kv.value || !f.has(k)) broken("find_value does not return the listed value", k);
    try {
      const auto a = f.find_array(k);
      if (!a || (a->elem_type == ValueType::STRING ? a->strings.size() != a->count : a->data == nullptr))
        broken("find_array returned an inconsistent array", k);
    } catch (const Error&) {
    }
    try {
      (void)f.get_or<uint32_t>(k, 0);
    } catch (const Error&) {
    }
    try_get<uint8_t>(f, k), try_get<int8_t>(f, k), try_get<uint16_t>(f, k), try_get<int16_t>(f, k);
    try_get<uint32_t>(f, k), try_get<int32_t>(f, k), try_get<uint64_t>(f, k), try_get<int64_t>(f, k);
    try_get<float>(f, k), try_get<double>(f, k), try_get<bool>(f, k), try_get<std::string>(f, k);
    try_get<std::string_view>(f, k);
    try_array<uint8_t>(f, k), try_array<int8_t>(f, k), try_array<uint16_t>(f, k), try_array<int16_t>(f, k);
    try_array<uint32_t>(f, k), try_array<int32_t>(f, k), try_array<uint64_t>(f, k), try_array<int64_t>(f, k);
    try_array<float>(f, k), try_array<double>(f, k), try_array<bool>(f, k);
    try {
      size_t total = 0;
      for (std::string_view s : f.get_string_array(k)) total += s.size();
      if (total > f.size()) broken("string array longer than the file", k);
    } catch (const Error&) {
    }
  }
}

void check_tensor(const File& f, const TensorInfo& t) {
  const uint8_t* lo = f.base() + f.data_offset();
  const uint8_t* hi = f.base() + f.size();
  if (t.data < lo || t.data > hi || t.nbytes > static_cast<uint64_t>(hi - t.data)) broken("tensor data outside the file", t.name);
  if (t.n_dims < 1 || t.n_dims > kMaxDims || t.name.size() >= kMaxTensorName) broken("bad tensor header", t.name);
  for (int d = 0; d < kMaxDims; d++)
    if (t.ne[d] <= 0) broken("non-positive dimension", t.name);
  if (row_bytes(t.type, t.ne[0]) * static_cast<uint64_t>(t.n_rows()) != t.nbytes) broken("nbytes disagrees with the shape", t.name);
  if (f.find_tensor(t.name) != &t) broken("find_tensor does not return the listed tensor", t.name);
  (void)t.shape_string();
}

// Decodes rows of every decodable tensor, at most ~1M elements in all, into an exactly-sized
// buffer so that a decoder writing past the row is caught by ASan.
void exercise_tensors(const File& f) {
  int64_t budget = int64_t{1} << 20;
  for (const TensorInfo& t : f.tensors()) {
    check_tensor(f, t);
    if (!can_dequantize(t.type) || t.ne[0] > budget) continue;
    const size_t rb = row_bytes(t.type, t.ne[0]);
    std::vector<float> row(static_cast<size_t>(t.ne[0]));
    for (int64_t r = 0; r < t.n_rows() && budget >= t.ne[0]; r++, budget -= t.ne[0])
      dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, row.data(), t.ne[0]);
  }
  (void)f.shared_tensors();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const File f = File::from_buffer(data, size, "fuzz");
    if (f.version() < 2 || f.version() > 3) broken("version outside 2..3", std::to_string(f.version()));
    if (f.data_offset() > f.size()) broken("data section beyond the end", std::to_string(f.data_offset()));
    if (!f.tensors().empty() && f.data_offset() % f.alignment() != 0) broken("data section misaligned", "");
    exercise_metadata(f);
    exercise_tensors(f);
  } catch (const Error&) {
    // A rejected file is the expected outcome for most inputs.
  }
  return 0;
}
