// Memory that should not stay resident: workspace spills freed per scope, CPU buffers returned
// to the OS, and mapped weight pages dropped once a backend holds its own copy.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "base/error.h"
#include "engine/workspace.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace {

using namespace embed;

// Counts live bytes; the kernels are never called by a Workspace.
class CountingBackend final : public Backend {
 public:
  size_t live = 0, allocations = 0;
  Device device() const override { return Device::Cpu; }
  std::string name() const override { return "counting"; }
  void* alloc(size_t bytes) override {
    live += bytes;
    allocations++;
    auto* p = static_cast<size_t*>(std::malloc(bytes + 16));
    *p = bytes;
    return p + 2;
  }
  void free(void* p) override {
    if (!p) return;  // free(nullptr) does nothing, as Backend::free promises
    size_t* h = static_cast<size_t*>(p) - 2;
    live -= *h;
    std::free(h);
  }
  void upload(void*, const void*, size_t) override { unused(); }
  void download(void*, const void*, size_t) override { unused(); }
  void sync() override {}
  Tensor load_weight(const Tensor&, WeightUse) override { return unused(), Tensor{}; }
  void release_weight(const Tensor&) override {}
  bool supports(Op, DType) const override { return false; }
  void gather(const GatherArgs&) override { unused(); }
  void matmul(const MatmulArgs&) override { unused(); }
  void layer_norm(const LayerNormArgs&) override { unused(); }
  void rms_norm(const RmsNormArgs&) override { unused(); }
  void rope(const RopeArgs&) override { unused(); }
  void attention(const AttentionArgs&) override { unused(); }
  void activation(const ActivationArgs&) override { unused(); }
  void glu(const GluArgs&) override { unused(); }
  void add(const AddArgs&) override { unused(); }
  void scale(const ScaleArgs&) override { unused(); }
  void pool(const PoolArgs&) override { unused(); }
  void softmax(const SoftmaxArgs&) override { unused(); }

 private:
  static void unused() { FAIL("a Workspace called a kernel"); }
};

long rss_file_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssFile:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

}  // namespace

TEST_CASE("workspace: a pass that outgrows the buffer frees its spills at the end of each scope") {
  CountingBackend b;
  Workspace ws(b);
  ws.reset();
  const int64_t rows = 1000, cols = 100;  // 400,000 bytes a tensor
  const size_t bytes = static_cast<size_t>(rows * cols) * sizeof(float);
  const size_t one = (bytes + 255) / 256 * 256;  // the workspace hands out 256-byte-aligned blocks
  Tensor persistent = ws.f32(rows, cols);  // like the runner's hidden state: lives all pass
  for (int layer = 0; layer < 6; layer++) {
    Workspace::Scope scope(ws);
    Tensor a = ws.f32(rows, cols), c = ws.f32(rows, cols);
    std::memset(a.data, 1, bytes);
    std::memset(c.data, 2, bytes);
    // Inside a layer: the persistent tensor and this layer's two. Without the per-scope release
    // this would grow by two tensors per layer (13 tensors after 6 layers).
    CHECK(b.live == 3 * one);
  }
  CHECK(b.live == one);
  REQUIRE(ws.peak() >= 3 * one);
  // The next pass gets one buffer of the peak size (plus 1/8) and allocates nothing more.
  ws.reset();
  CHECK(b.live >= 3 * one);
  CHECK(b.live <= 3 * one + 3 * one / 8 + 1024);
  const size_t before = b.allocations;
  persistent = ws.f32(rows, cols);
  for (int layer = 0; layer < 6; layer++) {
    Workspace::Scope scope(ws);
    Tensor a = ws.f32(rows, cols), c = ws.f32(rows, cols);
    std::memset(a.data, 3, bytes);
    std::memset(c.data, 4, bytes);
  }
  CHECK(b.allocations == before);
}

TEST_CASE("cpu backend: buffers are 64-byte aligned, writable and freed, small and large") {
  BackendOptions o;
  o.threads = 1;
  auto b = create_backend(o);
  for (size_t n : {size_t{1}, size_t{100}, size_t{4096}, (size_t{1} << 20) - 64, size_t{1} << 20, size_t{5} << 20}) {
    void* p = b->alloc(n);
    REQUIRE(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    std::memset(p, 0x5a, n);
    CHECK(static_cast<unsigned char*>(p)[n - 1] == 0x5a);
    b->free(p);
  }
  b->free(nullptr);
}

TEST_CASE("gguf: release_pages drops mapped pages and the data reads back unchanged") {
  // One 8 MiB tensor of a known pattern.
  const size_t n = size_t{8} << 20;
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; i++) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  gguf::Writer w;
  w.set_string("general.architecture", "test");
  w.add_tensor("t", gguf::TensorType::F32, {static_cast<int64_t>(n / 4)}, data.data(), n);
  const std::string path = "/tmp/embed-memory-test-" + std::to_string(getpid()) + ".gguf";
  w.write_file(path);

  {
    const gguf::File f = gguf::File::open(path);
    const gguf::TensorInfo& t = *f.find_tensor("t");
    REQUIRE(t.nbytes == n);
    const long before = rss_file_kib();
    REQUIRE(std::memcmp(t.data, data.data(), n) == 0);  // faults every page in
    const long touched = rss_file_kib();
    f.release_pages(t.data, t.nbytes);
    const long released = rss_file_kib();
    INFO("RssFile KiB: before " << before << ", after reading " << touched << ", after release " << released);
    CHECK(touched - before >= 7 * 1024);
    CHECK(touched - released >= 7 * 1024);
    CHECK(std::memcmp(t.data, data.data(), n) == 0);  // read from the file again
    // Out-of-range requests are ignored.
    f.release_pages(data.data(), n);
    f.release_pages(t.data, f.size());
  }
  std::remove(path.c_str());

  // A file parsed from memory has no file behind its pages: releasing must not touch them
  // (MADV_DONTNEED on anonymous memory would zero it).
  const gguf::File m = gguf::File::from_bytes(w.to_bytes());
  const gguf::TensorInfo& t = *m.find_tensor("t");
  m.release_pages(t.data, t.nbytes);
  CHECK(std::memcmp(t.data, data.data(), n) == 0);
}
