// Check 3 on the GPU: asymmetric round-to-nearest quantize + dequantize of [T, C] in
// groups (per token: G channels of one token; per channel: G tokens of one channel),
// fp16 scale and zero, the arithmetic of kv_quant_ref.cpp. One thread per group.
// Quantization error is arithmetic, not a device property: the error figures of check 3
// come from the reference; this kernel is checked to reproduce it.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"
#include "gpu_validate/kv_quant.h"

namespace kvplan::gv::cuda {

namespace {

// x, y: [T, C]; group g covers `len` elements base(g) + i * stride.
__global__ void quant_dequant_groups_kernel(const float* x, float* y, int T, int C, int bits,
                                            bool per_channel, int group) {
  const int groups_per_line = per_channel ? (T + group - 1) / group : (C + group - 1) / group;
  const int lines = per_channel ? C : T;
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= groups_per_line * lines) return;
  const int line = g / groups_per_line, part = g % groups_per_line;
  size_t base, stride;
  int len;
  if (per_channel) {  // channel `line`, tokens [part * group, ...)
    base = size_t(part) * group * C + line;
    stride = size_t(C);
    len = min(group, T - part * group);
  } else {            // token `line`, channels [part * group, ...)
    base = size_t(line) * C + size_t(part) * group;
    stride = 1;
    len = min(group, C - part * group);
  }
  float lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < len; ++i) {
    lo = fminf(lo, x[base + i * stride]);
    hi = fmaxf(hi, x[base + i * stride]);
  }
  const float levels = float((1 << bits) - 1);
  const float z = __half2float(__float2half_rn(lo));
  const float s = __half2float(__float2half_rn(__fdiv_rn(hi - lo, levels)));
  for (int i = 0; i < len; ++i) {
    const float v = x[base + i * stride];
    float code = s > 0 ? rintf(__fdiv_rn(v - z, s)) : 0.0f;
    code = fminf(fmaxf(code, 0.0f), levels);
    y[base + i * stride] = __fadd_rn(__fmul_rn(code, s), z);
  }
}

double run_one(const std::vector<float>& x, int T, int C, int bits, bool per_channel, int group) {
  DeviceBuffer<float> d_x(x.size()), d_y(x.size());
  d_x.upload(x);
  const int groups = per_channel ? C * ((T + group - 1) / group) : T * ((C + group - 1) / group);
  quant_dequant_groups_kernel<<<(groups + 127) / 128, 128>>>(d_x.get(), d_y.get(), T, C, bits, per_channel, group);
  GV_CUDA(cudaGetLastError());
  const std::vector<float> got = d_y.download();
  const QuantResult ref = quantize_dequantize(x, T, C, bits, per_channel ? QuantAxis::channel : QuantAxis::token, group);
  double diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, double(std::fabs(got[i] - ref.deq[i])));
  return diff;
}

}  // namespace

QuantKernelRun run_quant_kernel() {
  const int T = 256, C = 128;
  const std::vector<float> k = synthetic_keys(T, C, 4, 8.0f, 4.0f, 21);
  QuantKernelRun r;
  r.max_abs_diff_per_token = std::max(run_one(k, T, C, 4, false, 32), run_one(k, T, C, 2, false, 128));
  r.max_abs_diff_per_channel = std::max(run_one(k, T, C, 4, true, 32), run_one(k, T, C, 8, true, 32));
  return r;
}

}  // namespace kvplan::gv::cuda
