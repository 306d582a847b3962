// kvplan reports: `kvplan simulate` output: JSON (schema kvplan.sim/1, ARCHITECTURE.md)
// and a (quantity, value) summary rendered as a text table, Markdown or CSV. Computes
// nothing: the simulator's result and the options it ran with come in.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/max_rate.h"
#include "planner/error_bars.h"
#include "planner/speculative.h"
#include "planner/types.h"
#include "reports/table.h"
#include "sim/sim.h"

namespace kvplan::reports {

struct SimReport {
  std::string model, gpu;
  bool moe = false;  //!< the model has routed experts (which accuracy statements apply)
  ServingOptions options;
  Workload workload;
  sim::SimOptions sim;
  sim::SimResult result;
  int64_t kv_block_bytes_per_gpu = 0;
  int64_t lora_bytes_per_gpu = 0;  //!< --enable-lora: the slots' buffers, taken from the KV pool
  int64_t max_num_batched_tokens = 0;
  int64_t max_num_seqs = 0;    //!< the engine's limit as run (0: options.max_num_seqs)
  //! With speculative decoding (options.spec): the planner's statement of it, beside which
  //! the result's realized tokens per step (SimResult::spec) are printed.
  struct Spec {
    Acceptance acceptance;
    double expected_tokens_per_step = 0;
    int64_t slots_per_step = 0;
    SpecMemory memory;
  };
  std::optional<Spec> spec;
  //! With a host KV tier (--kv-offloading-size, --enable-hierarchical-cache): how the
  //! planner sized it, beside which the result's hits and loads (SimResult::host_tier).
  std::optional<HostKvTier> host_tier;
  std::string scheduler_why;   //!< "auto: vLLM 0.19 (V1) always chunks prefills", "--scheduler chunked"
  //! Which collectives leave the GPU's scale-up domain and the link they pay (planner
  //! scale_out_note, as `plan` prints it); empty: the replica fits one domain.
  std::string scale_out_note;
  //! How the calibration's memory-bound efficiencies carry to this GPU (planner
  //! memory_bandwidth_transfer), for the calibration row.
  CeilingTransfer bandwidth_transfer;
  CeilingTransfer gemm_transfer;  //!< and the GEMM FLOP efficiency (planner gemm_flops_transfer)
  std::optional<cluster::MaxRate> max_rate;
  cluster::MaxRateRange max_rate_range;
  int64_t max_rate_requests = 0;
  int64_t max_model_len = 0;
  //! A fleet run (simulate --replicas): `result` is then the fleet's, and each replica's
  //! own follows in replica_results. Absent: one engine, reported as before fleets existed.
  std::optional<cluster::FleetOptions> fleet;
  std::vector<sim::SimResult> replica_results;
  //! The time model's measured error around these figures (planner/error_bars.h); absent
  //! when the calibration carries no held-out errors.
  std::optional<ErrorBars> error_bars;
  //! With --find-max-rate and error bars: the max rate if the measured latencies sit at
  //! the band's pessimistic edge (lo) or at its optimistic one (hi) (cli/cmd_simulate.cpp).
  std::optional<Band> max_rate_band_per_s;
  //! With error bars and an SLO: slo_probability of this run's p99s.
  std::optional<double> slo_probability;

  //! simulate --max-concurrency N1,N2,...: one run per concurrency, in the order given
  //! (`result` is then the first's).
  struct SweepPoint {
    int64_t max_concurrency = 0;
    sim::SimResult result;
  };
  std::vector<SweepPoint> sweep;
};

nlohmann::json sim_json(const SimReport& r);
//! The summary as (quantity, value) rows: the text table, Markdown and CSV all use it;
//! it names the calibration the step times came from.
std::vector<std::pair<std::string, std::string>> sim_summary(const SimReport& r);
//! The JSON as one CSV record for machines: a column per leaf, named by its dotted path
//! ("latency.ttft_s.p99"), raw numbers (units are in the names), null as an empty field.
Table sim_csv_record(const SimReport& r);
//! Any report JSON as that one record: objects and arrays flatten to dotted paths.
Table json_csv_record(const nlohmann::json& j);
//! The summary as a text table (with a title and a units line), Markdown or CSV; a sweep
//! as sweep_text.
std::string sim_text(const SimReport& r, TextFormat f);
//! A concurrency sweep as the benchmark clients print it: one row per concurrency (mean,
//! median, p99 of TTFT, TPOT and ITL; output and total tokens/s; requests/s).
std::string sweep_text(const SimReport& r, TextFormat f);

//! The progress lines a terminal shows while `simulate` runs its longer parts (stderr,
//! only when it is a terminal; each starts with a carriage return and is padded, so the
//! next overwrites it): a max-rate search ("max rate, seed 0: run 7; meets the SLO at
//! 10.2/s, misses at 11.5/s"; `what` names a search beside the main one, e.g. the error
//! band's edge), a sweep point, and the line that ends them.
std::string max_rate_progress(const std::string& what, uint64_t seed, int runs, std::optional<double> meets_per_s,
                              std::optional<double> misses_per_s);
std::string sweep_progress(int64_t concurrency, size_t point, size_t points);
std::string progress_done(int runs, double wall_s);

}  // namespace kvplan::reports
