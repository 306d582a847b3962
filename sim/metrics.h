// kvplan sim: what a run measured, and the one home of how it is judged: nearest-rank
// percentiles, the p99 SLO verdict (a rejected request counts as infinitely late), and
// the tally of raw figures an engine, a fleet of engines or a disaggregated pair adds up
// and summarizes once (so percentiles are over every request, not averages of
// percentiles).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "planner/quantile.h"
#include "planner/workload.h"

namespace kvplan::sim {

//! Nearest-rank percentiles (the smallest value with at least p of the values at or
//! below it) and the mean; all 0 when there are no values.
struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

using kvplan::nearest_rank;  // planner/quantile.h

//! p50, p90, p99 and the mean of `v` (reordered).
Percentiles percentiles(std::vector<double>& v);

//! The p99 of `v` with `failed` more requests that never got a token, counted as
//! infinitely late (0 when there are none at all).
double p99_with_failures(const std::vector<double>& v, int64_t failed);

//! Whether one finished request met both targets (a target of 0 is no target; a
//! request of one output token has no TPOT).
bool request_meets_slo(const Slo& slo, double ttft_s, int64_t output_tokens, double tpot_s);

//! The run's verdict: some request completed, the SLO gives a target, and the p99 TTFT
//! and p99 TPOT over the completed requests plus the `rejected` ones (infinitely late)
//! are within it. More than 1 % rejected misses any p99.
bool meets_slo(const Slo& slo, const std::vector<double>& ttft_s, const std::vector<double>& tpot_s,
               int64_t completed, int64_t rejected);

//! Fewest requests a run needs for its p-quantile (p = 0.99 for a p99 SLO) to be an
//! estimate rather than one of the few slowest requests: at least kTailRequests of them
//! must lie above the nearest-rank quantile, n - ceil(p n) >= 10, i.e. n >= 10 / (1 - p):
//! 1,000 requests for p99. With fewer, the verdict rests on a handful of requests (the
//! count above the quantile has a relative standard error of 1/sqrt(10) = 32 % at 10).
constexpr int64_t kTailRequests = 10;
int64_t min_requests_for_percentile(double p);

struct SimResult {
  // requests
  int64_t arrived = 0;
  int64_t completed = 0;
  int64_t rejected = 0;     // could never run: prompt >= max_model_len, or longer than the pool
  int64_t rejected_max_model_len = 0;  // of which: prompt >= max_model_len (vLLM refuses them), or above
                                      // TensorRT-LLM's max_num_tokens without chunked context
  int64_t rejected_pool = 0;           // of which: prompt + output longer than the whole KV pool
  int64_t preemptions = 0;  // recompute or swap-out events
  int64_t batch_wait_steps = 0;  // TensorRT-LLM batch waiting: steps that held their contexts back
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
  //! Inter-token latency over every delivered token after a request's first (ItlTally);
  //! measured by the benchmark client's runs only (SimOptions::max_concurrency or
  //! all_at_once), all 0 otherwise.
  Percentiles itl_s;
  //! Finished requests left out as warm-up (SimOptions::warmup_requests): in none of the
  //! counts, tokens or latencies; throughput is over the time after the last of them.
  int64_t warmup = 0;
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
  //! LoRA, when requests carry adapters (--enable-lora and a workload `lora` key):
  //! adapters loaded into a GPU slot, of them the ones not in the host cache
  //! (--max-cpu-loras), the loads' time on the steps' critical path, requests that waited
  //! at admission because max_loras other adapters were running, and the mean distinct
  //! adapters per step (time-weighted over busy time).
  struct Lora {
    bool tracked = false;
    int64_t gpu_loads = 0, host_misses = 0, waited_requests = 0;
    double load_s = 0, adapters_mean = 0;
  } lora;
  //! Speculative decoding (ServingOptions::spec): decode steps summed over the sequences
  //! that decoded in them, and the tokens those steps yielded (the realized mean tokens
  //! per step; warm-up included).
  struct Spec {
    int64_t decoder_steps = 0, decoded_tokens = 0;
    double tokens_per_step() const {
      return decoder_steps > 0 ? static_cast<double>(decoded_tokens) / static_cast<double>(decoder_steps) : 0;
    }
  } spec;
  //! The host KV tier (--kv-offloading-size): its size in blocks, prompt tokens loaded
  //! from it (a part of cached_prompt_tokens), the admissions that loaded any and the
  //! loads' time on the steps' critical path, blocks written to it and evicted from it.
  struct HostTier {
    int64_t capacity_blocks = 0, hit_tokens = 0, loads = 0, stored_blocks = 0, evicted_blocks = 0;
    double load_s = 0;
  } host_tier;
  //! The disk tier below it (--kv-disk-size): prompt tokens loaded from it (not in
  //! host_tier.hit_tokens), the admissions that read any and the reads' time on the
  //! critical path (the host link's share is in host_tier.load_s), blocks written to it
  //! (the host tier's evictions not already on the disk) and blocks it evicted.
  //! write_s: the drive's time spent writing demoted blocks; wait_s: the time reads
  //! waited behind those writes (in load_s).
  struct DiskTier {
    int64_t capacity_blocks = 0, hit_tokens = 0, loads = 0, stored_blocks = 0, evicted_blocks = 0;
    double load_s = 0, write_s = 0, wait_s = 0;
  } disk_tier;
  //! The remote store (--kv-remote-size), shared by a fleet's replicas: prompt tokens
  //! loaded from it (in neither tier above), the admissions that fetched any and the
  //! fetches' time on the critical path (latency and network; the host link's share is in
  //! host_tier.load_s), blocks this engine wrote to it and the evictions its writes caused.
  //! capacity_blocks is the store's, not summed over replicas.
  struct RemoteTier {
    int64_t capacity_blocks = 0, hit_tokens = 0, loads = 0, stored_blocks = 0, evicted_blocks = 0;
    double load_s = 0;
  } remote_tier;
  // the simulation itself
  int64_t steps = 0;
  int64_t events = 0;      // arrivals + steps + per-request events processed
  int64_t tokens_simulated = 0;  // prompt (incl. recomputed) + decode tokens computed
  double wall_s = 0;
  double tokens_per_wall_s = 0;
};

//! One finished request's figures, as the driver that saw it computed them.
struct FinishedRequest {
  int64_t index = 0;  //!< generation order (for queue_growth_s's halves)
  int64_t prompt_tokens = 0, output_tokens = 0;
  double finish_s = 0;  //!< end of the step that produced its last token
  double ttft_s = 0, e2e_s = 0, queued_s = 0;
  double tpot_s = 0;  //!< only read when output_tokens > 1
};

//! The raw figures a run's metrics come from.
struct RunTally {
  SimResult counts;  //!< the summed fields (requests, tokens, steps, busy time, ...)
  std::vector<double> ttft_s, tpot_s, e2e_s, queue_s;
  int64_t good = 0;
  double queue_first_half_s = 0, queue_last_quarter_s = 0;
  int64_t n_first_half = 0, n_last_quarter = 0;
  double first_arrival_s = 0, last_finish_s = 0;
  bool any_arrival = false;
  double batch_time = 0, blocks_time = 0;  //!< sums of batch x step time, blocks x step time
  double adapters_time = 0;                //!< sum of distinct LoRA adapters x step time
  int64_t peak_blocks = 0;
  int64_t warmup_left = 0;  //!< finished requests still to leave out (warm-up)
  double warmup_end_s = 0;  //!< when the last warm-up request finished

  void arrival(double arrival_s);
  //! `requests`: how many the run has in all (the halves of queue_growth_s).
  void finish(const FinishedRequest& f, int64_t requests, const Slo& slo);
  //! Adds another tally: counts and times summed, peaks as the larger, the span from
  //! the earliest arrival to the latest finish.
  void add(const RunTally& o);
};

//! Inter-token latencies as vLLM bench pools them (`itls += outputs[i].itl`, one gap per
//! streamed chunk after the first, vllm/benchmarks/serve.py calculate_metrics and
//! lib/endpoint_request_func.py, vllm-project/vllm@009e6d4a), from an engine's steps:
//! kvplan delivers one token per step to every decoding sequence at the step's end, so
//! each of a step's `decode_seqs` sequences contributes one gap ending there. Where every
//! step carries every decoder (chunked, static), a decoder's previous token came from the
//! step before: the gap is the step's duration. Under prefill-first scheduling
//! (continuous, vLLM V0) prefill-only steps stall the decoders: a decoder that decoded in
//! the previous decode step waited since its end; one that joined since then got its first
//! token at the end of its prefill step (a prefill-only step's `batch` whole prompts, the
//! newest joiners first when more prompts ended than sequences decode, as when outputs of
//! one token leave at once). A preempted request's wait is in no gap. Memory: one (gap,
//! count) per decode step.
class ItlTally {
 public:
  explicit ItlTally(bool prefill_first) : prefill_first_(prefill_first) {}
  //! A step that ended at `end_s` after `duration_s`, with `batch` sequences of which
  //! `decode_seqs` decoded.
  void step(double end_s, double duration_s, int64_t decode_seqs, int64_t batch);
  //! One streamed chunk's gap, as the engine measured it (SimOptions::on_chunk): with a
  //! stream interval above 1 a chunk carries several tokens and the gaps come from the
  //! chunks, not from step().
  void gap(double gap_s) { gaps_.emplace_back(gap_s, 1); }
  //! Nearest-rank percentiles and the mean over every gap (each step's weighted by its
  //! sequences); reorders the gaps.
  Percentiles summary();
  //! Another engine's gaps (a fleet's ITL is over every replica's).
  void add(const ItlTally& o) { gaps_.insert(gaps_.end(), o.gaps_.begin(), o.gaps_.end()); }

 private:
  bool prefill_first_;
  std::vector<std::pair<double, int64_t>> gaps_;
  double last_decode_end_s_ = 0;
  //! Prefill-first: (end, prompts) of the prefill steps since the last decode step.
  std::vector<std::pair<double, int64_t>> joined_;
};

//! The metrics of a tally (reorders its latency vectors). `busy_s` and the two
//! time-weighted means are over the summed busy time of everything in the tally.
SimResult summarize(RunTally& t, const Slo& slo, int64_t num_blocks, int64_t block_size);

}  // namespace kvplan::sim
