// Asking for CUDA where it cannot run (no CUDA build, no driver, no device, too old a device) is a
// clear error naming the reason, never a crash or a silent fallback to the CPU.
#include <catch2/catch.hpp>

#include "engine/runner.h"
#include "tests/device_skip.h"
#include "tests/models/synthetic.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("loading a model on CUDA without a usable device fails with the reason", "[unit][cuda]") {
  std::string why;
  if (backend_available(Device::Cuda, &why)) {
    EMBED_SKIP_NO_DEVICE("a CUDA device is present here: the no-device error cannot be checked");
    return;
  }
  REQUIRE_FALSE(why.empty());
  SyntheticSpec s;
  TempFile f(".gguf");
  write_synthetic(s, f.path);
  BackendOptions o;
  o.device = Device::Cuda;
  try {
    LoadedModel::load(f.path, o);
    FAIL("loading on CUDA succeeded without a device");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::StartsWith("cannot use device cuda: ") && Catch::Contains(why));
#ifdef EMBED_WITH_CUDA_BUILD
    CHECK_THAT(why, Catch::Contains("no CUDA device") || Catch::Contains("compute capability"));
#else
    CHECK_THAT(why, Catch::Contains("no CUDA backend"));
#endif
  }
}
