// Check 4: allocate weights, activations and a KV pool exactly as the planner sizes them
// and see that the predicted number of requests fits and one more does not.
// The allocator is abstract: on the CPU backend a simulated device (a bump allocator
// over a fake capacity; no bytes are touched), on CUDA real cudaMalloc (memory.cu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/planner.h"

namespace kvplan::gv {

class DeviceArena {
 public:
  virtual ~DeviceArena() = default;
  //! Reserves `bytes`; false (and nothing reserved) when they do not fit.
  virtual bool allocate(int64_t bytes) = 0;
  //! Releases everything this arena reserved.
  virtual void release_all() = 0;
};

//! A fake device of `capacity_bytes`: allocations are rounded up to `alignment_bytes`
//! and fail once the sum would exceed the capacity.
class SimulatedArena : public DeviceArena {
 public:
  explicit SimulatedArena(int64_t capacity_bytes, int64_t alignment_bytes = 256)
      : capacity_(capacity_bytes), align_(alignment_bytes) {}
  bool allocate(int64_t bytes) override;
  void release_all() override { used_ = 0; }
  int64_t used_bytes() const { return used_; }
  int64_t free_bytes() const { return capacity_ - used_; }

 private:
  int64_t capacity_, align_, used_ = 0;
};

//! A paged block pool (vLLM's block manager reduced to counting): requests take whole
//! blocks, all or nothing.
class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks) : free_(num_blocks) {}
  //! Takes `blocks`; false (and nothing taken) if fewer are free.
  bool take(int64_t blocks) {
    if (blocks > free_) return false;
    free_ -= blocks;
    return true;
  }
  int64_t free_blocks() const { return free_; }

 private:
  int64_t free_;
};

struct MemoryCheck {
  MemoryBudget budget;
  Capacity capacity;
  int64_t block_bytes = 0;            // one block, all layers, one GPU
  int64_t blocks_per_request = 0;
  bool weights_allocated = false, activations_allocated = false, pool_allocated = false;
  int64_t admitted_requests = 0;      // requests of `context` tokens the pool took
  bool next_request_fits = false;     // must be false
  bool extra_block_fits = false;      // one block beyond the pool fits in the arena: must be false
};

//! Allocates weights_bytes, activation_bytes and num_blocks x block_bytes from `arena`
//! (which stands for usable memory less the runtime reserve), then admits requests and
//! tries one block more (plus `granularity_allowance_bytes`, what a real allocator's
//! rounding may leave over; 0 for the simulated one).
MemoryCheck run_memory_check(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                             int64_t context_tokens, DeviceArena& arena,
                             int64_t granularity_allowance_bytes = 0);

//! A dense LLaMA-3.2-1B-shaped model (16 layers, hidden 2048, GQA 32/8, vocab 128256).
ModelConfig llama_1b_like_config();

}  // namespace kvplan::gv
