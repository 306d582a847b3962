// Shared CUDA helpers for gpu_validate: error checks that throw (library code never
// exits), RAII device buffers, event timing, bf16 conversion on the host.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#define GV_CUDA(call)                                                                      \
  do {                                                                                     \
    cudaError_t gv_err_ = (call);                                                          \
    if (gv_err_ != cudaSuccess)                                                            \
      throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(gv_err_) +   \
                               " (" __FILE__ ":" + std::to_string(__LINE__) + ")");       \
  } while (0)

#define GV_CUBLAS(call)                                                                    \
  do {                                                                                     \
    cublasStatus_t gv_st_ = (call);                                                        \
    if (gv_st_ != CUBLAS_STATUS_SUCCESS)                                                   \
      throw std::runtime_error(std::string(#call) + ": cuBLAS status " +                   \
                               std::to_string(static_cast<int>(gv_st_)) + " (" __FILE__ ":" + \
                               std::to_string(__LINE__) + ")");                           \
  } while (0)

namespace kvplan::gv::cuda {

//! A device allocation owned by one object; a move transfers it.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n > 0) GV_CUDA(cudaMalloc(&p_, n * sizeof(T)));
  }
  ~DeviceBuffer() { if (p_) cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) { if (p_) cudaFree(p_); p_ = o.p_; n_ = o.n_; o.p_ = nullptr; o.n_ = 0; }
    return *this;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& h) { GV_CUDA(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    GV_CUDA(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

//! Mean seconds per call of f over `reps` calls after one warm-up, timed with events.
template <class F>
double time_gpu_s(int reps, F&& f) {
  f();
  GV_CUDA(cudaGetLastError());
  cudaEvent_t a, b;
  GV_CUDA(cudaEventCreate(&a));
  GV_CUDA(cudaEventCreate(&b));
  GV_CUDA(cudaEventRecord(a));
  for (int i = 0; i < reps; ++i) f();
  GV_CUDA(cudaEventRecord(b));
  GV_CUDA(cudaEventSynchronize(b));
  GV_CUDA(cudaGetLastError());
  float ms = 0;
  GV_CUDA(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return static_cast<double>(ms) * 1e-3 / reps;
}

//! Host float -> bf16 bits, round to nearest even (NaN kept quiet).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_bits_to_float(uint16_t h) {
  const uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

//! Fills a bf16 buffer with uniform values in [-scale, scale] from a hash of the index.
void fill_uniform_bf16(__nv_bfloat16* d_x, size_t n, float scale, uint64_t seed);

//! The device's name and memory as cudaMemGetInfo reports them.
struct DeviceInfo {
  std::string name;
  int sm = 0;                    // compute capability x 10 + minor
  size_t total_bytes = 0, free_bytes = 0;
};
DeviceInfo device_info();

//! Datasheet ceilings for known devices (docs/gpus.md); 0 when unknown.
struct Datasheet {
  double bandwidth_bytes_per_s = 0;
  double bf16_flops_per_s = 0;
};
Datasheet datasheet_for(const std::string& device_name);

}  // namespace kvplan::gv::cuda
