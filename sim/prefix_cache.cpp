// The prefix cache (sim/prefix_cache.h).
#include "sim/prefix_cache.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kvplan::sim {

uint64_t PrefixCache::key(const PromptContent& c, int64_t block, int64_t block_size) {
  const bool in_system = (block + 1) * block_size <= c.shared_tokens;
  const uint64_t content = in_system ? c.group_key : c.prompt_key;
  if (content == 0) return 0;
  // Distinct tags for system-prompt and whole-prompt keys; 2^24 blocks per prompt.
  return (content << 25) | (static_cast<uint64_t>(block) << 1) | (in_system ? 1U : 0U);
}

int64_t PrefixCache::hits(const PromptContent& c, int64_t max_blocks, int64_t block_size) const {
  int64_t n = 0;
  while (n < max_blocks) {
    const uint64_t k = key(c, n, block_size);
    if (k == 0 || map_.find(k) == map_.end()) break;
    ++n;
  }
  return n;
}

void PrefixCache::ref(uint64_t k) {
  auto [it, inserted] = map_.try_emplace(k);
  if (!inserted && it->second.refs == 0) lru_.erase(it->second.pos);
  ++it->second.refs;
}

void PrefixCache::unref(uint64_t k) {
  auto it = map_.find(k);
  if (it == map_.end() || it->second.refs <= 0) throw std::logic_error("prefix cache: unbalanced reference");
  if (--it->second.refs == 0) it->second.pos = lru_.insert(lru_.end(), k);
}

void PrefixCache::evict(int64_t free_blocks) {
  while (static_cast<int64_t>(lru_.size()) > std::max<int64_t>(free_blocks, 0)) {
    map_.erase(lru_.front());
    lru_.pop_front();
  }
}

int64_t HostTier::hits(const PromptContent& c, int64_t from, int64_t max_blocks, int64_t block_size,
                       int64_t* from_below, const HostTier* store, int64_t* from_store) const {
  int64_t n = from, below = 0, stored = 0;
  while (n < max_blocks) {
    const uint64_t k = PrefixCache::key(c, n, block_size);
    if (k == 0) break;
    if (!map_.contains(k)) {
      // LRU evicts a prompt's first blocks first, so its head may be below and its tail here.
      if (below_ && below_->map_.contains(k))
        ++below;
      else if (store && store->map_.contains(k))
        ++stored;
      else
        break;
    }
    ++n;
  }
  if (from_below) *from_below = below;
  if (from_store) *from_store = stored;
  return n - from;
}

void HostTier::store(uint64_t key) {
  if (capacity_ <= 0) return;
  if (const auto it = map_.find(key); it != map_.end()) {
    lru_.splice(lru_.end(), lru_, it->second);
    return;
  }
  ++stored_;
  if (used_ == capacity_ && lru_.front().key != 0 && lru_.front().blocks == 1) {
    // Full, and the least recently used entry is one block: it is the one evicted, so its
    // list and map nodes take the new key (no allocation per store; the same order).
    const auto front = lru_.begin();
    if (below_) below_->store(front->key);
    auto node = map_.extract(front->key);
    node.key() = key;
    map_.insert(std::move(node));
    front->key = key;
    lru_.splice(lru_.end(), lru_, front);
    ++evicted_;
    return;
  }
  map_.emplace(key, lru_.insert(lru_.end(), Run{key, 1}));
  ++used_;
  make_room();
}

void HostTier::store_anonymous(int64_t blocks) {
  if (capacity_ <= 0 || blocks <= 0) return;
  if (!lru_.empty() && lru_.back().key == 0) lru_.back().blocks += blocks;
  else lru_.push_back(Run{0, blocks});
  used_ += blocks;
  stored_ += blocks;
  make_room();
}

void HostTier::make_room() {
  while (used_ > capacity_) {
    Run& front = lru_.front();
    const int64_t out = std::min(front.blocks, used_ - capacity_);
    used_ -= out;
    evicted_ += out;
    if (below_) {
      if (front.key != 0) below_->store(front.key);
      else below_->store_anonymous(out);
    }
    if ((front.blocks -= out) > 0) continue;
    if (front.key != 0) map_.erase(front.key);
    lru_.pop_front();
  }
}

}  // namespace kvplan::sim
