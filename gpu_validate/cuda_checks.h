// The CUDA measurements behind checks_cuda.cu. Each lives beside its CPU reference:
// decoder.cu (decoder_ref.cpp), paged_attention.cu (paged_attention_ref.cpp),
// kv_quant.cu (kv_quant_ref.cpp), memory.cu (memory_ref.cpp), ceilings.cu. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_validate/decoder_ref.h"
#include "gpu_validate/memory.h"

struct cublasContext;

namespace kvplan::gv::cuda {

// Check 1: naive vs cached generation of T tokens on the GPU (bf16 weights, cuBLAS).
struct DecodeRun {
  int64_t T = 0;
  double naive_s = 0, cached_s = 0;
  MacCounts naive_macs, cached_macs;  // counted from the GEMM shapes and attention launches
  double last_logit_max_abs_diff = 0; // naive vs cached logits of the last step
  double last_logit_max_abs = 0;
};
std::vector<DecodeRun> run_decoder(const ModelConfig& m, const std::vector<int64_t>& Ts,
                                   cublasContext* handle);

// Check 2: paged decode attention (bf16 cache, FlashDecoding split).
struct AttentionRun {
  int64_t n_kv = 0;
  double time_s = 0;
  uint64_t kv_bytes_read = 0;        // rows the kernel loads x row bytes (each row once)
  double max_abs_err_vs_ref = 0;     // small problem, against paged_decode_attention_ref
};
std::vector<AttentionRun> run_paged_attention(int64_t batch, int64_t ctx, int64_t n_heads,
                                              const std::vector<int64_t>& n_kvs, int64_t head_dim);

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

// Check 5: ceilings.
struct Ceilings {
  double copy_bytes_per_s = 0;       // device-to-device cudaMemcpy, bytes read + written
  double gemm_flops_per_s = 0;       // 8192^3 bf16, fp32 accumulate
  double decode_gemm_flops_per_s = 0;// 512 x 8192 x 8192 (a decode batch of 512 rows)
  int64_t runtime_reserve_bytes = 0; // total - free after context + cuBLAS handle + workspace
};
Ceilings measure_ceilings(cublasContext* handle, size_t free_before_context_bytes);

}  // namespace kvplan::gv::cuda
