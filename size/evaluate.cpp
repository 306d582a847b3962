// kvplan size: evaluators. The simulator evaluator runs cluster::find_max_rate with a capped
// number of requests per probe and names the constraint that binds at the max rate;
// the planner evaluator estimates the same from the planner alone (no simulation).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "cluster/max_rate.h"
#include "size/size.h"

namespace kvplan::size {

namespace detail {

namespace {
LoadPoint load_point(const sim::SimResult& r, double arrival_rate_per_s) {
  LoadPoint p;
  p.arrival_rate_per_s = arrival_rate_per_s;
  p.throughput_requests_per_s = r.requests_per_s;
  p.output_tokens_per_s = r.output_tokens_per_s;
  p.ttft_p99_s = r.ttft_s.p99;
  p.tpot_p99_s = r.tpot_s.p99;
  p.e2e_p99_s = r.e2e_s.p99;
  p.meets_slo = r.meets_slo;
  p.busy_fraction = r.duration_s > 0 ? std::min(1.0, r.busy_s / r.duration_s) : 0.0;
  return p;
}

sim::SimOptions sim_options(const Candidate& c, const SizeOptions& opt) {
  sim::SimOptions so;
  so.scheduler = c.scheduler;
  so.seed = opt.seed;
  so.requests = opt.requests_per_probe;
  return so;
}
}  // namespace

LoadPoint probe_rate(const Candidate& c, const ModelConfig& m, const GpuSpec& g, const Workload& w,
                     double arrival_rate_per_s, const SizeOptions& opt) {
  const sim::Simulator s(m, g, c.options);
  sim::SimOptions so = sim_options(c, opt);
  const double base = w.base_rate_per_s();
  so.rate_scale = base > 0 ? arrival_rate_per_s / base : 1.0;
  return load_point(s.run(w, so), arrival_rate_per_s);
}

double max_rate(const Candidate& c, const ModelConfig& m, const GpuSpec& g, const Workload& w,
                const SizeOptions& opt) {
  const sim::Simulator s(m, g, c.options);
  cluster::MaxRateOptions mo;
  mo.requests = opt.requests_per_probe;
  mo.rel_tolerance = opt.rel_tolerance;
  const cluster::MaxRate mr = cluster::find_max_rate(s, w, sim_options(c, opt), mo);
  return mr.found ? mr.max_rate_per_s : 0;
}

}  // namespace detail

Evaluator simulator_evaluator(const SizeOptions& opt) {
  const int64_t requests = opt.requests_per_probe;
  const double tolerance = opt.rel_tolerance;
  const uint64_t seed = opt.seed;
  return [requests, tolerance, seed](const Candidate& c, const ModelConfig& m, const GpuSpec& g,
                                     const Workload& w, const WorkloadShape& shape) {
    const sim::Simulator s(m, g, c.options);
    sim::SimOptions so;
    so.scheduler = c.scheduler;
    so.seed = seed;
    so.requests = requests;
    cluster::MaxRateOptions mo;
    mo.requests = requests;
    mo.rel_tolerance = tolerance;
    const cluster::MaxRate mr = cluster::find_max_rate(s, w, so, mo);
    const sim::SimResult& r = mr.at_max;

    Evaluation e;
    e.found = mr.found;
    e.max_rate_per_s = mr.max_rate_per_s;
    e.runs = mr.runs;
    e.at_max = detail::load_point(r, mr.max_rate_per_s);
    e.preemptions_at_max = r.preemptions;
    e.rejected_at_max = r.rejected;
    e.rejected_max_model_len_at_max = r.rejected_max_model_len;
    e.requests_at_max = r.arrived;
    e.kv_peak_utilization_at_max = r.peak_kv_utilization;
    e.batch_mean_at_max = r.batch_mean;

    // What stops more load at the max rate, in this order: the SLO is missed at any rate;
    // the KV pool fills (preemptions or >= 95 % peak use); the batch reaches
    // max_num_seqs; the engine is mostly idle yet the latency target binds (busy < 50 %);
    // otherwise the decode step at the mean batch is bandwidth- or compute-bound.
    const double busy = r.duration_s > 0 ? r.busy_s / r.duration_s : 0;
    if (!mr.found) {
      e.binding = Binding::slo;
      e.binding_detail = fmt::format("misses the SLO at every rate tried: p99 TTFT {:.2f} s, p99 TPOT {:.1f} ms",
                                     r.ttft_s.p99, r.tpot_s.p99 * 1e3);
    } else if (r.preemptions > 0 || r.peak_kv_utilization >= 0.95) {
      e.binding = Binding::memory;
      e.binding_detail = fmt::format("KV pool peaks at {:.0f} % ({} preemptions)", r.peak_kv_utilization * 100,
                                     r.preemptions);
    } else if (r.batch_max >= c.options.max_num_seqs) {
      e.binding = Binding::engine_limit;
      e.binding_detail = fmt::format("batch reaches --max-num-seqs {}", c.options.max_num_seqs);
    } else if (busy < 0.5) {
      e.binding = Binding::slo;
      e.binding_detail = fmt::format("latency target binds with the GPU busy {:.0f} % of the time", busy * 100);
    } else {
      const auto batch = std::max<int64_t>(1, static_cast<int64_t>(std::llround(r.batch_mean)));
      const auto ctx = static_cast<int64_t>(std::llround(shape.prompt_mean_tokens + shape.output_mean_tokens / 2));
      const StepTime st = s.step_model().decode(batch, std::max<int64_t>(1, ctx));
      e.binding = st.bound == Bound::memory ? Binding::bandwidth : Binding::compute;
      e.binding_detail = fmt::format("decode step at batch {} is {}-bound ({:.1f} ms; busy {:.0f} %)", batch,
                                     to_string(st.bound), st.time_s * 1e3, busy * 100);
    }
    return e;
  };
}

namespace {

//! `seqs` prompts of `prompt` tokens prefilled together in steps of at most the engine's
//! token budget each (chunked prefill; a budget at or above the prompt is one step): each
//! chunk attends to the chunks before it and, under MLA, decompresses them again, as the
//! simulator charges a chunk (sim/compose.cpp). Returns the steps' time.
double prefill_time_s(const StepTimeModel& stm, int64_t prompt, int64_t budget, int64_t seqs) {
  const KvTraffic& kv = stm.kv_traffic();
  const int64_t chunk = std::min(budget, prompt);
  const auto n = static_cast<double>(seqs);
  double t = 0;
  for (int64_t start = 0; start < prompt; start += chunk) {
    const int64_t c = std::min(chunk, prompt - start);
    t += stm.step(seqs * c, n * kv.prefill_pairs(start, c), 0, 0, seqs, n * static_cast<double>(start)).time_s;
  }
  return t;
}

//! The largest share x of the replica's time that prefill can take at batch n, where
//! x = rate x p and p is the replica's prefill time per request. Decode steps run in the
//! rest, so one takes step_s / (1 - x) of wall time: the TPOT target needs
//! x <= 1 - step_s / tpot. The requests in flight (Little's law), rate x (p + out x
//! step_s / (1 - x)), must fit the n the pool and the engine hold: x + a x / (1 - x) <= n
//! with a = out x step_s / p, i.e. x^2 - (1 + a + n) x + n >= 0, whose smaller root
//! 2n / (b + sqrt(b^2 - 4n)), b = 1 + a + n, lies in (0, 1).
struct PrefillShare {
  double by_tpot = 1, by_batch = 1;
  double x() const { return std::min(by_tpot, by_batch); }
};
PrefillShare prefill_share(double step_s, double tpot_s, double prefill_s, double output_tokens, int64_t n) {
  PrefillShare s;
  if (tpot_s > 0) s.by_tpot = 1 - step_s / tpot_s;
  const double a = output_tokens * step_s / prefill_s;
  const double b = 1 + a + static_cast<double>(n);
  s.by_batch = 2 * static_cast<double>(n) / (b + std::sqrt(b * b - 4 * static_cast<double>(n)));
  return s;
}

}  // namespace

Evaluation planner_evaluate(const Candidate& c, const ModelConfig& m, const GpuSpec& g, const Workload& w,
                            const WorkloadShape& shape) {
  // Steady state: the replica's time is shared. Each request's prefill takes its part of
  // it (a 120,000-token prompt is compute-bound: no other prompt's prefill runs beside it
  // for free), and the decode steps of a batch of n run in the rest (prefill_share). n is
  // at most the KV pool (requests of mean context) and max_num_seqs; of the n up to that,
  // the one that allows the most prefill share gives the rate; 80 % of it is the max rate.
  const ServingOptions& o = c.options;
  const auto ctx = std::max<int64_t>(1, static_cast<int64_t>(std::llround(shape.prompt_mean_tokens + shape.output_mean_tokens)));
  const auto prompt = std::max<int64_t>(1, static_cast<int64_t>(std::llround(shape.prompt_mean_tokens)));
  const Plan p = make_plan(m, g, o, ctx, 1);
  const ModelConfig mw = apply_what_if(m, o);  // StepTimeModel keeps a pointer: must outlive it
  const StepTimeModel stm(mw, g, o);
  Evaluation e;
  e.runs = 1;
  const int64_t max_seqs = o.max_num_seqs * o.dp;  // each data-parallel rank runs its own engine limit
  const int64_t n_cap = std::min(p.capacity.max_concurrent_requests, max_seqs);
  // TTFT: one prompt on each data-parallel rank. The replica's time per request: under load
  // each rank's steps take as many queued prompts as its token budget and max_num_seqs
  // allow (one, chunked, when the prompt is longer than the budget), sharing the weights
  // read; a 120,000-token prompt is compute-bound whichever way.
  const sim::EngineLimits limits = sim::engine_limits(m, g, o, c.scheduler);
  const int64_t budget = std::max<int64_t>(1, limits.max_num_batched_tokens);
  const int64_t packed = std::clamp<int64_t>(budget / prompt, 1, std::max<int64_t>(1, limits.max_num_seqs));
  const double ttft_s = prefill_time_s(stm, prompt, budget, o.dp);
  const double prefill_s =
      prefill_time_s(stm, prompt, budget, o.dp * packed) / static_cast<double>(o.dp * packed);
  const double tpot = w.slo.tpot_p99_s;
  const double out = shape.output_mean_tokens;
  const auto share = [&](int64_t n) { return prefill_share(stm.decode(n, ctx).time_s, tpot, prefill_s, out, n); };
  if (n_cap < 1 || !(share(1).by_tpot > 0) || (w.slo.ttft_p99_s > 0 && ttft_s > w.slo.ttft_p99_s)) {
    e.binding = Binding::slo;
    e.binding_detail = "planner estimate: no batch meets the SLO";
    return e;
  }
  // by_tpot falls with n and by_batch grows: the best n is where they cross, the largest
  // n whose by_batch is still at most its by_tpot, or the one after it.
  int64_t n = n_cap;
  if (const PrefillShare top = share(n_cap); top.by_batch > top.by_tpot) {
    int64_t lo = 1, hi = n_cap;  // by_batch <= by_tpot at lo, by_batch > by_tpot at hi
    if (const PrefillShare one = share(1); one.by_batch > one.by_tpot) {
      hi = 1;
    } else {
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        const PrefillShare sm = share(mid);
        (sm.by_batch <= sm.by_tpot ? lo : hi) = mid;
      }
    }
    n = share(lo).x() >= share(hi).x() ? lo : hi;
  }
  const PrefillShare best = share(n);
  const double x = best.x();
  Binding binding = Binding::slo;
  if (best.by_batch <= best.by_tpot && n == n_cap)
    binding = p.capacity.max_concurrent_requests <= max_seqs && n != o.max_num_seqs ? Binding::memory : Binding::engine_limit;
  const StepTime st = stm.decode(n, ctx);
  e.found = true;
  e.max_rate_per_s = 0.8 * x / prefill_s;
  const double prefill_busy = e.max_rate_per_s * prefill_s;  // the share at the max rate
  const double tpot_s = st.time_s / (1 - prefill_busy);
  e.binding = binding;
  e.binding_detail = fmt::format("planner estimate: batch {} ({}), decode step {:.1f} ms, prefill {:.2f} s a request",
                                 n, to_string(binding), st.time_s * 1e3, prefill_s);
  e.at_max.arrival_rate_per_s = e.max_rate_per_s;
  e.at_max.throughput_requests_per_s = e.max_rate_per_s;
  e.at_max.output_tokens_per_s = e.max_rate_per_s * out;
  e.at_max.ttft_p99_s = ttft_s;
  e.at_max.tpot_p99_s = tpot_s;
  e.at_max.e2e_p99_s = ttft_s + out * tpot_s;
  e.at_max.meets_slo = true;
  e.batch_mean_at_max = static_cast<double>(n);
  return e;
}

}  // namespace kvplan::size
