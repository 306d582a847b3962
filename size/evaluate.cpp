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

Evaluation planner_evaluate(const Candidate& c, const ModelConfig& m, const GpuSpec& g, const Workload& w,
                            const WorkloadShape& shape) {
  // Steady state of a closed loop: N requests in flight, each spending its prefill plus
  // output_mean decode steps of a batch of N; throughput N / (prefill + out x step(N)).
  // N is the least of the KV pool (requests of mean context), max_num_seqs and the
  // largest batch whose decode step meets the TPOT target; 80 % of it is the max rate.
  const ServingOptions& o = c.options;
  const auto ctx = std::max<int64_t>(1, static_cast<int64_t>(std::llround(shape.prompt_mean_tokens + shape.output_mean_tokens)));
  const auto prompt = std::max<int64_t>(1, static_cast<int64_t>(std::llround(shape.prompt_mean_tokens)));
  const Plan p = make_plan(m, g, o, ctx, 1);
  const ModelConfig mw = apply_what_if(m, o);  // StepTimeModel keeps a pointer: must outlive it
  const StepTimeModel stm(mw, g, o);
  Evaluation e;
  e.runs = 1;
  const int64_t max_seqs = o.max_num_seqs * o.dp;  // each data-parallel rank runs its own engine limit
  int64_t n = std::min(p.capacity.max_concurrent_requests, max_seqs);
  Binding binding = p.capacity.max_concurrent_requests <= max_seqs ? Binding::memory : Binding::engine_limit;
  const double tpot = w.slo.tpot_p99_s;
  if (tpot > 0 && n >= 1 && stm.decode(n, ctx).time_s > tpot) {
    int64_t lo = 0, hi = n;  // largest batch within the target: stm.decode(lo) <= tpot
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (stm.decode(mid, ctx).time_s <= tpot ? lo : hi) = mid;
    }
    n = lo;
    binding = Binding::slo;
  }
  const double prefill_s = stm.prefill(prompt).time_s;
  if (n < 1 || (w.slo.ttft_p99_s > 0 && prefill_s > w.slo.ttft_p99_s)) {
    e.binding = Binding::slo;
    e.binding_detail = "planner estimate: no batch meets the SLO";
    return e;
  }
  const StepTime st = stm.decode(n, ctx);
  if (binding == Binding::memory && n == o.max_num_seqs) binding = Binding::engine_limit;
  const double per_request_s = prefill_s + shape.output_mean_tokens * st.time_s;
  e.found = true;
  e.max_rate_per_s = 0.8 * static_cast<double>(n) / per_request_s;
  e.binding = binding;
  e.binding_detail = fmt::format("planner estimate: batch {} ({}), decode step {:.1f} ms", n, to_string(binding),
                                 st.time_s * 1e3);
  e.at_max.arrival_rate_per_s = e.max_rate_per_s;
  e.at_max.throughput_requests_per_s = e.max_rate_per_s;
  e.at_max.output_tokens_per_s = e.max_rate_per_s * shape.output_mean_tokens;
  e.at_max.ttft_p99_s = prefill_s;
  e.at_max.tpot_p99_s = st.time_s;
  e.at_max.e2e_p99_s = per_request_s;
  e.at_max.meets_slo = true;
  e.batch_mean_at_max = static_cast<double>(n);
  return e;
}

}  // namespace kvplan::size
