// The kernel tables of the CPU levels: which function runs each op at each (ISA, compute type).
// The one place that binds kernels to levels; the backend picks a table once at construction.
#include <string>

#include "base/error.h"
#include "cpu/isa.h"
#include "cpu/kernels.h"
#include "cpu/ref/ref.h"

namespace embed::cpu {
namespace {

// The scalar references take no thread pool.
template <class Args, void (*F)(const Args&)>
void single_threaded(const Args& a, ThreadPool&) {
  F(a);
}

std::unique_ptr<PackedWeight> pack_panels_if_unquantized(const Tensor& w) {
  if (!panel_packable(w.dtype)) return nullptr;
  return std::make_unique<PanelWeight>(pack_panels(w));
}

KernelTable scalar_table() {
  KernelTable t;
  t.isa = CpuIsa::Scalar;
  t.gather = single_threaded<GatherArgs, ref::gather>;
  t.matmul = single_threaded<MatmulArgs, ref::matmul>;
  t.layer_norm = single_threaded<LayerNormArgs, ref::layer_norm>;
  t.rms_norm = single_threaded<RmsNormArgs, ref::rms_norm>;
  t.rope = rope_fast;
  t.attention = single_threaded<AttentionArgs, ref::attention>;
  t.activation = single_threaded<ActivationArgs, ref::activation>;
  t.glu = single_threaded<GluArgs, ref::glu>;
  t.add = single_threaded<AddArgs, ref::add>;
  t.scale = single_threaded<ScaleArgs, ref::scale>;
  t.pool = single_threaded<PoolArgs, ref::pool>;
  t.softmax = single_threaded<SoftmaxArgs, ref::softmax>;
  t.pack_matmul_weight = [](const Tensor&) -> std::unique_ptr<PackedWeight> { return nullptr; };
  return t;
}

KernelTable avx2_table() {
  KernelTable t;
  t.isa = CpuIsa::Avx2;
  t.gather = avx2::gather;
  t.matmul = avx2::matmul;
  t.layer_norm = avx2::layer_norm;
  t.rms_norm = avx2::rms_norm;
  t.rope = rope_fast;
  t.attention = avx2::attention;
  t.activation = avx2::activation;
  t.glu = avx2::glu;
  t.add = avx2::add;
  t.scale = avx2::scale;
  t.pool = avx2::pool_rows;
  t.softmax = avx2::softmax;
  t.pack_matmul_weight = pack_panels_if_unquantized;
  return t;
}

KernelTable avx512_table() {
  KernelTable t = avx2_table();
  t.isa = CpuIsa::Avx512;
  t.matmul = avx512::matmul;
  t.matmul_fuses_activation = true;
  t.pack_matmul_weight = avx512::pack_weight;
  t.attention = avx512::attention;
  t.activation = avx512::activation;
  t.glu = avx512::glu;
  return t;
}

// Compute type Int8 without AMX: the AVX-512 level with the VNNI int8 GEMM.
KernelTable avx512_int8_table() {
  KernelTable t = avx512_table();
  t.compute = ComputeType::Int8;
  t.matmul = avx512::matmul_int8;
  t.pack_matmul_weight = avx512::pack_weight_int8;
  return t;
}

// Compute type BF16 without AMX: the AVX-512 level with the AVX512-BF16 (vdpbf16ps) GEMM;
// attention on vdpbf16ps too (bf16 products, f32 softmax).
KernelTable avx512_bf16_table() {
  KernelTable t = avx512_table();
  t.compute = ComputeType::BF16;
  t.matmul = avx512::matmul_bf16;
  t.pack_matmul_weight = avx512::pack_weight_bf16;
  t.attention = avx512::attention_bf16;
  return t;
}

KernelTable amx_table(ComputeType compute) {
  KernelTable t = avx512_table();
  t.isa = CpuIsa::Amx;
  t.compute = compute;
  t.matmul_fuses_activation = true;
  switch (compute) {
    case ComputeType::F32:
      t.matmul = amx::matmul_f32;
      t.pack_matmul_weight = amx::pack_weight_f32;
      t.attention = amx::attention_f32;
      break;
    case ComputeType::BF16:
      t.matmul = amx::matmul_bf16;
      t.pack_matmul_weight = amx::pack_weight_bf16;
      t.attention = amx::attention_bf16;
      break;
    case ComputeType::Int8:  // integer products where the weights are integers; f32-grade elsewhere
      t.matmul = amx::matmul_int8;
      t.pack_matmul_weight = amx::pack_weight_int8;
      t.attention = amx::attention_f32;
      break;
  }
  return t;
}

}  // namespace

const KernelTable& kernel_table(CpuIsa isa, ComputeType compute) {
  static const KernelTable scalar = scalar_table(), avx2 = avx2_table(), avx512 = avx512_table();
  static const KernelTable amx_f32 = amx_table(ComputeType::F32), amx_bf16 = amx_table(ComputeType::BF16),
                           amx_int8 = amx_table(ComputeType::Int8);
  EMBED_CHECK(isa != CpuIsa::Auto, "kernel_table needs a resolved ISA");
  if (isa == CpuIsa::Amx) return compute == ComputeType::F32 ? amx_f32 : compute == ComputeType::BF16 ? amx_bf16 : amx_int8;
  if (isa == CpuIsa::Avx512 && compute == ComputeType::Int8) {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx512bw && f.avx512vnni))
      fail(ErrorKind::Unsupported, "compute type int8 at the CPU level avx512 needs AVX-512 BW and VNNI (this CPU: " + f.describe() + ")");
    static const KernelTable avx512_int8 = avx512_int8_table();
    return avx512_int8;
  }
  if (isa == CpuIsa::Avx512 && compute == ComputeType::BF16) {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx512bw && f.avx512bf16))
      fail(ErrorKind::Unsupported, "compute type bf16 has no kernels at the CPU level avx512 (it needs AMX or AVX512-BF16's vdpbf16ps, "
                                   "which this CPU lacks; the default f32 is faster here; this CPU: " + f.describe() + ")");
    static const KernelTable avx512_bf16 = avx512_bf16_table();
    return avx512_bf16;
  }
  if (compute == ComputeType::BF16)
    // Refused rather than emulated: bf16 products are exact in f32, so f32 FMAs over bf16-rounded
    // operands would give vdpbf16ps's products, but at the f32 FMA rate plus the rounding, i.e.
    // slower than the default and less exact (docs/kernels.md).
    fail(ErrorKind::Unsupported, std::string("compute type bf16 has no kernels at the CPU level ") + cpu_isa_name(isa) +
                                     " (it needs AMX, or AVX-512 with AVX512-BF16's vdpbf16ps)");
  if (compute != ComputeType::F32)
    fail(ErrorKind::Unsupported, std::string("compute type ") + compute_type_name(compute) + " has no kernels at the CPU level " +
                                     cpu_isa_name(isa) + " (it needs AMX, or AVX-512 VNNI)");
  return isa == CpuIsa::Scalar ? scalar : isa == CpuIsa::Avx2 ? avx2 : avx512;
}

}  // namespace embed::cpu
