// Check 4 on the GPU: the arena is real cudaMalloc (memory_ref.cpp runs the check).
#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"

namespace kvplan::gv::cuda {

bool CudaArena::allocate(int64_t bytes) {
  if (bytes <= 0) return true;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, size_t(bytes));
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    return false;
  }
  ptrs_.push_back(p);
  return true;
}

void CudaArena::release_all() {
  for (void* p : ptrs_) cudaFree(p);
  ptrs_.clear();
}

}  // namespace kvplan::gv::cuda
