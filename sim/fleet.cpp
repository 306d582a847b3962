// The fleet's event loop and routers (sim/fleet.h); each replica is sim.cpp's engine
// driven through sim/replica.h.
#include "sim/fleet.h"

#include <algorithm>
#include <chrono>
#include <queue>
#include <stdexcept>
#include <string>

#include "sim/replica.h"

namespace kvplan::sim {

std::string_view to_string(Router r) {
  switch (r) {
    case Router::round_robin: return "round-robin";
    case Router::least_outstanding: return "least-outstanding";
    case Router::least_kv: return "least-kv";
    case Router::prefix_aware: return "prefix-aware";
  }
  return "round-robin";
}

std::optional<Router> parse_router(std::string_view s) {
  if (s == "round-robin") return Router::round_robin;
  if (s == "least-outstanding") return Router::least_outstanding;
  if (s == "least-kv") return Router::least_kv;
  if (s == "prefix-aware") return Router::prefix_aware;
  return std::nullopt;
}

namespace {

using detail::GeneratedRequest;
using detail::Replica;

//! A replica's pending event: the end of its running step, or a scheduling point.
struct Pending {
  double time_s;
  int phase;  // 0: step end, 2: scheduling point (1, between them, is the arrivals')
  size_t replica;
  bool operator>(const Pending& o) const {
    if (time_s != o.time_s) return time_s > o.time_s;
    if (phase != o.phase) return phase > o.phase;
    return replica > o.replica;
  }
};

class Router_ {
 public:
  Router_(Router kind, const std::vector<Replica>& rs) : kind_(kind), rs_(rs) {}

  size_t pick(const GeneratedRequest& g) {
    switch (kind_) {
      case Router::round_robin: return next_rr_++ % rs_.size();
      case Router::least_outstanding: return least_outstanding(nullptr, 0);
      case Router::least_kv: return least_kv();
      case Router::prefix_aware: return prefix_aware(g);
    }
    return 0;
  }

 private:
  //! Fewest outstanding among the replicas whose `score` equals `best` (all when
  //! score is null), ties to the lowest index.
  size_t least_outstanding(const std::vector<int64_t>* score, int64_t best) const {
    size_t pick = rs_.size();
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (score && (*score)[i] != best) continue;
      if (pick == rs_.size() || rs_[i].outstanding() < rs_[pick].outstanding()) pick = i;
    }
    return pick;
  }
  size_t least_kv() const {
    // used_i / pool_i < used_j / pool_j, cross-multiplied (blocks fit 2^31: no overflow).
    size_t pick = 0;
    for (size_t i = 1; i < rs_.size(); ++i) {
      const int64_t a = rs_[i].kv_blocks_used() * rs_[pick].kv_pool_blocks();
      const int64_t b = rs_[pick].kv_blocks_used() * rs_[i].kv_pool_blocks();
      if (a < b || (a == b && rs_[i].outstanding() < rs_[pick].outstanding())) pick = i;
    }
    return pick;
  }
  size_t prefix_aware(const GeneratedRequest& g) {
    if (g.prompt_key == 0 && g.group_key == 0) return least_outstanding(nullptr, 0);  // unique content
    hits_.resize(rs_.size());
    int64_t best = 0;
    for (size_t i = 0; i < rs_.size(); ++i) {
      hits_[i] = rs_[i].cached_prefix_blocks(g);
      best = std::max(best, hits_[i]);
    }
    return least_outstanding(&hits_, best);
  }

  Router kind_;
  const std::vector<Replica>& rs_;
  size_t next_rr_ = 0;
  std::vector<int64_t> hits_;
};

}  // namespace

FleetResult simulate_fleet(const Simulator& s, const Workload& w, const SimOptions& opt, const FleetOptions& f) {
  if (f.replicas < 1) throw InputError("fleet", "replicas", "an integer >= 1", std::to_string(f.replicas));
  const auto wall0 = std::chrono::steady_clock::now();
  const auto n = static_cast<size_t>(f.replicas);
  // Each replica's options: the run's, with observers that name the replica.
  std::vector<SimOptions> opts(n, opt);
  for (size_t i = 0; i < n; ++i) {
    SimOptions& o = opts[i];
    o.on_step = nullptr;
    o.on_request = nullptr;
    const auto index = static_cast<int64_t>(i);
    if (f.on_step) o.on_step = [&f, index](const StepSample& x) { f.on_step(index, x); };
    if (f.on_request) o.on_request = [&f, index](const RequestEvent& x) { f.on_request(index, x); };
  }
  std::vector<Replica> rs;
  rs.reserve(n);
  for (size_t i = 0; i < n; ++i) rs.emplace_back(s, w, opts[i]);

  detail::RequestStream stream(w, opt.seed, opt.rate_scale, opt.requests.value_or(w.requests));
  std::optional<GeneratedRequest> next = stream.next();
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> events;
  std::vector<char> pending(n, 0);  // whether replica i has an event queued
  std::vector<double> step_s(n, 0);  // the duration of replica i's running step
  Router_ router(f.router, rs);

  const auto schedule = [&](size_t i, double t) {
    const double dt = rs[i].schedule(t);
    pending[i] = dt > 0;
    if (dt > 0) {
      step_s[i] = dt;
      // t is the replica's clock (schedule() is never called before it), so t + dt is the
      // very sum end_step() will set it to.
      events.push(Pending{t + dt, 0, i});
    }
  };
  for (;;) {
    const bool arrival_first =
        next && (events.empty() || next->arrival_s < events.top().time_s ||
                 (next->arrival_s == events.top().time_s && events.top().phase > 1));
    if (arrival_first) {
      const size_t i = router.pick(*next);
      rs[i].route(*next);
      if (!pending[i]) {
        pending[i] = 1;
        events.push(Pending{next->arrival_s, 2, i});
      }
      next = stream.next();
      continue;
    }
    if (events.empty()) break;
    const Pending ev = events.top();
    events.pop();
    if (ev.phase == 2) {
      schedule(ev.replica, ev.time_s);
      continue;
    }
    const double t = rs[ev.replica].end_step(step_s[ev.replica]);
    // Its next scheduling point comes after any arrival at the same instant.
    if (next && next->arrival_s <= t) {
      events.push(Pending{t, 2, ev.replica});
    } else {
      schedule(ev.replica, t);
    }
  }
  for (const Replica& r : rs)
    if (r.has_work()) throw std::logic_error("fleet: a replica stalled with requests waiting");

  FleetResult out;
  out.replicas.reserve(n);
  for (const Replica& r : rs) out.replicas.push_back(r.result());
  out.fleet = Replica::combine(rs);
  out.fleet.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  out.fleet.tokens_per_wall_s =
      out.fleet.wall_s > 0 ? static_cast<double>(out.fleet.tokens_simulated) / out.fleet.wall_s : 0;
  return out;
}

}  // namespace kvplan::sim
