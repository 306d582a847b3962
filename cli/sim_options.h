// The options `simulate` and `simulate --disagg` share, read once so that both check them
// the same way against the workload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "reports/sim_report.h"
#include "sim/sim.h"

namespace kvplan::cli {

//! --scheduler (an unknown name is refused listing `schedulers`, the ones this mode runs),
//! --seed, --requests, --swap, --host-link-gb-per-s and --rate, checked against workload
//! `w`: a trace whose arrivals share one instant (a burst) has no rate to scale and
//! replays at most its own rows.
sim::SimOptions parse_sim_options(const po::variables_map& vm, const Workload& w, const std::string& schedulers);

//! The planner's statement of speculative decoding a report prints beside the simulated
//! tokens per step (`applied`: the model with o's what-ifs). Empty without o.spec.
std::optional<reports::SimReport::Spec> spec_statement(const ModelConfig& applied, const ServingOptions& o);

//! The scheduler flags `simulate` adds beside the serving options (add_scheduler_options).
void add_scheduler_options(po::options_description& desc);
//! The engines' own names of the shared limits, each accepted only with its engine and
//! never beside the shared flag: SGLang's --max-running-requests and TensorRT-LLM's
//! --max-batch-size are --max-num-seqs; SGLang's --chunked-prefill-size and
//! TensorRT-LLM's --max-num-tokens are --max-num-batched-tokens.
void apply_engine_limit_flags(const po::variables_map& vm, ServingOptions& o);

//! --max-concurrency (one value or a list, each an integer >= 1: the first goes into
//! `so`, all are returned; empty without the flag) and --warmup-requests, for simulate
//! without --disagg or --replicas.
std::vector<int64_t> parse_client_options(const po::variables_map& vm, const Workload& w, sim::SimOptions& so);

//! --random-input-len, --random-output-len, --random-range-ratio, --random-prefix-len:
//! vLLM bench's random dataset (RandomDataset) in place of the workload's lengths, each
//! flag overriding the workload's `random` key of the same name, else vLLM's default.
void apply_random_options(const po::variables_map& vm, Workload& w);

//! --max-rate-requests for --find-max-rate: at least enough requests for a p99, and the
//! workload must have an SLO to measure the rate against and arrivals to scale. Nothing
//! when the option was not given: the search's own default (cluster::probe_requests).
std::optional<int64_t> parse_max_rate_requests(const po::variables_map& vm, const Workload& w);

}  // namespace kvplan::cli
