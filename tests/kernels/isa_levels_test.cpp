// The CPU kernel levels: every level this machine has (by /proc/cpuinfo, independently of
// cpu/isa.h's own detection) is among the backends the kernel tests check, so a level cannot
// silently drop out of testing (an AMX permission refused, a detection mistake); the default
// level is the best one; EMBED_ISA and BackendOptions::cpu_isa force a level, and a level or
// compute type this machine cannot run is refused with the reason.
#include <cstdlib>

#include "cpu/isa.h"
#include "tests/cpuinfo_flags.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("every kernel level this CPU has is under test", "[kernels][isa]") {
  std::vector<std::string> names;
  for (const auto& b : backends_under_test()) names.push_back(b.name);
  int required = 0;
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Amx}) {
    INFO("level " << cpu_isa_name(isa) << ", /proc/cpuinfo support " << cpuinfo_supports(isa) << ", detected: "
                  << cpu::cpu_features().describe());
    const bool tested = std::find(names.begin(), names.end(), std::string("cpu-") + cpu_isa_name(isa)) != names.end();
    CHECK(tested == cpuinfo_supports(isa));
    required += cpuinfo_supports(isa);
  }
  if (cpuinfo_supports(CpuIsa::Amx)) {
    CHECK(std::find(names.begin(), names.end(), "cpu-amx-bf16") != names.end());
    CHECK(std::find(names.begin(), names.end(), "cpu-amx-int8") != names.end());
  }
  // Compute type int8 without AMX: wherever AVX-512 VNNI exists (the level's other half).
  if (cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_vnni"))
    CHECK(std::find(names.begin(), names.end(), "cpu-avx512-int8") != names.end());
  // Compute type bf16 without AMX: wherever AVX512-BF16 (vdpbf16ps) exists.
  if (cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_bf16"))
    CHECK(std::find(names.begin(), names.end(), "cpu-avx512-bf16") != names.end());
  INFO("levels under test: " << required);
  CHECK(names.size() >= static_cast<size_t>(required));
}

TEST_CASE("the default kernel level is the best this CPU runs, and a level can be forced", "[kernels][isa]") {
  CHECK(cpu::resolve_isa(CpuIsa::Auto) == cpuinfo_best_isa());
  BackendOptions o;
  o.threads = 1;
  CHECK(create_backend(o)->kernel_level() == cpu_isa_name(cpuinfo_best_isa()));
  o.cpu_isa = CpuIsa::Scalar;
  CHECK(create_backend(o)->kernel_level() == "scalar");
  if (cpuinfo_supports(CpuIsa::Avx2)) {
    setenv("EMBED_ISA", "avx2", 1);
    o.cpu_isa = CpuIsa::Auto;
    CHECK(create_backend(o)->kernel_level() == "avx2");
    unsetenv("EMBED_ISA");
  }
}

TEST_CASE("a kernel level or compute type this machine cannot run is refused with the reason", "[kernels][isa]") {
  BackendOptions o;
  o.threads = 1;
  setenv("EMBED_ISA", "sse9", 1);
  CHECK_THROWS_WITH(create_backend(o), Catch::Contains("EMBED_ISA=sse9 is not a kernel level") && Catch::Contains("avx512"));
  unsetenv("EMBED_ISA");
  if (!cpuinfo_supports(CpuIsa::Amx)) {
    o.cpu_isa = CpuIsa::Amx;
    CHECK_THROWS_WITH(create_backend(o), Catch::Contains("cannot run here"));
  }
  o.cpu_isa = CpuIsa::Avx2;
  o.compute_type = ComputeType::BF16;
  if (cpuinfo_supports(CpuIsa::Avx2))
    CHECK_THROWS_WITH(create_backend(o), Catch::Contains("compute type bf16 has no kernels at the CPU level avx2"));
  // At the avx512 level bf16 runs on AVX512-BF16's vdpbf16ps; without it, it is refused naming that instruction.
  o.cpu_isa = CpuIsa::Avx512;
  if (cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_bf16")) {
    CHECK_THAT(create_backend(o)->name(), Catch::Contains("avx512, compute bf16"));
  } else if (cpuinfo_supports(CpuIsa::Avx512)) {
    CHECK_THROWS_WITH(create_backend(o), Catch::Contains("compute type bf16 has no kernels at the CPU level avx512") &&
                                             Catch::Contains("AVX512-BF16's vdpbf16ps, which this CPU lacks"));
  }
  o.cpu_isa = CpuIsa::Avx2;
  o.compute_type = ComputeType::Int8;
  if (cpuinfo_supports(CpuIsa::Avx2))
    CHECK_THROWS_WITH(create_backend(o), Catch::Contains("compute type int8 has no kernels at the CPU level avx2") &&
                                             Catch::Contains("AVX-512 VNNI"));
}
