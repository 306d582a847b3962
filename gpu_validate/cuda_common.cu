#include "gpu_validate/cuda_backend.h"
#include "gpu_validate/cuda_common.cuh"

namespace kvplan::gv {

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) +
           "); use --backend cpu";
  if (n == 0) return "no CUDA device on this machine; use --backend cpu";
  return {};
}

namespace cuda {

namespace {
__global__ void fill_uniform_kernel(__nv_bfloat16* x, size_t n, float scale, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    // splitmix64 of (seed, i) -> uniform in [-1, 1)
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    x[i] = __float2bfloat16(u * scale);
  }
}
}  // namespace

void fill_uniform_bf16(__nv_bfloat16* d_x, size_t n, float scale, uint64_t seed, cudaStream_t stream) {
  fill_uniform_kernel<<<1024, 256, 0, stream>>>(d_x, n, scale, seed);
  GV_CHECK_LAUNCH();
}

DeviceInfo device_info() {
  DeviceInfo d;
  int dev = 0;
  GV_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  GV_CUDA(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.sm = p.major * 10 + p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  GV_CUDA(cudaMemGetInfo(&d.free_bytes, &d.total_bytes));
  return d;
}

}  // namespace cuda
}  // namespace kvplan::gv
