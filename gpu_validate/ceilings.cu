// Check 5 on the GPU: memory bandwidth (device-to-device copy) and bf16 GEMM FLOP/s,
// measured once; checks_cuda.cu divides them by the datasheet for the calibration file.
#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"

namespace kvplan::gv::cuda {

namespace {
double gemm_flops_per_s(cublasHandle_t h, int M, int N, int K, int reps) {
  DeviceBuffer<__nv_bfloat16> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
  fill_uniform_bf16(a.get(), a.size(), 1.0f, 11);
  fill_uniform_bf16(b.get(), b.size(), 1.0f, 12);
  const float alpha = 1.0f, beta = 0.0f;
  const double t = time_gpu_s(reps, [&] {
    GV_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, a.get(), CUDA_R_16BF, M, b.get(),
                           CUDA_R_16BF, K, &beta, c.get(), CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  return 2.0 * M * N * double(K) / t;
}
}  // namespace

Ceilings measure_ceilings(cublasContext* handle, size_t free_before_context_bytes) {
  Ceilings c;
  (void)free_before_context_bytes;
  {
    const size_t bytes = size_t(2) << 30;  // 2 GiB each way: far beyond L2 (50-60 MB)
    DeviceBuffer<char> src(bytes), dst(bytes);
    GV_CUDA(cudaMemset(src.get(), 1, bytes));
    const double t = time_gpu_s(10, [&] { GV_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice)); });
    c.copy_bytes_per_s = 2.0 * double(bytes) / t;  // read + write
  }
  c.gemm_flops_per_s = gemm_flops_per_s(handle, 8192, 8192, 8192, 20);
  c.decode_gemm_flops_per_s = gemm_flops_per_s(handle, 8192, 512, 8192, 50);  // W [8192 x 8192] x 512 tokens
  return c;
}

}  // namespace kvplan::gv::cuda
