// kvplan size --disagg: disaggregated prefill/decode layouts searched next to
// the aggregated ones, and which of the two wins for the workload, with why.
//
// For each model the pools reuse the formats (weights, KV, engine limits, scheduler) of
// the model's best aggregated option, so the comparison isolates the layout. The space,
// small and explicit: prefill GPU x decode GPU (any two of the searched GPUs, a mix
// allowed) x prefill TP x decode TP (the TPs the aggregated search kept on that GPU,
// pruned ones left out) x xPyD ratio. Each layout's max rate is cluster::find_max_rate over
// a cluster::DisaggSimulator (cluster/disagg.h) with the aggregated search's seed, probe size and
// tolerance; whole copies of the xPyD unit serve the workload's rate.
//
// The result types are plain values, so reports/ can render them without this library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/types.h"
#include "planner/workload.h"
#include "size/size.h"

namespace kvplan::size {

//! x prefill instances and y decode instances: one unit of a disaggregated deployment.
struct DisaggRatio {
  int64_t prefill = 1;
  int64_t decode = 1;
};
//! "1P2D".
std::string to_string(const DisaggRatio& r);
//! Parses "xPyD" with x, y >= 1 (case-insensitive P and D); nullopt otherwise.
std::optional<DisaggRatio> parse_disagg_ratio(std::string_view s);
//! 1P1D, 1P2D, 1P3D, 2P3D: decode-heavy, since decode holds a request for its whole
//! output while prefill holds it for one step. vLLM's examples run 1P1D
//! (examples/online_serving/disaggregated_prefill.sh) and 1P3D
//! (examples/online_serving/disaggregated_serving_p2p_nccl_xpyd/disagg_example_p2p_nccl_1p3d.sh,
//! vllm-project/vllm commit e4cee349f98bd69faca3d51201af5002f30fa109); 1P2D and 2P3D are
//! kvplan's steps in between.
std::vector<DisaggRatio> default_disagg_ratios();

//! One disaggregated layout with its max rate and price.
struct DisaggOption {
  int64_t index = 0;  //!< position in enumeration order
  std::string model, prefill_gpu, decode_gpu;
  ServingOptions prefill_options, decode_options;  //!< TP set per pool
  sim::Scheduler scheduler = sim::Scheduler::continuous;
  DisaggRatio ratio;
  std::string link;            //!< nvlink | pcie | rdma | ethernet (cluster::choose_link)
  std::string link_why;
  double transfer_mean_prompt_s = 0;  //!< one mean-length prompt's KV over the idle link
  //! Not simulated, and why: one unit already costs at least the aggregated answer, so
  //! no number of units can beat it (DisaggSearchOptions::prune).
  std::optional<std::string> pruned;
  bool found = false;          //!< some rate met the SLO
  double max_rate_per_s = 0;   //!< of one xPyD unit
  int runs = 0;                //!< simulations spent
  //! At the max rate (at the workload's rate when none met the SLO).
  double ttft_p99_s = 0, tpot_p99_s = 0, transfer_p99_s = 0;
  double prefill_busy_fraction = 0, decode_busy_fraction = 0;
  int64_t units = 0;           //!< copies of the unit the workload's rate needs
  int64_t gpus_total = 0;      //!< units x (x TP_p PP_p + y TP_d PP_d)
  std::optional<double> cost_per_hour_usd;  //!< empty: a GPU has no price
  bool meets_slo = false;      //!< found and priced
};

//! Aggregated against disaggregated for one model.
struct DisaggVerdict {
  std::string model;
  //! The aggregated recommendation ("5 x h200 TP4") and its cost per hour, copied (the
  //! options may be re-ranked later, e.g. by --objective); empty when none meets the SLO.
  std::string aggregated_layout;
  std::optional<double> aggregated_cost_per_hour_usd;
  std::optional<size_t> disaggregated;  //!< index into DisaggSearchResult::options (cheapest meeting the SLO)
  std::string winner;                   //!< "aggregated", "disaggregated" or "none"
  std::string why;                      //!< the figures that decide it
};

struct DisaggSearchResult {
  std::vector<DisaggRatio> ratios;
  std::vector<DisaggOption> options;    //!< meeting the SLO by cost, then by max rate
  std::vector<DisaggVerdict> verdicts;  //!< one per model, in the order of SearchSpace::models
  int64_t candidates = 0;               //!< layouts enumerated
  int64_t simulated = 0;                //!< of which simulated (the others pruned)
  double wall_s = 0;                    //!< not part of any deterministic output
};

struct DisaggSearchOptions {
  std::vector<DisaggRatio> ratios = default_disagg_ratios();
  int threads = 0;                    //!< 0 = std::thread::hardware_concurrency()
  int64_t requests_per_probe = 2000;  //!< as SizeOptions
  double rel_tolerance = 0.02;
  uint64_t seed = 0;
  //! Skip layouts whose single unit costs at least the model's aggregated recommendation:
  //! the verdict is the same as without (a tie goes to the aggregated layout).
  bool prune = true;
};

//! Cost per hour of `units` copies of a unit: x TP_p PP_p GPUs at the prefill GPU's price
//! plus y TP_d PP_d at the decode GPU's; empty when either has no price.
std::optional<double> disagg_cost_per_hour(int64_t units, const DisaggRatio& r, const ServingOptions& prefill,
                                           const GpuSpec& prefill_gpu, const ServingOptions& decode,
                                           const GpuSpec& decode_gpu);

//! The disaggregated search over `space` (its models and GPUs), given the aggregated
//! search's result on the same space and workload, and the verdict per model. Throws
//! InputError (key --disagg) on an empty ratio list or a ratio below 1P1D.
DisaggSearchResult run_disagg_search(const SearchSpace& space, const SizeResult& aggregated, const Workload& w,
                                     const DisaggSearchOptions& opt);

}  // namespace kvplan::size
