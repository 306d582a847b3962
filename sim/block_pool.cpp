// The per-token-count block table (sim/block_pool.h).
#include "sim/block_pool.h"

#include <string>

#include "sim/sim.h"

namespace kvplan::sim {

BlockTable::BlockTable(const ModelConfig& m, const ServingOptions& o, int64_t max_model_len, const std::string& where)
    : block_size_(kv_block_tokens(o)) {
  if (block_size_ < 1) throw InputError("serving options", "block_size", "an integer >= 1");
  const int64_t kmax = block_index(max_model_len) + 1;
  blocks_at_.resize(static_cast<size_t>(kmax + 1));
  for (int64_t k = 0; k <= kmax; ++k)
    blocks_at_[static_cast<size_t>(k)] = k == 0 ? 0 : kv_blocks_per_request(m, o, k * block_size_);
  next_growth_.assign(blocks_at_.size(), -1);
  for (int64_t k = kmax - 1; k >= 0; --k) {
    const auto i = static_cast<size_t>(k);
    if (blocks_at_[i + 1] < blocks_at_[i])
      throw UnsupportedLayout(where + ": the KV layout's paged footprint shrinks as tokens are appended "
                              "(kv_blocks_per_request decreases), which a block allocator cannot model");
    next_growth_[i] = blocks_at_[i + 1] > blocks_at_[i] ? k + 1 : next_growth_[i + 1];
  }
}

}  // namespace kvplan::sim
