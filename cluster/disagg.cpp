// Disaggregated prefill/decode: the driver that runs the two pools' engines
// (sim::EngineInstance) on one clock and moves each request's KV between them. See
// cluster/disagg.h.
#include "cluster/disagg.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "planner/planner.h"

namespace kvplan::cluster {

using sim::EngineInstance;
using sim::GeneratedRequest;
using sim::RequestEvent;
using sim::RequestEventKind;
using sim::SimOptions;
using sim::SimResult;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// ------------------------------------------------------------------------- simulator

struct DisaggSimulator::Impl {
  DisaggLayout layout;
  std::shared_ptr<const ModelConfig> decode_model;  // with the decode pool's what-ifs
  std::unique_ptr<sim::Simulator> prefill, decode;
  KvTransferLink link;
};

DisaggSimulator::DisaggSimulator(const ModelConfig& m, const DisaggLayout& layout)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.layout = layout;
  using Named = std::pair<const PoolSpec*, const char*>;
  for (const auto& [pool, name] : {Named{&layout.prefill, "prefill pool"}, Named{&layout.decode, "decode pool"}}) {
    if (pool->instances < 1)
      throw InputError(name, "instances", "an integer >= 1", std::to_string(pool->instances));
    if (pool->num_blocks && *pool->num_blocks < 1)
      throw InputError(name, "num_blocks", "an integer >= 1", std::to_string(*pool->num_blocks));
  }
  s.prefill = std::make_unique<sim::Simulator>(m, layout.prefill.gpu, layout.prefill.options);
  s.decode = std::make_unique<sim::Simulator>(m, layout.decode.gpu, layout.decode.options);
  s.decode_model = std::make_shared<const ModelConfig>(apply_what_if(m, layout.decode.options));
  s.link = choose_link(layout);
}

DisaggSimulator::~DisaggSimulator() = default;

const sim::Simulator& DisaggSimulator::prefill_engine() const { return *impl_->prefill; }
const sim::Simulator& DisaggSimulator::decode_engine() const { return *impl_->decode; }
const DisaggLayout& DisaggSimulator::layout() const { return impl_->layout; }
const KvTransferLink& DisaggSimulator::link() const { return impl_->link; }

int64_t DisaggSimulator::transfer_bytes(int64_t prompt_tokens) const {
  const ModelConfig& m = *impl_->decode_model;
  const ServingOptions& o = impl_->layout.decode.options;
  return kv_bytes_per_request(m, o, prompt_tokens) + state_bytes_per_request(m, o);
}

double DisaggSimulator::transfer_s(int64_t prompt_tokens) const {
  return impl_->link.latency_s + static_cast<double>(transfer_bytes(prompt_tokens)) / impl_->link.bytes_per_s;
}

namespace {

// What the driver keeps per request (indexed by generation order).
struct Track {
  double arrival_s = 0;
  double prefill_scheduled_s = -1;
  double landed_s = 0;
  double decode_scheduled_s = -1;
  double first_token_s = 0;
  GeneratedRequest request;  // output_tokens after the decode instance's max_model_len cap, once known
  int32_t prefill_instance = -1;
  int32_t decode_instance = -1;
};

//! prefill_done: route to a decode instance, start the transfer; landed: the KV is in;
//! decode_done: the request left its decode instance (the router's count drops).
enum class DriverEventKind : uint8_t { prefill_done, landed, decode_done };

struct DriverEvent {
  double time_s;
  uint64_t seq;
  int64_t request;
  DriverEventKind kind;
  bool operator>(const DriverEvent& e) const { return time_s != e.time_s ? time_s > e.time_s : seq > e.seq; }
};

PoolMetrics pool_metrics(const std::vector<SimResult>& rs, const PoolSpec& spec, double duration_s,
                         std::vector<double> waits) {
  PoolMetrics p;
  p.instances = spec.instances;
  p.gpus = pool_gpus(spec);
  double busy = 0, kv_time = 0, batch_time = 0;
  for (const SimResult& r : rs) {
    p.requests += r.completed;
    p.rejected += r.rejected;
    p.preemptions += r.preemptions;
    p.num_blocks = r.num_blocks;
    p.block_size = r.block_size;
    p.peak_kv_utilization = std::max(p.peak_kv_utilization, r.peak_kv_utilization);
    p.batch_max = std::max(p.batch_max, r.batch_max);
    p.steps += r.steps;
    busy += r.busy_s;
    kv_time += r.mean_kv_utilization * r.busy_s;
    batch_time += r.batch_mean * r.busy_s;
  }
  if (busy > 0) {
    p.mean_kv_utilization = kv_time / busy;
    p.batch_mean = batch_time / busy;
  }
  if (duration_s > 0) p.busy_fraction = busy / (static_cast<double>(p.instances) * duration_s);
  p.wait_s = sim::percentiles(waits);
  return p;
}

//! Least outstanding, as the router sees it: requests routed to an instance and not yet
//! past it at the current time (an instance's own count runs ahead to its step's end).
size_t least_routed(const std::vector<int64_t>& routed) {
  return static_cast<size_t>(std::min_element(routed.begin(), routed.end()) - routed.begin());
}

//! One run of a layout: both pools' instances, the requests' tracks and the driver's
//! events.
class DisaggRun {
 public:
  DisaggRun(const DisaggSimulator& s, const sim::Simulator& prefill, const sim::Simulator& decode,
            const Workload& w, const SimOptions& opt, int64_t count)
      : s_(s), layout_(s.layout()), link_(s.link()), workload_(w), count_(count),
        tracks_(static_cast<size_t>(count)),
        overhead_s_(layout_.decode.options.calibration.request_overhead_s),
        routed_prefill_(static_cast<size_t>(layout_.prefill.instances), 0),
        routed_decode_(static_cast<size_t>(layout_.decode.instances), 0),
        link_free_s_(static_cast<size_t>(layout_.prefill.instances), 0.0) {
    for (int64_t i = 0; i < layout_.prefill.instances; ++i) {
      SimOptions o = opt;
      o.api_server_queue = false;  // the request overhead is counted once, by the router (finish())
      o.on_step = nullptr;
      o.num_blocks = layout_.prefill.num_blocks;
      o.on_request = [this, k = static_cast<size_t>(i), mml = prefill.max_model_len()](const RequestEvent& ev) {
        on_prefill_event(k, mml, ev);
      };
      prefill_.emplace_back(prefill, w, o, count, true);
    }
    for (int64_t i = 0; i < layout_.decode.instances; ++i) {
      SimOptions o = opt;
      o.api_server_queue = false;
      o.num_blocks = layout_.decode.num_blocks;
      const auto k = static_cast<size_t>(i);
      o.on_step = nullptr;
      o.on_request = [this, k, mml = decode.max_model_len()](const RequestEvent& ev) { on_decode_event(k, mml, ev); };
      decode_.emplace_back(decode, w, o, count);
    }
  }

  DisaggRun(const DisaggRun&) = delete;
  DisaggRun& operator=(const DisaggRun&) = delete;

  void run(sim::RequestStream& stream);
  DisaggResult result();

 private:
  struct NextEngine {
    double time_s = kInf;
    EngineInstance* engine = nullptr;
  };
  //! The earliest step end and the earliest scheduling point over both pools (ties:
  //! prefill instances first, then by index).
  std::pair<NextEngine, NextEngine> next_engine_events();
  void arrive(const GeneratedRequest& g);
  void handle(const DriverEvent& ev);
  void push(double time_s, int64_t request, DriverEventKind kind) {
    events_.push(DriverEvent{time_s, seq_++, request, kind});
  }
  void rejected(const RequestEvent& ev, int64_t max_model_len) {
    ++tally_.counts.rejected;
    ++(ev.prompt_tokens >= max_model_len ? tally_.counts.rejected_max_model_len : tally_.counts.rejected_pool);
  }
  void on_prefill_event(size_t k, int64_t max_model_len, const RequestEvent& ev);
  void on_decode_event(size_t k, int64_t max_model_len, const RequestEvent& ev);
  void decode_finished(const RequestEvent& ev);
  void merge_pools(DisaggResult& res, const std::vector<SimResult>& pr, const std::vector<SimResult>& dr);

  const DisaggSimulator& s_;
  const DisaggLayout& layout_;
  const KvTransferLink& link_;
  const Workload& workload_;
  int64_t count_;
  std::vector<Track> tracks_;
  std::priority_queue<DriverEvent, std::vector<DriverEvent>, std::greater<>> events_;
  uint64_t seq_ = 0;
  sim::RunTally tally_;  // what the user sees
  double overhead_s_;
  std::vector<double> decode_wait_, transfer_;
  double transfer_bytes_sum_ = 0;
  std::vector<int64_t> routed_prefill_, routed_decode_;
  std::vector<double> link_free_s_;  // transfers out of one prefill instance queue for its links
  std::vector<EngineInstance> prefill_, decode_;
};

void DisaggRun::on_prefill_event(size_t k, int64_t max_model_len, const RequestEvent& ev) {
  Track& t = tracks_[static_cast<size_t>(ev.request)];
  switch (ev.kind) {
    case RequestEventKind::scheduled:
      if (t.prefill_scheduled_s < 0) t.prefill_scheduled_s = ev.time_s;
      break;
    case RequestEventKind::rejected:  // when it enters the instance
      rejected(ev, max_model_len);
      --routed_prefill_[k];
      break;
    case RequestEventKind::finished: push(ev.time_s, ev.request, DriverEventKind::prefill_done); break;
    default: break;
  }
}

void DisaggRun::on_decode_event(size_t k, int64_t max_model_len, const RequestEvent& ev) {
  Track& t = tracks_[static_cast<size_t>(ev.request)];
  switch (ev.kind) {
    case RequestEventKind::scheduled:
      if (t.decode_scheduled_s < 0) {
        t.decode_scheduled_s = ev.time_s;
        decode_wait_.push_back(ev.time_s - t.landed_s);
      }
      break;
    case RequestEventKind::rejected:  // when its KV has landed
      rejected(ev, max_model_len);
      --routed_decode_[k];
      break;
    // The user sees the decode instance's tokens when its API server has delivered them
    // (the engine's output queue, sim/engine.cpp), not at the end of their step.
    case RequestEventKind::first_token: t.first_token_s = ev.delivered_s; break;
    case RequestEventKind::finished: decode_finished(ev); break;
    default: break;
  }
}

void DisaggRun::decode_finished(const RequestEvent& ev) {
  Track& t = tracks_[static_cast<size_t>(ev.request)];
  push(ev.time_s, ev.request, DriverEventKind::decode_done);
  t.request.output_tokens = ev.output_tokens;
  const double last_token_s = ev.delivered_s;
  sim::FinishedRequest f;
  f.index = ev.request;
  f.prompt_tokens = ev.prompt_tokens;
  f.output_tokens = ev.output_tokens;
  f.finish_s = ev.time_s;
  f.ttft_s = t.first_token_s - t.arrival_s + overhead_s_;
  f.e2e_s = last_token_s - t.arrival_s + overhead_s_;
  f.queued_s = t.prefill_scheduled_s - t.arrival_s;
  if (ev.output_tokens > 1) f.tpot_s = (last_token_s - t.first_token_s) / static_cast<double>(ev.output_tokens - 1);
  tally_.finish(f, count_, workload_.slo);
}

std::pair<DisaggRun::NextEngine, DisaggRun::NextEngine> DisaggRun::next_engine_events() {
  NextEngine end, schedule;
  for (auto* pool : {&prefill_, &decode_})
    for (EngineInstance& in : *pool) {
      NextEngine& best = in.step_running() ? end : schedule;
      if (const double t = in.next_step_s(); t < best.time_s) best = NextEngine{t, &in};
    }
  return {end, schedule};
}

void DisaggRun::run(sim::RequestStream& stream) {
  std::optional<GeneratedRequest> next = stream.next();
  for (;;) {
    const double t_arrival = next ? next->arrival_s : kInf;
    const double t_event = events_.empty() ? kInf : events_.top().time_s;
    const auto [end, schedule] = next_engine_events();
    if (end.engine && end.time_s <= std::min({t_arrival, t_event, schedule.time_s})) {
      end.engine->step();
    } else if (t_arrival < kInf && t_arrival <= t_event && t_arrival <= schedule.time_s) {
      arrive(*next);
      next = stream.next();
    } else if (t_event < kInf && t_event <= schedule.time_s) {
      const DriverEvent ev = events_.top();
      events_.pop();
      handle(ev);
    } else if (schedule.engine) {
      schedule.engine->step();
    } else {
      break;
    }
  }
}

void DisaggRun::arrive(const GeneratedRequest& g) {
  tally_.arrival(g.arrival_s);
  Track& t = tracks_[static_cast<size_t>(g.index)];
  t.arrival_s = g.arrival_s;
  t.request = g;
  t.request.prompt_tokens = std::max<int64_t>(g.prompt_tokens, 1);
  t.request.output_tokens = std::max<int64_t>(g.output_tokens, 1);
  const size_t i = least_routed(routed_prefill_);
  ++routed_prefill_[i];
  t.prefill_instance = static_cast<int32_t>(i);
  GeneratedRequest p = g;
  p.output_tokens = 1;  // the prefill instance samples one token, which the proxy drops
  prefill_[i].submit(p);
}

void DisaggRun::handle(const DriverEvent& ev) {
  Track& t = tracks_[static_cast<size_t>(ev.request)];
  switch (ev.kind) {
    case DriverEventKind::decode_done: --routed_decode_[static_cast<size_t>(t.decode_instance)]; break;
    case DriverEventKind::prefill_done: {
      const auto p = static_cast<size_t>(t.prefill_instance);
      --routed_prefill_[p];
      const size_t d = least_routed(routed_decode_);
      ++routed_decode_[d];
      t.decode_instance = static_cast<int32_t>(d);
      const auto bytes = static_cast<double>(s_.transfer_bytes(t.request.prompt_tokens));
      const double start = std::max(ev.time_s, link_free_s_[p]);
      link_free_s_[p] = start + bytes / link_.bytes_per_s;
      t.landed_s = link_free_s_[p] + link_.latency_s;
      transfer_.push_back(t.landed_s - ev.time_s);
      transfer_bytes_sum_ += bytes;
      push(t.landed_s, ev.request, DriverEventKind::landed);
      break;
    }
    case DriverEventKind::landed: {
      prefill_[static_cast<size_t>(t.prefill_instance)].release(ev.request, ev.time_s);
      GeneratedRequest g = t.request;
      g.arrival_s = t.landed_s;
      decode_[static_cast<size_t>(t.decode_instance)].submit(g, t.request.prompt_tokens);
      break;
    }
  }
}

void DisaggRun::merge_pools(DisaggResult& res, const std::vector<SimResult>& pr, const std::vector<SimResult>& dr) {
  // The engines' work, both pools; the prefix cache is the prefill pool's, output cut at
  // max_model_len and the KV peak the decode pool's.
  SimResult& all = tally_.counts;
  for (const std::vector<SimResult>* pool : {&pr, &dr})
    for (const SimResult& r : *pool) {
      all.preemptions += r.preemptions;
      all.steps += r.steps;
      all.events += r.events;
      all.tokens_simulated += r.tokens_simulated;
      all.busy_s += r.busy_s;
    }
  for (const SimResult& r : pr) {
    all.cached_prompt_tokens += r.cached_prompt_tokens;
    // The host KV tier prompts hit: the prefill pool's, one instance's size.
    all.host_tier.capacity_blocks = r.host_tier.capacity_blocks;
    all.host_tier.hit_tokens += r.host_tier.hit_tokens;
    all.host_tier.loads += r.host_tier.loads;
    all.host_tier.load_s += r.host_tier.load_s;
    all.host_tier.stored_blocks += r.host_tier.stored_blocks;
    all.host_tier.evicted_blocks += r.host_tier.evicted_blocks;
  }
  for (const SimResult& r : dr) {
    all.truncated += r.truncated;
    all.spec.decoder_steps += r.spec.decoder_steps;  // decoding runs on the decode pool
    all.spec.decoded_tokens += r.spec.decoded_tokens;
    tally_.peak_blocks = std::max(tally_.peak_blocks, r.peak_blocks);
  }
  const double duration_s = all.completed > 0 ? tally_.last_finish_s - tally_.first_arrival_s : 0;
  res.prefill = pool_metrics(pr, layout_.prefill, duration_s, {});
  res.decode = pool_metrics(dr, layout_.decode, duration_s, decode_wait_);
  std::vector<double> waits;
  for (const Track& t : tracks_)
    if (t.prefill_scheduled_s >= 0) waits.push_back(t.prefill_scheduled_s - t.arrival_s);
  res.prefill.wait_s = sim::percentiles(waits);
}

DisaggResult DisaggRun::result() {
  SimResult& all = tally_.counts;
  if (all.completed + all.rejected != all.arrived)
    throw std::logic_error("disaggregated simulator: requests left unserved at the end");
  std::vector<SimResult> pr, dr;
  for (EngineInstance& in : prefill_) pr.push_back(in.result());
  for (EngineInstance& in : decode_) dr.push_back(in.result());
  DisaggResult res;
  res.link = link_;
  merge_pools(res, pr, dr);
  // The user's view: the decode pool's KV figures, latencies and the verdict over both.
  res.overall = sim::summarize(tally_, workload_.slo, res.decode.num_blocks, res.decode.block_size);
  SimResult& o = res.overall;
  o.peak_kv_utilization = res.decode.peak_kv_utilization;
  o.mean_kv_utilization = res.decode.mean_kv_utilization;
  o.batch_mean = res.decode.batch_mean;
  o.batch_max = res.decode.batch_max;
  res.transfers = static_cast<int64_t>(transfer_.size());
  res.transfer_s = sim::percentiles(transfer_);
  if (res.transfers > 0) res.transfer_bytes_mean = transfer_bytes_sum_ / static_cast<double>(res.transfers);
  return res;
}

}  // namespace

DisaggResult DisaggSimulator::run(const Workload& w, const SimOptions& opt) const {
  const auto wall0 = std::chrono::steady_clock::now();
  if (opt.scheduler == sim::Scheduler::static_batch)
    throw InputError("simulate --disagg", "--scheduler",
                     "continuous or chunked (a static batch has no prefill-only engine)", "static");
  if (opt.num_blocks)
    throw InputError("simulate --disagg", "--num-gpu-blocks-override",
                     "no override across both pools (a pool's own num_blocks sets its KV pool)",
                     std::to_string(*opt.num_blocks));
  const int64_t count = opt.requests.value_or(w.requests);
  if (count < 0) throw InputError("simulate", "requests", "an integer >= 0");
  sim::RequestStream stream(w, opt.seed, opt.rate_scale, count);
  DisaggRun run(*this, *impl_->prefill, *impl_->decode, w, opt, count);
  run.run(stream);
  DisaggResult res = run.result();
  SimResult& all = res.overall;
  all.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  all.tokens_per_wall_s = all.wall_s > 0 ? static_cast<double>(all.tokens_simulated) / all.wall_s : 0;
  return res;
}

DisaggResult simulate_disagg(const ModelConfig& m, const DisaggLayout& layout, const Workload& w, double rate_per_s,
                             int64_t requests, uint64_t seed) {
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s))
    throw InputError("simulate --disagg", "rate_per_s", "a positive number", std::to_string(rate_per_s));
  SimOptions o;
  o.seed = seed;
  if (requests > 0) o.requests = requests;
  o.rate_scale = rate_per_s / w.base_rate_per_s();
  return DisaggSimulator(m, layout).run(w, o);
}

}  // namespace kvplan::cluster
