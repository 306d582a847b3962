// kvplan sim: vLLM's automatic prefix caching at block granularity
// (vllm/v1/core/kv_cache_manager.py, block_pool.py, v0.15.1): a full block is identified by
// the hash of every token up to its end; running requests hold references on their full
// prompt blocks; a block whose last reference goes stays cached in a free queue and is
// evicted least recently freed first when an allocation needs the space. Here a block's
// identity is its content key (the group's system prompt while the block ends inside it,
// else the whole prompt's) and its index. Cached free blocks count as free pool space, as
// in vLLM. Simplification: a hit on a block another running request holds is charged to
// both (vLLM shares it), so the pool fills no later than vLLM's does.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>

namespace kvplan::sim {

//! What a prompt is made of, for the cache (GeneratedRequest's keys).
struct PromptContent {
  uint64_t group_key = 0;   //!< the system prompt's content (0: none)
  uint64_t prompt_key = 0;  //!< the whole prompt's content (0: unique)
  int64_t shared_tokens = 0;  //!< the system prompt's length
  bool unique() const { return group_key == 0 && prompt_key == 0; }
};

class PrefixCache {
 public:
  //! The identity of block `block` of a prompt; 0 for unique content (never a hit).
  static uint64_t key(const PromptContent& c, int64_t block, int64_t block_size);
  //! Leading blocks of the prompt in the cache (at most `max_blocks`).
  int64_t hits(const PromptContent& c, int64_t max_blocks, int64_t block_size) const;
  void ref(uint64_t key);
  void unref(uint64_t key);
  //! Evicts least recently freed blocks until at most `free_blocks` cached blocks stay
  //! (inline: every block allocation asks, and mostly nothing is to be evicted).
  void trim(int64_t free_blocks) {
    if (static_cast<int64_t>(lru_.size()) > free_blocks) evict(free_blocks);
  }

 private:
  void evict(int64_t free_blocks);
  struct Entry {
    int32_t refs = 0;
    std::list<uint64_t>::iterator pos;
  };
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> lru_;
};

}  // namespace kvplan::sim
