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
#include <memory>
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

//! The host-memory tier below the GPU cache: vLLM's KV offloading (OffloadingConnector
//! with its LRU manager, vllm/v1/kv_offload/lru_manager.py). Every full block a request
//! computes is stored (write-through, on a copy stream: the store costs no step time),
//! a lookup continues past the GPU cache's hit into this tier and touches what it finds,
//! and the least recently used blocks are evicted when a store needs the room. Blocks no
//! later prompt can hit (a unique prompt's, generated tokens') are stored as well and take
//! room like any other; they are kept as counted runs, so a request costs O(1) for them.
//! A tier below it (the disk, --kv-disk-size) takes the blocks it evicts, least recently
//! used first, and evicts its own the same way; a lookup finds each block in either tier.
class HostTier {
 public:
  explicit HostTier(int64_t capacity_blocks) : capacity_(capacity_blocks) {}
  //! Blocks the host tier evicts demote to a tier of `capacity_blocks` below it.
  void add_below(int64_t capacity_blocks) { below_ = std::make_unique<HostTier>(capacity_blocks); }
  const HostTier* below() const { return below_.get(); }
  //! Consecutive blocks of the prompt in this tier, the one below or, last, a `store`
  //! beyond them (the remote tier) from block `from` (below `max_blocks`); `from_below` and
  //! `from_store` get how many of them were found only there.
  int64_t hits(const PromptContent& c, int64_t from, int64_t max_blocks, int64_t block_size,
               int64_t* from_below = nullptr, const HostTier* store = nullptr, int64_t* from_store = nullptr) const;
  //! Stores block `key` (nonzero), or marks it most recently used when it is there.
  void store(uint64_t key);
  void store_anonymous(int64_t blocks);
  int64_t capacity() const { return capacity_; }
  bool contains(uint64_t key) const { return map_.contains(key); }
  int64_t used() const { return used_; }
  int64_t evicted() const { return evicted_; }
  int64_t stored() const { return stored_; }  //!< blocks written (a touch is not a write)

 private:
  void make_room();
  struct Run {
    uint64_t key = 0;     // 0: `blocks` blocks nothing can hit
    int64_t blocks = 1;
  };
  int64_t capacity_ = 0, used_ = 0, evicted_ = 0, stored_ = 0;
  std::list<Run> lru_;  // least recently used first
  std::unordered_map<uint64_t, std::list<Run>::iterator> map_;
  std::unique_ptr<HostTier> below_;
};

}  // namespace kvplan::sim
