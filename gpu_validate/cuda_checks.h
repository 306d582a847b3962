// The CUDA measurements behind checks_cuda.cu. Each lives beside its CPU reference:
// decoder.cu (decoder_ref.cpp), paged_attention.cu (paged_attention_ref.cpp),
// kv_quant.cu (kv_quant_ref.cpp), memory.cu (memory_ref.cpp); ceilings.cu and launch.cu
// measure the device for the calibration file. Internal; CUDA types only by name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu_validate/decoder_ref.h"
#include "gpu_validate/memory.h"
#include "gpu_validate/paged_attention.h"

struct cublasContext;
struct cublasLtContext;
struct CUstream_st;

namespace kvplan::gv::cuda {

using StreamPtr = CUstream_st*;

// Check 1: naive vs cached generation of T tokens on the GPU (bf16 weights, cuBLAS).
struct DecodeRun {
  int64_t T = 0;
  double naive_graph_s = 0;    // T naive steps replayed as one CUDA graph
  double cached_graph_s = 0;   // T cached steps replayed as one CUDA graph
  double cached_eager_s = 0;   // T cached steps launched one kernel at a time
  int64_t cached_kernels = 0;  // kernels in the cached graph (all T steps)
  int64_t naive_kernels = 0;
  MacCounts naive_macs, cached_macs;  // counted from the GEMM shapes and attention launches
  double last_logit_max_abs_diff = 0; // naive vs cached logits of the last step
  double last_logit_max_abs = 0;
};
std::vector<DecodeRun> run_decoder(const ModelConfig& m, const std::vector<int64_t>& Ts,
                                   cublasContext* handle, StreamPtr stream);

// Check 2: paged decode attention (paged_attention.h: shape, constants, traffic).
struct AttentionRun {
  AttentionShape shape;
  AttentionTraffic traffic;
  double time_s = 0;
};
AttentionRun time_paged_attention(const AttentionShape& s, StreamPtr stream);
//! max |GPU - CPU reference| on a small problem (bf16-rounded inputs on both sides).
double paged_attention_error_vs_ref(int64_t n_heads, int64_t n_kv, StreamPtr stream);

// Check 3: the quantize/dequantize kernel against the CPU reference.
struct QuantKernelRun {
  double max_abs_diff_per_token = 0, max_abs_diff_per_channel = 0;
};
QuantKernelRun run_quant_kernel();

// Check 4: real cudaMalloc.
class CudaArena : public DeviceArena {
 public:
  ~CudaArena() override { release_all(); }
  bool allocate(int64_t bytes) override;
  void release_all() override;

 private:
  std::vector<void*> ptrs_;
};

// Check 5 and the calibration file.
//! Device-to-device copies of each size; bytes read + written and seconds per copy.
struct CopyRun { int64_t bytes_moved = 0; double time_s = 0; };
std::vector<CopyRun> measure_copies(const std::vector<int64_t>& sizes, StreamPtr stream);

//! GEMMs y[m, n] = x[m, k] W[n, k]^T as a decoder layer runs them (bf16 with fp32
//! accumulation through cuBLAS; fp8 e4m3 inputs through cuBLASLt), on buffers sized once.
class GemmBench {
 public:
  //! Buffers of W [n, k], x [m, k] and y [m, n] hold up to the given element counts; W's
  //! buffer also holds the copies that keep small weights from being served by L2.
  GemmBench(int64_t max_w_elems, int64_t max_x_elems, int64_t max_y_elems, int64_t l2_bytes, bool fp8,
            cublasContext* blas, cublasLtContext* lt, StreamPtr stream);
  ~GemmBench();
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;
  double bf16_s(int64_t m, int64_t n, int64_t k);
  //! Empty when cuBLASLt has no fp8 algorithm for the shape.
  std::optional<double> fp8_s(int64_t m, int64_t n, int64_t k);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // destroyed even when the constructor throws
};

//! Launch cost of an empty kernel: `kernels` launched one by one from the host (eager,
//! host wall time) and as one CUDA graph (device time).
struct LaunchCost { int64_t kernels = 0; double eager_s = 0, graph_s = 0; };
LaunchCost measure_launch(int64_t kernels, StreamPtr stream);

}  // namespace kvplan::gv::cuda
