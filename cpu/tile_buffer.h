// 64-byte aligned storage for tile-shaped operands (AMX tiles, VNNI rows) and the 16-row block
// size the tiled GEMMs share. No ISA flags needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace embed::cpu {
// Internal linkage on purpose (see simd_avx2.h): each including file compiles its own copy.
namespace {

constexpr int kTileRows = 16;  // rows (and f32 output columns) of every tile

// Tile rows are 64 bytes: storage for tiles must start on a cache line, or every row load
// touches two lines (std::vector's allocation is only 16-byte aligned).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};
using TileBuffer = std::vector<uint16_t, CacheLineAllocator<uint16_t>>;

}  // namespace
}  // namespace embed::cpu
