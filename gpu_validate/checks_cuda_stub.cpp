// Built when CMake found no nvcc (or KVPLAN_CUDA=OFF): the CUDA backend is absent.
#include <stdexcept>

#include "gpu_validate/cuda_backend.h"

namespace kvplan::gv {

std::string cuda_unavailable_reason() {
  return "this build has no CUDA backend (nvcc was not found or KVPLAN_CUDA=OFF); "
         "rebuild where nvcc is installed, or use --backend cpu";
}

Report run_cuda_validation(const Options&) { throw std::runtime_error(cuda_unavailable_reason()); }

}  // namespace kvplan::gv
