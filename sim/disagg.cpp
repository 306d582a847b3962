// Disaggregated prefill/decode: the driver that runs the two pools' engines (sim.h
// Instance) on one clock and moves each request's KV between them. See disagg.h.
#include "sim/disagg.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "planner/planner.h"

namespace kvplan::sim {

std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::pcie: return "pcie";
    case LinkKind::rdma: return "rdma";
    case LinkKind::ethernet: return "ethernet";
  }
  return "ethernet";
}

std::optional<LinkKind> parse_link(std::string_view s) {
  if (s == "nvlink") return LinkKind::nvlink;
  if (s == "pcie") return LinkKind::pcie;
  if (s == "rdma") return LinkKind::rdma;
  if (s == "ethernet") return LinkKind::ethernet;
  return std::nullopt;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::optional<KvLink>& link_of(const KvLinks& l, LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return l.nvlink;
    case LinkKind::pcie: return l.pcie;
    case LinkKind::rdma: return l.rdma;
    case LinkKind::ethernet: return l.ethernet;
  }
  return l.ethernet;
}

const KvLinks& links_of(const GpuSpec& g) {
  if (!g.kv_links)
    throw InputError("GPU " + g.name, "kv_links",
                     "KV transfer links (gpus_per_node and nvlink/pcie/rdma/ethernet figures; docs/formats.md "
                     "\"GPU file\") to simulate disaggregated serving",
                     "nothing");
  return *g.kv_links;
}

bool has(const GpuSpec& g, LinkKind k) { return link_of(links_of(g), k).has_value(); }

int64_t pool_gpus(const PoolSpec& p) { return p.instances * p.options.tp * p.options.pp; }

// Nearest rank, as sim.cpp reports its percentiles (the smallest value with at least p of
// the values at or below it).
Percentiles nearest_rank(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  const auto at = [&](double q) {
    auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

}  // namespace

KvTransferLink choose_link(const DisaggLayout& l) {
  const GpuSpec& gp = l.prefill.gpu;
  const GpuSpec& gd = l.decode.gpu;
  const KvLinks& lp = links_of(gp);
  const KvLinks& ld = links_of(gd);
  KvTransferLink out;
  const int64_t gpus = pool_gpus(l.prefill) + pool_gpus(l.decode);
  const bool fits_one_node = gp.name == gd.name && gpus <= lp.gpus_per_node;
  if (l.link) {
    out.kind = *l.link;
    out.why = "chosen (--kv-link)";
  } else if (fits_one_node && (lp.nvlink || lp.pcie)) {
    out.kind = lp.nvlink ? LinkKind::nvlink : LinkKind::pcie;
    out.why = "both pools' " + std::to_string(gpus) + " " + gp.name + " GPUs fit one node of " +
              std::to_string(lp.gpus_per_node);
  } else {
    out.kind = lp.rdma && ld.rdma ? LinkKind::rdma : LinkKind::ethernet;
    out.why = gp.name != gd.name ? "the pools use different GPU types, so different nodes"
              : fits_one_node    ? "one node, but " + gp.name + " has no GPU-to-GPU link in it"
                                 : "the pools' " + std::to_string(gpus) + " GPUs exceed one node of " +
                                    std::to_string(lp.gpus_per_node);
    if (out.kind == LinkKind::ethernet) out.why += "; ethernet: not both GPU types have an rdma figure";
  }
  out.same_node = out.kind == LinkKind::nvlink || out.kind == LinkKind::pcie;
  for (const GpuSpec* g : {&gp, &gd})
    if (!has(*g, out.kind))
      throw InputError("GPU " + g->name, "kv_links." + std::string(to_string(out.kind)),
                       "the figures of the link the KV crosses ({bytes_per_s, latency_s})", "nothing");
  const KvLink& a = *link_of(lp, out.kind);
  const KvLink& b = *link_of(ld, out.kind);
  // Each GPU of an instance (TP x PP of them) moves its own shard over its own share of
  // the link; the slower side sets the pace.
  out.bytes_per_s =
      std::min(static_cast<double>(l.prefill.options.tp * l.prefill.options.pp) * a.bytes_per_s,
               static_cast<double>(l.decode.options.tp * l.decode.options.pp) * b.bytes_per_s);
  out.latency_s = std::max(a.latency_s, b.latency_s);
  return out;
}

// ------------------------------------------------------------------------- simulator

struct DisaggSimulator::Impl {
  DisaggLayout layout;
  std::shared_ptr<const ModelConfig> decode_model;  // with the decode pool's what-ifs
  std::unique_ptr<Simulator> prefill, decode;
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
  s.prefill = std::make_unique<Simulator>(m, layout.prefill.gpu, layout.prefill.options);
  s.decode = std::make_unique<Simulator>(m, layout.decode.gpu, layout.decode.options);
  s.decode_model = std::make_shared<const ModelConfig>(apply_what_if(m, layout.decode.options));
  s.link = choose_link(layout);
}

DisaggSimulator::~DisaggSimulator() = default;

const Simulator& DisaggSimulator::prefill_engine() const { return *impl_->prefill; }
const Simulator& DisaggSimulator::decode_engine() const { return *impl_->decode; }
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
  int64_t prompt = 0;
  int64_t output = 0;  // after the decode instance's max_model_len cap
  uint64_t group_key = 0, prompt_key = 0;
  int64_t shared_tokens = 0;
  int32_t prefill_instance = -1;
  int32_t decode_instance = -1;
};

//! prefill_done: route to a decode instance, start the transfer; landed: the KV is in;
//! decode_done: the request left its decode instance (the router's count drops).
enum class EventKind : uint8_t { prefill_done, landed, decode_done };

struct Event {
  double time_s;
  uint64_t seq;
  int64_t request;
  EventKind kind;
  bool operator>(const Event& e) const { return time_s != e.time_s ? time_s > e.time_s : seq > e.seq; }
};

PoolMetrics pool_metrics(std::vector<SimResult>& rs, const PoolSpec& spec, double duration_s,
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
  p.wait_s = nearest_rank(std::move(waits));
  return p;
}

}  // namespace

DisaggResult DisaggSimulator::run(const Workload& w, const SimOptions& opt) const {
  const auto wall0 = std::chrono::steady_clock::now();
  const Impl& s = *impl_;
  if (opt.scheduler == Scheduler::static_batch)
    throw InputError("simulate --disagg", "--scheduler", "continuous or chunked (a static batch has no prefill-only engine)",
                     "static");
  if (opt.num_blocks)
    throw InputError("simulate --disagg", "--num-gpu-blocks-override",
                     "no override across both pools (a pool's own num_blocks sets its KV pool)",
                     std::to_string(*opt.num_blocks));
  const int64_t count = opt.requests.value_or(w.requests);
  if (count < 0) throw InputError("simulate", "requests", "an integer >= 0");
  const size_t n = static_cast<size_t>(count);
  std::vector<Track> tr(n);
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  uint64_t seq = 0;
  DisaggResult res;
  res.link = s.link;
  SimResult& all = res.overall;

  const ServingOptions& dopts = s.layout.decode.options;
  const double overhead_s = dopts.calibration.request_overhead_s;
  const double lag_steps = dopts.calibration.output_lag_steps;
  int64_t rejected_mml = 0, rejected_pool = 0;
  std::vector<double> ttft, tpot, e2e, queue, decode_wait, transfer;
  std::vector<double> last_step_s(static_cast<size_t>(s.layout.decode.instances), 0.0);
  double transfer_bytes_sum = 0;
  int64_t good = 0;
  double first_arrival_s = 0, last_finish_s = 0;
  double queue_first_half_s = 0, queue_last_quarter_s = 0;
  int64_t n_first_half = 0, n_last_quarter = 0;

  const auto rejected = [&](const RequestEvent& ev, int64_t max_model_len) {
    ++all.rejected;
    ++(ev.prompt_tokens >= max_model_len ? rejected_mml : rejected_pool);
  };
  // Least outstanding, as the router sees it: requests routed to an instance and not yet
  // past it at the current time (an instance's own count runs ahead to its step's end).
  std::vector<int64_t> routed_prefill(static_cast<size_t>(s.layout.prefill.instances), 0);
  std::vector<int64_t> routed_decode(static_cast<size_t>(s.layout.decode.instances), 0);
  const auto least = [](const std::vector<int64_t>& routed) {
    return static_cast<size_t>(std::min_element(routed.begin(), routed.end()) - routed.begin());
  };
  std::vector<Instance> prefill, decode;
  for (int64_t i = 0; i < s.layout.prefill.instances; ++i) {
    SimOptions o = opt;
    o.on_step = nullptr;
    o.num_blocks = s.layout.prefill.num_blocks;
    o.on_request = [&, k = static_cast<size_t>(i), mml = s.prefill->max_model_len()](const RequestEvent& ev) {
      Track& t = tr[static_cast<size_t>(ev.request)];
      switch (ev.kind) {
        case RequestEventKind::scheduled:
          if (t.prefill_scheduled_s < 0) t.prefill_scheduled_s = ev.time_s;
          break;
        case RequestEventKind::rejected:  // at its arrival
          rejected(ev, mml);
          --routed_prefill[k];
          break;
        case RequestEventKind::finished:
          events.push(Event{ev.time_s, seq++, ev.request, EventKind::prefill_done});
          break;
        default: break;
      }
    };
    prefill.emplace_back(*s.prefill, w, o, count, true);
  }
  for (int64_t i = 0; i < s.layout.decode.instances; ++i) {
    SimOptions o = opt;
    o.num_blocks = s.layout.decode.num_blocks;
    const auto k = static_cast<size_t>(i);
    // A token reaches the user output_lag_steps x its step's duration after the step
    // (sim.h); the step's duration comes before its events.
    o.on_step = nullptr;
    if (lag_steps > 0) o.on_step = [&, k](const StepSample& st) { last_step_s[k] = st.duration_s; };
    o.on_request = [&, k, mml = s.decode->max_model_len()](const RequestEvent& ev) {
      Track& t = tr[static_cast<size_t>(ev.request)];
      switch (ev.kind) {
        case RequestEventKind::scheduled:
          if (t.decode_scheduled_s < 0) {
            t.decode_scheduled_s = ev.time_s;
            decode_wait.push_back(ev.time_s - t.landed_s);
          }
          break;
        case RequestEventKind::rejected:  // when its KV lands
          rejected(ev, mml);
          --routed_decode[k];
          break;
        case RequestEventKind::first_token: t.first_token_s = ev.time_s + lag_steps * last_step_s[k]; break;
        case RequestEventKind::finished: {
          events.push(Event{ev.time_s, seq++, ev.request, EventKind::decode_done});
          ++all.completed;
          t.output = ev.output_tokens;
          all.output_tokens += ev.output_tokens;
          all.prompt_tokens += ev.prompt_tokens;
          last_finish_s = std::max(last_finish_s, ev.time_s);
          const double t_ttft = t.first_token_s - t.arrival_s + overhead_s;
          ttft.push_back(t_ttft);
          e2e.push_back(ev.time_s + lag_steps * last_step_s[k] - t.arrival_s + overhead_s);
          const double queued = t.prefill_scheduled_s - t.arrival_s;
          queue.push_back(queued);
          if (2 * ev.request < count) {
            queue_first_half_s += queued;
            ++n_first_half;
          } else if (4 * ev.request >= 3 * count) {
            queue_last_quarter_s += queued;
            ++n_last_quarter;
          }
          bool ok = w.slo.ttft_p99_s <= 0 || t_ttft <= w.slo.ttft_p99_s;
          if (ev.output_tokens > 1) {
            const double t_tpot = (ev.time_s + lag_steps * last_step_s[k] - t.first_token_s) /
                                  static_cast<double>(ev.output_tokens - 1);
            tpot.push_back(t_tpot);
            ok = ok && (w.slo.tpot_p99_s <= 0 || t_tpot <= w.slo.tpot_p99_s);
          }
          if (ok) ++good;
          break;
        }
        default: break;
      }
    };
    decode.emplace_back(*s.decode, w, o, count);
  }
  // Transfers out of one prefill instance queue for its links.
  std::vector<double> link_free_s(prefill.size(), 0.0);

  detail::RequestStream stream(w, opt.seed, opt.rate_scale, count);
  std::optional<detail::GeneratedRequest> next = stream.next();
  if (next) first_arrival_s = next->arrival_s;
  for (;;) {
    const double t_arrival = next ? next->arrival_s : kInf;
    const double t_event = events.empty() ? kInf : events.top().time_s;
    double t_step = kInf;
    Instance* stepper = nullptr;
    for (auto* pool : {&prefill, &decode})
      for (Instance& in : *pool)
        if (const double t = in.next_step_s(); t < t_step) {
          t_step = t;
          stepper = &in;
        }
    if (t_arrival == kInf && t_event == kInf && t_step == kInf) break;
    if (t_arrival <= t_event && t_arrival <= t_step) {
      ++all.arrived;
      Track& t = tr[static_cast<size_t>(next->index)];
      t.arrival_s = next->arrival_s;
      t.prompt = std::max<int64_t>(next->prompt_tokens, 1);
      t.output = std::max<int64_t>(next->output_tokens, 1);
      t.group_key = next->group_key;
      t.prompt_key = next->prompt_key;
      t.shared_tokens = next->shared_tokens;
      const size_t i = least(routed_prefill);
      ++routed_prefill[i];
      t.prefill_instance = static_cast<int32_t>(i);
      detail::GeneratedRequest g = *next;
      g.output_tokens = 1;  // the prefill instance samples one token, which the proxy drops
      prefill[i].submit(g);
      next = stream.next();
    } else if (t_event <= t_step) {
      const Event ev = events.top();
      events.pop();
      Track& t = tr[static_cast<size_t>(ev.request)];
      if (ev.kind == EventKind::decode_done) {
        --routed_decode[static_cast<size_t>(t.decode_instance)];
      } else if (ev.kind == EventKind::prefill_done) {
        const auto p = static_cast<size_t>(t.prefill_instance);
        --routed_prefill[p];
        const size_t d = least(routed_decode);
        ++routed_decode[d];
        t.decode_instance = static_cast<int32_t>(d);
        const auto bytes = static_cast<double>(transfer_bytes(t.prompt));
        const double start = std::max(ev.time_s, link_free_s[p]);
        link_free_s[p] = start + bytes / s.link.bytes_per_s;
        t.landed_s = link_free_s[p] + s.link.latency_s;
        transfer.push_back(t.landed_s - ev.time_s);
        transfer_bytes_sum += bytes;
        events.push(Event{t.landed_s, seq++, ev.request, EventKind::landed});
      } else {
        const auto d = static_cast<size_t>(t.decode_instance);
        prefill[static_cast<size_t>(t.prefill_instance)].release(ev.request, ev.time_s);
        detail::GeneratedRequest g;
        g.index = ev.request;
        g.arrival_s = t.landed_s;
        g.prompt_tokens = t.prompt;
        g.output_tokens = t.output;
        g.group_key = t.group_key;
        g.prompt_key = t.prompt_key;
        g.shared_tokens = t.shared_tokens;
        decode[d].submit(g, t.prompt);
      }
    } else {
      stepper->step();
    }
  }

  if (all.completed + all.rejected != all.arrived)
    throw std::logic_error("disaggregated simulator: requests left unserved at the end");
  std::vector<SimResult> pr, dr;
  for (Instance& in : prefill) pr.push_back(in.result());
  for (Instance& in : decode) dr.push_back(in.result());
  all.slo = w.slo;
  all.rejected_max_model_len = rejected_mml;
  all.rejected_pool = rejected_pool;
  all.duration_s = all.completed > 0 ? last_finish_s - first_arrival_s : 0;
  res.prefill = pool_metrics(pr, s.layout.prefill, all.duration_s, {});
  res.decode = pool_metrics(dr, s.layout.decode, all.duration_s, decode_wait);
  {
    std::vector<double> waits;
    for (const Track& t : tr)
      if (t.prefill_scheduled_s >= 0) waits.push_back(t.prefill_scheduled_s - t.arrival_s);
    res.prefill.wait_s = nearest_rank(std::move(waits));
  }
  for (const SimResult& r : pr) {
    all.preemptions += r.preemptions;
    all.cached_prompt_tokens += r.cached_prompt_tokens;
    all.steps += r.steps;
    all.events += r.events;
    all.tokens_simulated += r.tokens_simulated;
    all.busy_s += r.busy_s;
  }
  for (const SimResult& r : dr) {
    all.preemptions += r.preemptions;
    all.truncated += r.truncated;
    all.steps += r.steps;
    all.events += r.events;
    all.tokens_simulated += r.tokens_simulated;
    all.busy_s += r.busy_s;
    all.peak_blocks = std::max(all.peak_blocks, r.peak_blocks);
  }
  all.num_blocks = res.decode.num_blocks;
  all.block_size = res.decode.block_size;
  all.peak_kv_utilization = res.decode.peak_kv_utilization;
  all.mean_kv_utilization = res.decode.mean_kv_utilization;
  all.batch_mean = res.decode.batch_mean;
  all.batch_max = res.decode.batch_max;
  if (all.duration_s > 0) {
    all.requests_per_s = static_cast<double>(all.completed) / all.duration_s;
    all.output_tokens_per_s = static_cast<double>(all.output_tokens) / all.duration_s;
    all.prompt_tokens_per_s = static_cast<double>(all.prompt_tokens) / all.duration_s;
    all.goodput_requests_per_s = static_cast<double>(good) / all.duration_s;
  }
  const int64_t judged = all.completed + all.rejected;
  all.slo_attainment = judged > 0 ? static_cast<double>(good) / static_cast<double>(judged) : 0;
  const auto p99_failing = [&](const std::vector<double>& v) {
    std::vector<double> with = v;
    with.insert(with.end(), static_cast<size_t>(all.rejected), kInf);
    return nearest_rank(std::move(with)).p99;
  };
  all.meets_slo = all.completed > 0 && w.slo.given() &&
                  (w.slo.ttft_p99_s <= 0 || p99_failing(ttft) <= w.slo.ttft_p99_s) &&
                  (w.slo.tpot_p99_s <= 0 || p99_failing(tpot) <= w.slo.tpot_p99_s);
  all.ttft_s = nearest_rank(std::move(ttft));
  all.tpot_s = nearest_rank(std::move(tpot));
  all.e2e_s = nearest_rank(std::move(e2e));
  all.queue_s = nearest_rank(std::move(queue));
  if (n_first_half > 0 && n_last_quarter > 0)
    all.queue_growth_s = queue_last_quarter_s / static_cast<double>(n_last_quarter) -
                         queue_first_half_s / static_cast<double>(n_first_half);
  res.transfers = static_cast<int64_t>(transfer.size());
  res.transfer_s = nearest_rank(std::move(transfer));
  if (res.transfers > 0) res.transfer_bytes_mean = transfer_bytes_sum / static_cast<double>(res.transfers);
  all.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  all.tokens_per_wall_s = all.wall_s > 0 ? static_cast<double>(all.tokens_simulated) / all.wall_s : 0;
  return res;
}

MaxRate find_max_rate(const DisaggSimulator& s, const Workload& w, const SimOptions& opt, const MaxRateOptions& mo) {
  return find_max_rate([&s](const Workload& wl, const SimOptions& o) { return s.run(wl, o).overall; }, w, opt, mo);
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

}  // namespace kvplan::sim
