// Scratch memory for activations: a bump allocator over one backend buffer. Scopes release what
// was taken inside them (per layer), reset() starts a pass. A pass that outgrows the buffer is
// served from extra buffers; the next reset() replaces everything with one buffer of the peak
// size, so steady-state batches allocate nothing.
#pragma once

#include <vector>

#include "engine/backend.h"

namespace embed {

class Workspace {
 public:
  explicit Workspace(Backend& b) : b_(b) {}
  // Starts a new pass; everything handed out before becomes invalid.
  void reset();
  Tensor f32(int64_t rows, int64_t cols);
  void* bytes(size_t n);
  size_t capacity() const { return main_.bytes(); }
  size_t peak() const { return peak_; }

  // Everything allocated while a Scope lives is released when it ends.
  class Scope {
   public:
    explicit Scope(Workspace& ws) : ws_(ws), mark_(ws.offset_), spills_(ws.spill_.size()) {}
    ~Scope() {
      ws_.offset_ = mark_;
      ws_.spill_.resize(spills_);  // a pass that outgrows the buffer still frees per layer
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Workspace& ws_;
    size_t mark_;
    size_t spills_;
  };

 private:
  Backend& b_;
  DeviceBuffer main_;
  size_t offset_ = 0;  // virtual bump offset: what the pass would use if main_ were big enough
  size_t peak_ = 0;
  std::vector<DeviceBuffer> spill_;
};

}  // namespace embed
