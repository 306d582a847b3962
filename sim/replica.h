// kvplan sim: one engine of a fleet, driven from outside (sim/fleet.cpp's event loop)
// instead of by its own request stream. Internal to sim/; the engine is sim.cpp's.
//
// The fleet routes each request at its arrival time (route()); the replica lets it in at
// its next scheduling point, as a lone engine lets in every request that arrived by
// then. schedule(t) is that scheduling point: it enters the routed requests, composes
// the step at max(now, t) and returns its duration (0: nothing to run, the replica waits
// for a request); end_step(dt) runs the step's end (tokens, finishes, freed blocks) and
// returns the time it ends. A lone engine is exactly route() of every arrival and
// schedule() at every step end and arrival, in time order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/sim.h"

namespace kvplan::sim::detail {

class Replica {
 public:
  //! Throws as Simulator::run does for options the engine refuses. `o` (observers
  //! included) must outlive the replica.
  Replica(const Simulator& s, const Workload& w, const SimOptions& o);
  ~Replica();
  Replica(Replica&&) noexcept;
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;
  Replica& operator=(Replica&&) = delete;

  void route(const GeneratedRequest& g);
  //! Requests routed here that have neither finished nor been rejected.
  int64_t outstanding() const;
  int64_t kv_blocks_used() const;
  int64_t kv_pool_blocks() const;
  //! Leading blocks of g's prompt in this replica's prefix cache now (0 with caching off).
  int64_t cached_prefix_blocks(const GeneratedRequest& g) const;
  double schedule(double t);
  double end_step(double dt);
  //! Requests routed and not yet finished (running, waiting, or not yet let in).
  bool has_work() const;
  //! This replica's metrics (wall_s 0: the fleet measures wall time as a whole).
  SimResult result() const;
  //! The metrics of all replicas as one engine: counts summed, percentiles over every
  //! request, time-weighted means over their summed busy time.
  static SimResult combine(const std::vector<Replica>& replicas);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvplan::sim::detail
