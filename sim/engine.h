// kvplan sim, internal: one engine's state and rules (the class behind EngineInstance).
// sim/engine.cpp holds a request's life (arrival, admission, decoding, preemption,
// finish) and the step's end; sim/compose.cpp the scheduler's rules that compose a step.
//
// Bookkeeping. Let D be the number of decode steps run so far. A decoding request r has
// a fixed context offset c such that its context in decode step D (tokens attended,
// itself included) is c + D; after that step it holds c + D tokens of cache. So the
// engine keeps only the decoder count and the sum of their contexts for the next step: a
// decode step adds the count to the sum. Each request has at most two pending events in
// a min-heap keyed by (2 D + phase, sequence): phase 0 "needs a new block before step
// D", phase 1 "produced its last token in step D". Preempted and finished requests bump
// an epoch; their stale events are skipped when popped.
//
// Token accounting (as vLLM counts it): a prefill of n tokens (prompt + tokens generated
// before a recompute) leaves n tokens cached and samples one token; each decode step
// caches one more token and samples one. A request of P prompt and O output tokens thus
// needs one prefill and O - 1 decode steps, and ends holding P + O - 1 tokens.
//
// Speculative decoding (ServingOptions::spec, docs/speculative.md "Simulator"): a decode
// step verifies 1 + k tokens per decoder and yields 1 + a of them, a the accepted drafts,
// so contexts no longer grow in lock step. The draws are a pure function of (seed,
// request, decode step) (spec_gain), so a decoder's future can be drawn ahead: from its
// horizon it walks forward to its next event (a block it will need, or its last token),
// adding each step's tokens to the context sum due at that step (spec_ahead_). It keeps
// (spec_step, spec_gen), the tokens it had generated before decode step spec_step (an
// anchor at or before the current step, advanced on demand), and its horizon
// (spec_horizon, spec_horizon_gen), the step of its pending event.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <list>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/block_pool.h"
#include "sim/prefix_cache.h"
#include "planner/speculative.h"
#include "sim/sim.h"

namespace kvplan::sim {

struct Simulator::Impl {
  std::shared_ptr<const ModelConfig> model;  // StepTimeModel keeps a pointer into it
  ServingOptions opts;
  std::unique_ptr<StepTimeModel> step_model;
  int64_t num_blocks = 0;
  int64_t max_model_len = 0;
  double block_bytes_per_gpu = 0;
  std::string where;      // "model on gpu", for messages
  std::string pool_note;  // why the pool is empty, if it is
  std::unique_ptr<BlockTable> blocks;
  EngineBatchDefaults defaults;  // the engine release's batching (planner)
  StreamDelivery stream;         // when its API server sends a streamed request's tokens (planner)
  // Speculative decoding: the step model of a draft + verify step, the slots a decoder
  // holds beyond its context while a step runs (spec_slots_per_step), and the
  // probabilities that at least i drafts are accepted, i = 1..k, as thresholds on a
  // 53-bit uniform draw (at least i kept when the draw is below the i-th).
  std::unique_ptr<SpecTimeModel> spec_model;
  int64_t spec_slots = 0;
  std::vector<uint64_t> spec_at_least_draw;
  //! EngineLimits for scheduler `s` (resolved when automatic) and a pool of `pool_blocks`.
  EngineLimits limits(Scheduler s, int64_t pool_blocks) const;
  //! `s`, or the engine's own scheduler when it is automatic.
  Scheduler resolve(Scheduler s) const;
};

enum class RequestState : uint8_t { free, waiting, prefilling, decoding, swapped };

//! A request inside the engine, in a reusable slot.
struct EngineRequest {
  int64_t id = 0;
  double arrival_s = 0;    // the client sent it
  double seen_s = 0;       // the API server handed it to the engine
  int64_t prompt = 0;
  int64_t output = 0;      // after the max_model_len cap
  int64_t generated = 0;   // output tokens produced
  int64_t cached = 0;      // prefilling: tokens cached so far (decoding: context_offset + D - 1)
  int64_t blocks = 0;      // KV blocks held on the GPU
  int64_t context_offset = 0;  // decoding: context in decode step D is context_offset + D
  int64_t chunk = 0;       // tokens of its prefill chunk in the step being composed
  int64_t preloaded = 0;   // prompt tokens whose KV arrived from another instance
  PromptContent content;   // for the prefix cache
  int64_t cache_blocks = 0;  // leading prompt blocks it holds a reference on in the cache
  int64_t host_hit_blocks = 0;  // of its lookup's hit, the blocks from the host tier (disk and store included)
  int64_t disk_hit_blocks = 0;  // of those, the blocks found on the disk tier only
  int64_t remote_hit_blocks = 0;  // of those, the blocks found in the remote store only
  int64_t host_stored = 0;      // leading blocks written to the host tier or found there
  double first_token_s = 0;
  double chunk_s = 0;      // stream interval > 1: when its last streamed chunk reached the client
  double scheduled_s = 0;
  uint32_t epoch = 0;
  bool has_first_token = false;
  bool was_scheduled = false;
  bool reserved = false;   // static batching: blocks for the full length held from the start
  bool lora_waited = false;  // it waited at admission for a LoRA slot (counted once)
  int32_t adapter = -1;    // LoRA adapter (GeneratedRequest::adapter); -1: the base model
  int32_t stream_phase = -1;  // stream interval > 1, decoding: its list in stream_phase_ (-1: none)
  int32_t stream_pos = 0;     // and its place in that list
  int64_t spec_step = 0;   // speculative decoder: it had generated spec_gen tokens before decode step spec_step
  int64_t spec_gen = 0;
  int64_t spec_horizon = 0;      // its pending event's step, drawn up to
  int64_t spec_horizon_gen = 0;  // tokens generated before that step
  uint64_t spec_key = 0;         // its draws' stream (spec_gain)
  RequestState state = RequestState::free;
  int32_t prev = -1, next = -1;  // running list, oldest admission first
};

//! A request's pending decode event.
struct DecodeEvent {
  int64_t key;   // 2 * decode step + phase (0: grow before the step, 1: finish after it)
  uint64_t seq;  // insertion order: the tie-break of the documented order
  int32_t slot;
  uint32_t epoch;
  bool operator>(const DecodeEvent& e) const { return key != e.key ? key > e.key : seq > e.seq; }
};

class Engine {
 public:
  Engine(const Simulator::Impl& sim, const Workload& w, const SimOptions& opt, int64_t requests, bool hold_finished);

  // ---- the drive interface (EngineInstance; inline for the lone run's loop)
  void submit(const GeneratedRequest& g, int64_t preloaded) {
    // The API server takes the requests one after the other (SimOptions::api_server_queue):
    // the engine sees this one when the server has served it.
    double seen_s = g.arrival_s;
    if (api_queue_) api_free_s_ = seen_s = std::max(g.arrival_s, api_free_s_) + request_overhead_s_;
    // An engine with nothing to do waits for this request: its next scheduling point is
    // when it sees the request.
    if (!step_running_ && (stalled_ || (idle() && inbox_.empty())) && now_ < seen_s) now_ = seen_s;
    stalled_ = false;
    inbox_.push_back(Inbound{g, preloaded, seen_s});
    ++submitted_;
  }
  double next_step_s() const {
    if (step_running_) return now_ + step_s_;
    if (stalled_ || (idle() && inbox_.empty())) return std::numeric_limits<double>::infinity();
    // Idle with every submitted request still at the API server: the first one out.
    if (idle()) return std::max(now_, inbox_.front().seen_s);
    return now_;
  }
  bool step_running() const { return step_running_; }
  void step() {
    if (step_running_) {
      end_step();
    } else {
      schedule();
    }
  }
  void release(int64_t request, double time_s);
  int64_t outstanding() const { return submitted_ - tally_.counts.completed - tally_.counts.rejected; }
  int64_t blocks_used() const { return pool_.used(); }
  int64_t pool_blocks() const { return pool_.total(); }
  int64_t cached_prefix_blocks(const GeneratedRequest& g) const;
  const std::shared_ptr<HostTier>& remote_store() const { return remote_; }
  bool has_work() const { return !idle() || !inbox_.empty() || step_running_; }
  const RunTally& tally() const { return tally_; }
  SimResult summary(RunTally& t) const;
  SimResult result();

 private:
  static SimOptions with_scheduler(const Simulator::Impl& sim, SimOptions opt);
  bool idle() const { return n_running_ == 0 && waiting_.empty() && swapped_.empty(); }
  //! The scheduling point at now_: lets the inbox in, composes the step and starts it.
  void schedule();
  //! Lets in the submitted requests that arrived by `cutoff_s`, in submission order.
  void let_in(double cutoff_s);
  //! Composes the step at now_ and returns its duration, or 0 when nothing can run.
  //! `back_to_back`: async scheduling prepared it while the previous step ran, so its
  //! host work overlaps its GPU work (StepTime::host_s, planner/roofline.cpp).
  double compose_step(bool back_to_back);
  //! The end of the running step (now_ + its duration).
  void end_step();
  void free_held(int64_t request);

  // ---- request slots
  int32_t alloc_slot();
  EngineRequest& at(int32_t slot) { return requests_[static_cast<size_t>(slot)]; }
  const EngineRequest& at(int32_t slot) const { return requests_[static_cast<size_t>(slot)]; }

  // ---- running list (admission order; the tail is the newest, the preemption victim)
  void push_running(int32_t slot);
  void unlink_running(int32_t slot);

  void emit(RequestEventKind k, const EngineRequest& r, std::optional<double> time_s = {}) const;
  void push_event(int64_t key, int32_t slot) { heap_.push(DecodeEvent{key, seq_++, slot, at(slot).epoch}); }
  bool live(const DecodeEvent& ev) const {
    const EngineRequest& r = at(ev.slot);
    return r.epoch == ev.epoch && r.state == RequestState::decoding;
  }

  // ---- blocks
  void take_blocks(EngineRequest& r, int64_t n) {
    r.blocks += n;
    pool_.take(n);
    if (pool_.used() > tally_.peak_blocks) tally_.peak_blocks = pool_.used();
    if (caching_) cache_.trim(pool_.free());
  }
  void free_blocks(EngineRequest& r);
  //! Prefix-cache hit for a request about to be admitted: sets r.cached to the tokens of
  //! its cached leading blocks (vLLM recomputes at least the last prompt token, so a hit
  //! covers at most the full blocks of the first P - 1 tokens) and returns them.
  int64_t lookup(EngineRequest& r);
  //! References the hit blocks of an admitted request (lookup() set r.cached).
  void ref_hits(EngineRequest& r);
  //! Registers the prompt blocks a prefill chunk completed (and writes them through to
  //! the host tier).
  void register_blocks(EngineRequest& r);
  //! Writes blocks [r.host_stored, full) of the request's tokens to the host tier.
  void store_to_host(EngineRequest& r, int64_t full);
  //! Adds this engine's writes to the shared store, and the evictions they caused, since
  //! the counts given.
  void count_remote_writes(int64_t stored_before, int64_t evicted_before);
  //! Queues the blocks demoted to the disk since the last call on the drive's time.
  void charge_disk_writes();

  // ---- a request's life
  void arrive(const GeneratedRequest& g, int64_t preloaded, double seen_s);
  //! Whether a request can never run here (vLLM's refusals at arrival); caps its output
  //! at max_model_len.
  bool refuse(EngineRequest& r);
  //! TensorRT-LLM without chunked context: the prompt exceeds max_num_tokens.
  bool prompt_over_token_budget(const EngineRequest& r) const;
  void admit(int32_t slot, int64_t chunk);
  //! Makes `slot` a decoder whose next step attends to P + g tokens. It holds the blocks
  //! of P + g - 1 tokens, or of P + g when `covers_next` (swapped in after the block phase).
  void join_decoders(int32_t slot, bool covers_next = false);
  void preempt(int32_t slot);
  void finish(int32_t slot);
  //! Allocates n blocks to `slot`, preempting the newest running requests while the pool
  //! is short; false when `slot` itself was preempted.
  bool allocate(int32_t slot, int64_t n) {
    while (pool_.free() < n) {
      const int32_t victim = tail_;
      preempt(victim);
      if (victim == slot) return false;
    }
    take_blocks(at(slot), n);
    return true;
  }

  // ---- the scheduler's rules (sim/compose.cpp)
  void grow_decoders();
  void compose_continuous();
  void swap_in();
  void compose_chunked();
  void compose_static();
  void compose_sglang();
  //! SGLang's get_new_batch_prefill with its PrefillAdder: fills step_prefills_.
  void sglang_prefill();
  //! SGLang's decode memory check (ScheduleBatch.check_decode_mem) and, when the blocks
  //! due this step do not fit, retract_decode; then the decoders' blocks as grow_decoders.
  //! Returns whether it retracted.
  bool sglang_grow_decoders();
  void sglang_retract(int32_t slot);
  void compose_trtllm();
  //! TensorRT-LLM's batch waiting: whether this step's contexts are held back (and the
  //! step decodes only); counts the held iterations.
  bool trtllm_batch_wait(int64_t left);
  //! The contexts the step takes within `left` tokens (chunks in progress, then new ones
  //! in arrival order): admits them when `commit`, else only counts. Returns their tokens.
  //! The count takes no blocks, so it leaves out what taking them can do: MAX_UTILIZATION
  //! pausing a request for a chunk's blocks, the prefix cache giving up blocks it holds.
  int64_t trtllm_contexts(int64_t left, bool commit);
  double decode_keys(const KvTraffic& kv) const;
  //! The step's time with speculation (SpecTimeModel::step over the composed step).
  double spec_step_s(int64_t prefill_tokens, double pairs, double context, const LoraStepLoad* lora);

  // ---- speculative decoding (Impl::spec_model set)
  bool spec() const { return spec_k_ > 0; }
  //! Tokens decode step `step` yields request `r` when it had generated `generated` before it.
  int64_t spec_gain(const EngineRequest& r, int64_t step, int64_t generated) const;
  //! Tokens `r` had generated before the current decode step (advances its anchor).
  int64_t spec_generated(EngineRequest& r);
  //! The KV blocks a speculative decoder needs for a step with `generated` tokens before it.
  int64_t spec_blocks(const EngineRequest& r, int64_t generated) const;
  //! Draws `slot`'s steps from its horizon to its next event (the first step whose slots
  //! need more blocks than it holds, or its last step), adding their tokens to
  //! spec_ahead_, and pushes that event.
  void spec_walk(int32_t slot);
  int64_t& spec_ahead(int64_t step);  //!< the tokens decode step `step` adds to the context sum
  void spec_join(int32_t slot);
  //! A speculative decoder leaves before its last step: its future gains leave the sums.
  void spec_leave(EngineRequest& r);

  // ---- LoRA adapters (docs/lora.md "Simulator"), when requests carry them
  //! vLLM's max_loras rule at admission: a request on an adapter no running request uses
  //! waits while max_loras adapters are running (vllm/v1/core/sched/scheduler.py).
  bool lora_blocked(EngineRequest& r);
  //! A request on adapter `a` starts or stops running: the distinct count, and the load
  //! of `a` into a GPU slot (from the host cache, or past it) when it is not in one.
  void lora_enter(int32_t a);
  void lora_leave(int32_t a);
  //! The step's LoRA work for StepTimeModel::step.
  LoraStepLoad lora_load() const;
  //! Puts the requests an admission loop passed over back at the head of `queue`, in order.
  void unskip(std::deque<int32_t>& queue);
  void check() const;

  // ---- the step's end
  void account_step(double dt);
  //! Queues the step's outputs (decoders: its decoding sequences) at the API server's
  //! output processor and sets delivered_s_: with a stream interval above 1 only the
  //! chunks the engine's rule sends (StreamDelivery), whose gaps go to on_chunk.
  void deliver_outputs(int64_t decoders);
  //! Stream interval > 1: decoders in stream_phase_[p] send a chunk after the decode step
  //! that makes decode_steps_ == D when p == (-D) mod N (their token count g then has
  //! g - offset a multiple of N).
  size_t stream_phase_due() const;
  void stream_join(int32_t slot);
  void stream_leave(EngineRequest& r);
  //! A chunk of r reached the client at delivered_s_.
  void stream_chunk(EngineRequest& r);
  void retire_decoders();
  void advance_prefills();

  const Simulator::Impl& sim_;
  const BlockTable& table_;
  const Workload& workload_;
  SimOptions opt_;  // its scheduler resolved (never automatic)
  EngineLimits limits_;
  std::chrono::steady_clock::time_point wall0_;
  RunTally tally_;
  // A finished request keeps its blocks until release() (a prefill instance's KV until
  // the decode side has read it).
  bool hold_finished_ = false;
  std::unordered_map<int64_t, int32_t> held_;  // request id -> slot
  int64_t held_blocks_ = 0;
  std::vector<int64_t> releases_;  // released during the running step: freed at its end
  int64_t request_count_;
  struct Inbound {
    GeneratedRequest request;
    int64_t preloaded;
    double seen_s;  // when the API server hands it to the engine (nondecreasing in the inbox)
  };
  std::vector<Inbound> inbox_;  // submitted, to enter at the next scheduling point
  int64_t submitted_ = 0;
  BlockPool pool_;
  int64_t max_seqs_, token_budget_;
  bool caching_;
  int64_t watermark_blocks_;  // continuous (V0) admission reserve
  double request_overhead_s_;
  double output_overhead_s_, output_overhead_per_seq_s_;
  bool api_queue_;
  double api_free_s_ = 0;     // when the API server has handed over the last request it took
  double output_free_s_ = 0;  // when the output processor has delivered the last step it took
  bool async_scheduling_;
  double step_start_s_ = -1, step_end_s_ = -1;  // of the last step that ran
  double delivered_s_ = 0;    // when the tokens of the step that just ended reach the client
  StreamDelivery stream_;     // the engine's streaming rule (Impl::stream)
  std::vector<std::vector<int32_t>> stream_phase_;  // interval > 1: decoders by the step they next send at
  std::vector<int32_t> finishing_;  // decoders whose last token came out of the step that just ended
  PrefixCache cache_;
  std::optional<HostTier> host_;  // --kv-offloading-size
  double host_block_load_s_ = 0;  // one block's bytes per GPU over the host link
  double disk_block_load_s_ = 0;  // one block's bytes per GPU read from the disk
  double disk_block_write_s_ = 0;  // the drive time one demoted block takes to write
  double disk_latency_s_ = 0;      // one read's latency
  double disk_write_until_s_ = 0;  // when the drive is done with the demotions queued on it
  int64_t disk_written_ = 0;       // the disk's writes charged so far
  std::shared_ptr<HostTier> remote_;  // --kv-remote-size: shared with the fleet's other replicas
  double remote_block_load_s_ = 0;  // one block's bytes per GPU over the network to the store
  double remote_latency_s_ = 0;     // one fetch's latency

  std::vector<EngineRequest> requests_;
  std::vector<int32_t> free_slots_;
  std::deque<int32_t> waiting_;
  std::deque<int32_t> swapped_;
  std::vector<int32_t> prefilling_;     // running requests in prefill, admission order
  std::vector<int32_t> step_prefills_;  // chunks of the step being composed
  std::priority_queue<DecodeEvent, std::vector<DecodeEvent>, std::greater<>> heap_;
  uint64_t seq_ = 0;
  int32_t head_ = -1, tail_ = -1;
  int64_t n_running_ = 0;

  double now_ = 0;
  int64_t decode_steps_ = 0;  // decode steps run
  int64_t n_decoders_ = 0;    // decoding requests
  int64_t context_sum_ = 0;   // sum of their contexts in decode step decode_steps_
  // SGLang (compose_sglang): the new-token ratio, its floor and per-step decay
  // (Scheduler.__init__), whether the running batch is full (batch_is_full) and the
  // requests that had left (finished or retracted) when it was last cleared.
  double new_token_ratio_ = 0, init_new_token_ratio_ = 0, min_new_token_ratio_ = 0, new_token_ratio_decay_ = 0;
  bool sglang_batch_full_ = false;
  int64_t sglang_left_seen_ = 0;
  std::vector<DecodeEvent> due_;  // block events of this decode step (sglang_grow_decoders)
  bool preempted_this_step_ = false;
  //! TensorRT-LLM's PyExecutor.batch_wait_iters_count: the iterations in a row whose
  //! contexts batch waiting held back (one counter per executor, not per request).
  int64_t batch_wait_iters_ = 0;
  bool decode_step_ = false;  // whether the running decoders take part in this step
  bool stalled_ = false;      // nothing could run at the last scheduling point
  bool step_running_ = false;
  double step_s_ = 0;         // the running step's duration
  double swap_s_ = 0;         // host-link traffic of the step being composed (swaps, tier loads)

  int64_t spec_k_ = 0;                 // draft tokens per step; 0: no speculation
  uint64_t spec_seed_ = 0;
  // A ring: spec_ahead_[(spec_head_ + i) & (size - 1)] is what decode step decode_steps_ + i
  // adds to the decoders' contexts (a power-of-two size, grown as horizons need).
  std::vector<int64_t> spec_ahead_ = std::vector<int64_t>(64, 0);
  size_t spec_head_ = 0;

  bool lora_tracked_ = false;          // --enable-lora and requests on adapters
  int64_t max_loras_ = 0, max_cpu_loras_ = 0;
  double lora_slot_load_s_ = 0;        // one slot's bytes per GPU over the host link
  std::vector<int32_t> adapter_running_;   // running requests per adapter
  int64_t adapters_running_ = 0;           // adapters with a running request
  int64_t adapter_decoders_ = 0;           // decoders on an adapter
  std::vector<int32_t> gpu_slot_;          // adapter -> its GPU slot, -1 when in none
  std::vector<int32_t> slot_adapter_;      // GPU slot -> its adapter, -1 when empty
  std::vector<uint64_t> slot_last_used_;   // GPU slot -> when its adapter last stopped running
  uint64_t lora_clock_ = 0;                // orders those uses
  std::list<int32_t> host_lru_;            // the host cache, most recently used first
  std::vector<std::list<int32_t>::iterator> host_at_;  // adapter -> its entry (end(): absent)
  std::vector<int32_t> lora_skipped_;      // requests the admission loop passed over
  double lora_load_step_s_ = 0;            // adapter loads of the step being composed
};

}  // namespace kvplan::sim
