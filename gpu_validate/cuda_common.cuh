// Shared CUDA helpers for gpu_validate: error checks that throw (library code never
// exits), a check after every kernel launch, RAII owners of every CUDA and cuBLAS
// resource, event timing on a stream, bf16 conversion on the host.
#pragma once

#include <cublasLt.h>
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

//! After every <<<...>>>: a bad configuration (grid, shared memory, arguments) is
//! reported at the launch that made it, not as a wrong value later.
#define GV_CHECK_LAUNCH() GV_CUDA(cudaGetLastError())

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
  size_t bytes() const { return n_ * sizeof(T); }
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

//! Owners of one CUDA or cuBLAS object each: destroyed on every path, exceptions included.
class Stream {
 public:
  Stream() { GV_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { GV_CUDA(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() { GV_CUBLAS(cublasCreate(&h_)); }
  ~CublasHandle() { cublasDestroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

class CublasLtHandle {
 public:
  CublasLtHandle() { GV_CUBLAS(cublasLtCreate(&h_)); }
  ~CublasLtHandle() { cublasLtDestroy(h_); }
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
  cublasLtHandle_t get() const { return h_; }

 private:
  cublasLtHandle_t h_ = nullptr;
};

//! A captured and instantiated CUDA graph of whatever `record` enqueues on `stream`.
class Graph {
 public:
  template <class F>
  Graph(cudaStream_t stream, F&& record) {
    GV_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      record();
    } catch (...) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream, &g);  // leave the stream usable
      if (g) cudaGraphDestroy(g);
      throw;
    }
    GV_CUDA(cudaStreamEndCapture(stream, &graph_));
    GV_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~Graph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void launch(cudaStream_t stream) const { GV_CUDA(cudaGraphLaunch(exec_, stream)); }
  size_t nodes() const {
    size_t n = 0;
    GV_CUDA(cudaGraphGetNodes(graph_, nullptr, &n));
    return n;
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

//! Mean seconds per call of f (which enqueues on `stream`) over `reps` calls after one
//! warm-up, timed with events on that stream.
template <class F>
double time_gpu_s(cudaStream_t stream, int reps, F&& f) {
  f();
  GV_CUDA(cudaStreamSynchronize(stream));
  Event a, b;
  GV_CUDA(cudaEventRecord(a.get(), stream));
  for (int i = 0; i < reps; ++i) f();
  GV_CUDA(cudaEventRecord(b.get(), stream));
  GV_CUDA(cudaEventSynchronize(b.get()));
  float ms = 0;
  GV_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()));
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
void fill_uniform_bf16(__nv_bfloat16* d_x, size_t n, float scale, uint64_t seed, cudaStream_t stream = nullptr);

//! The device as the runtime reports it.
struct DeviceInfo {
  std::string name;              // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int sm = 0;                    // compute capability x 10 + minor
  int sm_count = 0;
  int64_t l2_bytes = 0;          // cudaDeviceProp::l2CacheSize
  size_t total_bytes = 0, free_bytes = 0;
};
DeviceInfo device_info();

}  // namespace kvplan::gv::cuda
