// Check 5 and the calibration file: device-to-device copy bandwidth and the GEMMs of a
// decoder layer (bf16 through cuBLAS, fp8 through cuBLASLt), timed on one stream.
#include <algorithm>

#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"

#include <cuda_fp8.h>

namespace kvplan::gv::cuda {

std::vector<CopyRun> measure_copies(const std::vector<int64_t>& sizes, cudaStream_t stream) {
  std::vector<CopyRun> out;
  for (int64_t bytes : sizes) {
    DeviceBuffer<char> src{static_cast<size_t>(bytes)}, dst{static_cast<size_t>(bytes)};
    GV_CUDA(cudaMemsetAsync(src.get(), 1, size_t(bytes), stream));
    const double t = time_gpu_s(stream, 10, [&] {
      GV_CUDA(cudaMemcpyAsync(dst.get(), src.get(), size_t(bytes), cudaMemcpyDeviceToDevice, stream));
    });
    out.push_back({2 * bytes, t});  // every byte read once and written once
  }
  return out;
}

namespace {
// Enough repetitions for ~5 ms of work, at least 3 (event resolution is ~0.5 us).
int reps_for(double one_s) { return std::clamp(int(5e-3 / std::max(one_s, 1e-7)), 3, 200); }

__global__ void bf16_to_fp8_kernel(const __nv_bfloat16* x, __nv_fp8_e4m3* y, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    y[i] = __nv_fp8_e4m3(__bfloat162float(x[i]));
}
}  // namespace

struct GemmBench::Impl {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer<__nv_bfloat16> w, x, y;    // W [n, k], x [m, k], y [m, n]
  DeviceBuffer<__nv_fp8_e4m3> w8, x8;
  DeviceBuffer<char> lt_workspace;
  DeviceBuffer<float> one;                // fp8 scales: 1.0
  int64_t l2_bytes = 0;
  // Successive calls read different copies of W (slices of the one big buffer) so that
  // together they span >= 8 x L2: a small layer's weights would otherwise stay in L2
  // between calls and a memory-bound (small m) GEMM would measure L2, not HBM.
  int64_t weight_copies(int64_t elems, int64_t elem_bytes, size_t capacity_elems) const {
    const int64_t want = (8 * l2_bytes + elems * elem_bytes - 1) / (elems * elem_bytes);
    return std::clamp<int64_t>(want, 1, std::max<int64_t>(1, int64_t(capacity_elems) / elems));
  }
};

GemmBench::GemmBench(int64_t max_w_elems, int64_t max_x_elems, int64_t max_y_elems, int64_t l2_bytes, bool fp8,
                     cublasContext* blas, cublasLtContext* lt, cudaStream_t stream)
    : impl_(std::make_unique<Impl>()) {
  impl_->l2_bytes = l2_bytes;
  impl_->blas = blas;
  impl_->lt = lt;
  impl_->stream = stream;
  Impl& b = *impl_;
  b.w = DeviceBuffer<__nv_bfloat16>(size_t(max_w_elems));
  b.x = DeviceBuffer<__nv_bfloat16>(size_t(max_x_elems));
  b.y = DeviceBuffer<__nv_bfloat16>(size_t(max_y_elems));
  fill_uniform_bf16(b.w.get(), b.w.size(), 0.05f, 31, stream);
  fill_uniform_bf16(b.x.get(), b.x.size(), 1.0f, 32, stream);
  if (fp8) {
    b.w8 = DeviceBuffer<__nv_fp8_e4m3>(b.w.size());
    b.x8 = DeviceBuffer<__nv_fp8_e4m3>(b.x.size());
    bf16_to_fp8_kernel<<<1024, 256, 0, stream>>>(b.w.get(), b.w8.get(), b.w.size());
    GV_CHECK_LAUNCH();
    bf16_to_fp8_kernel<<<1024, 256, 0, stream>>>(b.x.get(), b.x8.get(), b.x.size());
    GV_CHECK_LAUNCH();
    b.lt_workspace = DeviceBuffer<char>(size_t{32} << 20);  // cuBLAS's recommended size on Hopper
    b.one = DeviceBuffer<float>(1);
    b.one.upload({1.0f});
  }
  GV_CUDA(cudaDeviceSynchronize());
}

GemmBench::~GemmBench() = default;

double GemmBench::bf16_s(int64_t m, int64_t n, int64_t k) {
  Impl& b = *impl_;
  GV_CUBLAS(cublasSetStream(b.blas, b.stream));
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major y^T [n, m] = W^T' [n, k] x^T [k, m]: W row-major [n, k] is transposed.
  const int64_t copies = b.weight_copies(n * k, int64_t(sizeof(__nv_bfloat16)), b.w.size());
  int64_t call = 0;
  auto run = [&] {
    const __nv_bfloat16* w = b.w.get() + (call++ % copies) * n * k;
    GV_CUBLAS(cublasGemmEx(b.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &alpha, w, CUDA_R_16BF,
                           int(k), b.x.get(), CUDA_R_16BF, int(k), &beta, b.y.get(), CUDA_R_16BF, int(n),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  const double first = time_gpu_s(b.stream, 1, run);
  return time_gpu_s(b.stream, reps_for(first), run);
}

std::optional<double> GemmBench::fp8_s(int64_t m, int64_t n, int64_t k) {
  Impl& b = *impl_;
  if (b.w8.get() == nullptr) return std::nullopt;
  // cuBLASLt fp8: "TN" only (A transposed), e4m3 inputs, bf16 output, fp32 compute.
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  struct Cleanup {
    cublasLtMatmulDesc_t& op;
    cublasLtMatrixLayout_t &la, &lb, &lc;
    cublasLtMatmulPreference_t& pref;
    ~Cleanup() {
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
      if (lc) cublasLtMatrixLayoutDestroy(lc);
      if (lb) cublasLtMatrixLayoutDestroy(lb);
      if (la) cublasLtMatrixLayoutDestroy(la);
      if (op) cublasLtMatmulDescDestroy(op);
    }
  } cleanup{op, la, lb, lc, pref};
  GV_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
  GV_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  GV_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt));
  const float* one = b.one.get();
  GV_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one, sizeof one));
  GV_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one, sizeof one));
  GV_CUBLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), k));
  GV_CUBLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(m), k));
  GV_CUBLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, uint64_t(n), uint64_t(m), n));
  GV_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = b.lt_workspace.size();
  GV_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(b.lt, op, la, lb, lc, lc, pref, 1, &heur, &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return std::nullopt;
  const float alpha = 1.0f, beta = 0.0f;
  const int64_t copies = b.weight_copies(n * k, int64_t(sizeof(__nv_fp8_e4m3)), b.w8.size());
  int64_t call = 0;
  auto run = [&] {
    const __nv_fp8_e4m3* w = b.w8.get() + (call++ % copies) * n * k;
    GV_CUBLAS(cublasLtMatmul(b.lt, op, &alpha, w, la, b.x8.get(), lb, &beta, b.y.get(), lc, b.y.get(), lc,
                             &heur.algo, b.lt_workspace.get(), ws, b.stream));
  };
  const double first = time_gpu_s(b.stream, 1, run);
  return time_gpu_s(b.stream, reps_for(first), run);
}

}  // namespace kvplan::gv::cuda
