// The fleet's event loop and routers (cluster/fleet.h); each replica is an
// EngineInstance (sim/sim.h) driven by this loop.
#include "cluster/fleet.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>

#include "planner/types.h"

namespace kvplan::cluster {

std::string_view to_string(Router r) { return kRouterNames.name(r); }
std::optional<Router> parse_router(std::string_view s) { return kRouterNames.parse(s); }

namespace {

using sim::EngineInstance;
using sim::GeneratedRequest;

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

//! Picks a replica for each request from the replicas' state at its arrival.
class RequestRouter {
 public:
  RequestRouter(Router kind, const std::vector<EngineInstance>& replicas) : kind_(kind), replicas_(replicas) {}

  size_t pick(const GeneratedRequest& g) {
    switch (kind_) {
      case Router::round_robin: return next_round_robin_++ % replicas_.size();
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
    size_t pick = replicas_.size();
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (score && (*score)[i] != best) continue;
      if (pick == replicas_.size() || replicas_[i].outstanding() < replicas_[pick].outstanding()) pick = i;
    }
    return pick;
  }
  size_t least_kv() const {
    // used_i / pool_i < used_j / pool_j, cross-multiplied (blocks fit 2^31: no overflow).
    size_t pick = 0;
    for (size_t i = 1; i < replicas_.size(); ++i) {
      const int64_t a = replicas_[i].kv_blocks_used() * replicas_[pick].kv_pool_blocks();
      const int64_t b = replicas_[pick].kv_blocks_used() * replicas_[i].kv_pool_blocks();
      if (a < b || (a == b && replicas_[i].outstanding() < replicas_[pick].outstanding())) pick = i;
    }
    return pick;
  }
  size_t prefix_aware(const GeneratedRequest& g) {
    if (g.prompt_key == 0 && g.group_key == 0) return least_outstanding(nullptr, 0);  // unique content
    hits_.resize(replicas_.size());
    int64_t best = 0;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      hits_[i] = replicas_[i].cached_prefix_blocks(g);
      best = std::max(best, hits_[i]);
    }
    return least_outstanding(&hits_, best);
  }

  Router kind_;
  const std::vector<EngineInstance>& replicas_;
  size_t next_round_robin_ = 0;
  std::vector<int64_t> hits_;
};

//! The workload's arrivals as they come (no client in front).
class OpenArrivals {
 public:
  explicit OpenArrivals(sim::RequestStream& stream) : stream_(stream), next_(stream.next()) {}
  const GeneratedRequest* peek() const { return next_ ? &*next_ : nullptr; }
  void pop() { next_ = stream_.next(); }

 private:
  sim::RequestStream& stream_;
  std::optional<GeneratedRequest> next_;
};

//! The fleet's one event loop over its replicas (the order of cluster/fleet.h).
class FleetLoop {
 public:
  FleetLoop(std::vector<EngineInstance>& replicas, Router router)
      : replicas_(replicas), pending_(replicas.size(), 0), router_(router, replicas) {}

  //! `Source`: peek() (the next request, or nullptr) and pop() (it was routed):
  //! OpenArrivals or a sim::BenchmarkClient.
  template <typename Source>
  void run(Source& source) {
    for (;;) {
      const GeneratedRequest* next = source.peek();
      const bool arrival_first =
          next && (events_.empty() || next->arrival_s < events_.top().time_s ||
                   (next->arrival_s == events_.top().time_s && events_.top().phase > 1));
      if (arrival_first) {
        route(*next);
        source.pop();
        continue;
      }
      if (events_.empty()) break;
      const Pending ev = events_.top();
      events_.pop();
      if (ev.phase == 2) {
        schedule(ev.replica);
        continue;
      }
      EngineInstance& r = replicas_[ev.replica];
      r.step();  // the step's end
      // Its next scheduling point comes after any arrival at the same instant.
      next = source.peek();
      if (next && next->arrival_s <= ev.time_s) {
        events_.push(Pending{ev.time_s, 2, ev.replica});
      } else {
        schedule(ev.replica);
      }
    }
  }

 private:
  void route(const GeneratedRequest& g) {
    const size_t i = router_.pick(g);
    replicas_[i].submit(g);
    if (!pending_[i]) {
      pending_[i] = 1;
      events_.push(Pending{replicas_[i].next_step_s(), 2, i});
    }
  }
  //! Replica i's scheduling point: lets in what was routed to it and starts its next step.
  void schedule(size_t i) {
    EngineInstance& r = replicas_[i];
    if (r.next_step_s() < kNever) r.step();
    pending_[i] = r.step_running();
    if (r.step_running()) events_.push(Pending{r.next_step_s(), 0, i});
  }

  static constexpr double kNever = std::numeric_limits<double>::infinity();
  std::vector<EngineInstance>& replicas_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> events_;
  std::vector<char> pending_;  // whether replica i has an event queued
  RequestRouter router_;
};

}  // namespace

FleetResult simulate_fleet(const sim::Simulator& s, const Workload& w, const sim::SimOptions& opt,
                           const FleetOptions& f) {
  if (f.replicas < 1) throw InputError("fleet", "replicas", "an integer >= 1", std::to_string(f.replicas));
  const auto wall0 = std::chrono::steady_clock::now();
  const auto n = static_cast<size_t>(f.replicas);
  const int64_t count = opt.requests.value_or(w.requests);
  sim::RequestStream stream(w, opt.seed, opt.rate_scale, count);
  // A benchmark client in front of the fleet (sim::BenchmarkClient): it learns of each
  // end from the replicas' observers; each replica keeps its own ITL tally.
  const bool client = opt.max_concurrency.has_value() || opt.all_at_once;
  if (opt.warmup_requests > 0)
    throw InputError("fleet", "warmup_requests", "0 (warm-up is counted by the lone engine only)",
                     std::to_string(opt.warmup_requests));
  std::optional<sim::BenchmarkClient> bench;
  if (client) bench.emplace(stream, opt.max_concurrency, opt.all_at_once);
  std::vector<sim::ItlTally> itl(client ? n : 0, sim::ItlTally(opt.scheduler == sim::Scheduler::continuous));
  std::vector<EngineInstance> replicas;
  replicas.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // Each replica's options: the run's, with observers that name the replica.
    sim::SimOptions o = opt;
    o.on_step = nullptr;
    o.on_request = nullptr;
    o.on_finish = nullptr;
    o.on_chunk = nullptr;
    const auto index = static_cast<int64_t>(i);
    if (client) {
      sim::BenchmarkClient* c = &*bench;
      sim::ItlTally* t = &itl[i];
      // A chunk of several tokens is one gap (Simulator's lone client run does the same).
      const bool chunks = s.options().stream_interval.value_or(1) > 1;
      o.on_step = [&f, index, t, chunks](const sim::StepSample& x) {
        if (!chunks) t->step(x.time_s, x.duration_s, x.decode_seqs, x.batch);
        if (f.on_step) f.on_step(index, x);
      };
      if (chunks) o.on_chunk = [t](double gap_s) { t->gap(gap_s); };
      o.on_request = [&f, index, c](const sim::RequestEvent& x) {
        if (x.kind == sim::RequestEventKind::rejected) c->rejected(x.request, x.time_s);
        if (f.on_request) f.on_request(index, x);
      };
      o.on_finish = [c](const sim::FinishedRequest& x) { c->finished(x); };
    } else {
      if (f.on_step) o.on_step = [&f, index](const sim::StepSample& x) { f.on_step(index, x); };
      if (f.on_request) o.on_request = [&f, index](const sim::RequestEvent& x) { f.on_request(index, x); };
    }
    // One remote KV store for the fleet (Mooncake's master serves every instance).
    if (!replicas.empty()) o.shared_remote = replicas.front().remote_store();
    replicas.emplace_back(s, w, o, count);
  }
  if (client) {
    FleetLoop(replicas, f.router).run(*bench);
    if (!bench->exhausted()) throw std::logic_error("fleet: the client stalled");
  } else {
    OpenArrivals open(stream);
    FleetLoop(replicas, f.router).run(open);
  }
  for (const EngineInstance& r : replicas)
    if (r.has_work()) throw std::logic_error("fleet: a replica stalled with requests waiting");

  FleetResult out;
  out.replicas.reserve(n);
  sim::RunTally all;
  for (const EngineInstance& r : replicas) {
    sim::RunTally t = r.tally();
    all.add(t);
    out.replicas.push_back(r.summary(t));
  }
  out.fleet = replicas.front().summary(all);
  if (client) {
    for (size_t i = 1; i < n; ++i) itl.front().add(itl[i]);
    out.fleet.itl_s = itl.front().summary();
  }
  out.fleet.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  out.fleet.tokens_per_wall_s =
      out.fleet.wall_s > 0 ? static_cast<double>(out.fleet.tokens_simulated) / out.fleet.wall_s : 0;
  return out;
}

}  // namespace kvplan::cluster
