// kvplan size: enumeration, pruning, pricing, Pareto frontier and the parallel driver.
// The evaluators (simulator, planner-only) live in evaluate.cpp.
#include "size/size.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <fmt/format.h>
#include <mutex>

#include "planner/support.h"
#include "planner/units.h"
#include "size/disagg_search.h"
#include "size/parallel_for.h"

namespace kvplan::size {

namespace detail {
LoadPoint probe_rate(const Candidate& c, const ModelConfig& m, const GpuSpec& g,
                     const Workload& w, double arrival_rate_per_s, const SizeOptions& opt);
//! find_max_rate's answer for one candidate with opt's seed and probe size (0: none).
double max_rate(const Candidate& c, const ModelConfig& m, const GpuSpec& g, const Workload& w,
                const SizeOptions& opt);
}  // namespace detail

std::vector<KvOption> default_kv_options() {
  return {{std::nullopt, KvQuant::raw}, {DType::fp8, KvQuant::raw}, {DType::int4, KvQuant::kvquant},
          {DType::int2, KvQuant::kvquant}};
}

std::vector<WeightQuant> default_weight_options() {
  return {WeightQuant::none, WeightQuant::fp8, WeightQuant::awq};
}

std::vector<int64_t> default_tp_options() { return {1, 2, 4, 8}; }

std::vector<Candidate> enumerate(const SearchSpace& space) {
  std::vector<Candidate> out;
  // An empty override list keeps the base option's own value: one pass with nullopt.
  const auto or_keep = [](const auto& list) {
    using T = typename std::decay_t<decltype(list)>::value_type;
    std::vector<std::optional<T>> v(list.begin(), list.end());
    if (v.empty()) v.emplace_back(std::nullopt);
    return v;
  };
  const auto tps = or_keep(space.tp);
  const auto pps = or_keep(space.pp);
  const auto weights = or_keep(space.weights);
  const auto kvs = or_keep(space.kv);
  std::vector<sim::Scheduler> schedulers = space.schedulers;
  if (schedulers.empty()) schedulers.push_back(sim::Scheduler::automatic);
  for (size_t mi = 0; mi < space.models.size(); ++mi)
    for (size_t gi = 0; gi < space.gpus.size(); ++gi)
      for (size_t bi = 0; bi < space.base.size(); ++bi)
        for (const auto& tp : tps)
          for (const auto& pp : pps)
            for (const auto& wq : weights)
              for (const auto& kv : kvs) {
                ServingOptions o = space.base[bi];
                if (tp) o.tp = *tp;
                if (pp) o.pp = *pp;
                if (wq) o.quantization = *wq;
                if (kv) {
                  o.kv_cache_dtype = kv->dtype;
                  o.kv_quant = kv->quant;
                }
                const std::vector<int64_t> dcps = space.dcp_auto ? dcp_sizes(space.models[mi], o) : std::vector{o.dcp};
                for (const int64_t dcp : dcps) {
                  std::vector<sim::Scheduler> seen;  // `auto` and an explicit name may resolve alike
                  for (const auto s : schedulers) {
                    Candidate c;
                    c.index = static_cast<int64_t>(out.size());
                    c.model = static_cast<int64_t>(mi);
                    c.gpu = static_cast<int64_t>(gi);
                    c.base = static_cast<int64_t>(bi);
                    c.options = o;
                    c.options.dcp = dcp;
                    // `auto`: the scheduler of this candidate's engine release (sim.h).
                    c.scheduler = sim::resolve_scheduler(s, space.models[mi], space.gpus[gi], c.options).scheduler;
                    if (std::find(seen.begin(), seen.end(), c.scheduler) != seen.end()) continue;
                    seen.push_back(c.scheduler);
                    out.push_back(std::move(c));
                  }
                }
              }
  return out;
}

WorkloadShape workload_shape(const Workload& w, uint64_t seed) {
  const int64_t n = std::clamp<int64_t>(w.requests, 1, 20000);
  sim::RequestStream stream(w, seed, 1.0, n);
  std::vector<int64_t> prompts, contexts;
  double prompt_sum = 0, output_sum = 0;
  while (auto r = stream.next()) {
    prompts.push_back(r->prompt_tokens);
    contexts.push_back(r->prompt_tokens + r->output_tokens);
    prompt_sum += static_cast<double>(r->prompt_tokens);
    output_sum += static_cast<double>(r->output_tokens);
  }
  WorkloadShape s;
  s.samples = static_cast<int64_t>(prompts.size());
  s.rate_per_s = w.base_rate_per_s();
  if (prompts.empty()) return s;
  s.prompt_p99_tokens = sim::nearest_rank(prompts, 0.99);
  s.context_p99_tokens = sim::nearest_rank(contexts, 0.99);
  s.prompt_mean_tokens = prompt_sum / static_cast<double>(s.samples);
  s.output_mean_tokens = output_sum / static_cast<double>(s.samples);
  return s;
}

std::optional<std::string> prune_reason(const Plan& p, const Slo& slo) {
  const MemoryBudget& b = p.memory;
  if (b.weights_bytes > b.usable_bytes)
    return fmt::format("memory: weights {:.1f} GB per GPU exceed the usable {:.1f} GB",
                       to_gb(static_cast<double>(b.weights_bytes)), to_gb(static_cast<double>(b.usable_bytes)));
  if (p.capacity.max_concurrent_requests < 1)
    return fmt::format("memory: the KV pool ({:.2f} GB per GPU) holds no request of the p99 context ({} tokens)",
                       to_gb(static_cast<double>(b.kv_budget_bytes)), p.context_tokens);
  if (slo.tpot_p99_s > 0 && p.decode_time.time_s > slo.tpot_p99_s)
    return fmt::format("SLO: one decode step at batch 1 takes {:.1f} ms > TPOT target {:.1f} ms",
                       p.decode_time.time_s * 1e3, slo.tpot_p99_s * 1e3);
  if (slo.ttft_p99_s > 0 && p.prefill_time.time_s > slo.ttft_p99_s)
    return fmt::format("SLO: prefill of the p99 prompt alone takes {:.2f} s > TTFT target {:.2f} s",
                       p.prefill_time.time_s, slo.ttft_p99_s);
  return std::nullopt;
}

int64_t replicas_for(double rate_per_s, double max_rate_per_s) {
  if (!(max_rate_per_s > 0)) throw InputError("size", "max_rate_per_s", "a positive rate", std::to_string(max_rate_per_s));
  // A relative epsilon keeps 11 / 5.5 at exactly 2 despite rounding in the division.
  const double ratio = rate_per_s / max_rate_per_s;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(ratio * (1 - 1e-12))));
}

double cost_per_hour(int64_t replicas, const ServingOptions& o, double price_per_gpu_hour) {
  return static_cast<double>(replicas * o.gpus_per_replica()) * price_per_gpu_hour;
}

double cost_per_million_output_tokens(double cost_per_hour_usd, double rate_per_s, double output_mean_tokens) {
  const double tokens_per_hour = rate_per_s * output_mean_tokens * 3600.0;
  return tokens_per_hour > 0 ? cost_per_hour_usd / tokens_per_hour * 1e6 : 0;
}

double cost_per_million_input_tokens(double cost_per_hour_usd, double rate_per_s, double prompt_mean_tokens) {
  const double tokens_per_hour = rate_per_s * prompt_mean_tokens * 3600.0;
  return tokens_per_hour > 0 ? cost_per_hour_usd / tokens_per_hour * 1e6 : 0;
}

double cost_per_request(double cost_per_hour_usd, double rate_per_s) {
  const double per_hour = rate_per_s * 3600.0;
  return per_hour > 0 ? cost_per_hour_usd / per_hour : 0;
}

void recommend(SizeResult& r) {
  r.recommendations.clear();
  r.unmet.clear();
  std::vector<std::string> models;
  for (const auto& o : r.options)
    if (std::find(models.begin(), models.end(), o.model) == models.end()) models.push_back(o.model);
  for (size_t i = 0; i < r.options.size(); ++i) {
    const Deployment& o = r.options[i];
    if (!o.meets_slo) continue;
    if (std::any_of(r.recommendations.begin(), r.recommendations.end(),
                    [&](const Recommendation& x) { return x.model == o.model; }))
      continue;
    Recommendation rec;
    rec.model = o.model;
    rec.option = i;
    rec.candidate_index = o.candidate.index;
    if (o.changes_quality)
      for (size_t j = i + 1; j < r.options.size(); ++j)
        if (r.options[j].meets_slo && r.options[j].model == o.model && !r.options[j].changes_quality) {
          rec.lossless = j;
          break;
        }
    const auto& so = o.candidate.options;
    rec.utilization = r.shape.rate_per_s / (static_cast<double>(o.replicas) * o.eval.max_rate_per_s);
    rec.replicas_n_plus_one = replicas_for(r.shape.rate_per_s, o.eval.max_rate_per_s) + 1;
    if (o.cost_per_hour_usd)
      rec.cost_per_hour_n_plus_one_usd = *o.cost_per_hour_usd / static_cast<double>(o.replicas) *
                                         static_cast<double>(rec.replicas_n_plus_one);
    rec.binds_on_default_max_num_seqs = o.eval.binding == Binding::engine_limit && !so.max_num_seqs_given;
    r.recommendations.push_back(rec);
  }
  // Models without one: say why, from their evaluated (else pruned) options.
  for (const auto& m : models) {
    if (std::any_of(r.recommendations.begin(), r.recommendations.end(),
                    [&](const Recommendation& x) { return x.model == m; }))
      continue;
    Unmet u;
    u.model = m;
    for (const auto& o : r.options) {
      if (o.model != m) continue;
      // Options skipped because rejections alone fail them carry those rejections.
      if (!o.pruned) ++u.evaluated;
      if (o.eval.rejected_max_model_len_at_max > u.rejected_max_model_len) {
        u.rejected_max_model_len = o.eval.rejected_max_model_len_at_max;
        u.requests = o.eval.requests_at_max;
      }
    }
    r.unmet.push_back(u);
  }
}

void mark_pareto(std::vector<Deployment>& options) {
  const auto eligible = [](const Deployment& o) { return o.meets_slo && o.cost_per_hour_usd.has_value(); };
  for (auto& a : options) {
    a.pareto = false;
    if (!eligible(a)) continue;
    bool dominated = false;
    for (const auto& b : options) {
      if (&a == &b || !eligible(b) || a.candidate.model != b.candidate.model) continue;
      const double ca = *a.cost_per_hour_usd, cb = *b.cost_per_hour_usd;
      const double la = a.operating.e2e_p99_s, lb = b.operating.e2e_p99_s;
      if (cb <= ca && lb <= la && (cb < ca || lb < la)) {
        dominated = true;
        break;
      }
    }
    a.pareto = !dominated;
  }
}

std::string quality_note(const ServingOptions& o, const ModelConfig& m) {
  std::vector<std::string> notes;
  const DType kv = o.kv_dtype(m);
  if (kv == DType::int4) {
    if (o.kv_quant == KvQuant::kvquant)
      notes.push_back("KV int4 (KVQuant-4bit-1%): LLaMA-7B wikitext-2 ppl 5.68 -> 5.69 (KVQuant Table 18)");
    else if (o.kv_quant == KvQuant::kivi)
      notes.push_back("KV int4 (KIVI, g32, 128 fp16 tokens): near fp16 in KIVI's tasks; uniform int4 KV: LLaMA-7B "
                      "wikitext-2 ppl 5.68 -> 5.98 (KVQuant Table 18)");
    else
      notes.push_back("KV int4 (uniform): LLaMA-7B wikitext-2 ppl 5.68 -> 5.98, LLaMA-65B 3.53 -> 3.73 (KVQuant Table 18)");
  } else if (kv == DType::int2) {
    if (o.kv_quant == KvQuant::kvquant)
      notes.push_back("KV int2 (KVQuant-2bit-1%): LLaMA-7B wikitext-2 ppl 5.68 -> 6.01 (KVQuant Table 18)");
    else if (o.kv_quant == KvQuant::kivi)
      notes.push_back("KV int2 (KIVI-2, g32, 128 fp16 tokens): KIVI reports small task-accuracy losses; uniform int2 "
                      "KV without KIVI's per-channel K breaks the model (LLaMA-7B ppl 5.68 -> 11779, KVQuant Table 18)");
    else
      notes.push_back("KV int2 (uniform): LLaMA-7B wikitext-2 ppl 5.68 -> 11779: unusable (KVQuant Table 18)");
  }
  if (o.quantization == WeightQuant::awq)
    notes.push_back("weights int4 (AWQ g128): Llama-2-70B wikitext-2 ppl 3.32 -> 3.41, Llama-2-7B 5.47 -> 5.60 "
                    "(AWQ, Lin et al. 2023, arXiv 2306.00978)");
  else if (o.quantization == WeightQuant::gptq)
    notes.push_back("weights int4 (GPTQ g128): Llama-2-70B wikitext-2 ppl 3.32 -> 3.42 as reported in AWQ's "
                    "comparison (arXiv 2306.00978; not verified against GPTQ's own paper)");
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

namespace {

int64_t context_cap(const ModelConfig& m, const ServingOptions& o) {
  const int64_t derived = derived_max_model_len(m);
  return o.max_model_len.value_or(derived > 0 ? derived : 131072);
}

//! Options meeting the SLO by cost per hour (unpriced after priced); at equal cost the
//! ones without a quality cost first, then by p99 e2e latency; then evaluated options
//! that miss the SLO, then pruned ones; remaining ties by candidate index.
bool ranks_before(const Deployment& a, const Deployment& b) {
  const auto tier = [](const Deployment& o) {
    if (o.meets_slo) return o.cost_per_hour_usd ? 0 : 1;
    return o.pruned ? 3 : 2;
  };
  const int ta = tier(a), tb = tier(b);
  if (ta != tb) return ta < tb;
  if (ta == 0 && *a.cost_per_hour_usd != *b.cost_per_hour_usd) return *a.cost_per_hour_usd < *b.cost_per_hour_usd;
  if (ta <= 1 && a.changes_quality != b.changes_quality) return !a.changes_quality;
  if (ta <= 1 && a.operating.e2e_p99_s != b.operating.e2e_p99_s) return a.operating.e2e_p99_s < b.operating.e2e_p99_s;
  return a.candidate.index < b.candidate.index;
}

}  // namespace

namespace {

// ---- phases of run_search, in order

void check_inputs(const SearchSpace& space, const Workload& w, const SizeOptions& opt) {
  if (space.models.empty()) throw InputError("size", "--model", "at least one model");
  if (space.gpus.empty()) throw InputError("size", "--gpus", "at least one GPU");
  if (space.base.empty()) throw InputError("size", "serving options", "at least one combination");
  if (!w.slo.given())
    throw InputError(w.file.empty() ? "workload" : w.file, "slo", "a TTFT or TPOT target (slo: {ttft_p99_s, tpot_p99_s})");
  const int64_t min_requests = sim::min_requests_for_percentile(0.99);
  if (!opt.evaluator && opt.requests_per_probe < min_requests)
    throw InputError("size", "--requests",
                     "at least " + std::to_string(min_requests) +
                         " requests per probe, so that 10 lie above the p99 the SLO is judged on "
                         "(n - ceil(0.99 n) >= 10)",
                     std::to_string(opt.requests_per_probe));
  if (opt.requests_per_probe < 1) throw InputError("size", "--requests", "an integer >= 1", std::to_string(opt.requests_per_probe));
}

//! Candidates to search: every one, or only those an engine runs (counting the others).
std::vector<Candidate> searched_candidates(const SearchSpace& space, SizeResult& res) {
  std::vector<Candidate> all = enumerate(space);
  if (space.what_if) return all;
  std::vector<Candidate> out;
  for (auto& c : all) {
    if (what_if_reason(space.models[static_cast<size_t>(c.model)], c.options)) {
      ++res.what_if_skipped;
      continue;
    }
    c.index = static_cast<int64_t>(out.size());
    out.push_back(std::move(c));
  }
  if (out.empty() && !all.empty())
    throw InputError("size", "--what-if",
                     "at least one option an engine runs, or --what-if to search kvplan's own what-ifs",
                     "every one of the " + std::to_string(all.size()) + " candidates is a what-if (" +
                         *what_if_reason(space.models[static_cast<size_t>(all.front().model)], all.front().options) +
                         ")");
  return out;
}

//! What the search knows of a candidate before it is evaluated.
struct Prepared {
  bool evaluate = false;  //!< the planner kept it (and rejections alone do not fail it)
  double ceiling_per_s = std::numeric_limits<double>::infinity();  //!< rate_ceiling
  int64_t replicas_floor = 1;                                       //!< replicas at the ceiling
  std::optional<double> cost_floor;  //!< $/h of those replicas; empty: GPU has no price
  std::string key;                   //!< equal for candidates that simulate identically
};

//! Candidates whose simulators are built from the same model, GPU, scheduler, base
//! options, TP/PP and resolved formats, with the same plan (pool, weights, step times),
//! run the same simulation: e.g. `--quantization none` and `fp8` of an fp8 checkpoint.
std::string simulation_key(const Candidate& c, const Plan& p) {
  const auto& o = c.options;
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{:a}|{:a}", c.model, c.gpu, c.base, o.tp, o.pp,
                     sim::to_string(c.scheduler), p.weight_format, to_string(p.kv_dtype), to_string(o.kv_quant),
                     p.memory.kv_budget_bytes, p.memory.weights_bytes, p.kv_bytes_per_token, p.decode_time.time_s,
                     p.prefill_time.time_s);
}

std::string infeasible_reason(const RateCeiling& rc, int64_t max_model_len) {
  const int64_t allowed = rc.requests - static_cast<int64_t>(std::ceil(0.99 * static_cast<double>(rc.requests)));
  return fmt::format("SLO: {} of the {} requests of every probe can never run ({} reach max_model_len {}, {} do not "
                     "fit the KV pool), more than the {} a p99 TTFT allows to fail, at any rate",
                     rc.rejected, rc.requests, rc.rejected_max_model_len, max_model_len,
                     rc.rejected - rc.rejected_max_model_len, allowed);
}

//! Phase 1a: plan and prune every candidate; with the simulator, also its rate ceiling
//! and the cost of the fewest replicas it could need.
std::vector<Prepared> prepare_candidates(const std::vector<Candidate>& candidates, std::vector<Deployment>& options,
                                         const SearchSpace& space, const Workload& w, const SizeOptions& opt,
                                         const WorkloadShape& shape, bool simulate, bool bounded, int threads) {
  std::vector<Prepared> prep(candidates.size());
  const ProbeRequests probe = simulate ? probe_requests(w, opt.seed, opt.requests_per_probe) : ProbeRequests{};
  parallel_for(static_cast<int64_t>(candidates.size()), threads, [&](int64_t i) {
    const Candidate& c = candidates[static_cast<size_t>(i)];
    const ModelConfig& m = space.models[static_cast<size_t>(c.model)];
    const GpuSpec& g = space.gpus[static_cast<size_t>(c.gpu)];
    Deployment& o = options[static_cast<size_t>(i)];
    Prepared& p = prep[static_cast<size_t>(i)];
    o.candidate = c;
    o.model = m.name;
    o.gpu = g.name;
    o.quality = quality_note(c.options, m);
    o.changes_quality = !o.quality.empty();
    o.what_if = what_if_reason(m, c.options).value_or("");
    try {
      validate(m, c.options, "size search");
      const int64_t ctx = std::min(std::max<int64_t>(shape.context_p99_tokens, 1), context_cap(m, c.options));
      o.plan = make_plan(m, g, c.options, ctx, 1);
      o.plan_valid = true;
      o.pruned = prune_reason(o.plan, w.slo);
      if (o.pruned) return;
      p.evaluate = true;
      // Identical simulations run once; another evaluator may tell candidates apart.
      p.key = simulate ? simulation_key(c, o.plan) : std::to_string(i);
      if (!simulate) return;
      const RateCeiling rc = rate_ceiling(m, g, c.options, c.scheduler, probe);
      if (std::isfinite(rc.max_rate_per_s)) o.rate_ceiling_per_s = rc.max_rate_per_s;
      if (rc.infeasible && bounded) {
        // What the simulator would report at every rate it tried (rejections do not
        // depend on the rate), so a model without options still says why.
        o.pruned = infeasible_reason(rc, context_cap(m, c.options));
        o.eval.binding = Binding::slo;
        o.eval.requests_at_max = rc.requests;
        o.eval.rejected_at_max = rc.rejected;
        o.eval.rejected_max_model_len_at_max = rc.rejected_max_model_len;
        p.evaluate = false;
        return;
      }
      p.ceiling_per_s = rc.max_rate_per_s;
      if (rc.max_rate_per_s > 0) p.replicas_floor = replicas_for(shape.rate_per_s, rc.max_rate_per_s);
      if (g.price_per_hour_usd)
        p.cost_floor = cost_per_hour(p.replicas_floor, c.options, *g.price_per_hour_usd);
    } catch (const InputError& e) {
      o.pruned = std::string("invalid: ") + e.what();
      p.evaluate = false;
    } catch (const sim::UnsupportedLayout& e) {
      o.pruned = std::string("not evaluated: the simulator refused it: ") + e.what();
      p.evaluate = false;
    }
  });
  return prep;
}

//! The cheapest proven cost per model: of any option, and of options without a quality
//! cost (the recommendation's lossless alternative).
struct Best {
  double any = std::numeric_limits<double>::infinity();
  double lossless = std::numeric_limits<double>::infinity();
  //! A candidate is worth evaluating while its cost floor could still tie or beat the
  //! option it would compete with (ties rank by quality and latency, so they count).
  bool admits(const Prepared& p, bool changes_quality) const {
    return !p.cost_floor || *p.cost_floor <= (changes_quality ? any : lossless);
  }
  void add(double cost, bool changes_quality) {
    any = std::min(any, cost);
    if (!changes_quality) lossless = std::min(lossless, cost);
  }
};

std::optional<double> proven_cost(const Deployment& o, const SearchSpace& space, double rate_per_s) {
  const GpuSpec& g = space.gpus[static_cast<size_t>(o.candidate.gpu)];
  if (!o.meets_slo || !g.price_per_hour_usd) return std::nullopt;
  const auto& so = o.candidate.options;
  return cost_per_hour(replicas_for(rate_per_s, o.eval.max_rate_per_s), so, *g.price_per_hour_usd);
}

//! Phase 1b: evaluate the candidates, cheapest cost floor first, on `threads` workers.
//! Each worker claims the next candidate its model's best proven cost still admits, so
//! which candidates run depends on timing; the result does not: afterwards exactly those
//! with a cost floor within the final best are kept (every one of them ran, since the
//! best only falls to its final value), the others are reported as skipped by the bound.
//! Identical simulations run once (simulation_key).
void evaluate_candidates(std::vector<Deployment>& options, const std::vector<Prepared>& prep, const SearchSpace& space,
                         const Workload& w, const SizeOptions& opt, const Evaluator& evaluator,
                         const WorkloadShape& shape, bool bounded, int threads) {
  std::vector<size_t> order;
  for (size_t i = 0; i < prep.size(); ++i)
    if (prep[i].evaluate) order.push_back(i);
  const auto floor_of = [&](size_t i) {
    return prep[i].cost_floor.value_or(std::numeric_limits<double>::infinity());
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return floor_of(a) < floor_of(b); });

  std::mutex mu;
  std::vector<Best> best(space.models.size());
  std::map<std::string, std::shared_future<Evaluation>> runs;
  size_t first_open = 0;                   // order[< first_open] are claimed or skipped
  std::vector<char> claimed(order.size(), 0);
  std::vector<std::exception_ptr> errors(options.size());
  int64_t done = 0;
  const auto total = static_cast<int64_t>(options.size());
  const auto claim = [&]() -> std::optional<size_t> {
    std::optional<size_t> out;
    for (size_t k = first_open; k < order.size() && !out; ++k) {
      if (claimed[k]) continue;
      claimed[k] = 1;  // claimed now, or skipped for good: the best only falls
      const Deployment& o = options[order[k]];
      if (!bounded || best[static_cast<size_t>(o.candidate.model)].admits(prep[order[k]], o.changes_quality))
        out = order[k];
    }
    while (first_open < order.size() && claimed[first_open]) ++first_open;
    return out;
  };
  const auto work = [&] {
    for (;;) {
      size_t i = 0;
      std::shared_future<Evaluation> result;
      std::optional<std::promise<Evaluation>> mine;
      {
        std::lock_guard<std::mutex> lock(mu);
        const auto next = claim();
        if (!next) return;
        i = *next;
        auto [it, added] = runs.try_emplace(prep[i].key);
        if (added) {
          mine.emplace();
          it->second = mine->get_future().share();
        }
        result = it->second;
      }
      Deployment& o = options[i];
      if (mine) {
        const Candidate& c = o.candidate;
        try {
          mine->set_value(evaluator(c, space.models[static_cast<size_t>(c.model)],
                                    space.gpus[static_cast<size_t>(c.gpu)], w, shape));
        } catch (...) {
          mine->set_exception(std::current_exception());
        }
      }
      try {
        o.eval = result.get();
        o.meets_slo = o.eval.found && o.eval.max_rate_per_s > 0;
      } catch (const InputError& e) {
        o.pruned = std::string("invalid: ") + e.what();
      } catch (const sim::UnsupportedLayout& e) {
        o.pruned = std::string("not evaluated: the simulator refused it: ") + e.what();
      } catch (...) {
        errors[i] = std::current_exception();  // only this worker claimed i
      }
      std::lock_guard<std::mutex> lock(mu);
      if (const auto cost = proven_cost(o, space, shape.rate_per_s))
        best[static_cast<size_t>(o.candidate.model)].add(*cost, o.changes_quality);
      if (opt.on_progress) opt.on_progress(++done, total);
    }
  };
  // Each worker claims candidates until none is left: one parallel_for index per worker.
  const int workers = std::max(1, std::min(threads, static_cast<int>(order.size())));
  parallel_for(workers, workers, [&](int64_t) { work(); });
  if (opt.on_progress && done < total) opt.on_progress(total, total);
  // What every schedule agrees on: the final best per model (see above). A failure is
  // rethrown from the lowest candidate every schedule runs, whichever failed first.
  const auto kept = [&](size_t i) {
    return !bounded || best[static_cast<size_t>(options[i].candidate.model)].admits(prep[i], options[i].changes_quality);
  };
  for (size_t i = 0; i < errors.size(); ++i)
    if (errors[i] && kept(i)) std::rethrow_exception(errors[i]);
  if (!bounded) return;
  for (const size_t i : order) {
    Deployment& o = options[i];
    const Best& b = best[static_cast<size_t>(o.candidate.model)];
    if (kept(i)) continue;
    const Prepared& p = prep[i];
    o.eval = Evaluation{};
    o.meets_slo = false;
    o.pruned = fmt::format(
        "bound: at most {} per replica, so at least {} replica{} at ${:.2f}/h, more than the ${:.2f}/h of an option "
        "{}already meeting the SLO",
        std::isfinite(p.ceiling_per_s) ? fmt::format("{:.3g} requests/s", p.ceiling_per_s) : std::string("any rate"),
        p.replicas_floor, p.replicas_floor == 1 ? "" : "s", *p.cost_floor,
        o.changes_quality ? b.any : b.lossless, o.changes_quality ? "" : "without a quality cost ");
  }
}

//! How the candidates were settled (SizeResult::pruned_by_bound, pruned_infeasible, reused).
void count_search(const std::vector<Deployment>& options, const std::vector<Prepared>& prep, SizeResult& res) {
  std::set<std::string> seen;
  for (size_t i = 0; i < options.size(); ++i) {
    const Deployment& o = options[i];
    if (o.pruned && o.pruned->rfind("bound:", 0) == 0) ++res.pruned_by_bound;
    if (!prep[i].evaluate && o.eval.requests_at_max > 0) ++res.pruned_infeasible;
    if (!o.pruned && prep[i].evaluate && !seen.insert(prep[i].key).second) ++res.reused;
  }
}

//! Replicas for the workload's rate, cost per hour, per million tokens and per request.
void price_options(std::vector<Deployment>& options, const SearchSpace& space, SizeResult& res) {
  const WorkloadShape& shape = res.shape;
  for (auto& o : options) {
    if (!o.pruned) ++res.evaluated;
    if (!o.meets_slo) continue;
    const GpuSpec& g = space.gpus[static_cast<size_t>(o.candidate.gpu)];
    const auto& so = o.candidate.options;
    o.replicas = replicas_for(shape.rate_per_s, o.eval.max_rate_per_s);
    o.gpus_total = o.replicas * so.gpus_per_replica();
    if (g.price_per_hour_usd) {
      const double per_h = cost_per_hour(o.replicas, so, *g.price_per_hour_usd);
      o.cost_per_hour_usd = per_h;
      o.cost_per_million_output_tokens_usd = cost_per_million_output_tokens(per_h, shape.rate_per_s, shape.output_mean_tokens);
      o.cost_per_million_input_tokens_usd = cost_per_million_input_tokens(per_h, shape.rate_per_s, shape.prompt_mean_tokens);
      o.cost_per_request_usd = cost_per_request(per_h, shape.rate_per_s);
    }
    o.operating = o.eval.at_max;
  }
}

//! Phase 2 (simulator only): each replica at its share of the workload's rate.
void probe_operating_points(std::vector<Deployment>& options, const SearchSpace& space, const Workload& w,
                            const SizeOptions& opt, double rate_per_s, int threads) {
  std::vector<size_t> meeting;
  for (size_t i = 0; i < options.size(); ++i)
    if (options[i].meets_slo) meeting.push_back(i);
  parallel_for(static_cast<int64_t>(meeting.size()), threads, [&](int64_t k) {
    Deployment& o = options[meeting[static_cast<size_t>(k)]];
    const double share = rate_per_s / static_cast<double>(o.replicas);
    o.operating = detail::probe_rate(o.candidate, space.models[static_cast<size_t>(o.candidate.model)],
                                     space.gpus[static_cast<size_t>(o.candidate.gpu)], w, share, opt);
  });
}

//! Chart data for the first options: KV capacity against context; load curves.
//! Diverse first: the best option of each model, then of each (model, GPU), then the
//! next best overall, up to detail_top; charted in rank order.
void add_chart_data(std::vector<Deployment>& options, const SearchSpace& space, const Workload& w,
                    const SizeOptions& opt, bool simulate, int threads) {
  std::vector<size_t> charted;
  const auto pick_best_per = [&](auto key) {
    std::vector<decltype(key(options.front()))> seen;
    for (size_t i = 0; i < options.size() && charted.size() < opt.detail_top; ++i) {
      if (!options[i].meets_slo) continue;
      const auto k = key(options[i]);
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
      seen.push_back(k);
      if (std::find(charted.begin(), charted.end(), i) == charted.end()) charted.push_back(i);
    }
  };
  if (!options.empty()) {
    pick_best_per([](const Deployment& o) { return o.candidate.model; });
    pick_best_per([](const Deployment& o) { return std::make_pair(o.candidate.model, o.candidate.gpu); });
  }
  for (size_t i = 0; i < options.size() && charted.size() < opt.detail_top; ++i)
    if (options[i].meets_slo && std::find(charted.begin(), charted.end(), i) == charted.end()) charted.push_back(i);
  std::sort(charted.begin(), charted.end());
  parallel_for(static_cast<int64_t>(charted.size()), threads, [&](int64_t k) {
    Deployment& o = options[charted[static_cast<size_t>(k)]];
    const ModelConfig& m = space.models[static_cast<size_t>(o.candidate.model)];
    const GpuSpec& g = space.gpus[static_cast<size_t>(o.candidate.gpu)];
    const ModelConfig mw = apply_what_if(m, o.candidate.options);
    const int64_t cap = context_cap(m, o.candidate.options);
    for (int64_t ctx = 512;; ctx *= 2) {
      const int64_t c = std::min(ctx, cap);
      o.capacity_curve.emplace_back(c, capacity(mw, o.candidate.options, o.plan.memory, c).max_concurrent_requests);
      if (c >= cap) break;
    }
    if (simulate)
      for (const double f : {0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25})
        o.load_curve.push_back(detail::probe_rate(o.candidate, m, g, w, f * o.eval.max_rate_per_s, opt));
  });
}

//! The recommended options' max rate again with other seeds: the spread a reader needs
//! before calling two results different.
//! Only the recommendations that are also their model's cheapest to rent (`rent_picks`,
//! candidate indexes) are measured: the spread is the noise of the rent ranking.
void measure_spread(SizeResult& res, const SearchSpace& space, const Workload& w, const SizeOptions& opt,
                    int threads, const std::vector<int64_t>& rent_picks) {
  if (opt.spread_seeds < 2) return;
  std::vector<size_t> measured;
  for (size_t k = 0; k < res.recommendations.size(); ++k)
    if (std::find(rent_picks.begin(), rent_picks.end(), res.recommendations[k].candidate_index) != rent_picks.end())
      measured.push_back(k);
  parallel_for(static_cast<int64_t>(measured.size()), threads, [&](int64_t k) {
    Recommendation& rec = res.recommendations[measured[static_cast<size_t>(k)]];
    const Deployment& o = res.options[rec.option];
    const ModelConfig& m = space.models[static_cast<size_t>(o.candidate.model)];
    const GpuSpec& g = space.gpus[static_cast<size_t>(o.candidate.gpu)];
    MaxRateSpread sp;
    sp.seeds = opt.spread_seeds;
    sp.min_per_s = sp.max_per_s = sp.mean_per_s = o.eval.max_rate_per_s;
    for (int s = 1; s < opt.spread_seeds; ++s) {
      SizeOptions other = opt;
      other.seed = opt.seed + static_cast<uint64_t>(s);
      const double rate = detail::max_rate(o.candidate, m, g, w, other);
      sp.min_per_s = std::min(sp.min_per_s, rate);
      sp.max_per_s = std::max(sp.max_per_s, rate);
      sp.mean_per_s += rate;
    }
    sp.mean_per_s /= static_cast<double>(opt.spread_seeds);
    rec.spread = sp;
    rec.replicas_at_min_rate = sp.min_per_s > 0 ? replicas_for(res.shape.rate_per_s, sp.min_per_s) : 0;
  });
}

SloConfidence::Level level_at(const Deployment& o, const ModelConfig& m, const GpuSpec& g, const ErrorBars& bars,
                              double q, const Workload& w, const SizeOptions& opt) {
  const SloHeadroom h = slo_headroom(bars, q);
  Workload scaled = w;
  scaled.slo.ttft_p99_s *= h.ttft;
  scaled.slo.tpot_p99_s *= h.tpot;
  SloConfidence::Level l;
  l.q = q;
  l.worst_run = h.worst_run;
  l.max_rate_per_s = detail::max_rate(o.candidate, m, g, scaled, opt) * h.tpot;
  return l;
}

//! The recommendations' SLO under the time model's measured error: the probability at
//! the operating point, and the max rate and replicas at probabilities 0.9 and 0.99.
//! A replica whose steps are f times as long serves rate x like the model serves rate x f,
//! with latencies f times as long; the prediction must stay under SLO x h (slo_headroom)
//! for probability q, so the max rate at q is the model's against SLO x h, times h of TPOT
//! (cli/cmd_simulate.cpp's max rate band, docs/calibration.md "Error bars").
void measure_confidence(SizeResult& res, const SearchSpace& space, const Workload& w, const SizeOptions& opt,
                        int threads) {
  parallel_for(static_cast<int64_t>(res.recommendations.size()), threads, [&](int64_t k) {
    Recommendation& rec = res.recommendations[static_cast<size_t>(k)];
    const Deployment& o = res.options[rec.option];
    const ModelConfig& m = space.models[static_cast<size_t>(o.candidate.model)];
    const GpuSpec& g = space.gpus[static_cast<size_t>(o.candidate.gpu)];
    const std::optional<ErrorBars> bars = error_bars(o.candidate.options.calibration, g.name);
    if (!bars) return;
    SloConfidence c;
    c.runs = bars->runs;
    c.on_gpu = bars->on_gpu;
    c.probability = slo_probability(*bars, o.operating.ttft_p99_s, o.operating.tpot_p99_s, w.slo);
    for (const double q : {0.9, 0.99}) {
      SloConfidence::Level l = level_at(o, m, g, *bars, q, w, opt);
      l.replicas = l.max_rate_per_s > 0 ? replicas_for(res.shape.rate_per_s, l.max_rate_per_s) : 0;
      c.levels.push_back(l);
    }
    rec.confidence = c;
  });
}

//! The same measured error at each over-time plan's option (size/over_time.h): the SLO
//! probability of a replica at its max rate (where the plan runs its busiest replicas)
//! and the max rates at 0.9 and 0.99.
void measure_over_time_confidence(OverTimePlan& plan, const std::vector<Deployment>& options, const SearchSpace& space,
                                  const Workload& w, const SizeOptions& opt, int threads) {
  parallel_for(static_cast<int64_t>(plan.models.size()), threads, [&](int64_t k) {
    ModelPlan& mp = plan.models[static_cast<size_t>(k)];
    const auto it = std::find_if(options.begin(), options.end(),
                                 [&](const Deployment& o) { return o.candidate.index == mp.candidate; });
    if (it == options.end()) throw std::logic_error("an over-time plan for a candidate the search does not hold");
    const Deployment& o = *it;
    const ModelConfig& m = space.models[static_cast<size_t>(o.candidate.model)];
    const GpuSpec& g = space.gpus[static_cast<size_t>(o.candidate.gpu)];
    const std::optional<ErrorBars> bars = error_bars(o.candidate.options.calibration, g.name);
    if (!bars) return;
    mp.error_runs = bars->runs;
    mp.error_on_gpu = bars->on_gpu;
    mp.slo_probability_at_max = slo_probability(*bars, o.eval.at_max.ttft_p99_s, o.eval.at_max.tpot_p99_s, w.slo);
    for (const double q : {0.9, 0.99}) {
      const SloConfidence::Level l = level_at(o, m, g, *bars, q, w, opt);
      mp.confident_rates.push_back({q, l.max_rate_per_s, l.worst_run});
    }
  });
}

//! The recommendations' spares for failures: N replicas for the rate plus the k that keep
//! N up for the asked share of the time, and one replica's run at its share of the rate
//! with one of the N + k down.
void plan_failures(SizeResult& res, const SearchSpace& space, const Workload& w, const SizeOptions& opt, bool simulate,
                   int threads) {
  const FailureOptions& f = *opt.failures;
  parallel_for(static_cast<int64_t>(res.recommendations.size()), threads, [&](int64_t i) {
    Recommendation& rec = res.recommendations[static_cast<size_t>(i)];
    const Deployment& o = res.options[rec.option];
    FailurePlan p;
    p.asked = f;
    p.gpus_per_replica = o.candidate.options.tp * o.candidate.options.pp;
    p.replica_unavailability = replica_unavailability(p.gpus_per_replica, f.gpu_failures_per_year, f.repair_hours);
    if (p.replica_unavailability >= 0.5)
      throw InputError("command line", "--repair-hours",
                       "a repair time that leaves a replica of " + std::to_string(p.gpus_per_replica) +
                           " GPUs up most of the time",
                       fmt::format("{:g} h: down {:.0f} % of the time", f.repair_hours, 100 * p.replica_unavailability));
    p.replicas_needed = o.replicas;
    std::tie(p.spares, p.availability) = spares_for(o.replicas, p.replica_unavailability, f.availability);
    const int64_t fleet = p.replicas_needed + p.spares;
    if (o.cost_per_hour_usd)
      p.cost_per_hour_usd = *o.cost_per_hour_usd / static_cast<double>(o.replicas) * static_cast<double>(fleet);
    if (fleet > 1) {
      p.one_down_share_per_s = res.shape.rate_per_s / static_cast<double>(fleet - 1);
      if (simulate)
        p.one_down = detail::probe_rate(o.candidate, space.models[static_cast<size_t>(o.candidate.model)],
                                        space.gpus[static_cast<size_t>(o.candidate.gpu)], w, p.one_down_share_per_s, opt);
    }
    rec.failures = p;
  });
}

}  // namespace

SizeResult run_search(const SearchSpace& space, const Workload& w, const SizeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  check_inputs(space, w, opt);
  SizeResult res;
  res.workload = w;
  res.seed = opt.seed;
  res.requests_per_probe = opt.requests_per_probe;
  res.what_if = space.what_if;
  res.shape = workload_shape(w, opt.seed);
  const std::vector<Candidate> candidates = searched_candidates(space, res);
  res.candidates = static_cast<int64_t>(candidates.size());
  const bool simulate = !opt.evaluator;
  res.simulated = simulate;
  Evaluator evaluator = simulate ? simulator_evaluator(opt) : opt.evaluator;
  if (simulate && opt.wrap_simulator) evaluator = opt.wrap_simulator(std::move(evaluator));
  const int threads = thread_count(opt.threads);

  // Buy figures rank by their own objective (TCO, capital cost), which the rental-cost
  // bound says nothing about: every candidate is simulated then.
  const bool bounded = simulate && !opt.exhaustive && !opt.buy;
  res.exhaustive = !bounded;
  std::vector<Deployment> options(candidates.size());
  const std::vector<Prepared> prep = prepare_candidates(candidates, options, space, w, opt, res.shape, simulate, bounded, threads);
  evaluate_candidates(options, prep, space, w, opt, evaluator, res.shape, bounded, threads);
  count_search(options, prep, res);
  price_options(options, space, res);
  if (simulate) probe_operating_points(options, space, w, opt, res.shape.rate_per_s, threads);
  std::stable_sort(options.begin(), options.end(), ranks_before);
  mark_pareto(options);
  add_chart_data(options, space, w, opt, simulate, threads);

  for (const auto& o : options) {
    if (o.candidate.options.calibration.measured) {
      res.calibrated = true;
      res.calibration_device = o.candidate.options.calibration.device;
    }
    const std::string& gpu = space.gpus[static_cast<size_t>(o.candidate.gpu)].name;
    const std::vector<std::string> notes =
        o.candidate.options.calibration.accuracy_for(space.models[static_cast<size_t>(o.candidate.model)].is_moe(), gpu);
    for (const std::string& note : notes)
      if (std::find(res.accuracy.begin(), res.accuracy.end(), note) == res.accuracy.end()) res.accuracy.push_back(note);
    if (notes.empty() && std::find(res.unmeasured_gpus.begin(), res.unmeasured_gpus.end(), gpu) == res.unmeasured_gpus.end())
      res.unmeasured_gpus.push_back(gpu);
    const std::string e(to_string(o.candidate.options.engine));
    if (res.engine.find(e) == std::string::npos) res.engine += (res.engine.empty() ? "" : ", ") + e;
  }
  res.options = std::move(options);
  recommend(res);
  std::vector<int64_t> rent_picks;
  for (const Recommendation& rec : res.recommendations) rent_picks.push_back(rec.candidate_index);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.disagg) res.disagg = std::make_shared<const DisaggSearchResult>(run_disagg_search(space, res, w, *opt.disagg));
  // The search already ranks by rent; re-rank only for buy figures or another objective.
  if (opt.buy || opt.objective != Objective::rent) {
    BuyResult buy;
    if (opt.buy) buy = plan_purchase(res, opt.buy->servers, opt.buy->site);
    rank(res, buy, opt.objective);
    if (opt.buy) res.buy = std::move(buy);
  }
  if (opt.demand) res.over_time = plan_over_time(res, *opt.demand);
  const auto t1 = std::chrono::steady_clock::now();
  if (simulate) measure_spread(res, space, w, opt, threads, rent_picks);
  if (simulate) measure_confidence(res, space, w, opt, threads);
  if (opt.failures) plan_failures(res, space, w, opt, simulate, threads);
  if (res.over_time) {
    if (simulate) measure_over_time_confidence(*res.over_time, res.options, space, w, opt, threads);
    add_sensitivity(*res.over_time);
  }
  res.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return res;
}

}  // namespace kvplan::size
