// embed-bench-peak (tools/bench/peak.cpp): it reports a peak for exactly the units this machine has,
// by /proc/cpuinfo (an oracle independent of the tool's own cpuid checks), each a positive rate at
// every thread count asked for. The rates themselves are not asserted: the machine is shared.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cpuinfo_flags.h"

namespace {

struct Run {
  int code;
  std::string out;
};

Run run_peak(const std::string& args) {
  const std::string cmd = std::string(EMBED_BENCH_PEAK_BIN) + " " + args + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[512];
  while (size_t got = std::fread(buf, 1, sizeof buf, p)) out.append(buf, got);
  const int status = ::pclose(p);
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("embed-bench-peak reports the peaks of exactly the units this CPU has") {
  using embed::test::cpuinfo_has;
  // 2 threads, few iterations: a check of the report, not a measurement; by wall and by CPU time.
  const char* mode = GENERATE("", " cpu");
  const Run r = run_peak(std::string("2 20000") + mode);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const bool amx = cpuinfo_has("amx_tile") && cpuinfo_has("amx_bf16") && cpuinfo_has("amx_int8");
  const std::pair<const char*, bool> expected[] = {
      {"avx2_fma_gflops", cpuinfo_has("avx2") && cpuinfo_has("fma")},
      {"avx512_fma_gflops", cpuinfo_has("avx512f")},
      {"avx512_vnni_gops", cpuinfo_has("avx512bw") && cpuinfo_has("avx512_vnni")},
      {"avx512_bf16_gflops", cpuinfo_has("avx512_bf16")},
      // AMX also needs the OS's permission, which /proc/cpuinfo cannot show: required only one way.
      {"amx_bf16_gflops", amx},
      {"amx_int8_gops", amx},
  };
  size_t listed = 0;
  for (const auto& [key, has] : expected) {
    INFO(key);
    if (std::string(key).rfind("amx", 0) != 0) CHECK(j.contains(key) == has);
    else if (!has) CHECK_FALSE(j.contains(key));
    if (!j.contains(key)) continue;
    listed++;
    REQUIRE(j[key].size() == 2);
    for (const char* threads : {"1", "2"}) {
      REQUIRE(j[key].contains(threads));
      CHECK(j[key][threads].get<double>() > 0.0);
    }
  }
  CHECK(listed == j.size());  // no key outside the list above
}

TEST_CASE("embed-bench-peak refuses a bad thread count, iteration count or mode with exit 2") {
  CHECK(run_peak("0").code == 2);
  CHECK(run_peak("1 0").code == 2);
  CHECK(run_peak("1 1000 wall").code == 2);
}
