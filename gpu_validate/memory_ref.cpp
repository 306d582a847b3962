// Check 4, backend-independent part; see memory.h.
#include "gpu_validate/memory.h"

namespace kvplan::gv {

bool SimulatedArena::allocate(int64_t bytes) {
  const int64_t rounded = (bytes + align_ - 1) / align_ * align_;
  if (rounded > capacity_ - used_) return false;
  used_ += rounded;
  return true;
}

MemoryCheck run_memory_check(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                             int64_t context_tokens, DeviceArena& arena,
                             int64_t granularity_allowance_bytes) {
  MemoryCheck r;
  r.budget = memory_budget(m, g, o);
  r.capacity = capacity(m, o, r.budget, context_tokens);
  r.block_bytes = kv_block_bytes_per_gpu(m, o);
  r.blocks_per_request = kv_blocks_per_request(m, o, context_tokens);
  r.weights_allocated = arena.allocate(r.budget.weights_bytes);
  r.activations_allocated = arena.allocate(r.budget.activation_bytes);
  r.pool_allocated = arena.allocate(r.capacity.num_blocks * r.block_bytes);
  if (r.pool_allocated) {
    BlockPool pool(r.capacity.num_blocks);
    while (r.blocks_per_request > 0 && pool.take(r.blocks_per_request)) ++r.admitted_requests;
    r.next_request_fits = r.blocks_per_request > 0 && pool.free_blocks() >= r.blocks_per_request;
    r.extra_block_fits = arena.allocate(r.block_bytes + granularity_allowance_bytes);
  }
  arena.release_all();
  return r;
}

ModelConfig llama_1b_like_config() {
  ModelConfig m;
  m.name = "llama-3.2-1b-like";
  m.model_type = "llama";
  m.hidden_size = 2048;
  m.num_layers = 16;
  m.num_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 64;
  m.intermediate_size = 8192;
  m.vocab_size = 128256;
  m.tie_word_embeddings = true;
  m.max_position_embeddings = 131072;
  m.torch_dtype = DType::bf16;
  m.layer_window.assign(16, 0);
  m.source = "gpu_validate: Llama-3.2-1B shapes (config.json)";
  return m;
}

}  // namespace kvplan::gv
