// The CUDA emulator's scheduler and host runtime (see cuda/emulator.h). Blocks run one after
// another in a shuffled order; the threads of a block are fibers that run until they reach a
// barrier (block, warp, shuffle) or finish, picked in a seeded random order each round. A round
// in which no fiber can move is a deadlock (a barrier not every thread reaches): abort. Fibers
// switch with a few instructions on x86-64 (callee-saved registers and the stack pointer), with
// ucontext elsewhere (two system calls per switch: correct, much slower).
#include "cuda/emulator.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "base/error.h"

dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace embed::cuda::emu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kSharedLimit = 227 * 1024;       // Hopper's largest block allocation
constexpr size_t kStaticSharedLimit = 48 * 1024;  // without an opt-in

// ---- context switch ----
#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores the stack pointer to *save,
// loads `load` as the stack pointer and restores the registers saved there (System V ABI).
extern "C" void embed_emu_switch(void** save, void* load);
asm(R"(
  .text
  .globl embed_emu_switch
  .hidden embed_emu_switch
  .type embed_emu_switch, @function
embed_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size embed_emu_switch, .-embed_emu_switch
)");
struct Context {
  void* sp = nullptr;
};
#else
struct Context {
  ucontext_t uc{};
};
#endif

enum class State { Runnable, Waiting, Done };

struct Fiber {
  Context ctx;
  std::unique_ptr<char[]> stack;
  dim3 tid;
  int warp = 0, lane = 0;
  State state = State::Runnable;
  size_t shared_cursor = 0;
};

struct Barrier {
  int arrived = 0;
  std::vector<int> waiters;
};

struct BlockRun {
  std::vector<Fiber> fibers;
  Context scheduler;
  int current = 0;
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  std::vector<int> warp_live;
  int block_live = 0;
  std::vector<std::array<uint64_t, 32>> slots;  // shuffle mailboxes, one per warp
  // Shared memory arenas, 128-byte aligned like the real ones (WMMA needs 32).
  std::vector<unsigned char> shared_storage, dynamic_storage;
  unsigned char* shared = nullptr;
  unsigned char* dynamic = nullptr;
  size_t dynamic_bytes = 0;
  const std::function<void()>* body = nullptr;
  std::mt19937 rng{12345};
};

BlockRun* g_run = nullptr;
std::map<const void*, int> g_dynamic_limit;

Fiber& me() { return g_run->fibers[static_cast<size_t>(g_run->current)]; }

// AddressSanitizer must be told about every stack switch, or it reports the fibers' stacks as
// overflows (sanitizer/common_interface_defs.h).
#if defined(__SANITIZE_ADDRESS__)
extern "C" void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
const void* g_scheduler_stack = nullptr;
size_t g_scheduler_stack_bytes = 0;
#endif

// Switches from the running context (saved into `save`) to `load`, whose stack is `stack`
// (nullptr: the scheduler's); `leaving_for_good` when the running fiber has finished.
void switch_context(Context& save, Context& load, const char* stack, bool leaving_for_good = false) {
#if defined(__SANITIZE_ADDRESS__)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(leaving_for_good ? nullptr : &fake_stack, stack ? stack : g_scheduler_stack,
                                 stack ? kStackBytes : g_scheduler_stack_bytes);
#else
  (void)stack;
  (void)leaving_for_good;
#endif
#if defined(__x86_64__)
  embed_emu_switch(&save.sp, load.sp);
#else
  swapcontext(&save.uc, &load.uc);
#endif
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

void switch_to_scheduler(bool leaving_for_good = false) { switch_context(me().ctx, g_run->scheduler, nullptr, leaving_for_good); }

void release(Barrier& b) {
  for (int i : b.waiters) g_run->fibers[static_cast<size_t>(i)].state = State::Runnable;
  b.waiters.clear();
  b.arrived = 0;
}

// A barrier is complete when every live thread of its scope has arrived.
void check_complete(int which) {
  Barrier& b = which < 0 ? g_run->block_barrier : g_run->warp_barriers[static_cast<size_t>(which)];
  const int live = which < 0 ? g_run->block_live : g_run->warp_live[static_cast<size_t>(which)];
  if (b.arrived > 0 && b.arrived >= live) release(b);
}

void wait_at(int which) {
  Fiber& f = me();
  Barrier& b = which < 0 ? g_run->block_barrier : g_run->warp_barriers[static_cast<size_t>(which)];
  b.arrived++;
  b.waiters.push_back(g_run->current);
  f.state = State::Waiting;
  check_complete(which);
  switch_to_scheduler();  // even when released at once: let the others run first, in random order
}

// A fiber's first and only frame: runs the kernel body for this thread, then hands control back
// to the scheduler for good.
void fiber_main() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &g_scheduler_stack, &g_scheduler_stack_bytes);  // learns the scheduler's stack
#endif
  (*g_run->body)();
  Fiber& f = me();
  f.state = State::Done;
  g_run->block_live--;
  g_run->warp_live[static_cast<size_t>(f.warp)]--;
  check_complete(-1);
  check_complete(f.warp);
  switch_to_scheduler(/*leaving_for_good=*/true);
  std::abort();  // never resumed
}

void start_fiber(Fiber& f) {
#if defined(__x86_64__)
  // The initial stack as embed_emu_switch expects it: six zeroed registers, then the address it
  // "returns" to, then a slot that keeps the stack 16-byte aligned as at a function's entry.
  auto top = reinterpret_cast<uintptr_t>(f.stack.get() + kStackBytes) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<void**>(top) - 8;
  for (int i = 0; i < 6; i++) frame[i] = nullptr;
  frame[6] = reinterpret_cast<void*>(&fiber_main);
  frame[7] = nullptr;
  f.ctx.sp = frame;
#else
  getcontext(&f.ctx.uc);
  f.ctx.uc.uc_stack.ss_sp = f.stack.get();
  f.ctx.uc.uc_stack.ss_size = kStackBytes;
  f.ctx.uc.uc_link = nullptr;
  makecontext(&f.ctx.uc, fiber_main, 0);
#endif
}

void resume(BlockRun& run, int i) {
  run.current = i;
  threadIdx = run.fibers[static_cast<size_t>(i)].tid;
  switch_context(run.scheduler, run.fibers[static_cast<size_t>(i)].ctx, run.fibers[static_cast<size_t>(i)].stack.get());
}

void run_block(BlockRun& run, unsigned n_threads) {
  for (unsigned i = 0; i < n_threads; i++) {
    Fiber& f = run.fibers[i];
    f.state = State::Runnable;
    f.shared_cursor = 0;
    f.tid = dim3(i % blockDim.x, (i / blockDim.x) % blockDim.y, i / (blockDim.x * blockDim.y));
    f.warp = static_cast<int>(i / 32);
    f.lane = static_cast<int>(i % 32);
    start_fiber(f);
  }
  run.block_live = static_cast<int>(n_threads);
  for (size_t w = 0; w < run.warp_live.size(); w++)
    run.warp_live[w] = static_cast<int>(std::min<unsigned>(32, n_threads - static_cast<unsigned>(w) * 32));
  // Uninitialised shared memory reads as NaN (0xFF bytes), as poisoned outputs do.
  std::fill(run.shared, run.shared + kStaticSharedLimit, 0xFF);
  std::fill(run.dynamic, run.dynamic + run.dynamic_bytes, 0xFF);
  std::vector<int> order(n_threads);
  for (unsigned i = 0; i < n_threads; i++) order[i] = static_cast<int>(i);
  int done = 0;
  while (done < static_cast<int>(n_threads)) {
    std::shuffle(order.begin(), order.end(), run.rng);
    bool moved = false;
    for (int i : order) {
      if (run.fibers[static_cast<size_t>(i)].state != State::Runnable) continue;
      resume(run, i);
      moved = true;
      if (run.fibers[static_cast<size_t>(i)].state == State::Done) done++;
    }
    EMBED_CHECK(moved, "emulated CUDA kernel deadlock: some threads wait at a barrier (__syncthreads, __syncwarp or a "
                       "shuffle) that other threads of the block or warp never reach");
  }
}

}  // namespace

void set_max_dynamic_shared(const void* kernel, int bytes) { g_dynamic_limit[kernel] = bytes; }

void run_grid(dim3 grid, dim3 block, size_t dynamic_shared, const void* kernel, const std::function<void()>& body) {
  const unsigned n_threads = block.x * block.y * block.z;
  EMBED_CHECK(n_threads >= 1 && n_threads <= 1024, "emulated launch: 1..1024 threads per block");
  EMBED_CHECK(grid.y <= 65535 && grid.z <= 65535, "emulated launch: grid.y and grid.z are at most 65535");
  EMBED_CHECK(dynamic_shared <= kSharedLimit, "emulated launch: more shared memory than a Hopper block can have");
  if (dynamic_shared > kStaticSharedLimit) {
    const auto it = g_dynamic_limit.find(kernel);
    EMBED_CHECK(it != g_dynamic_limit.end() && static_cast<size_t>(it->second) >= dynamic_shared,
                "emulated launch: more than 48 KiB of dynamic shared memory needs cudaFuncSetAttribute first");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  BlockRun run;
  run.fibers.resize(n_threads);
  for (Fiber& f : run.fibers) f.stack.reset(new char[kStackBytes]);
  const unsigned n_warps = (n_threads + 31) / 32;
  run.warp_barriers.resize(n_warps);
  run.warp_live.resize(n_warps);
  run.slots.resize(n_warps);
  auto aligned = [](std::vector<unsigned char>& storage, size_t bytes) {
    storage.resize(bytes + 128);
    return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(storage.data()) + 127) & ~uintptr_t{127});
  };
  run.shared = aligned(run.shared_storage, kStaticSharedLimit);
  run.dynamic = aligned(run.dynamic_storage, dynamic_shared);
  run.dynamic_bytes = dynamic_shared;
  run.body = &body;
  BlockRun* outer = g_run;
  g_run = &run;
  blockDim = block;
  gridDim = grid;
  std::vector<dim3> blocks;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) blocks.emplace_back(x, y, z);
  std::shuffle(blocks.begin(), blocks.end(), run.rng);  // blocks must not depend on each other
  for (const dim3& b : blocks) {
    blockIdx = b;
    run_block(run, n_threads);
  }
  g_run = outer;
}

void sync_block() { wait_at(-1); }
void sync_warp() { wait_at(me().warp); }
int lane_id() { return me().lane; }

void warp_allgather(uint64_t mine, uint64_t* all) {
  auto& slots = g_run->slots[static_cast<size_t>(me().warp)];
  slots[static_cast<size_t>(me().lane)] = mine;
  wait_at(me().warp);
  std::copy(slots.begin(), slots.end(), all);
  wait_at(me().warp);
}

uint64_t exchange(uint64_t mine, int src) {
  const int warp = me().warp;
  auto& slots = g_run->slots[static_cast<size_t>(warp)];
  EMBED_CHECK(src >= 0 && src < 32, "emulated shuffle: source lane out of range");
  slots[static_cast<size_t>(me().lane)] = mine;
  wait_at(warp);  // everyone has published
  const uint64_t got = slots[static_cast<size_t>(src)];
  wait_at(warp);  // everyone has read before the next exchange overwrites
  return got;
}

void* shared_bytes(size_t bytes) {
  Fiber& f = me();
  const size_t at = (f.shared_cursor + 15) & ~size_t{15};
  f.shared_cursor = at + bytes;
  EMBED_CHECK(f.shared_cursor <= kStaticSharedLimit, "emulated kernel: more than 48 KiB of static shared memory");
  return g_run->shared + at;
}

void* dynamic_shared_bytes() {
  EMBED_CHECK(g_run->dynamic_bytes > 0, "emulated kernel uses dynamic shared memory but the launch gave none");
  return g_run->dynamic;
}

}  // namespace embed::cuda::emu

// ---- host runtime ----
struct EmulatedStream {};

namespace {
int g_device = 0;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, "CPU emulator", sizeof(prop->name) - 1);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  prop->totalGlobalMem = size_t{1} << 32;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device != 0) return cudaErrorInvalidValue;
  g_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = g_device;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  // 256-byte alignment like the real allocator.
  *p = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) {
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new EmulatedStream;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  }
  return "unknown error";
}
