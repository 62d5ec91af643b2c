// What this CPU (and OS) can run, detected once, and the choice of one kernel level per backend:
// the best available, or the one EMBED_ISA / BackendOptions::cpu_isa asks for (refused, naming
// what is missing, when this machine cannot run it).
#pragma once

#include <string>

#include "engine/backend.h"

namespace embed::cpu {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512bf16 = false, avx512vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  bool os_tile_state = false;    // XCR0 enables the tile registers (bits 17, 18)
  bool amx_permitted = false;    // the kernel granted this process the tile state (arch_prctl)
  std::string describe() const;
};

// Detected on first use. The AMX permission is requested then, once per process (Linux executes
// tile instructions only in a process that asked for them; without it they raise SIGILL).
const CpuFeatures& cpu_features();

// Whether this machine can run `isa`'s kernels; if not, *why says what is missing.
bool isa_available(CpuIsa isa, std::string* why = nullptr);
// The best level this machine runs (never Auto).
CpuIsa best_isa();
// The level a backend uses: `requested`, or for Auto the EMBED_ISA variable, else best_isa().
// Throws embed::Error(Unsupported) for a level this machine cannot run, or an unknown EMBED_ISA.
CpuIsa resolve_isa(CpuIsa requested);

}  // namespace embed::cpu
