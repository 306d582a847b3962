// kvplan sim: a discrete-event simulator of an LLM serving engine (vLLM's scheduling
// semantics by default) on one GPU or one TP x PP group, driven by the planner's memory
// budget (KV blocks) and step-time model.
//
// Time advances one engine iteration ("step") at a time; a step's duration is
// StepTimeModel::step() for the batch as composed. The engine keeps decoding sequences in
// aggregate (count and summed context) and per-request events (finish, next KV block
// boundary) in a priority queue keyed by decode-step index, so a decode step costs
// O(log n) per event due, not O(batch) (a model with sliding-window layers adds one
// pass over the decoders per step: each context is capped at each layer's window). Requests are generated lazily from the workload;
// memory is proportional to requests in flight plus 4 doubles per completed request (for
// exact percentiles).
//
// Event order (the one documented order; ties broken by sequence number):
//  1. At a scheduling point at time t, every request the API server has handed over by
//     t (SimOptions::api_server_queue: one after the other, request_overhead_s each,
//     from arrival_s) enters the waiting queue in arrival order (ties: generation
//     order); requests that can never run are rejected there.
//  2. The scheduler composes the step (scheduler-specific, see Scheduler), allocating KV
//     blocks: first the blocks running decoders need (in the order their needs fell due,
//     ties by sequence), preempting the newest running request when the pool is empty,
//     then new admissions in FCFS order.
//  3. The step runs for its step time; every token it produces is stamped with the
//     step's end time; requests that produced their last token leave and free their
//     blocks before the next scheduling point. The step's tokens reach the client when
//     the API server's output processor has handled them (one queue per engine that
//     overlaps the next step: Calibration::output_overhead_s); latencies are measured
//     to that delivery.
//  4. With nothing to run, time jumps to the next arrival.
// Tokens and blocks (as vLLM counts them): a prefill of n tokens caches n tokens and
// samples one output token; each decode step caches one more and samples one; a request
// of P prompt and O output tokens ends holding P + O - 1 tokens. A request holding t
// tokens is charged kv_blocks_per_request(t rounded up to whole blocks) blocks. A
// recompute-preempted request later re-prefills its prompt plus the tokens it produced.
// Requests come from sim/requests.h (generated lazily, deterministic for a seed); the
// metrics and the SLO verdict from sim/metrics.h. One engine is driven one way
// (EngineInstance: submit, next_step_s, step), by its lone run (Simulator::run) as by
// the cluster drivers (cluster/fleet.h, cluster/disagg.h).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "planner/names.h"
#include "planner/planner.h"
#include "planner/types.h"
#include "planner/workload.h"
#include "sim/metrics.h"
#include "sim/requests.h"

namespace kvplan::sim {

//! The step-composition rules (docs/engines.md "Schedulers" cites each engine's source).
//! `continuous`: vLLM V0 (no chunked prefill): a step is either prefill-only (every
//! waiting request that fits, whole prompts, up to max_num_batched_tokens, prefills
//! first) or decode-only for all running requests. `chunked`: vLLM V1: every running
//! decoder gets one token, the rest of max_num_batched_tokens goes to prefill chunks
//! (running partial prefills first, then new admissions). `static_batch`: when the
//! engine is empty it admits up to max_num_seqs waiting requests, reserving blocks for
//! their full length, prefills them in one step and decodes until the last one ends.
//! Engine rules, with their source: V0 admits a prompt only if int(0.01 x pool) blocks
//! stay free after it (vllm/core/block_manager.py, can_allocate, v0.6) and never admits
//! one that could not leave that reserve in an empty pool; V1 has no reserve
//! (vllm/v1/core/kv_cache_manager.py allocate_slots, v0.15.1). Both preempt, when a
//! running request cannot get its next block, the newest running request (V1 FCFS:
//! `preempted_req = self.running.pop()` in vllm/v1/core/sched/scheduler.py schedule()),
//! free its blocks, reset its computed tokens to 0 (recompute) and put it at the front of
//! the waiting queue; V1 admits new requests only in a step that preempted nothing.
//! `sglang`: SGLang's Scheduler (get_next_batch_to_run): a prefill batch whenever the
//! PrefillAdder admits one, else a decode step of the running batch (both in one step
//! with --enable-mixed-chunk); admission FCFS while rem_total_tokens (free pool minus
//! new_token_ratio x the running requests' remaining outputs minus the admitted ones'
//! prompts and outputs) stays positive, within chunked_prefill_size (the last request
//! chunked) and max_prefill_tokens; a decode step that cannot get its KV retracts the
//! requests with the fewest outputs to the back of the queue. `trtllm`: TensorRT-LLM's
//! in-flight batching: generation requests and whole contexts in one step within
//! max_num_tokens, admitted by the capacity scheduler's policy (TrtllmSchedule).
//! `automatic` ("auto") is a request, not a rule: the scheduler of the engine release
//! (resolve_scheduler), which the engine replaces it by before it runs.
enum class Scheduler { continuous, chunked, static_batch, sglang, trtllm, automatic };
inline constexpr NameTable<Scheduler, 6> kSchedulerNames{{{
    {"continuous", Scheduler::continuous}, {"chunked", Scheduler::chunked}, {"static", Scheduler::static_batch},
    {"sglang", Scheduler::sglang}, {"trtllm", Scheduler::trtllm}, {"auto", Scheduler::automatic},
}}};
std::string_view to_string(Scheduler s);
//! Parses continuous|chunked|static|sglang|trtllm|auto.
std::optional<Scheduler> parse_scheduler(std::string_view s);

//! The scheduler a run uses and why ("auto: vLLM 0.19 (V1) always chunks prefills").
struct SchedulerChoice {
  Scheduler scheduler = Scheduler::continuous;
  std::string why;
};
//! `requested` itself unless it is `automatic`; then the engine release's own scheduler:
//! vLLM V1 (0.8+) chunked; vLLM V0 (0.4-0.7) continuous, or chunked (V0's chunked-prefill
//! scheduler, 512-token budget) where V0 itself turned chunked prefill on
//! (EngineBatchDefaults); SGLang sglang; TensorRT-LLM trtllm; --engine ideal continuous
//! (the engine-neutral model keeps the scheduler it always ran). `m` with the what-ifs
//! of `o` applied.
SchedulerChoice resolve_scheduler(Scheduler requested, const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);

//! SGLang's scheduling settings beside the shared limits (server_args.py defaults).
struct SglangSchedule {
  double schedule_conservativeness = 1.0;  //!< --schedule-conservativeness
  bool enable_mixed_chunk = false;         //!< --enable-mixed-chunk
};
//! TensorRT-LLM's CapacitySchedulerPolicy: GUARANTEED_NO_EVICT admits a request only
//! when the KV of its prompt plus its whole output fits beside what the running ones
//! will still need, so nothing is ever evicted; MAX_UTILIZATION allocates step by step
//! and pauses the newest started request when the pool runs out.
enum class CapacityPolicy { guaranteed_no_evict, max_utilization };
inline constexpr NameTable<CapacityPolicy, 2> kCapacityPolicyNames{{{
    {"GUARANTEED_NO_EVICT", CapacityPolicy::guaranteed_no_evict},
    {"MAX_UTILIZATION", CapacityPolicy::max_utilization},
}}};
//! TensorRT-LLM's batch waiting (LLM API batch_wait_timeout_iters /
//! batch_wait_max_tokens_ratio, NVIDIA/TensorRT-LLM PR #7416, 1.1 on; 0 = off): the
//! contexts a step would start are held back while requests are generating, until the
//! executor has held them back `timeout_iters` iterations in a row or the step's tokens
//! reach `max_tokens_ratio` x max_num_tokens. Either at 0 means it never holds (the code's
//! stop test `count >= 0` or `tokens >= 0` is always true).
struct BatchWait {
  int64_t timeout_iters = 0;    //!< --batch-wait-timeout-iters
  double max_tokens_ratio = 0;  //!< --batch-wait-max-tokens-ratio, in [0, 1]
  bool enabled() const { return timeout_iters > 0 || max_tokens_ratio > 0; }
};
struct TrtllmSchedule {
  CapacityPolicy capacity_policy = CapacityPolicy::guaranteed_no_evict;  //!< --capacity-scheduler-policy
  bool enable_chunked_prefill = false;                                   //!< --enable-chunked-prefill
  BatchWait batch_wait;
};

//! What happens to the newest running request when the pool runs out: `recompute`
//! frees its blocks and re-prefills prompt + generated tokens later (vLLM's default);
//! `swap` copies a decoder's blocks to host memory and back (time = bytes / host link,
//! added to the step), vLLM V0's swap space, unbounded; a request preempted in the middle
//! of a chunked prefill is recomputed either way.
enum class Preemption { recompute, swap };

//! One engine step, for time series (reported after the step ran).
struct StepSample {
  double time_s = 0;           // end of the step
  double duration_s = 0;
  int64_t prefill_tokens = 0;  // prompt tokens computed in the step
  int64_t decode_seqs = 0;
  int64_t batch = 0;           // sequences in the step (prefilling + decoding)
  int64_t kv_blocks_used = 0;  // after the step, before finished requests free theirs
  int64_t waiting = 0;         // queue length (waiting + swapped out)
  int64_t running = 0;         // admitted requests after the step
};

//! A request's life, for tests and tracing. `tokens` is how many output tokens it has
//! produced at that moment.
enum class RequestEventKind { arrived, rejected, scheduled, first_token, preempted, finished };
struct RequestEvent {
  RequestEventKind kind = RequestEventKind::arrived;
  int64_t request = 0;       // index in generation order
  double time_s = 0;
  int64_t tokens = 0;        // output tokens produced so far
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0; // what it will produce (after the max_model_len cap)
  int64_t kv_blocks = 0;     // blocks it holds after the event
  //! first_token, finished: when that token reaches the client, after the API server's
  //! output processing (time_s is the end of the step that produced it).
  double delivered_s = 0;
};

class HostTier;  // sim/prefix_cache.h

struct SimOptions {
  Scheduler scheduler = Scheduler::continuous;
  SglangSchedule sglang;
  TrtllmSchedule trtllm;
  Preemption preemption = Preemption::recompute;
  uint64_t seed = 0;
  std::optional<int64_t> requests;   //!< overrides the workload's request count
  double rate_scale = 1.0;           //!< multiplies the arrival rate (trace: time / k)
  std::optional<int64_t> num_blocks; //!< overrides the planner's pool size (what-ifs, tests)
  //! Host link for swapping (PCIe 4.0 x16 ~ 25 GB/s achieved; Gen5 ~ 50 GB/s).
  double host_link_bytes_per_s = 25e9;
  //! One GPU's share of the NVMe read bandwidth, for the disk KV tier (--disk-gb-per-s):
  //! 6.9 GB/s, a PCIe Gen4 datacenter SSD's sequential read (Samsung PM9A3 datasheet), one
  //! drive per GPU as in a DGX H100 (8 x 3.84 TB NVMe U.2 data drives, its datasheet).
  double disk_bytes_per_s = 6.9e9;
  //! The drive's latency per read (--disk-latency-us), charged once per admission that
  //! reads from the disk: 85 us, Samsung's typical random-read latency (sustained) for
  //! the PM983 (its datasheet, Rev. 1.0), the PM9A3's PCIe Gen3 predecessor; we found no
  //! published figure for the PM9A3 itself.
  double disk_latency_s = 85e-6;
  //! One GPU's share of the NVMe write bandwidth (--disk-write-gb-per-s): 3.5 GB/s, the
  //! PM9A3 U.2's sequential write (Samsung's announcement, heise.de 2020-05). Demotions
  //! are written off the critical path but take the drive's time from the reads.
  double disk_write_bytes_per_s = 3.5e9;
  //! One GPU's share of the network to the remote KV store (--remote-gb-per-s): 23.75 GB/s,
  //! Mooncake's transfer engine measured 190 GB/s over 8 x 400 Gb/s RoCE NICs (its
  //! doc/en/transfer-engine.md; FAST '25 paper), one NIC per GPU as in a DGX H100 (8 x
  //! ConnectX-7), 47.5 % of the 50 GB/s line rate.
  double remote_bytes_per_s = 23.75e9;
  //! The store's latency per fetch (--remote-latency-us): required with a remote tier, as
  //! no public figure for a Mooncake or LMCache get stands for every deployment (NaN: not given).
  double remote_latency_s = std::numeric_limits<double>::quiet_NaN();
  //! The remote store the engine shares with the other replicas of its fleet (set by
  //! cluster::simulate_fleet); null: the engine makes its own.
  std::shared_ptr<HostTier> shared_remote;
  //! Recounts blocks and contexts from every running request after each step and
  //! throws std::logic_error on a mismatch: O(batch) per step, for tests.
  bool check_invariants = false;
  //! The benchmark client in front of the engine (BenchmarkClient, vLLM bench serve's
  //! --max-concurrency and --request-rate inf); neither: open-loop arrivals.
  std::optional<int64_t> max_concurrency;
  bool all_at_once = false;
  //! The first this many finished requests are left out of the metrics (warm-up); they
  //! load the engine as any other.
  int64_t warmup_requests = 0;
  //! The engine's API server is one process (vLLM's AsyncLLM, SGLang's TokenizerManager):
  //! each request's Calibration::request_overhead_s is service time on it, first come
  //! first served, before the engine sees the request, and each step's output processing
  //! runs on the same process. Off: the overhead is a fixed delay added to the latencies
  //! (the disaggregated driver, whose router counts it once per request).
  bool api_server_queue = true;
  std::function<void(const StepSample&)> on_step;       //!< called after each step
  std::function<void(const RequestEvent&)> on_request;  //!< called at each request event
  std::function<void(const FinishedRequest&)> on_finish;  //!< called as each request finishes
  //! With a stream interval above 1 (ServingOptions::stream_interval): called as each
  //! streamed chunk after a request's first reaches the client, with the time since its
  //! previous chunk did (the client's inter-token latency of that chunk; ItlTally::gap).
  std::function<void(double gap_s)> on_chunk;
};

//! The engine's limits for one (model, GPU, serving options, scheduler), per engine
//! (one data-parallel rank): the one home of the defaults the simulator applies and the
//! sizing search's bounds read (size/bound.cpp).
struct EngineLimits {
  int64_t max_model_len = 0;  //!< --max-model-len, else the model's, else kDefaultMaxModelLen
  //! The option, else the engine's default (EngineBatchDefaults): continuous
  //! max(max_model_len, 2048); chunked: vLLM V1's by release and GPU, V0's 512, else 8192;
  //! sglang chunked_prefill_size; trtllm max_num_tokens 8192; static: unlimited.
  int64_t max_num_batched_tokens = 0;
  //! The option, else: sglang max_running_requests = min(pool tokens / 2,
  //! clamp(pool tokens / max_model_len x 512, 2048, 4096)); trtllm max_batch_size 2048;
  //! others ServingOptions::max_num_seqs (with_engine_defaults fills vLLM's).
  int64_t max_num_seqs = 0;
  int64_t num_blocks = 0;        //!< KV pool, blocks per GPU (planner capacity())
  //! V0's admission reserve, int(0.01 x num_blocks) with `continuous` or V0's chunked
  //! scheduler, else 0.
  int64_t watermark_blocks = 0;
  //! sglang: max_prefill_tokens (server_args.py default 16384).
  int64_t max_prefill_tokens = 0;
};
//! The context a model without a declared one gets (vLLM's common 128k).
constexpr int64_t kDefaultMaxModelLen = 131072;
//! EngineLimits of the model as given (ServingOptions' what-ifs applied here); `s`
//! `automatic` is resolved first.
EngineLimits engine_limits(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, Scheduler s);
//! V0's admission watermark for a pool of `pool_blocks` (vllm/core/block_manager.py v0.6:
//! watermark_blocks = int(0.01 x num_gpu_blocks)).
int64_t v0_watermark_blocks(int64_t pool_blocks);

//! The simulator cannot model this KV layout: a request's paged footprint shrinks as
//! tokens are appended (a scheme that quantizes its fp16 window in place), which the
//! block allocator cannot return. The one error the sizing search records and skips.
class UnsupportedLayout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class EngineInstance;

//! The engine for one (model, GPU, serving options): pool size from memory_budget() and
//! capacity(), blocks per request from kv_blocks_per_request(), step times from
//! StepTimeModel. Built once, run many times (the max-rate search); run() is const and
//! thread-compatible.
class Simulator {
 public:
  //! Throws InputError when the options do not apply to the model (planner validate())
  //! or keep no KV cache (--no-kv-cache).
  Simulator(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  //! Runs the workload to the last request, feeding one engine its request stream through
  //! EngineInstance's calls. Throws InputError when the pool is empty (weights do not fit)
  //! or the options are inconsistent (chunked with max_num_batched_tokens < max_num_seqs).
  SimResult run(const Workload& w, const SimOptions& opt) const;

  int64_t num_blocks() const;       //!< KV pool, blocks per GPU (planner)
  int64_t block_size() const;       //!< tokens per block
  int64_t max_model_len() const;    //!< EngineLimits::max_model_len
  //! Blocks a request holding `tokens` tokens needs (planner kv_blocks_per_request).
  int64_t blocks_for(int64_t tokens) const;
  //! `s` resolved (`automatic`: the engine's own); num_blocks: the pool it runs with.
  EngineLimits limits(Scheduler s) const;
  SchedulerChoice scheduler(Scheduler requested) const;
  const StepTimeModel& step_model() const;
  const ServingOptions& options() const;

  struct Impl;  //!< opaque (sim/engine.h)

 private:
  friend class EngineInstance;
  std::unique_ptr<Impl> impl_;
};

class Engine;

//! One engine of a Simulator, driven from outside one event at a time (SimGrid style):
//! the driver submits each request at its arrival time, asks when the engine's next
//! event is (next_step_s) and runs it (step) in time order with its other events. An
//! engine's events alternate: a scheduling point (requests submitted since the last one
//! enter the waiting queue in submission order, requests that can never run are
//! rejected, and the next step is composed, its KV blocks allocated) and that step's end
//! (tokens delivered, finished requests leave and free their blocks). The driver must
//! submit every request with arrival_s <= next_step_s() before calling step(). Observers
//! in `opt` are called as in Simulator::run; `w` (its SLO) must outlive the instance.
class EngineInstance {
 public:
  //! `requests`: how many the driver will submit in all (for queue_growth_s's halves).
  //! `hold_finished`: a finished request keeps its KV blocks until release(). Throws as
  //! Simulator::run does for options the engine refuses.
  EngineInstance(const Simulator& s, const Workload& w, const SimOptions& opt, int64_t requests,
                 bool hold_finished = false);
  ~EngineInstance();
  EngineInstance(const EngineInstance&) = delete;
  EngineInstance& operator=(const EngineInstance&) = delete;
  EngineInstance(EngineInstance&&) noexcept;
  EngineInstance& operator=(EngineInstance&&) noexcept;

  //! Hands `g` to the engine (index, arrival_s, lengths, prefix keys); it enters at the
  //! next scheduling point. `preloaded_tokens` > 0: that many prompt tokens of KV arrived
  //! from another instance (admission charges the blocks of the whole prompt and
  //! computes the rest: at least the last prompt token).
  void submit(const GeneratedRequest& g, int64_t preloaded_tokens = 0);
  //! When the engine's next event is: its running step's end, or its next scheduling
  //! point; +infinity when it has nothing it can run until a submit or a release.
  double next_step_s() const;
  //! Whether next_step_s() is the end of a running step (else a scheduling point).
  bool step_running() const;
  //! Runs the event at next_step_s(); request events go to opt.on_request, a step's
  //! sample to opt.on_step at its end.
  void step();
  //! Frees the blocks finished request `request` kept (hold_finished) at `time_s`; during
  //! a running step they are freed at its end.
  void release(int64_t request, double time_s);

  //! What a router reads: requests submitted and neither finished nor rejected; KV blocks
  //! in use and in the pool; the leading blocks of g's prompt in the prefix cache now (0
  //! with caching off).
  int64_t outstanding() const;
  int64_t kv_blocks_used() const;
  int64_t kv_pool_blocks() const;
  int64_t cached_prefix_blocks(const GeneratedRequest& g) const;
  //! The remote KV store this engine writes to and reads from (null: none), for the
  //! fleet to hand the same store to its other replicas.
  std::shared_ptr<HostTier> remote_store() const;
  //! Requests submitted and not yet finished or rejected, or a step running.
  bool has_work() const;

  //! The raw figures so far, to add up with other engines' (RunTally::add).
  const RunTally& tally() const;
  //! The metrics of `t`, a tally of this engine or of engines like it (wall_s 0).
  SimResult summary(RunTally& t) const;
  //! This engine's metrics at the end of its run: blocks per GPU, wall time since it was
  //! built. With SimOptions::check_invariants, throws std::logic_error if blocks are
  //! still in use.
  SimResult result();

 private:
  std::unique_ptr<Engine> engine_;
};

}  // namespace kvplan::sim
