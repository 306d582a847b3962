// The serving engine: scheduler, paged KV pool, aggregate decode bookkeeping, metrics.
// See sim.h for the semantics and the event order.
//
// Bookkeeping. Let D be the number of decode steps run so far. A decoding request r has a
// fixed offset x0 such that its context in decode step D (tokens attended, itself
// included) is x0 + D; after that step it holds x0 + D tokens of cache. So the engine
// keeps only n_dec (decoders) and ctx_sum (sum of x0 + D over decoders, for the next
// step): a decode step adds n_dec to ctx_sum. Each request has at most two pending
// events in a min-heap keyed by (2 D + phase, sequence): phase 0 "needs a new block
// before step D", phase 1 "produced its last token in step D". Preempted and finished
// requests bump an epoch; their stale events are skipped when popped.
//
// Token accounting (as vLLM counts it): a prefill of n tokens (prompt + tokens generated
// before a recompute) leaves n tokens cached and samples one token; each decode step
// caches one more token and samples one. A request of P prompt and O output tokens thus
// needs one prefill and O - 1 decode steps, and ends holding P + O - 1 tokens.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <list>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/replica.h"
#include "sim/sim.h"

namespace kvplan::sim {

std::string_view to_string(Scheduler s) {
  switch (s) {
    case Scheduler::continuous: return "continuous";
    case Scheduler::chunked: return "chunked";
    case Scheduler::static_batch: return "static";
  }
  return "continuous";
}

std::optional<Scheduler> parse_scheduler(std::string_view s) {
  if (s == "continuous") return Scheduler::continuous;
  if (s == "chunked") return Scheduler::chunked;
  if (s == "static") return Scheduler::static_batch;
  return std::nullopt;
}

// ------------------------------------------------------------------------- Simulator

struct Simulator::Impl {
  std::shared_ptr<const ModelConfig> model;  // StepTimeModel keeps a pointer into it
  ServingOptions opts;
  std::unique_ptr<StepTimeModel> stm;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t max_model_len = 0;
  double block_bytes_per_gpu = 0;
  std::string where;      // "model on gpu", for messages
  std::string pool_note;  // why the pool is empty, if it is
  // blocks_at[k]: blocks a request of k * block_size tokens holds; a request of t tokens
  // holds blocks_at[ceil(t / block_size)] (constant within a block; checked in tests).
  std::vector<int64_t> blocks_at;
  // next_growth[k]: the smallest k' > k with blocks_at[k'] > blocks_at[k], or -1.
  std::vector<int64_t> next_growth;

  int64_t block_index(int64_t tokens) const { return (tokens + block_size - 1) / block_size; }
  int64_t blocks_for(int64_t tokens) const {
    return blocks_at[static_cast<size_t>(block_index(tokens))];
  }
  //! The first token count > `tokens` that needs more blocks than `tokens`, or -1.
  int64_t next_growth_tokens(int64_t tokens) const {
    const int64_t k = next_growth[static_cast<size_t>(block_index(tokens))];
    return k < 0 ? -1 : (k - 1) * block_size + 1;
  }
};

Simulator::Simulator(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o)
    : impl_(std::make_unique<Impl>()) {
  validate(m, o, "serving options");
  if (!o.kv_cache)
    throw InputError("serving options", "--no-kv-cache",
                     "a KV cache (the simulator models vLLM's paged KV pool)", "--no-kv-cache");
  Impl& s = *impl_;
  s.model = std::make_shared<const ModelConfig>(apply_what_if(m, o));
  s.opts = o;
  s.stm = std::make_unique<StepTimeModel>(*s.model, g, o);
  s.block_size = o.block_size;
  if (s.block_size < 1) throw InputError("serving options", "block_size", "an integer >= 1");
  const int64_t derived = derived_max_model_len(*s.model);
  s.max_model_len = o.max_model_len.value_or(derived > 0 ? derived : 131072);
  const MemoryBudget budget = memory_budget(*s.model, g, o);
  const Capacity cap = capacity(*s.model, o, budget, s.max_model_len);
  s.num_blocks = cap.num_blocks;
  s.where = s.model->name + " on " + g.name;
  s.pool_note = !budget.note.empty() ? budget.note : cap.limited_by;
  s.block_bytes_per_gpu = static_cast<double>(kv_block_bytes_per_gpu(*s.model, o));
  const int64_t kmax = s.block_index(s.max_model_len) + 1;
  s.blocks_at.resize(static_cast<size_t>(kmax + 1));
  for (int64_t k = 0; k <= kmax; ++k)
    s.blocks_at[static_cast<size_t>(k)] =
        k == 0 ? 0 : kv_blocks_per_request(*s.model, o, k * s.block_size);
  s.next_growth.assign(s.blocks_at.size(), -1);
  for (int64_t k = kmax - 1; k >= 0; --k) {
    const auto i = static_cast<size_t>(k);
    if (s.blocks_at[i + 1] < s.blocks_at[i])
      throw UnsupportedLayout(s.where + ": the KV layout's paged footprint shrinks as tokens are appended "
                              "(kv_blocks_per_request decreases), which a block allocator cannot model");
    s.next_growth[i] = s.blocks_at[i + 1] > s.blocks_at[i] ? k + 1 : s.next_growth[i + 1];
  }
}

Simulator::~Simulator() = default;

int64_t Simulator::num_blocks() const { return impl_->num_blocks; }
int64_t Simulator::block_size() const { return impl_->block_size; }
int64_t Simulator::max_model_len() const { return impl_->max_model_len; }
int64_t Simulator::blocks_for(int64_t tokens) const {
  if (tokens < 0 || tokens > impl_->max_model_len + impl_->block_size)
    return kv_blocks_per_request(*impl_->model, impl_->opts, tokens);
  return impl_->blocks_for(tokens);
}
int64_t Simulator::max_num_batched_tokens(Scheduler s) const {
  if (impl_->opts.max_num_batched_tokens) return *impl_->opts.max_num_batched_tokens;
  switch (s) {
    case Scheduler::continuous: return std::max<int64_t>(impl_->max_model_len, 2048);
    case Scheduler::chunked: return 8192;
    case Scheduler::static_batch: return INT64_MAX / 4;
  }
  return 8192;
}
const StepTimeModel& Simulator::step_model() const { return *impl_->stm; }
const ServingOptions& Simulator::options() const { return impl_->opts; }

// ------------------------------------------------------------------------- the run

namespace {

enum class State : uint8_t { free, waiting, prefilling, decoding, swapped };

struct Req {
  int64_t id = 0;
  double arrival_s = 0;
  int64_t prompt = 0;
  int64_t output = 0;      // after the max_model_len cap
  int64_t generated = 0;   // output tokens produced
  int64_t cached = 0;      // prefilling: tokens cached so far (decoding: x0 + D - 1)
  int64_t blocks = 0;      // KV blocks held on the GPU
  int64_t x0 = 0;          // decoding: context in decode step D is x0 + D
  int64_t chunk = 0;       // tokens of its prefill chunk in the step being composed
  int64_t preloaded = 0;   // prompt tokens whose KV arrived from another instance (Instance::submit)
  // prefix caching (GeneratedRequest): content keys, and how many of its leading prompt
  // blocks it holds a reference on in the cache
  uint64_t group_key = 0, prompt_key = 0;
  int64_t shared_tokens = 0;
  int64_t cache_blocks = 0;
  double first_token_s = 0;
  double scheduled_s = 0;
  uint32_t epoch = 0;
  bool has_first_token = false;
  bool was_scheduled = false;
  bool reserved = false;   // static batching: blocks for the full length held from the start
  State state = State::free;
  int32_t prev = -1, next = -1;  // running list, oldest admission first
};

struct Event {
  int64_t key;   // 2 * decode step + phase (0: grow before the step, 1: finish after it)
  uint64_t seq;  // insertion order: the tie-break of the documented order
  int32_t slot;
  uint32_t epoch;
  bool operator>(const Event& e) const { return key != e.key ? key > e.key : seq > e.seq; }
};

Percentiles percentiles(std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  auto at = [&](double q) {
    // Nearest rank: the ceil(q n)-th smallest value.
    auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    rank = std::clamp<size_t>(rank, 1, v.size());
    auto it = v.begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(v.begin(), it, v.end());
    return *it;
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

//! vLLM's automatic prefix caching at block granularity (vllm/v1/core/kv_cache_manager.py,
//! block_pool.py, v0.15.1): a full block is identified by the hash of every token up to
//! its end; running requests hold references on their full prompt blocks; a block whose
//! last reference goes stays cached in a free queue and is evicted least recently freed
//! first when an allocation needs the space. Here a block's identity is its content key
//! (the group's system prompt while the block ends inside it, else the whole prompt's)
//! and its index. Cached free blocks count as free pool space, as in vLLM. Simplification:
//! a hit on a block another running request holds is charged to both (vLLM shares it), so
//! the pool fills no later than vLLM's does.
class PrefixCache {
 public:
  static uint64_t key(const Req& r, int64_t block, int64_t block_size) {
    const bool in_system = (block + 1) * block_size <= r.shared_tokens;
    const uint64_t content = in_system ? r.group_key : r.prompt_key;
    if (content == 0) return 0;  // unique content: never hit
    // Distinct tags for system-prompt and whole-prompt keys; 2^24 blocks per prompt.
    return (content << 25) | (static_cast<uint64_t>(block) << 1) | (in_system ? 1U : 0U);
  }
  //! Leading blocks of r's prompt in the cache (at most `max_blocks`).
  int64_t hits(const Req& r, int64_t max_blocks, int64_t block_size) const {
    int64_t n = 0;
    while (n < max_blocks) {
      const uint64_t k = key(r, n, block_size);
      if (k == 0 || map_.find(k) == map_.end()) break;
      ++n;
    }
    return n;
  }
  void ref(uint64_t k) {
    auto [it, inserted] = map_.try_emplace(k);
    if (!inserted && it->second.refs == 0) lru_.erase(it->second.pos);
    ++it->second.refs;
  }
  void unref(uint64_t k) {
    auto it = map_.find(k);
    if (it == map_.end() || it->second.refs <= 0) throw std::logic_error("prefix cache: unbalanced reference");
    if (--it->second.refs == 0) it->second.pos = lru_.insert(lru_.end(), k);
  }
  //! Evicts least recently freed blocks until at most `free_blocks` cached blocks stay.
  void trim(int64_t free_blocks) {
    while (static_cast<int64_t>(lru_.size()) > std::max<int64_t>(free_blocks, 0)) {
      map_.erase(lru_.front());
      lru_.pop_front();
    }
  }
  int64_t cached_free() const { return static_cast<int64_t>(lru_.size()); }

 private:
  struct Entry {
    int32_t refs = 0;
    std::list<uint64_t>::iterator pos;
  };
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> lru_;
};

// The 99th percentile (nearest rank) of `v` with `failed` more requests that never got
// a token, counted as infinitely late.
double p99_failing(const std::vector<double>& v, int64_t failed) {
  std::vector<double> all = v;
  all.insert(all.end(), static_cast<size_t>(failed), std::numeric_limits<double>::infinity());
  if (all.empty()) return 0;
  return percentiles(all).p99;
}

//! The raw figures a run's metrics come from. A fleet (sim/fleet.h) adds its replicas'
//! tallies and summarizes once, so that its percentiles are over every request rather
//! than averages of the replicas' percentiles.
struct Tally {
  SimResult res_;
  std::vector<double> ttft_, tpot_, e2e_, queue_;
  int64_t good_ = 0;
  double queue_first_half_s_ = 0, queue_last_quarter_s_ = 0;
  int64_t n_first_half_ = 0, n_last_quarter_ = 0;
  double first_arrival_s_ = 0, last_finish_s_ = 0;
  bool any_arrival_ = false;
  double batch_time_ = 0, blocks_time_ = 0;
  int64_t peak_blocks_ = 0;

  //! Adds another replica's figures: counts and times summed, peaks as the larger, the
  //! span from the earliest arrival to the latest finish.
  void add(const Tally& o) {
    SimResult& r = res_;
    const SimResult& x = o.res_;
    r.arrived += x.arrived;
    r.completed += x.completed;
    r.rejected += x.rejected;
    r.rejected_max_model_len += x.rejected_max_model_len;
    r.rejected_pool += x.rejected_pool;
    r.preemptions += x.preemptions;
    r.truncated += x.truncated;
    r.output_tokens += x.output_tokens;
    r.prompt_tokens += x.prompt_tokens;
    r.cached_prompt_tokens += x.cached_prompt_tokens;
    r.batch_max = std::max(r.batch_max, x.batch_max);
    r.busy_s += x.busy_s;
    r.steps += x.steps;
    r.events += x.events;
    r.tokens_simulated += x.tokens_simulated;
    ttft_.insert(ttft_.end(), o.ttft_.begin(), o.ttft_.end());
    tpot_.insert(tpot_.end(), o.tpot_.begin(), o.tpot_.end());
    e2e_.insert(e2e_.end(), o.e2e_.begin(), o.e2e_.end());
    queue_.insert(queue_.end(), o.queue_.begin(), o.queue_.end());
    good_ += o.good_;
    queue_first_half_s_ += o.queue_first_half_s_;
    queue_last_quarter_s_ += o.queue_last_quarter_s_;
    n_first_half_ += o.n_first_half_;
    n_last_quarter_ += o.n_last_quarter_;
    if (o.any_arrival_) first_arrival_s_ = any_arrival_ ? std::min(first_arrival_s_, o.first_arrival_s_) : o.first_arrival_s_;
    any_arrival_ = any_arrival_ || o.any_arrival_;
    last_finish_s_ = std::max(last_finish_s_, o.last_finish_s_);
    batch_time_ += o.batch_time_;
    blocks_time_ += o.blocks_time_;
    peak_blocks_ = std::max(peak_blocks_, o.peak_blocks_);
  }
};

//! The metrics of a tally (sorts its latency vectors in place). `busy_s` and the two
//! time-weighted means are over the summed busy time of every replica in the tally.
SimResult summarize(Tally& t, const Slo& slo, int64_t num_blocks, int64_t block_size) {
  SimResult r = t.res_;
  r.slo = slo;
  r.num_blocks = num_blocks;
  r.block_size = block_size;
  r.peak_blocks = t.peak_blocks_;
  r.peak_kv_utilization = static_cast<double>(t.peak_blocks_) / static_cast<double>(num_blocks);
  if (r.busy_s > 0) {
    r.batch_mean = t.batch_time_ / r.busy_s;
    r.mean_kv_utilization = t.blocks_time_ / r.busy_s / static_cast<double>(num_blocks);
  }
  r.duration_s = r.completed > 0 ? t.last_finish_s_ - t.first_arrival_s_ : 0;
  if (r.duration_s > 0) {
    r.requests_per_s = static_cast<double>(r.completed) / r.duration_s;
    r.output_tokens_per_s = static_cast<double>(r.output_tokens) / r.duration_s;
    r.prompt_tokens_per_s = static_cast<double>(r.prompt_tokens) / r.duration_s;
    r.goodput_requests_per_s = static_cast<double>(t.good_) / r.duration_s;
  }
  const int64_t judged = r.completed + r.rejected;
  r.slo_attainment = judged > 0 ? static_cast<double>(t.good_) / static_cast<double>(judged) : 0;
  r.ttft_s = percentiles(t.ttft_);
  r.tpot_s = percentiles(t.tpot_);
  r.e2e_s = percentiles(t.e2e_);
  r.queue_s = percentiles(t.queue_);
  if (t.n_first_half_ > 0 && t.n_last_quarter_ > 0)
    r.queue_growth_s = t.queue_last_quarter_s_ / static_cast<double>(t.n_last_quarter_) -
                       t.queue_first_half_s_ / static_cast<double>(t.n_first_half_);
  r.meets_slo = r.completed > 0 && slo.given() &&
                (slo.ttft_p99_s <= 0 || p99_failing(t.ttft_, r.rejected) <= slo.ttft_p99_s) &&
                (slo.tpot_p99_s <= 0 || p99_failing(t.tpot_, r.rejected) <= slo.tpot_p99_s);
  return r;
}

class Run : Tally {
 public:
  //! `external`: requests come from submit() (Instance), this many in all, not from the workload.
  Run(const Simulator::Impl& e, const Simulator& sim, const Workload& w, const SimOptions& o,
      std::optional<int64_t> external = std::nullopt, bool hold_finished = false)
      : e_(e), w_(w), o_(o), hold_finished_(hold_finished),
        count_(external.value_or(o.requests.value_or(w.requests))),
        stream_(w, o.seed, o.rate_scale, external ? 0 : count_),
        // Data-parallel attention (--dp): the dp ranks' pools, sequence limits and token
        // budgets are pooled into one scheduler (balanced ranks; docs/parallelism.md).
        num_blocks_(o.num_blocks.value_or(e.num_blocks) * e.opts.dp),
        max_seqs_(e.opts.max_num_seqs * e.opts.dp),
        budget_(o.scheduler == Scheduler::static_batch ? sim.max_num_batched_tokens(o.scheduler)
                                                        : sim.max_num_batched_tokens(o.scheduler) * e.opts.dp),
        caching_(e.opts.enable_prefix_caching.value_or(true) && o.scheduler != Scheduler::static_batch),
        watermark_blocks_(static_cast<int64_t>(0.01 * static_cast<double>(num_blocks_))),
        request_overhead_s_(e.opts.calibration.request_overhead_s),
        output_lag_steps_(e.opts.calibration.output_lag_steps) {
    if (count_ < 0) throw InputError("simulate", "requests", "an integer >= 0");
    if (num_blocks_ < 1)
      throw InputError(e.where, "", "memory left for a KV pool of at least one block (a larger GPU, --tp, "
                       "or quantization)", e.pool_note.empty() ? "none left" : e.pool_note);
    if (max_seqs_ < 1) throw InputError("serving options", "max_num_seqs", "an integer >= 1");
    if (o.scheduler == Scheduler::chunked && budget_ < max_seqs_)
      throw InputError("serving options", "max_num_batched_tokens",
                       "at least max_num_seqs with chunked prefill",
                       std::to_string(budget_) + " < " + std::to_string(max_seqs_));
    if (o.preemption == Preemption::swap && !(o.host_link_bytes_per_s > 0))
      throw InputError("simulate", "host_link_bytes_per_s", "a positive number");
  }

  SimResult go();

  // ---- driven by a fleet (sim/replica.h): arrivals come routed, not from the stream
  void route(const detail::GeneratedRequest& g) {
    inbox_.push_back(g);
    ++routed_;
  }
  int64_t outstanding() const { return routed_ - res_.completed - res_.rejected; }
  int64_t blocks_used() const { return blocks_used_; }
  int64_t pool_blocks() const { return num_blocks_; }
  int64_t cached_prefix_blocks(const detail::GeneratedRequest& g) const;
  double schedule_at(double t);
  double end_step(double dt) {
    after_step(dt);
    return now_;
  }
  bool has_work() const { return !idle() || !inbox_.empty(); }
  const Tally& tally() const { return *this; }
  //! The metrics of `t`, a tally of this run or of a fleet of runs like it.
  SimResult summary(Tally& t) const { return summarize(t, w_.slo, num_blocks_, e_.block_size); }
  // ---- driven from outside (Instance): one step at a time
  bool idle() const { return n_running_ == 0 && waiting_.empty() && swapped_.empty(); }
  void submit(const detail::GeneratedRequest& g, int64_t preloaded) {
    if ((idle() || stalled_) && now_ < g.arrival_s) now_ = g.arrival_s;
    stalled_ = false;
    arrive(g, preloaded);
  }
  double next_step_s() const {
    return idle() || stalled_ ? std::numeric_limits<double>::infinity() : now_;
  }
  //! Frees the blocks a finished request kept (hold_finished), at time t.
  void release(int64_t request, double t) {
    const auto it = held_.find(request);
    if (it == held_.end()) throw std::logic_error("simulator: release of a request that holds no blocks");
    if ((idle() || stalled_) && now_ < t) now_ = t;
    stalled_ = false;
    Req& r = R(it->second);
    held_blocks_ -= r.blocks;
    free_blocks(r);
    free_slots_.push_back(it->second);
    held_.erase(it);
  }
  void step_external() {
    if (o_.check_invariants) check();
    if (!try_step()) stalled_ = true;
  }
  SimResult result(std::chrono::steady_clock::time_point wall0) {
    if (o_.check_invariants && blocks_used_ != 0)
      throw std::logic_error("simulator: blocks still in use at the end");
    return finalize(wall0);
  }

 private:
  //! Composes the step at now_ and returns its duration, or 0 when nothing can run.
  double compose_step();

  // ---- request slots
  int32_t alloc_slot() {
    if (!free_slots_.empty()) {
      const int32_t s = free_slots_.back();
      free_slots_.pop_back();
      return s;
    }
    reqs_.emplace_back();
    return static_cast<int32_t>(reqs_.size() - 1);
  }
  Req& R(int32_t s) { return reqs_[static_cast<size_t>(s)]; }

  // ---- running list (admission order; the tail is the newest, the preemption victim)
  void push_running(int32_t s) {
    Req& r = R(s);
    r.prev = tail_;
    r.next = -1;
    if (tail_ >= 0) R(tail_).next = s; else head_ = s;
    tail_ = s;
    ++n_running_;
  }
  void unlink_running(int32_t s) {
    Req& r = R(s);
    if (r.prev >= 0) R(r.prev).next = r.next; else head_ = r.next;
    if (r.next >= 0) R(r.next).prev = r.prev; else tail_ = r.prev;
    r.prev = r.next = -1;
    --n_running_;
  }

  void emit(RequestEventKind k, const Req& r, std::optional<double> time_s = {}) {
    if (!o_.on_request) return;
    o_.on_request(RequestEvent{k, r.id, time_s.value_or(now_), r.generated, r.prompt,
                               r.output, r.blocks});
  }
  void push_event(int64_t key, int32_t slot) {
    heap_.push(Event{key, seq_++, slot, R(slot).epoch});
  }
  bool live(const Event& ev) {
    const Req& r = R(ev.slot);
    return r.epoch == ev.epoch && r.state == State::decoding;
  }

  // ---- blocks
  void take_blocks(Req& r, int64_t n) {
    r.blocks += n;
    blocks_used_ += n;
    peak_blocks_ = std::max(peak_blocks_, blocks_used_);
    if (caching_) cache_.trim(num_blocks_ - blocks_used_);
  }
  void free_blocks(Req& r) {
    blocks_used_ -= r.blocks;
    r.blocks = 0;
    if (caching_) {
      // Tail first, as vLLM frees them (block_pool.free_blocks(reversed(...))): a prompt's
      // last blocks are evicted before its first, keeping shared prefixes longest.
      for (int64_t i = r.cache_blocks - 1; i >= 0; --i) cache_.unref(PrefixCache::key(r, i, e_.block_size));
      r.cache_blocks = 0;
    }
  }
  //! Prefix-cache hit for a request about to be admitted: sets r.cached to the tokens of
  //! its cached leading blocks (vLLM recomputes at least the last prompt token, so a hit
  //! covers at most the full blocks of the first P - 1 tokens) and returns them.
  int64_t lookup(Req& r) {
    // KV that arrived from a prefill instance covers all but the last prompt token, which
    // the decode instance recomputes to sample the first output token (vLLM V1,
    // Scheduler._update_waiting_for_remote_kv: "if num_computed_tokens == request.num_tokens:
    // num_computed_tokens -= 1").
    if (r.preloaded > 0) return r.cached = r.preloaded;
    if (!caching_ || (r.prompt_key == 0 && r.group_key == 0)) return 0;
    const int64_t hit = cache_.hits(r, (r.prompt - 1) / e_.block_size, e_.block_size);
    r.cached = hit * e_.block_size;
    return r.cached;
  }
  //! References the hit blocks of an admitted request (lookup() set r.cached).
  void ref_hits(Req& r) {
    if (!caching_ || r.preloaded > 0) return;
    const int64_t hit = r.cached / e_.block_size;
    for (int64_t i = 0; i < hit; ++i) cache_.ref(PrefixCache::key(r, i, e_.block_size));
    r.cache_blocks = hit;
    res_.cached_prompt_tokens += r.cached;
  }
  //! Registers the prompt blocks a prefill chunk completed.
  void register_blocks(Req& r) {
    if (!caching_ || (r.prompt_key == 0 && r.group_key == 0)) return;
    const int64_t full = std::min(r.cached, r.prompt) / e_.block_size;
    for (; r.cache_blocks < full; ++r.cache_blocks) {
      const uint64_t k = PrefixCache::key(r, r.cache_blocks, e_.block_size);
      if (k == 0) break;  // the rest of the prompt is unique
      cache_.ref(k);
    }
  }

  // ---- lifecycle
  void arrive(const detail::GeneratedRequest& g, int64_t preloaded = 0);
  void admit(int32_t s, int64_t chunk);
  //! Makes s a decoder whose next step attends to P + g tokens. It holds the blocks of
  //! P + g - 1 tokens, or of P + g when `covers_next` (swapped in after the block phase).
  void join_decoders(int32_t s, bool covers_next = false);
  void preempt(int32_t s);
  void finish(int32_t s);
  //! Allocates n blocks to slot s, preempting the newest running requests while the pool
  //! is short; false when s itself was preempted.
  bool allocate(int32_t s, int64_t n);
  //! Composes and runs one step at now_; false when nothing can run.
  bool try_step();
  SimResult finalize(std::chrono::steady_clock::time_point wall0);

  // ---- scheduling
  void grow_decoders();
  void compose_continuous();
  void swap_in();
  void compose_chunked();
  void compose_static();
  void after_step(double dt);
  double decode_keys(const KvTraffic& kv) const;
  void check() const;

  const Simulator::Impl& e_;
  const Workload& w_;
  const SimOptions& o_;
  // Driven from outside: a finished request keeps its blocks until release() (a prefill
  // instance's KV until the decode side has read it).
  bool hold_finished_ = false;
  std::unordered_map<int64_t, int32_t> held_;  // request id -> slot
  int64_t held_blocks_ = 0;
  int64_t count_;
  detail::RequestStream stream_;  // go()'s arrivals (a fleet routes its own instead)
  std::vector<detail::GeneratedRequest> inbox_;  // routed, to enter at the next scheduling point
  int64_t routed_ = 0;
  int64_t num_blocks_, max_seqs_, budget_;
  bool caching_;
  int64_t watermark_blocks_;  // continuous (V0) admission reserve
  double request_overhead_s_;
  double output_lag_steps_;
  double output_lag_s_ = 0;  // delivery lag of the tokens of the step that just ran
  PrefixCache cache_;

  std::vector<Req> reqs_;
  std::vector<int32_t> free_slots_;
  std::deque<int32_t> waiting_;
  std::deque<int32_t> swapped_;
  std::vector<int32_t> prefilling_;  // running requests in prefill, admission order
  std::vector<int32_t> step_prefills_;  // chunks of the step being composed
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
  uint64_t seq_ = 0;
  int32_t head_ = -1, tail_ = -1;
  int64_t n_running_ = 0;

  double now_ = 0;
  int64_t D_ = 0;        // decode steps run
  int64_t n_dec_ = 0;    // decoding requests
  int64_t ctx_sum_ = 0;  // sum of their contexts in decode step D_
  int64_t blocks_used_ = 0;
  bool preempted_this_step_ = false;
  bool decode_step_ = false;  // whether the running decoders take part in this step
  bool stalled_ = false;      // driven from outside: nothing could run until a submit or release
  double swap_s_ = 0;    // swap traffic of the step being composed
};

void Run::arrive(const detail::GeneratedRequest& g, int64_t preloaded) {
  ++res_.arrived;
  ++res_.events;
  if (!any_arrival_) {
    first_arrival_s_ = g.arrival_s;
    any_arrival_ = true;
  }
  const int32_t s = alloc_slot();
  Req& r = R(s);
  const uint32_t epoch = r.epoch;
  r = Req{};
  r.epoch = epoch + 1;
  r.id = g.index;
  r.arrival_s = g.arrival_s;
  r.prompt = std::max<int64_t>(g.prompt_tokens, 1);
  r.output = std::max<int64_t>(g.output_tokens, 1);
  r.group_key = g.group_key;
  r.prompt_key = g.prompt_key;
  r.shared_tokens = g.shared_tokens;
  r.preloaded = std::clamp<int64_t>(preloaded, 0, r.prompt - 1);
  r.state = State::waiting;
  emit(RequestEventKind::arrived, r, r.arrival_s);
  // vLLM rejects prompts that leave no room for an output token and stops generation at
  // max_model_len; a request whose full length cannot fit the pool could never finish.
  bool reject = r.prompt >= e_.max_model_len;
  if (!reject) {
    const int64_t cap = e_.max_model_len - r.prompt;
    if (r.output > cap) {
      r.output = cap;
      ++res_.truncated;
    }
    reject = e_.blocks_for(r.prompt + r.output - 1) > num_blocks_;
    // V0 never admits a prompt that would leave less than the watermark (AllocStatus.NEVER).
    if (o_.scheduler == Scheduler::continuous && e_.blocks_for(r.prompt) > num_blocks_ - watermark_blocks_)
      reject = true;
  }
  if (reject) {
    ++res_.rejected;
    ++(r.prompt >= e_.max_model_len ? res_.rejected_max_model_len : res_.rejected_pool);
    emit(RequestEventKind::rejected, r);
    r.state = State::free;
    free_slots_.push_back(s);
    return;
  }
  waiting_.push_back(s);
}

void Run::admit(int32_t s, int64_t chunk) {
  Req& r = R(s);
  r.state = State::prefilling;
  r.chunk = chunk;
  if (!r.was_scheduled) {
    r.was_scheduled = true;
    r.scheduled_s = now_;
  }
  push_running(s);
  prefilling_.push_back(s);
  step_prefills_.push_back(s);
  emit(RequestEventKind::scheduled, r);
}

void Run::join_decoders(int32_t s, bool covers_next) {
  Req& r = R(s);
  const int64_t next_ctx = r.prompt + r.generated;
  r.state = State::decoding;
  r.x0 = next_ctx - D_;
  ++n_dec_;
  ctx_sum_ += next_ctx;
  const int64_t last_step = D_ + (r.output - 1 - r.generated);
  push_event(2 * last_step + 1, s);
  if (!r.reserved) {
    const int64_t t = e_.next_growth_tokens(covers_next ? next_ctx : next_ctx - 1);
    if (t >= 0 && t - r.x0 <= last_step) push_event(2 * (t - r.x0), s);
  }
}

void Run::preempt(int32_t s) {
  Req& r = R(s);
  unlink_running(s);
  r.preloaded = 0;  // its transferred KV is gone with its blocks: recomputed here
  if (r.state == State::decoding) {
    --n_dec_;
    ctx_sum_ -= r.x0 + D_;
    r.generated = r.x0 + D_ - r.prompt;  // its context in step D_ is P + g
    r.cached = r.x0 + D_ - 1;
  } else if (r.state == State::prefilling) {
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
    auto it = std::find(step_prefills_.begin(), step_prefills_.end(), s);
    if (it != step_prefills_.end()) step_prefills_.erase(it);
    r.chunk = 0;
  }
  ++r.epoch;
  ++res_.preemptions;
  preempted_this_step_ = true;
  if (o_.preemption == Preemption::swap && r.state == State::decoding) {
    swap_s_ += static_cast<double>(r.blocks) * e_.block_bytes_per_gpu / o_.host_link_bytes_per_s;
    free_blocks(r);
    r.state = State::swapped;
    swapped_.push_back(s);
  } else {
    free_blocks(r);
    r.cached = 0;
    r.state = State::waiting;
    waiting_.push_front(s);
  }
  emit(RequestEventKind::preempted, r);
}

void Run::finish(int32_t s) {
  Req& r = R(s);
  unlink_running(s);
  if (r.state == State::decoding) {
    --n_dec_;
    ctx_sum_ -= r.x0 + D_;
  } else if (r.state == State::prefilling) {
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
  }
  if (hold_finished_) {
    held_blocks_ += r.blocks;
    held_.emplace(r.id, s);
  } else {
    free_blocks(r);
  }
  ++r.epoch;
  r.state = State::free;
  emit(RequestEventKind::finished, r);
  if (!hold_finished_) free_slots_.push_back(s);
  ++res_.completed;
  res_.output_tokens += r.output;
  res_.prompt_tokens += r.prompt;
  last_finish_s_ = now_;
  // The per-request time outside the engine loop (API server, tokenization, streaming)
  // delays the first and the last token alike.
  const double ttft = r.first_token_s - r.arrival_s + request_overhead_s_;
  // (first_token_s and the last token both trail their step by output_lag_s_.)
  ttft_.push_back(ttft);
  e2e_.push_back(now_ + output_lag_s_ - r.arrival_s + request_overhead_s_);
  const double queued_s = r.scheduled_s - r.arrival_s;
  queue_.push_back(queued_s);
  if (2 * r.id < count_) {
    queue_first_half_s_ += queued_s;
    ++n_first_half_;
  } else if (4 * r.id >= 3 * count_) {
    queue_last_quarter_s_ += queued_s;
    ++n_last_quarter_;
  }
  bool good = w_.slo.ttft_p99_s <= 0 || ttft <= w_.slo.ttft_p99_s;
  if (r.output > 1) {
    const double tpot = (now_ - r.first_token_s) / static_cast<double>(r.output - 1);
    tpot_.push_back(tpot);
    good = good && (w_.slo.tpot_p99_s <= 0 || tpot <= w_.slo.tpot_p99_s);
  }
  if (good) ++good_;
}

bool Run::allocate(int32_t s, int64_t n) {
  while (num_blocks_ - blocks_used_ < n) {
    const int32_t victim = tail_;
    preempt(victim);
    if (victim == s) return false;
  }
  take_blocks(R(s), n);
  return true;
}

void Run::grow_decoders() {
  // Blocks due before decode step D_, in the order they fell due.
  while (!heap_.empty() && heap_.top().key <= 2 * D_) {
    const Event ev = heap_.top();
    heap_.pop();
    ++res_.events;
    if (!live(ev)) continue;
    if (ev.key != 2 * D_) throw std::logic_error("simulator: a block event was missed");
    Req& r = R(ev.slot);
    const int64_t ctx = r.x0 + D_;
    const int64_t need = e_.blocks_for(ctx) - r.blocks;
    if (!allocate(ev.slot, need)) continue;
    const int64_t final_step = r.prompt + r.output - 1 - r.x0;
    const int64_t t = e_.next_growth_tokens(ctx);
    if (t >= 0 && t - r.x0 <= final_step) push_event(2 * (t - r.x0), ev.slot);
  }
}

void Run::compose_continuous() {
  // vLLM V0 (_schedule_default): prefills first, whole prompts, and only when nothing is
  // swapped out; a step with prefills has no decodes. Otherwise all running requests
  // decode (preempting the newest when blocks run out), then swapped requests come back
  // if nothing was preempted.
  if (swapped_.empty()) {
    int64_t tokens = 0;
    while (!waiting_.empty() && n_running_ < max_seqs_) {
      const int32_t s = waiting_.front();
      Req& r = R(s);
      const int64_t len = r.prompt + r.generated;
      const int64_t hit = lookup(r);
      // The first prompt of a step always fits the token budget.
      if (tokens > 0 && tokens + len - hit > budget_) break;
      const int64_t need = e_.blocks_for(len);
      // V0's admission watermark: a prompt is admitted only if 1 % of the pool stays free
      // after it (vllm/core/block_manager.py v0.6, can_allocate: free - required >=
      // watermark_blocks = int(0.01 x num_gpu_blocks)), so running decoders keep room to grow.
      // (With nothing running the reserve protects no one: a recomputed request longer
      // than the pool minus the reserve still gets back in.)
      if (num_blocks_ - blocks_used_ < need || (n_running_ > 0 && num_blocks_ - blocks_used_ - need < watermark_blocks_))
        break;
      waiting_.pop_front();
      ref_hits(r);
      take_blocks(r, need);
      admit(s, len - hit);
      tokens += len - hit;
    }
    if (!step_prefills_.empty()) return;  // prefill-only step
  }
  decode_step_ = true;
  grow_decoders();
  if (!preempted_this_step_) swap_in();
}

void Run::swap_in() {
  // FCFS; a swapped-in request decodes in this step, so it gets the blocks of its next
  // context at once.
  while (!swapped_.empty() && n_running_ < max_seqs_) {
    const int32_t s = swapped_.front();
    Req& r = R(s);
    const int64_t need = e_.blocks_for(r.cached + 1);
    if (num_blocks_ - blocks_used_ < need) break;
    swapped_.pop_front();
    take_blocks(r, need);
    swap_s_ += static_cast<double>(need) * e_.block_bytes_per_gpu / o_.host_link_bytes_per_s;
    push_running(s);
    join_decoders(s, true);
  }
}

void Run::compose_chunked() {
  // vLLM V1: running requests first (decoders one token each, then partial prefills),
  // new requests only when nothing was preempted; one token budget for all.
  decode_step_ = true;
  grow_decoders();
  if (!preempted_this_step_) swap_in();
  int64_t left = budget_ - n_dec_;
  for (size_t i = 0; i < prefilling_.size() && left > 0;) {
    const int32_t s = prefilling_[i];
    Req& r = R(s);
    const int64_t chunk = std::min(r.prompt + r.generated - r.cached, left);
    const int64_t need = e_.blocks_for(r.cached + chunk) - r.blocks;
    if (!allocate(s, need)) continue;  // s itself was preempted: prefilling_[i] is the next
    r.chunk = chunk;
    step_prefills_.push_back(s);
    left -= chunk;
    ++i;
  }
  if (preempted_this_step_ || !swapped_.empty()) return;
  while (!waiting_.empty() && n_running_ < max_seqs_ && left > 0) {
    const int32_t s = waiting_.front();
    Req& r = R(s);
    const int64_t hit = lookup(r);
    const int64_t chunk = std::min(r.prompt + r.generated - hit, left);
    const int64_t need = e_.blocks_for(hit + chunk);
    if (num_blocks_ - blocks_used_ < need) break;
    waiting_.pop_front();
    ref_hits(r);
    take_blocks(r, need);
    admit(s, chunk);
    left -= chunk;
  }
}

void Run::compose_static() {
  if (n_running_ > 0) {  // decode the batch until its last request ends
    decode_step_ = true;
    return;
  }
  while (!waiting_.empty() && n_running_ < max_seqs_) {
    const int32_t s = waiting_.front();
    Req& r = R(s);
    const int64_t need = e_.blocks_for(r.prompt + r.output - 1);
    if (num_blocks_ - blocks_used_ < need) break;
    waiting_.pop_front();
    take_blocks(r, need);
    r.reserved = true;
    admit(s, r.prompt + r.generated);
  }
}

// Keys the decoders attend to this step: the sum of their contexts, or with sliding
// layers each context capped per layer (KvTraffic), which needs a pass over them.
double Run::decode_keys(const KvTraffic& kv) const {
  if (!kv.windowed()) return static_cast<double>(ctx_sum_);
  double keys = 0;
  for (int32_t s = head_; s >= 0; s = reqs_[static_cast<size_t>(s)].next) {
    const Req& r = reqs_[static_cast<size_t>(s)];
    if (r.state == State::decoding) keys += kv.decode_keys(r.x0 + D_);
  }
  return keys;
}

void Run::after_step(double dt) {
  const int64_t n_dec = decode_step_ ? n_dec_ : 0;
  const bool decoded = n_dec > 0;
  const int64_t batch = n_dec + static_cast<int64_t>(step_prefills_.size());
  res_.batch_max = std::max(res_.batch_max, batch);
  batch_time_ += static_cast<double>(batch) * dt;
  blocks_time_ += static_cast<double>(blocks_used_) * dt;
  res_.busy_s += dt;
  // A step's tokens reach the client after the engine's output processing, which
  // overlaps the next step (vLLM V1: EngineCore hands outputs to the API server's
  // output processor; docs/calibration.md): modelled as a lag of output_lag_steps x
  // this step's duration on every delivered token. ITL, a difference, does not see it.
  output_lag_s_ = output_lag_steps_ * dt;
  ++res_.steps;
  ++res_.events;
  now_ += dt;
  if (o_.on_step) {
    int64_t prefill_tokens = 0;
    for (int32_t s : step_prefills_) prefill_tokens += R(s).chunk;
    o_.on_step(StepSample{now_, dt, prefill_tokens, n_dec, batch, blocks_used_,
                          static_cast<int64_t>(waiting_.size() + swapped_.size()),
                          n_running_});
  }
  if (decoded) {
    res_.tokens_simulated += n_dec_;
    ++D_;
    ctx_sum_ += n_dec_;
    // Requests whose last token came out of this step leave.
    while (!heap_.empty() && heap_.top().key <= 2 * D_ - 1) {
      const Event ev = heap_.top();
      heap_.pop();
      ++res_.events;
      if (!live(ev)) continue;
      Req& r = R(ev.slot);
      r.generated = r.output;
      finish(ev.slot);
    }
  }
  for (int32_t s : step_prefills_) {
    Req& r = R(s);
    res_.tokens_simulated += r.chunk;
    r.cached += r.chunk;
    r.chunk = 0;
    register_blocks(r);
    if (r.cached < r.prompt + r.generated) continue;  // more chunks to come
    ++r.generated;
    if (!r.has_first_token) {
      r.has_first_token = true;
      r.first_token_s = now_ + output_lag_s_;
      emit(RequestEventKind::first_token, r);
    }
    if (r.generated >= r.output) {
      finish(s);
    } else {
      prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
      join_decoders(s);
    }
  }
  step_prefills_.clear();
}

void Run::check() const {
  // Recounts everything the engine keeps in aggregate.
  int64_t blocks = 0, n_dec = 0, ctx = 0, n = 0;
  for (int32_t s = head_; s >= 0; s = reqs_[static_cast<size_t>(s)].next) {
    const Req& r = reqs_[static_cast<size_t>(s)];
    ++n;
    blocks += r.blocks;
    int64_t held = r.cached;
    if (r.state == State::decoding) {
      ++n_dec;
      ctx += r.x0 + D_;
      held = r.x0 + D_ - 1;
      const int64_t generated = r.x0 + D_ - r.prompt;
      if (generated < 1 || generated >= r.output)
        throw std::logic_error("simulator: decoder context outside its request");
    } else if (r.state != State::prefilling) {
      throw std::logic_error("simulator: a running request is neither prefilling nor decoding");
    }
    // The planner's count at the token count rounded up to whole blocks (sim.h).
    const int64_t charged = r.reserved ? r.prompt + r.output - 1 : held;
    const int64_t rounded = e_.block_index(charged) * e_.block_size;
    const int64_t want = kv_blocks_per_request(*e_.model, e_.opts, rounded);
    if (r.blocks != want) throw std::logic_error("simulator: request holds the wrong block count");
    if (r.state == State::prefilling && r.cached >= r.prompt + r.generated)
      throw std::logic_error("simulator: prefill already complete");
  }
  if (n != n_running_ || n_dec != n_dec_ || ctx != ctx_sum_ || blocks + held_blocks_ != blocks_used_)
    throw std::logic_error("simulator: aggregate bookkeeping disagrees with a recount");
  if (blocks_used_ > num_blocks_ || blocks_used_ < 0)
    throw std::logic_error("simulator: blocks in use outside [0, pool]");
  if (n_running_ > max_seqs_) throw std::logic_error("simulator: more than max_num_seqs running");
}

double Run::compose_step() {
  preempted_this_step_ = false;
  decode_step_ = false;
  swap_s_ = 0;
  switch (o_.scheduler) {
    case Scheduler::continuous: compose_continuous(); break;
    case Scheduler::chunked: compose_chunked(); break;
    case Scheduler::static_batch: compose_static(); break;
  }
  const int64_t n_dec = decode_step_ ? n_dec_ : 0;
  if (step_prefills_.empty() && n_dec == 0) return 0;
  const StepTimeModel& stm = *e_.stm;
  int64_t prefill_tokens = 0;
  double pairs = 0;
  const KvTraffic& kv = stm.kv_traffic();
  for (int32_t s : step_prefills_) {
    const Req& r = R(s);
    pairs += kv.prefill_pairs(r.cached, r.chunk);
    prefill_tokens += r.chunk;
  }
  const double dt = stm.step(prefill_tokens, pairs, n_dec, decode_step_ ? decode_keys(kv) : 0,
                             static_cast<int64_t>(step_prefills_.size())).time_s +
                    swap_s_;
  if (!(dt > 0) || !std::isfinite(dt))
    throw std::logic_error("simulator: step time is not a positive number");
  return dt;
}

double Run::schedule_at(double t) {
  // Every routed request arrived at or before t (the fleet routes in time order).
  now_ = std::max(now_, t);
  for (const detail::GeneratedRequest& g : inbox_) arrive(g);
  inbox_.clear();
  if (o_.check_invariants) check();
  return idle() ? 0 : compose_step();
}

int64_t Run::cached_prefix_blocks(const detail::GeneratedRequest& g) const {
  if (!caching_ || (g.prompt_key == 0 && g.group_key == 0)) return 0;
  Req r;
  r.prompt = std::max<int64_t>(g.prompt_tokens, 1);
  r.group_key = g.group_key;
  r.prompt_key = g.prompt_key;
  r.shared_tokens = g.shared_tokens;
  // As lookup(): the full blocks of the first P - 1 tokens can hit.
  return cache_.hits(r, (r.prompt - 1) / e_.block_size, e_.block_size);
}

SimResult Run::go() {
  const auto wall0 = std::chrono::steady_clock::now();
  std::optional<detail::GeneratedRequest> next = stream_.next();
  for (;;) {
    while (next && next->arrival_s <= now_) {
      arrive(*next);
      next = stream_.next();
    }
    if (o_.check_invariants) check();
    if (idle()) {
      if (!next) break;
      now_ = next->arrival_s;
      continue;
    }
    const double dt = compose_step();
    if (!(dt > 0)) {
      // Nothing can run until something arrives (cannot happen with an idle engine:
      // every request that was not rejected fits the empty pool).
      if (!next) throw std::logic_error("simulator: stalled with requests waiting");
      now_ = std::max(now_, next->arrival_s);
      continue;
    }
    after_step(dt);
  }
  if (o_.check_invariants && blocks_used_ != 0)
    throw std::logic_error("simulator: blocks still in use at the end");
  return finalize(wall0);
}

bool Run::try_step() {
  const double dt = compose_step();
  if (!(dt > 0)) return false;
  after_step(dt);
  return true;
}

SimResult Run::finalize(std::chrono::steady_clock::time_point wall0) {
  SimResult r = summarize(*this, w_.slo, num_blocks_, e_.block_size);
  r.num_blocks = num_blocks_ / e_.opts.dp;  // per GPU (utilizations are over the pooled ranks)
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.tokens_per_wall_s = r.wall_s > 0 ? static_cast<double>(r.tokens_simulated) / r.wall_s : 0;
  return r;
}

}  // namespace

SimResult Simulator::run(const Workload& w, const SimOptions& opt) const {
  Run run(*impl_, *this, w, opt);
  return run.go();
}

// ------------------------------------------------------------------------- one replica of a fleet

struct detail::Replica::Impl {
  Impl(const Simulator& s, const Workload& w, const SimOptions& o) : run(*s.impl_, s, w, o) {}
  Run run;
};

detail::Replica::Replica(const Simulator& s, const Workload& w, const SimOptions& o)
    : impl_(std::make_unique<Impl>(s, w, o)) {}
detail::Replica::~Replica() = default;
detail::Replica::Replica(Replica&&) noexcept = default;
void detail::Replica::route(const GeneratedRequest& g) { impl_->run.route(g); }
int64_t detail::Replica::outstanding() const { return impl_->run.outstanding(); }
int64_t detail::Replica::kv_blocks_used() const { return impl_->run.blocks_used(); }
int64_t detail::Replica::kv_pool_blocks() const { return impl_->run.pool_blocks(); }
int64_t detail::Replica::cached_prefix_blocks(const GeneratedRequest& g) const {
  return impl_->run.cached_prefix_blocks(g);
}
double detail::Replica::schedule(double t) { return impl_->run.schedule_at(t); }
double detail::Replica::end_step(double dt) { return impl_->run.end_step(dt); }
bool detail::Replica::has_work() const { return impl_->run.has_work(); }
SimResult detail::Replica::result() const {
  Tally t = impl_->run.tally();
  return impl_->run.summary(t);
}

SimResult detail::Replica::combine(const std::vector<Replica>& replicas) {
  if (replicas.empty()) return {};
  Tally all;
  for (const Replica& r : replicas) all.add(r.impl_->run.tally());
  return replicas.front().impl_->run.summary(all);
}

SimResult simulate(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                   const Workload& w, const SimOptions& opt) {
  return Simulator(m, g, o).run(w, opt);
}

// ------------------------------------------------------------------------- Instance

struct Instance::Impl {
  Impl(const Simulator& s, const Workload& w, const SimOptions& o, int64_t requests, bool hold_finished)
      : opt(o), wall0(std::chrono::steady_clock::now()), run(*s.impl_, s, w, opt, requests, hold_finished) {}
  SimOptions opt;  // before `run`, which keeps a reference to it
  std::chrono::steady_clock::time_point wall0;
  Run run;
};

Instance::Instance(const Simulator& s, const Workload& w, const SimOptions& opt, int64_t requests,
                   bool hold_finished)
    : impl_(std::make_unique<Impl>(s, w, opt, requests, hold_finished)) {}
Instance::~Instance() = default;
Instance::Instance(Instance&&) noexcept = default;
Instance& Instance::operator=(Instance&&) noexcept = default;
void Instance::submit(const detail::GeneratedRequest& g, int64_t preloaded_tokens) {
  impl_->run.submit(g, preloaded_tokens);
}
double Instance::next_step_s() const { return impl_->run.next_step_s(); }
void Instance::step() { impl_->run.step_external(); }
void Instance::release(int64_t request, double time_s) { impl_->run.release(request, time_s); }
SimResult Instance::result() { return impl_->run.result(impl_->wall0); }

// ------------------------------------------------------------------------- max rate

int64_t min_requests_for_percentile(double p) {
  if (!(p > 0 && p < 1)) throw InputError("SLO", "percentile", "a fraction in (0, 1)", std::to_string(p));
  // n - ceil(p n) >= k holds from n = ceil(k / (1 - p)); the small epsilon absorbs the
  // rounding of 10 / 0.01 to 1000.0000000000001.
  auto n = static_cast<int64_t>(std::ceil(static_cast<double>(kTailRequests) / (1 - p) - 1e-9));
  while (n - static_cast<int64_t>(std::ceil(p * static_cast<double>(n) - 1e-9)) < kTailRequests) ++n;
  return n;
}

MaxRate find_max_rate(const Simulator& s, const Workload& w, const SimOptions& opt,
                      const MaxRateOptions& mo) {
  return find_max_rate([&s](const Workload& wl, const SimOptions& o) { return s.run(wl, o); }, w, opt, mo);
}

MaxRate find_max_rate(const RunWorkload& run, const Workload& w, const SimOptions& opt,
                      const MaxRateOptions& mo) {
  if (!w.slo.given())
    throw InputError(w.file.empty() ? "workload" : w.file, "slo",
                     "a TTFT or TPOT target (slo: {ttft_p99_s, tpot_p99_s}): the highest rate is measured against it",
                     "nothing");
  const int64_t per_run = mo.requests > 0 ? mo.requests : opt.requests.value_or(w.requests);
  if (per_run < min_requests_for_percentile(0.99))
    throw InputError("max rate search", "requests per run",
                     "at least " + std::to_string(min_requests_for_percentile(0.99)) +
                         " requests, so that 10 lie above the p99 the SLO is judged on",
                     std::to_string(per_run));
  SimOptions o = opt;
  o.on_step = nullptr;
  o.on_request = nullptr;
  o.check_invariants = false;
  if (mo.requests > 0) o.requests = mo.requests;
  const double base_rate = w.base_rate_per_s();
  MaxRate out;
  std::optional<double> lo, hi;
  SimResult lo_res, last;
  auto trial = [&](double scale) {
    o.rate_scale = scale;
    last = run(w, o);
    ++out.runs;
    const bool ok = last.meets_slo && (w.slo.ttft_p99_s <= 0 ||
                                       last.queue_growth_s <= mo.max_queue_growth * w.slo.ttft_p99_s);
    if (ok) {
      lo = scale;
      lo_res = last;
    } else {
      hi = scale;
    }
    return ok;
  };
  double scale = opt.rate_scale > 0 ? opt.rate_scale : 1.0;
  if (trial(scale)) {
    while (out.runs < mo.max_runs && trial(scale *= 2)) {}
  } else {
    // 2^-30 of the workload's rate: requests arrive alone.
    for (int i = 0; i < 30 && out.runs < mo.max_runs; ++i)
      if (trial(scale /= 2)) break;
  }
  if (!lo) {
    out.at_max = last;
    return out;
  }
  while (hi && out.runs < mo.max_runs && (*hi - *lo) > mo.rel_tolerance * *lo) {
    const double mid = 0.5 * (*lo + *hi);
    trial(mid);
  }
  out.found = true;
  out.rate_scale = *lo;
  out.max_rate_per_s = *lo * base_rate;
  out.at_max = lo_res;
  return out;
}

MaxRateRange max_rate_range(const Simulator& s, const Workload& w, const SimOptions& opt, const MaxRateOptions& mo,
                            const MaxRate& first, int seeds) {
  return max_rate_range([&s](const Workload& wl, const SimOptions& o) { return s.run(wl, o); }, w, opt, mo, first,
                        seeds);
}

MaxRateRange max_rate_range(const RunWorkload& run, const Workload& w, const SimOptions& opt,
                            const MaxRateOptions& mo, const MaxRate& first, int seeds) {
  MaxRateRange r;
  r.seeds = std::max(1, seeds);
  r.min_per_s = r.max_per_s = first.found ? first.max_rate_per_s : 0;
  for (int k = 1; k < r.seeds; ++k) {
    SimOptions o = opt;
    o.seed = opt.seed + static_cast<uint64_t>(k);
    const MaxRate m = find_max_rate(run, w, o, mo);
    const double rate = m.found ? m.max_rate_per_s : 0;
    r.min_per_s = std::min(r.min_per_s, rate);
    r.max_per_s = std::max(r.max_per_s, rate);
  }
  return r;
}

}  // namespace kvplan::sim
