#pragma once
// Products of float matrices on the calling thread with kernels compiled for this CPU: the GRU's
// per-step h·W_hhᵀ and its backward, its products over all steps (models/layers/gru.cpp), and
// NARM's linear layers on its outputs (jit_linear; A1 and A2 inside narm_encoder.h).
//
// Why: OpenBLAS packs both operands into its own layout at every call, which for a [128, 128] ×
// [128, 384] product costs as much as a sixth of the arithmetic, and it runs the kernels that
// OPENBLAS_CORETYPE names (this workplace forces AVX2 on an AVX-512 CPU). libxsmm (Debian's
// libxsmm-dev) compiles, once per shape, a kernel for the CPU it runs on that reads the operands
// where they lie. One core here, GFLOP/s, libxsmm against OpenBLAS's Haswell kernels: the
// recurrent step 188 vs 89, [6400, 64] × [64, 384] 195 vs 92, a weight gradient over 6400 rows
// 130 vs 80 (docs/benchmarks.md). Without libxsmm, or for a layout it does not take, the product
// is libtorch's (mm_out / addmm_): the same up to float rounding.
#include <string>

#include <torch/torch.h>

namespace recbole::kernels {

// out = a·b, or out += a·b when accumulate. a: [m, k], b: [k, n], out: [m, n], float32 on the
// CPU; b and out with contiguous rows (a row stride may exceed the width), a with contiguous
// rows or contiguous columns (a transposed view, as dgᵀ in a weight gradient). out must not
// overlap a or b.
void jit_mm_out(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                bool accumulate);

// x·weightᵀ, as torch::linear without a bias, with its products on jit_mm_out and its own
// backward (no double backward). x: [..., in]; weight: [out, in] → [..., out]. Where jit_mm_out
// could not take it (CUDA, float64) it is torch::linear.
torch::Tensor jit_linear(const torch::Tensor& x, const torch::Tensor& weight);

// What jit_mm_out runs in this build on this CPU: "libxsmm <target>" (e.g. "libxsmm cpx", its
// name for AVX-512 with bfloat16), or "libtorch" where it falls back.
std::string jit_gemm_kernels();

}  // namespace recbole::kernels
