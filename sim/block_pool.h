// kvplan sim: the paged KV pool's arithmetic. A request holding t tokens is charged the
// planner's kv_blocks_per_request at t rounded up to whole blocks (sim.h); the table holds
// that count for every whole-block token count up to max_model_len, and for each the next
// token count that needs more blocks (a growth point), so a decoder's next allocation is
// one lookup instead of a call into the planner per token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/planner.h"
#include "planner/types.h"

namespace kvplan::sim {

class BlockTable {
 public:
  //! Throws UnsupportedLayout (sim.h) when the footprint shrinks as tokens are appended;
  //! `where` names the model and GPU for that message.
  BlockTable(const ModelConfig& m, const ServingOptions& o, int64_t max_model_len, const std::string& where);

  int64_t block_size() const { return block_size_; }
  //! Whole blocks that hold `tokens` tokens.
  int64_t block_index(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  //! Blocks a request holding `tokens` (0 .. max_model_len + block_size) tokens holds.
  int64_t blocks_for(int64_t tokens) const { return blocks_at_[static_cast<size_t>(block_index(tokens))]; }
  //! The first token count > `tokens` that needs more blocks than `tokens`, or -1.
  int64_t next_growth_tokens(int64_t tokens) const {
    const int64_t k = next_growth_[static_cast<size_t>(block_index(tokens))];
    return k < 0 ? -1 : (k - 1) * block_size_ + 1;
  }
  //! Whether blocks_for() covers `tokens`.
  bool covers(int64_t tokens) const {
    return tokens >= 0 && block_index(tokens) < static_cast<int64_t>(blocks_at_.size());
  }

 private:
  int64_t block_size_;
  // blocks_at_[k]: blocks a request of k * block_size tokens holds.
  std::vector<int64_t> blocks_at_;
  // next_growth_[k]: the smallest k' > k with blocks_at_[k'] > blocks_at_[k], or -1.
  std::vector<int64_t> next_growth_;
};

//! The blocks of one engine's pool and how many are in use.
class BlockPool {
 public:
  explicit BlockPool(int64_t total) : total_(total) {}
  int64_t total() const { return total_; }
  int64_t used() const { return used_; }
  int64_t free() const { return total_ - used_; }
  void take(int64_t n) { used_ += n; }
  void give_back(int64_t n) { used_ -= n; }

 private:
  int64_t total_;
  int64_t used_ = 0;
};

}  // namespace kvplan::sim
