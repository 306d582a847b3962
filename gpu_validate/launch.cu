// The per-kernel launch cost, with and without CUDA graphs: an empty kernel launched
// `kernels` times from the host (eager: the host's launch rate bounds it, timed in host
// wall time) and the same kernels replayed as one graph (timed with events).
#include <chrono>

#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"

namespace kvplan::gv::cuda {

namespace {
__global__ void empty_kernel() {}
}  // namespace

LaunchCost measure_launch(int64_t kernels, cudaStream_t stream) {
  LaunchCost c;
  c.kernels = kernels;
  auto enqueue = [&] {
    for (int64_t i = 0; i < kernels; ++i) {
      empty_kernel<<<1, 32, 0, stream>>>();
      GV_CHECK_LAUNCH();
    }
  };
  enqueue();  // warm-up: module load, first-launch costs
  GV_CUDA(cudaStreamSynchronize(stream));
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    enqueue();
    GV_CUDA(cudaStreamSynchronize(stream));
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  c.eager_s = best;
  const Graph g(stream, enqueue);
  c.graph_s = time_gpu_s(stream, 5, [&] { g.launch(stream); });
  return c;
}

}  // namespace kvplan::gv::cuda
