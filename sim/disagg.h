// kvplan sim: disaggregated prefill/decode ("xPyD"): x prefill instances and y decode
// instances, each pool with its own GPU type, TP and serving options, on one clock.
//
// A request's life (the order vLLM's disaggregated serving and NVIDIA Dynamo follow):
//  1. It arrives at the prefill pool and goes to the instance with the fewest outstanding
//     requests (routed to it and not yet through its prefill; ties: the lowest index).
//     That instance runs it like a request of one output token (the single-replica
//     engine of sim.h, prefill steps only since nothing there decodes); the prefill's
//     sampled token is not streamed (vLLM's proxy sends the prefill request with
//     max_tokens = 1 and streams the decode instance's output).
//  2. When its prefill step ends it is routed to the decode instance with the fewest
//     outstanding requests (routed to it, in flight included, not yet finished), and its
//     KV (the prompt's tokens, bytes from the planner's KV per token for the decode
//     pool's layout, plus any Mamba/linear-attention state) moves over the link:
//     latency + bytes / bandwidth, the bandwidth being the slower side's (TP x PP GPUs each
//     with their own link share). Transfers out of one prefill instance go one after
//     another over its links.
//  3. When the KV has landed the request joins the decode instance's waiting queue. Its
//     admission charges the blocks of the whole prompt (it waits while the pool is full)
//     and computes the last prompt token to sample the first output token, as vLLM V1
//     does with transferred KV (Scheduler._update_waiting_for_remote_kv). That token is
//     the user's first token: TTFT = prefill queue + prefill + transfer + decode
//     admission wait + that step (+ the calibration's per-request overhead and output lag).
// The prefill instance keeps a request's blocks until its KV has landed (vLLM's
// NixlConnector delays freeing them until the decode side has read them).
// Simplifications (docs/formats.md "Disaggregated serving"): the decode side allocates on
// arrival of the KV (vLLM allocates before pulling); receiving links are not shared
// between transfers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "planner/types.h"
#include "sim/sim.h"
#include "sim/workload.h"

namespace kvplan::sim {

enum class LinkKind { nvlink, pcie, rdma, ethernet };
std::string_view to_string(LinkKind k);
//! Parses nvlink|pcie|rdma|ethernet.
std::optional<LinkKind> parse_link(std::string_view s);

//! One pool: `instances` engines of `options.tp` x `options.pp` GPUs of type `gpu`.
struct PoolSpec {
  GpuSpec gpu;
  ServingOptions options;
  int64_t instances = 1;
  std::optional<int64_t> num_blocks;  //!< overrides each instance's KV pool (what-ifs, tests)
};

struct DisaggLayout {
  PoolSpec prefill, decode;
  //! Forces the link; by default the rule of choose_link().
  std::optional<LinkKind> link;
};

//! The link KV crosses between the pools, per transfer: latency_s + bytes / bytes_per_s.
struct KvTransferLink {
  LinkKind kind = LinkKind::ethernet;
  bool same_node = false;
  double bytes_per_s = 0;  //!< the slower side's: min over the pools of TP x PP x per-GPU link
  double latency_s = 0;    //!< the larger of the two sides'
  std::string why;         //!< the rule that chose it, for reports
};

//! The rule: the pools share a node when both use the same GPU type and all their GPUs
//! (x TP_p PP_p + y TP_d PP_d) fit its kv_links.gpus_per_node; then the GPU's nvlink, else
//! its pcie. Across nodes (or with neither): rdma when both GPU types have it, else
//! ethernet. `layout.link` forces a kind. Throws InputError naming the GPU and the
//! kv_links key when a GPU file lacks the figure needed.
KvTransferLink choose_link(const DisaggLayout& layout);

//! A pool's engines, summed or averaged over its instances.
struct PoolMetrics {
  int64_t instances = 0;
  int64_t gpus = 0;          //!< instances x TP x PP
  int64_t requests = 0;      //!< requests that ran to the end of this pool's part
  int64_t rejected = 0;      //!< could never run on this pool's instances
  int64_t preemptions = 0;
  int64_t num_blocks = 0;    //!< KV pool of one instance, blocks per GPU
  int64_t block_size = 0;
  double busy_fraction = 0;  //!< busy time / (instances x the run's duration)
  double peak_kv_utilization = 0;  //!< the highest over its instances
  double mean_kv_utilization = 0;  //!< busy-time weighted over its instances
  double batch_mean = 0;           //!< busy-time weighted over its instances
  int64_t batch_max = 0;
  int64_t steps = 0;
  //! Arrival at this pool (the request's arrival; the KV's landing for decode) to the
  //! first step that computes it there.
  Percentiles wait_s;
};

struct DisaggResult {
  //! What the user sees, in SimResult's terms: TTFT from arrival to the decode
  //! instance's first token, TPOT over the decode instance's tokens, requests rejected by
  //! either pool failed; queue_s is the wait for the prefill pool; the KV figures
  //! (num_blocks, utilization, batch) are the decode pool's.
  SimResult overall;
  PoolMetrics prefill, decode;
  KvTransferLink link;
  Percentiles transfer_s;        //!< prefill end to KV landed, waiting for the link included
  double transfer_bytes_mean = 0;
  int64_t transfers = 0;
};

//! The two pools' engines, built once (find the max rate by running it many times).
class DisaggSimulator {
 public:
  //! Throws InputError as Simulator does for either pool, for a pool of fewer than one
  //! instance, and as choose_link().
  DisaggSimulator(const ModelConfig& m, const DisaggLayout& layout);
  ~DisaggSimulator();
  DisaggSimulator(const DisaggSimulator&) = delete;
  DisaggSimulator& operator=(const DisaggSimulator&) = delete;

  //! Runs the workload to its last request (opt.requests, opt.rate_scale, opt.seed as in
  //! Simulator::run; observers are not called). Throws InputError for the static
  //! scheduler (it has no prefill-only engine) and for opt.num_blocks (give
  //! PoolSpec::num_blocks per pool).
  DisaggResult run(const Workload& w, const SimOptions& opt) const;

  const Simulator& prefill_engine() const;
  const Simulator& decode_engine() const;
  const DisaggLayout& layout() const;
  const KvTransferLink& link() const;
  //! KV bytes moved for a prompt of `prompt_tokens`: the decode layout's
  //! kv_bytes_per_request + state_bytes_per_request (whole model).
  int64_t transfer_bytes(int64_t prompt_tokens) const;
  //! latency_s + transfer_bytes / bytes_per_s, on an idle link.
  double transfer_s(int64_t prompt_tokens) const;

  struct Impl;  //!< opaque (disagg.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

//! The highest arrival rate at which the layout meets w.slo at p99 (TTFT and TPOT as the
//! user sees them, rejected requests failing) without a growing prefill queue: the same
//! bracketing and bisection as find_max_rate() for one engine (sim.h), same seed at
//! every rate. `at_max` is DisaggResult::overall of the run at the answer.
MaxRate find_max_rate(const DisaggSimulator& s, const Workload& w, const SimOptions& opt,
                      const MaxRateOptions& mo = {});

//! For a search: `layout` serving `w` at `rate_per_s` (the workload's arrival shape and
//! lengths), `requests` requests (0: the workload's), seed `seed`.
DisaggResult simulate_disagg(const ModelConfig& m, const DisaggLayout& layout, const Workload& w,
                             double rate_per_s, int64_t requests = 0, uint64_t seed = 0);

}  // namespace kvplan::sim
