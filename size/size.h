// kvplan size: the sizing search behind `kvplan size`.
//
// Given models, GPUs and a workload with latency targets, it enumerates deployments
// (GPU x TP x PP x KV dtype/scheme x weight quantization x engine limits x scheduler),
// prunes with the planner the ones that cannot work (each pruned candidate is kept with
// the reason), finds with an evaluator (the simulator by default) the highest arrival
// rate one replica sustains within the SLO, and prices the replicas the workload's rate
// needs. Results come back in a deterministic order whatever the thread count: each
// candidate is evaluated alone, with the same seed (common random numbers: every option
// sees the same requests), and collected by candidate index.
//
// The result types below are plain values; reports/ renders them and calls none of the
// functions that decide (docs/ARCHITECTURE.md's `decides` list, checked by ctest).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/error_bars.h"
#include "planner/planner.h"
#include "planner/types.h"
#include "sim/sim.h"
#include "planner/workload.h"
#include "size/failures.h"
#include "size/over_time.h"
#include "size/tco.h"

namespace kvplan::size {

struct DisaggSearchOptions;  // size/disagg_search.h, which includes this header
struct DisaggSearchResult;

//! A KV-cache storage choice: dtype (empty = the activation dtype, "auto") and scheme.
struct KvOption {
  std::optional<DType> dtype;
  KvQuant quant = KvQuant::raw;
};

//! What the search enumerates. Each base serving option (CLI lists already expanded) is
//! crossed with every override list that is not empty; an empty list keeps the base's
//! value. Order of enumeration: model, GPU, base option, TP, PP, weights, KV, DCP,
//! scheduler.
struct SearchSpace {
  std::vector<ModelConfig> models;
  std::vector<GpuSpec> gpus;
  std::vector<ServingOptions> base{ServingOptions{}};
  std::vector<int64_t> tp;                 //!< e.g. {1, 2, 4, 8}
  //! Also every decode context parallel size the engine runs at each candidate's TP
  //! (dcp_sizes: vLLM's, for MLA models and for GQA models whose TP copies KV heads);
  //! false: the base's --dcp only.
  bool dcp_auto = false;
  std::vector<int64_t> pp;                 //!< e.g. {1}
  std::vector<WeightQuant> weights;        //!< e.g. {none, fp8, awq}
  std::vector<KvOption> kv;                //!< e.g. default_kv_options()
  std::vector<sim::Scheduler> schedulers{sim::Scheduler::automatic};
  //! Also search formats no engine in kvplan's support table runs (planner/support.h);
  //! without it those candidates are left out of the search and counted.
  bool what_if = false;
};

//! 16-bit (auto), fp8, and int4 and int2 in KVQuant's layout (1 % fp16 outliers, first
//! token fp16): the low-bit layouts with a published perplexity near fp16 (docs/references.md).
//! The last two are what-ifs: no engine ships them.
std::vector<KvOption> default_kv_options();
//! none (16-bit), fp8, awq (int4, group 128).
std::vector<WeightQuant> default_weight_options();
//! 1, 2, 4, 8.
std::vector<int64_t> default_tp_options();

//! One deployment to evaluate.
struct Candidate {
  int64_t index = 0;  //!< position in enumeration order
  int64_t model = 0;  //!< index into SearchSpace::models
  int64_t gpu = 0;    //!< index into SearchSpace::gpus
  int64_t base = 0;   //!< index into SearchSpace::base
  ServingOptions options;
  sim::Scheduler scheduler = sim::Scheduler::continuous;
};

//! The workload's request shapes, sampled once from its generator (same seed as the
//! simulations): nearest-rank p99s and means.
struct WorkloadShape {
  int64_t samples = 0;
  int64_t prompt_p99_tokens = 0;
  int64_t context_p99_tokens = 0;  //!< prompt + output
  double prompt_mean_tokens = 0;
  double output_mean_tokens = 0;
  double rate_per_s = 0;           //!< the workload's mean arrival rate
};

//! Which resource stops one replica from taking more load at its max rate.
enum class Binding { none, memory, bandwidth, compute, slo, engine_limit };
inline std::string_view to_string(Binding b) {
  switch (b) {
    case Binding::memory: return "memory";
    case Binding::bandwidth: return "bandwidth";
    case Binding::compute: return "compute";
    case Binding::slo: return "SLO";
    case Binding::engine_limit: return "max-num-seqs";
    case Binding::none: break;
  }
  return "none";
}

//! One point of a replica's load curve (arrival rate -> what it delivered).
struct LoadPoint {
  double arrival_rate_per_s = 0;
  double throughput_requests_per_s = 0;
  double output_tokens_per_s = 0;
  double ttft_p99_s = 0, tpot_p99_s = 0, e2e_p99_s = 0;
  bool meets_slo = false;
  double busy_fraction = 0;  //!< simulated time with a step running / duration; 0 = not simulated (size/tco.h)
};

//! What an evaluator reports for one candidate (one replica).
struct Evaluation {
  bool found = false;             //!< some arrival rate met the SLO
  double max_rate_per_s = 0;      //!< highest sustained arrival rate within the SLO
  Binding binding = Binding::none;
  std::string binding_detail;     //!< the numbers behind `binding`, for a reader
  LoadPoint at_max;               //!< the run at max_rate_per_s
  int64_t preemptions_at_max = 0;
  int64_t rejected_at_max = 0;    //!< requests that could never run (they count as failed)
  int64_t rejected_max_model_len_at_max = 0;  //!< of which: prompt >= max_model_len
  int64_t requests_at_max = 0;    //!< requests in that run
  double kv_peak_utilization_at_max = 0;
  double batch_mean_at_max = 0;
  int runs = 0;                   //!< simulations (or model evaluations) spent
};

//! One row of the answer: a priced deployment, a candidate with its plan, evaluation, replicas and price.
struct Deployment {
  Candidate candidate;
  std::string model, gpu;
  std::optional<std::string> pruned;  //!< why it was not evaluated (impossible or hopeless)
  //! rate_ceiling's bound on max_rate_per_s (simulator only; empty: none computed or
  //! no finite bound for the scheduler).
  std::optional<double> rate_ceiling_per_s;
  Plan plan;                          //!< at the workload's p99 context, batch 1
  bool plan_valid = false;            //!< false when validate() rejected the options
  Evaluation eval;
  bool meets_slo = false;             //!< evaluated and some rate met the SLO
  int64_t replicas = 0;
  int64_t gpus_total = 0;             //!< replicas x TP x PP
  std::optional<double> cost_per_hour_usd;                 //!< empty: GPU has no price
  std::optional<double> cost_per_million_output_tokens_usd;
  std::optional<double> cost_per_million_input_tokens_usd;   //!< prompt tokens (prefill)
  std::optional<double> cost_per_request_usd;
  std::string what_if;                //!< non-empty: no engine runs it (support.h), why
  LoadPoint operating;                //!< one replica at workload rate / replicas
  bool pareto = false;                //!< on the cost / p99 e2e latency frontier
  std::string quality;                //!< published quality cost, empty when lossless
  bool changes_quality = false;
  //! Chart data, filled for the options the report charts (SizeOptions::detail_top).
  std::vector<std::pair<int64_t, int64_t>> capacity_curve;  //!< (context, max requests)
  std::vector<LoadPoint> load_curve;
};

//! Max rate of one option over several seeds (different requests, same workload): runs
//! whose rates differ by less than the spread are not different.
struct MaxRateSpread {
  int seeds = 0;
  double min_per_s = 0, max_per_s = 0, mean_per_s = 0;
};

//! What the recommended deployment's SLO rests on, given the time model's measured error:
//! the probability that its operating point meets the SLO, and the replicas that keep it
//! with probability 0.9 and 0.99.
struct SloConfidence {
  int64_t runs = 0;           //!< held-out runs the error distribution comes from
  bool on_gpu = false;        //!< all on this GPU (else every GPU's: wider)
  double probability = 0;     //!< share of those runs under which the operating point meets the SLO
  struct Level {
    double q = 0;               //!< probability asked for
    double max_rate_per_s = 0;  //!< per replica, at that probability (0: none)
    int64_t replicas = 0;       //!< to serve the workload's rate at it (0: none)
    bool worst_run = false;     //!< q is beyond the runs: the worst run's error decides
  };
  std::vector<Level> levels;  //!< q = 0.9, 0.99
};

//! Spare replicas for failures (size/failures.h) of a recommended deployment.
struct FailurePlan {
  FailureOptions asked;
  int64_t gpus_per_replica = 0;
  double replica_unavailability = 0;  //!< share of time one replica is down
  int64_t replicas_needed = 0;        //!< N, for the workload's rate
  int64_t spares = 0;                 //!< k
  double availability = 0;            //!< P(at most k of the N + k down)
  std::optional<double> cost_per_hour_usd;  //!< N + k replicas
  //! One replica's share of the rate with one of the N + k down, and the simulated run
  //! there (empty when N + k = 1: nothing is left to serve).
  double one_down_share_per_s = 0;
  std::optional<LoadPoint> one_down;
};

//! The decision the reports render: for one model, the cheapest option meeting the SLO
//! (ranks_before), with what a buyer needs to judge it.
struct Recommendation {
  std::string model;
  size_t option = 0;                    //!< index into SizeResult::options
  std::optional<size_t> lossless;       //!< cheapest without a quality cost, when another
  //! Load each replica carries: workload rate / (replicas x max rate per replica).
  double utilization = 0;
  //! Replicas (and cost) that keep the SLO with one replica down: ceil(rate / max) + 1.
  int64_t replicas_n_plus_one = 0;
  std::optional<double> cost_per_hour_n_plus_one_usd;
  //! "binds: max-num-seqs" on a limit the user never set (the engine's default).
  bool binds_on_default_max_num_seqs = false;
  int64_t candidate_index = -1;         //!< the option's candidate (stable across re-ranking)
  MaxRateSpread spread;                 //!< filled by the simulator evaluator
  //! Replicas the lowest of the spread's rates needs (> replicas: the margin is thin).
  int64_t replicas_at_min_rate = 0;
  //! The time model's measured error carried into the decision (planner/error_bars.h);
  //! empty when the calibration has no held-out errors or the evaluator is not the
  //! simulator.
  std::optional<SloConfidence> confidence;
  std::optional<FailurePlan> failures;  //!< with SizeOptions::failures
};

//! A model with no option meeting the SLO, and why: the rejections of its option that
//! rejected most (requests past max_model_len fail the p99 when over 1 %), else how many
//! options were simulated (0: all pruned).
struct Unmet {
  std::string model;
  int64_t rejected_max_model_len = 0;
  int64_t requests = 0;
  int64_t evaluated = 0;
  bool rejections_decide() const { return rejected_max_model_len > 0 && 100 * rejected_max_model_len > requests; }
};

struct SizeResult {
  Workload workload;
  WorkloadShape shape;
  std::vector<Deployment> options;      //!< ranked by SizeOptions::objective (rent: meeting the SLO by cost), then the others
  std::vector<Recommendation> recommendations;  //!< one per model with an option, in rank order
  std::vector<Unmet> unmet;         //!< models with none
  int64_t what_if_skipped = 0;      //!< candidates left out: no engine runs them (SearchSpace::what_if)
  bool what_if = false;             //!< what-ifs were searched
  int64_t candidates = 0;
  int64_t evaluated = 0;
  bool exhaustive = false;          //!< SizeOptions::exhaustive, or an evaluator other than the simulator
  //! The simulator evaluated the candidates (false: SizeOptions::evaluator, e.g. the planner's
  //! closed form); the reports say which, so a planner estimate never reads as a simulation.
  bool simulated = true;
  int64_t pruned_by_bound = 0;      //!< skipped: could not beat an option already proven
  int64_t pruned_infeasible = 0;    //!< skipped: rejections alone fail the SLO at any rate
  int64_t reused = 0;               //!< evaluated by copying an identical simulation's result
  int64_t requests_per_probe = 0;
  uint64_t seed = 0;
  bool calibrated = false;          //!< a measured calibration was used
  std::string calibration_device;
  //! The calibration's measured error statements that concern the models searched.
  std::vector<std::string> accuracy;
  //! GPUs among the options that no measured error statement covers (their latencies are
  //! the model's alone).
  std::vector<std::string> unmeasured_gpus;
  std::string engine;               //!< engine memory accounting(s) used
  //! The buy figures, ranked as `options` (SizeOptions::buy given), with the objective.
  std::optional<BuyResult> buy;
  //! The disaggregated layouts (SizeOptions::disagg given), judged against the cheapest
  //! option to rent of each model.
  std::shared_ptr<const DisaggSearchResult> disagg;
  //! The fleet over months (SizeOptions::demand given): size/over_time.h.
  std::optional<OverTimePlan> over_time;
  double wall_s = 0;                //!< not part of any deterministic output
};

//! Evaluates one candidate that survived pruning; must be thread-safe and deterministic.
using Evaluator = std::function<Evaluation(const Candidate&, const ModelConfig&, const GpuSpec&,
                                           const Workload&, const WorkloadShape&)>;

struct SizeOptions {
  int threads = 0;                    //!< 0 = std::thread::hardware_concurrency()
  //! Simulated requests per rate probe: half a lone engine's default
  //! (cluster::kProbeRequests), the sizing search's time budget over many candidates.
  static constexpr int64_t kDefaultRequestsPerProbe = 2000;
  int64_t requests_per_probe = kDefaultRequestsPerProbe;
  double rel_tolerance = 0.02;        //!< find_max_rate's bisection stop
  uint64_t seed = 0;
  size_t detail_top = 8;              //!< options that get capacity and load curves
  int spread_seeds = 3;               //!< seeds the recommended options' max rate is re-found with
  Evaluator evaluator;                //!< empty = simulator_evaluator(*this)
  //! Wraps the simulator's evaluator, the search otherwise unchanged: `size --shard`
  //! evaluates a slice of the candidates, `kvplan merge` reads the shards' evaluations.
  std::function<Evaluator(Evaluator)> wrap_simulator;
  //! Simulate every candidate the planner keeps. Without it (simulator evaluator only) a
  //! candidate is skipped when its cheapest possible deployment (rate_ceiling) costs more
  //! than an option of its model already proven, or rejections alone fail its SLO; the
  //! recommendations are the same either way (tests/size).
  bool exhaustive = false;
  //! What the options and the recommendations are ranked by. Rent is the search's own
  //! order; another objective re-ranks the options meeting the SLO (size/tco.h rank).
  Objective objective = Objective::rent;
  //! Price buying the hardware (SizeResult::buy). Buy figures rank by their own
  //! objective, which the rental-cost bound says nothing about: with them every
  //! candidate is simulated (as with `exhaustive`).
  std::optional<BuyOptions> buy;
  //! Also search disaggregated prefill/decode layouts (run_disagg_search) against the
  //! options ranked by rent, before another objective re-ranks them.
  std::shared_ptr<const DisaggSearchOptions> disagg;
  //! Plan the fleet over months from a demand curve (SizeResult::over_time), from the
  //! max rates of the options evaluated. It leaves the search as it is: bounded unless
  //! `exhaustive` or `buy`.
  std::optional<DemandOptions> demand;
  //! Spare replicas for failures in each recommendation (Recommendation::failures).
  std::optional<FailureOptions> failures;
  //! Called after each candidate (from worker threads, serialized): done, total.
  std::function<void(int64_t, int64_t)> on_progress;
};

//! Every candidate of the space, in enumeration order.
std::vector<Candidate> enumerate(const SearchSpace& space);

//! Samples the workload's lengths (its request count, at most 20,000) with `seed`.
WorkloadShape workload_shape(const Workload& w, uint64_t seed);

//! Why a candidate is hopeless before simulation, or nullopt when it may work. Checks,
//! in order: weights fit; one request of the p99 context fits in the KV pool; the decode
//! step at batch 1 meets the TPOT SLO; prefill of the p99 prompt alone meets the TTFT SLO.
std::optional<std::string> prune_reason(const Plan& p, const Slo& slo);

//! Replicas needed for `rate` when one sustains `max_rate_per_s`: ceil(rate / max), >= 1.
int64_t replicas_for(double rate_per_s, double max_rate_per_s);
//! cost / h = replicas x GPUs per replica (ServingOptions::gpus_per_replica) x price per GPU-hour.
double cost_per_hour(int64_t replicas, const ServingOptions& o, double price_per_gpu_hour);
//! cost / h over the output tokens an hour brings at the workload's rate, per million.
double cost_per_million_output_tokens(double cost_per_hour_usd, double rate_per_s,
                                      double output_mean_tokens);
//! Same over the prompt tokens (cost / h / (rate x mean prompt x 3600) x 1e6): what the
//! whole deployment costs per million input tokens, not a split of it.
double cost_per_million_input_tokens(double cost_per_hour_usd, double rate_per_s, double prompt_mean_tokens);
//! cost / h / (rate x 3600): the deployment's cost per request served.
double cost_per_request(double cost_per_hour_usd, double rate_per_s);
//! The recommendations (one per model: its first option meeting the SLO in the ranked
//! r.options, with the first lossless one after it when that one changes quality) and the
//! models with none, with the reason.
void recommend(SizeResult& r);
//! Marks `pareto` on the options meeting the SLO with a price that no other such option
//! of the same model beats on both cost per hour and p99 e2e latency (at least as good on
//! both, better on one). Different models are not compared: they differ in quality.
void mark_pareto(std::vector<Deployment>& options);

//! The published quality cost of an option's weight and KV formats (docs/references.md), or "".
std::string quality_note(const ServingOptions& o, const ModelConfig& m);

//! The default evaluator: cluster::find_max_rate, then the binding constraint at the max.
Evaluator simulator_evaluator(const SizeOptions& opt);
//! A planner-only evaluator (no simulation): the replica's time shared between each
//! request's prefill (alone) and the decode steps of a batch the KV pool and max_num_seqs
//! hold, within the TPOT target (evaluate.cpp). Fast, for tests and rough sweeps.
Evaluation planner_evaluate(const Candidate& c, const ModelConfig& m, const GpuSpec& g,
                            const Workload& w, const WorkloadShape& shape);

//! The requests every rate probe of the search simulates: the simulator draws lengths
//! from their own stream, so probes at any rate see the same lengths, and arrival times
//! divided by the rate scale (sim.h).
struct ProbeRequests {
  std::vector<int64_t> prompt_tokens, output_tokens;
  double last_arrival_s = 0;    //!< at the workload's own rate (first arrival at 0)
  double base_rate_per_s = 0;   //!< the workload's rate
  bool prefix_cached = false;   //!< shared prompts: prefill work may be served from cache
  bool arrivals_scale = true;   //!< false for staged arrivals (stages do not stretch)
  double ttft_target_s = 0;
};
ProbeRequests probe_requests(const Workload& w, uint64_t seed, int64_t requests);

//! Allowance beyond rate_ceiling's reasoning (a p99 lets 1 % of requests wait longer;
//! decoding continues after the first token). Checked on the whole catalog's exhaustive
//! search: bench/RESULTS.md gives the largest simulated max rate over the ceiling there.
inline constexpr double kCeilingSlack = 0.25;

//! What one replica can at best do with the probe's requests, from the simulator's own
//! admission rules and step-time model, before any simulation.
struct RateCeiling {
  int64_t requests = 0;
  int64_t rejected = 0;                //!< refused at arrival whatever the rate
  int64_t rejected_max_model_len = 0;  //!< of which: prompt >= max_model_len
  //! The rejections alone make p99 TTFT infinite: no rate meets the SLO.
  bool infeasible = false;
  //! Highest arrival rate find_max_rate can report (continuous scheduler, non-staged
  //! arrivals, a TTFT target; infinity otherwise): (1 + kCeilingSlack) x rate x last
  //! arrival / (busy - TTFT target), busy = the least engine time the admitted requests
  //! need (decode + prefill steps); infinity when busy is within the TTFT target.
  double max_rate_per_s = std::numeric_limits<double>::infinity();
  int64_t batch_max = 0;       //!< most decoders at once (max-num-seqs or the KV pool)
  double decode_busy_s = 0;    //!< least time in decode steps
  double prefill_busy_s = 0;   //!< least time in prefill steps
};
RateCeiling rate_ceiling(const sim::Simulator& s, sim::Scheduler scheduler, const ProbeRequests& p);
//! The same from the planner, without building the simulator (what the search uses).
RateCeiling rate_ceiling(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, sim::Scheduler scheduler,
                         const ProbeRequests& p);

//! The whole search, ranked and recommended by opt.objective. Throws InputError on an empty space, a workload without an SLO or
//! fewer requests per probe than the p99 needs (sim::min_requests_for_percentile).
SizeResult run_search(const SearchSpace& space, const Workload& w, const SizeOptions& opt);

}  // namespace kvplan::size
