// The CUDA backend's entry points, in kvplan_gpu_validate_cuda: linked by kvplan_harness
// only, so that `kvplan` itself loads no GPU library (it runs the harness instead).
#pragma once

#include <string>

#include "gpu_validate/validate.h"

namespace kvplan::gv {

//! Empty when the CUDA backend can run here; otherwise why not, in one sentence.
std::string cuda_unavailable_reason();
//! Every check on the GPU; throws std::runtime_error when it cannot run.
Report run_cuda_validation(const Options& o);

}  // namespace kvplan::gv
