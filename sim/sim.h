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
//  1. At a scheduling point at time t, every request with arrival_s <= t enters the
//     waiting queue in arrival order (ties: generation order); requests that can never
//     run are rejected there.
//  2. The scheduler composes the step (scheduler-specific, see Scheduler), allocating KV
//     blocks: first the blocks running decoders need (in the order their needs fell due,
//     ties by sequence), preempting the newest running request when the pool is empty,
//     then new admissions in FCFS order.
//  3. The step runs for its step time; every token it produces is stamped with the
//     step's end time; requests that produced their last token leave and free their
//     blocks before the next scheduling point.
//  4. With nothing to run, time jumps to the next arrival.
// Tokens and blocks (as vLLM counts them): a prefill of n tokens caches n tokens and
// samples one output token; each decode step caches one more and samples one; a request
// of P prompt and O output tokens ends holding P + O - 1 tokens. A request holding t
// tokens is charged kv_blocks_per_request(t rounded up to whole blocks) blocks. A
// recompute-preempted request later re-prefills its prompt plus the tokens it produced.
// Generated arrivals start at t = 0 (a trace's first row is shifted to 0).
// Deterministic for a seed: std::mt19937_64 with the project's own distribution code
// (Box-Muller normals, Marsaglia-Tsang gammas), one stream for arrivals and one for
// lengths, so changing the arrival rate keeps every request's lengths.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "planner/planner.h"
#include "planner/types.h"
#include "sim/workload.h"

namespace kvplan::sim {

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
enum class Scheduler { continuous, chunked, static_batch };
std::string_view to_string(Scheduler s);
//! Parses continuous|chunked|static.
std::optional<Scheduler> parse_scheduler(std::string_view s);

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
};

struct SimOptions {
  Scheduler scheduler = Scheduler::continuous;
  Preemption preemption = Preemption::recompute;
  uint64_t seed = 0;
  std::optional<int64_t> requests;   //!< overrides the workload's request count
  double rate_scale = 1.0;           //!< multiplies the arrival rate (trace: time / k)
  std::optional<int64_t> num_blocks; //!< overrides the planner's pool size (what-ifs, tests)
  //! Host link for swapping (PCIe 4.0 x16 ~ 25 GB/s achieved; Gen5 ~ 50 GB/s).
  double host_link_bytes_per_s = 25e9;
  //! Recounts blocks and contexts from every running request after each step and
  //! throws std::logic_error on a mismatch: O(batch) per step, for tests.
  bool check_invariants = false;
  std::function<void(const StepSample&)> on_step;       //!< called after each step
  std::function<void(const RequestEvent&)> on_request;  //!< called at each request event
};

//! Nearest-rank percentiles (the smallest value with at least p of the values at or
//! below it) and the mean; all 0 when there are no values.
struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

struct SimResult {
  // requests
  int64_t arrived = 0;
  int64_t completed = 0;
  int64_t rejected = 0;     // could never run: prompt >= max_model_len, or longer than the pool
  int64_t rejected_max_model_len = 0;  // of which: prompt >= max_model_len (vLLM refuses them)
  int64_t rejected_pool = 0;           // of which: prompt + output longer than the whole KV pool
  int64_t preemptions = 0;  // recompute or swap-out events
  int64_t truncated = 0;    // outputs cut at max_model_len (as vLLM stops them)
  // throughput over [first arrival, last completion]
  double duration_s = 0;
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  double prompt_tokens_per_s = 0;
  int64_t output_tokens = 0;  // produced by completed requests
  int64_t prompt_tokens = 0;
  //! Prompt tokens served from the prefix cache instead of computed (vLLM's prefix
  //! cache hits), summed over admissions.
  int64_t cached_prompt_tokens = 0;
  // SLO
  Slo slo;
  // A rejected request is a failed request: it counts against attainment and the p99
  // verdict as a request with infinite latency (more than 1 % rejected misses any p99).
  double goodput_requests_per_s = 0;  // completed requests meeting both SLO targets
  double slo_attainment = 0;          // fraction of arrived requests (rejected ones fail) meeting them
  bool meets_slo = false;             // p99 TTFT and p99 TPOT within the SLO, rejected requests included
  // latency (seconds)
  Percentiles ttft_s;   // arrival -> first token
  Percentiles tpot_s;   // (last token - first token) / (output - 1), outputs > 1
  Percentiles e2e_s;    // arrival -> last token
  Percentiles queue_s;  // arrival -> first scheduled
  //! Mean queueing delay of the last quarter of requests (in arrival order) minus that
  //! of the first half: about 0 for an engine that keeps up, growing with the run for
  //! an overloaded one (its queue grows without bound).
  double queue_growth_s = 0;
  // engine state, weighted by step duration over busy time
  double batch_mean = 0;
  int64_t batch_max = 0;
  int64_t num_blocks = 0;  // KV pool, blocks per GPU
  int64_t block_size = 0;  // tokens per block
  int64_t peak_blocks = 0;
  double peak_kv_utilization = 0;
  double mean_kv_utilization = 0;
  double busy_s = 0;       // time with a step running
  // the simulation itself
  int64_t steps = 0;
  int64_t events = 0;      // arrivals + steps + per-request events processed
  int64_t tokens_simulated = 0;  // prompt (incl. recomputed) + decode tokens computed
  double wall_s = 0;
  double tokens_per_wall_s = 0;
};

namespace detail {
class Replica;
}
class Instance;

//! The engine for one (model, GPU, serving options): pool size from memory_budget() and
//! capacity(), blocks per request from kv_blocks_per_request(), step times from
//! StepTimeModel. Built once, run many times (find_max_rate); run() is const and
//! thread-compatible.
class Simulator {
 public:
  //! Throws InputError when the options do not apply to the model (planner validate())
  //! or keep no KV cache (--no-kv-cache).
  Simulator(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  //! Runs the workload to the last request. Throws InputError when the pool is empty
  //! (weights do not fit) or the options are inconsistent (chunked with
  //! max_num_batched_tokens < max_num_seqs).
  SimResult run(const Workload& w, const SimOptions& opt) const;

  int64_t num_blocks() const;       //!< KV pool, blocks per GPU (planner)
  int64_t block_size() const;       //!< tokens per block
  int64_t max_model_len() const;    //!< --max-model-len, else the model's, else 131072
  //! Blocks a request holding `tokens` tokens needs (planner kv_blocks_per_request).
  int64_t blocks_for(int64_t tokens) const;
  //! max_num_batched_tokens for a scheduler: the option, else vLLM's defaults
  //! (continuous: max(max_model_len, 2048); chunked: 8192; static: unlimited).
  int64_t max_num_batched_tokens(Scheduler s) const;
  const StepTimeModel& step_model() const;
  const ServingOptions& options() const;

  struct Impl;  //!< opaque (sim.cpp)

 private:
  friend class detail::Replica;  // a fleet's replicas run this engine (sim/replica.h)
  friend class Instance;
  std::unique_ptr<Impl> impl_;
};

//! One-shot convenience: Simulator(m, g, o).run(w, opt).
SimResult simulate(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                   const Workload& w, const SimOptions& opt);

//! Fewest requests a run needs for its p-quantile (p = 0.99 for a p99 SLO) to be an
//! estimate rather than one of the few slowest requests: at least kTailRequests of them
//! must lie above the nearest-rank quantile, n - ceil(p n) >= 10, i.e. n >= 10 / (1 - p):
//! 1,000 requests for p99. With fewer, the verdict rests on a handful of requests (the
//! count above the quantile has a relative standard error of 1/sqrt(10) = 32 % at 10).
constexpr int64_t kTailRequests = 10;
int64_t min_requests_for_percentile(double p);

//! The simulator cannot model this KV layout: a request's paged footprint shrinks as
//! tokens are appended (a scheme that quantizes its fp16 window in place), which the
//! block allocator cannot return. The one error the sizing search records and skips.
class UnsupportedLayout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MaxRateOptions {
  //! Requests per trial run (the workload's count when larger is not needed; the
  //! sizing search keeps this small). 0 = the workload's (or SimOptions') count. At least
  //! min_requests_for_percentile(0.99); find_max_rate throws InputError below it.
  int64_t requests = 4000;
  double rel_tolerance = 0.02;  //!< stop when (hi - lo) / lo <= this
  //! A run counts as meeting the SLO only if also its queue_growth_s is at most this
  //! fraction of the TTFT target: a short run of an overloaded engine can fit its p99
  //! before the queue has grown enough to show.
  double max_queue_growth = 0.1;
  int max_runs = 40;            //!< hard cap on simulations
};

struct MaxRate {
  bool found = false;         //!< some rate met the SLO (false: not even the lowest tried)
  double max_rate_per_s = 0;  //!< highest arrival rate found to meet the SLO
  double rate_scale = 0;      //!< the same, as a multiple of the workload's rate
  int runs = 0;               //!< simulations run
  SimResult at_max;           //!< the run at max_rate_per_s (or the lowest tried)
};

//! The highest arrival rate (a multiple of the workload's, with its arrival shape and
//! lengths) at which p99 TTFT and p99 TPOT meet w.slo and the queue does not keep
//! growing (MaxRateOptions::max_queue_growth): doubling or halving from the
//! workload's rate to bracket it, then bisection. Same seed at every rate. Observers
//! in `opt` are ignored.
MaxRate find_max_rate(const Simulator& s, const Workload& w, const SimOptions& opt,
                      const MaxRateOptions& mo = {});
//! Any way of running a workload: one engine (Simulator::run) or a fleet (sim/fleet.h).
using RunWorkload = std::function<SimResult(const Workload&, const SimOptions&)>;
//! find_max_rate with `run` in place of one engine's runs (a fleet's max rate is its
//! total arrival rate).
MaxRate find_max_rate(const RunWorkload& run, const Workload& w, const SimOptions& opt,
                      const MaxRateOptions& mo = {});

//! The max rate's range over seeds opt.seed .. opt.seed + seeds - 1 (different requests,
//! same workload): `first` is find_max_rate's answer for opt.seed, the others are found
//! again. Two results within the range are not different.
struct MaxRateRange {
  int seeds = 0;
  double min_per_s = 0, max_per_s = 0;
};
MaxRateRange max_rate_range(const Simulator& s, const Workload& w, const SimOptions& opt, const MaxRateOptions& mo,
                            const MaxRate& first, int seeds);
MaxRateRange max_rate_range(const RunWorkload& run, const Workload& w, const SimOptions& opt,
                            const MaxRateOptions& mo, const MaxRate& first, int seeds);

namespace detail {
//! The project's own random numbers, identical on every standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  double uniform();      //!< [0, 1), 53 bits
  double normal();       //!< standard normal, Box-Muller
  double exponential();  //!< mean 1
  double gamma(double shape);  //!< scale 1, Marsaglia-Tsang (shape < 1 by boosting)

 private:
  std::mt19937_64 mt_;  // fully specified by the standard: same stream everywhere
  bool has_spare_ = false;
  double spare_ = 0;
};

//! A request as generated (before the engine looks at it).
struct GeneratedRequest {
  int64_t index = 0;
  double arrival_s = 0;
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
  //! Prompt content identity for prefix caching (Workload::shared_prefix): the first
  //! `shared_tokens` tokens are group `group_key`'s system prompt, the whole prompt is
  //! content `prompt_key` (identical for equal keys). 0: unique content.
  uint64_t group_key = 0;
  uint64_t prompt_key = 0;
  int64_t shared_tokens = 0;
};

//! Streams a workload's requests in arrival order, lazily.
class RequestStream {
 public:
  RequestStream(const Workload& w, uint64_t seed, double rate_scale, int64_t count);
  //! The next request, or nullopt after `count`.
  std::optional<GeneratedRequest> next();

 private:
  int64_t length(const LengthDist& d, const TraceRow* row, bool prompt);
  double next_gap_s(double rate_per_s);
  const Workload* w_;
  Rng arrivals_, lengths_;
  double rate_scale_;
  int64_t count_, produced_ = 0;
  double t_ = 0;
  size_t stage_ = 0;          // staged arrivals: the current stage
  double stage_end_s_ = 0;    // and when it ends
  std::vector<int64_t> user_question_tokens_;  // shared_prefix: one question per user
};
}  // namespace detail

//! One engine of a Simulator fed request by request and advanced one step at a time, for a
//! driver that interleaves several engines on one clock (sim/disagg.h). Same engine, same
//! step rules as Simulator::run(); a request submitted at time t enters the waiting queue
//! at the engine's next scheduling point at or after t. The driver must submit every
//! request with arrival_s <= next_step_s() before calling step(). Observers in `opt` are
//! called as in run(). `w` (its SLO) must outlive the Instance.
class Instance {
 public:
  //! `requests`: how many the driver will submit in all (for queue_growth_s's halves).
  //! `hold_finished`: a finished request keeps its KV blocks until release().
  Instance(const Simulator& s, const Workload& w, const SimOptions& opt, int64_t requests,
           bool hold_finished = false);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  Instance(Instance&&) noexcept;
  Instance& operator=(Instance&&) noexcept;

  //! Enqueues `g` (index, arrival_s, lengths, prefix keys). `preloaded_tokens` > 0: that
  //! many prompt tokens of KV arrived from another instance (admission charges the blocks
  //! of the whole prompt, computes the rest: at least the last prompt token).
  void submit(const detail::GeneratedRequest& g, int64_t preloaded_tokens = 0);
  //! When the engine next schedules a step; +infinity when it has nothing it can run.
  double next_step_s() const;
  //! Composes and runs the step at next_step_s(); its events go to opt.on_request.
  void step();
  //! Frees the blocks finished request `request` kept (hold_finished) at `time_s`.
  void release(int64_t request, double time_s);
  //! Metrics of everything submitted so far (call once, at the end).
  SimResult result();

  struct Impl;  //!< opaque (sim.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvplan::sim
