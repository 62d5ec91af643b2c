// CPU feature detection (cpuid, xgetbv, the AMX permission) and the choice of the kernel level.
#include "cpu/isa.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cpuid.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace embed::cpu {

namespace amx {
thread_local int tile_shapes_loaded = -1;  // cpu/amx_tile.h
}  // namespace amx

namespace {

constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512bf16, "avx512bf16");
  add(avx512vnni, "avx512vnni");
  add(amx_tile, "amx-tile");
  add(amx_bf16, "amx-bf16");
  add(amx_int8, "amx-int8");
  if (amx_tile) s += amx_permitted ? " (tile state granted)" : " (tile state refused by the OS)";
  return s.empty() ? "none of avx2/fma/f16c" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__)
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    unsigned a = 0, b = 0, cx = 0, d = 0;
    // F16C is CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports does not know "f16c"
    // (the fuzz build, tools/fuzz, compiles this file with clang).
    if (__get_cpuid(1, &a, &b, &cx, &d)) c.f16c = (cx >> 29) & 1;
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512dq = __builtin_cpu_supports("avx512dq");
    if (__get_cpuid_count(7, 1, &a, &b, &cx, &d)) c.avx512bf16 = (a >> 5) & 1;
    if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) {
      c.avx512vnni = (cx >> 11) & 1;
      c.amx_bf16 = (d >> 22) & 1;
      c.amx_tile = (d >> 24) & 1;
      c.amx_int8 = (d >> 25) & 1;
    }
    const bool osxsave = __get_cpuid(1, &a, &b, &cx, &d) && ((cx >> 27) & 1);
    c.os_tile_state = osxsave && ((xcr0() >> 17) & 3) == 3;
    if (c.amx_tile && c.os_tile_state) c.amx_permitted = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#endif
    return c;
  }();
  return f;
}

bool isa_available(CpuIsa isa, std::string* why) {
  const CpuFeatures& f = cpu_features();
  auto missing = [&](const char* what) {
    if (why) *why = std::string(what) + " (this CPU: " + f.describe() + ")";
    return false;
  };
  switch (isa) {
    case CpuIsa::Auto:
    case CpuIsa::Scalar:
      return true;
    case CpuIsa::Avx2:
      return f.avx2 && f.fma && f.f16c ? true : missing("the avx2 kernels need AVX2, FMA and F16C");
    case CpuIsa::Avx512:
      if (!isa_available(CpuIsa::Avx2, why)) return false;
      return f.avx512f ? true : missing("the avx512 kernels need AVX-512F");
    case CpuIsa::Amx:
      if (!isa_available(CpuIsa::Avx512, why)) return false;
      if (!(f.avx512bw && f.avx512vl && f.avx512dq && f.avx512bf16))
        return missing("the amx kernels need AVX-512 BW, VL, DQ and BF16");
      if (!(f.amx_tile && f.amx_bf16 && f.amx_int8)) return missing("the amx kernels need AMX-TILE, AMX-BF16 and AMX-INT8");
      if (!f.os_tile_state) return missing("the OS does not enable the AMX tile state (XCR0)");
      if (!f.amx_permitted) return missing("the OS refused this process the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)");
      return true;
  }
  return false;
}

CpuIsa best_isa() {
  for (CpuIsa isa : {CpuIsa::Amx, CpuIsa::Avx512, CpuIsa::Avx2})
    if (isa_available(isa)) return isa;
  return CpuIsa::Scalar;
}

CpuIsa resolve_isa(CpuIsa requested) {
  CpuIsa isa = requested;
  std::string source = "the requested kernel level";
  if (isa == CpuIsa::Auto) {
    const char* env = std::getenv("EMBED_ISA");
    if (!env || !*env) return best_isa();
    source = "EMBED_ISA";
    isa = CpuIsa::Auto;
    for (CpuIsa c : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Amx})
      if (std::strcmp(env, cpu_isa_name(c)) == 0) isa = c;
    if (isa == CpuIsa::Auto)
      fail(ErrorKind::InvalidArgument, std::string("EMBED_ISA=") + env + " is not a kernel level (scalar, avx2, avx512, amx)");
  }
  std::string why;
  if (!isa_available(isa, &why)) fail(ErrorKind::Unsupported, source + " '" + cpu_isa_name(isa) + "' cannot run here: " + why);
  return isa;
}

}  // namespace embed::cpu
