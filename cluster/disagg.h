// kvplan cluster: disaggregated prefill/decode ("xPyD"): x prefill instances and y decode
// instances, each pool with its own GPU type, TP and serving options, on one clock.
//
// A request's life (the order vLLM's disaggregated serving and NVIDIA Dynamo follow):
//  1. It arrives at the prefill pool and goes to the instance with the fewest outstanding
//     requests (routed to it and not yet through its prefill; ties: the lowest index).
//     That instance runs it like a request of one output token (the single-replica
//     engine of sim/sim.h, prefill steps only since nothing there decodes); the prefill's
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
//
// Time order (one event loop over both pools' EngineInstances, sim/sim.h): at equal times
// step ends first (prefill instances, then decode, by index), then arrivals, then the
// driver's own events (prefill done, KV landed, decode done; in the order they were
// raised), then scheduling points.
#pragma once

#include <cstdint>
#include <memory>

#include "cluster/kv_link.h"
#include "planner/types.h"
#include "planner/workload.h"
#include "sim/sim.h"

namespace kvplan::cluster {

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
  sim::Percentiles wait_s;
};

struct DisaggResult {
  //! What the user sees, in SimResult's terms: TTFT from arrival to the decode
  //! instance's first token, TPOT over the decode instance's tokens, requests rejected by
  //! either pool failed; queue_s is the wait for the prefill pool; the KV figures
  //! (num_blocks, utilization, batch) are the decode pool's.
  sim::SimResult overall;
  PoolMetrics prefill, decode;
  KvTransferLink link;
  sim::Percentiles transfer_s;        //!< prefill end to KV landed, waiting for the link included
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
  DisaggResult run(const Workload& w, const sim::SimOptions& opt) const;

  const sim::Simulator& prefill_engine() const;
  const sim::Simulator& decode_engine() const;
  const DisaggLayout& layout() const;
  const KvTransferLink& link() const;
  //! KV bytes moved for a prompt of `prompt_tokens`: the decode layout's
  //! kv_bytes_per_request + state_bytes_per_request (whole model).
  int64_t transfer_bytes(int64_t prompt_tokens) const;
  //! latency_s + transfer_bytes / bytes_per_s, on an idle link.
  double transfer_s(int64_t prompt_tokens) const;

  struct Impl;  //!< opaque (cluster/disagg.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

//! For a search: `layout` serving `w` at `rate_per_s` (the workload's arrival shape and
//! lengths), `requests` requests (0: the workload's), seed `seed`.
DisaggResult simulate_disagg(const ModelConfig& m, const DisaggLayout& layout, const Workload& w,
                             double rate_per_s, int64_t requests = 0, uint64_t seed = 0);

}  // namespace kvplan::cluster
