// kvplan size --disagg: enumeration of the disaggregated layouts, their max rates with
// the disaggregated simulator, pricing, and the verdict against the aggregated search.
#include "size/disagg_search.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "cluster/max_rate.h"
#include "size/parallel_for.h"

namespace kvplan::size {

std::string to_string(const DisaggRatio& r) { return fmt::format("{}P{}D", r.prefill, r.decode); }

std::optional<DisaggRatio> parse_disagg_ratio(std::string_view s) {
  const auto p = s.find_first_of("Pp");
  if (p == std::string_view::npos || p == 0 || s.size() < p + 3 || std::toupper(static_cast<unsigned char>(s.back())) != 'D')
    return std::nullopt;
  const auto number = [](std::string_view t) -> std::optional<int64_t> {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{} || end != t.data() + t.size() || v < 1) return std::nullopt;
    return v;
  };
  const auto x = number(s.substr(0, p));
  const auto y = number(s.substr(p + 1, s.size() - p - 2));
  if (!x || !y) return std::nullopt;
  return DisaggRatio{*x, *y};
}

std::vector<DisaggRatio> default_disagg_ratios() { return {{1, 1}, {1, 2}, {1, 3}, {2, 3}}; }

std::optional<double> disagg_cost_per_hour(int64_t units, const DisaggRatio& r, const ServingOptions& prefill,
                                           const GpuSpec& prefill_gpu, const ServingOptions& decode,
                                           const GpuSpec& decode_gpu) {
  if (!prefill_gpu.price_per_hour_usd || !decode_gpu.price_per_hour_usd) return std::nullopt;
  return cost_per_hour(units * r.prefill, prefill, *prefill_gpu.price_per_hour_usd) +
         cost_per_hour(units * r.decode, decode, *decode_gpu.price_per_hour_usd);
}

namespace {

//! A layout to simulate, with the indexes it was built from.
struct Layout {
  DisaggOption option;
  size_t model = 0, prefill_gpu = 0, decode_gpu = 0;
};

//! The model's formats for both pools: its recommendation, else its first evaluated
//! option in rank order; the static scheduler is skipped (it has no prefill-only engine).
const Deployment* format_source(const SizeResult& agg, const std::string& model) {
  for (const auto& o : agg.options)
    if (o.model == model && !o.pruned && o.plan_valid && o.candidate.scheduler != sim::Scheduler::static_batch)
      return &o;
  return nullptr;
}

//! TPs the aggregated search evaluated for `model` on GPU `gpu` in `src`'s formats.
std::vector<int64_t> viable_tps(const SizeResult& agg, const Deployment& src, int64_t gpu) {
  std::set<int64_t> tps;
  const auto& s = src.candidate.options;
  for (const auto& o : agg.options) {
    const auto& c = o.candidate;
    if (o.model != src.model || c.gpu != gpu || o.pruned || !o.plan_valid || c.scheduler != src.candidate.scheduler)
      continue;
    if (c.options.quantization != s.quantization || c.options.kv_cache_dtype != s.kv_cache_dtype ||
        c.options.kv_quant != s.kv_quant || c.options.pp != s.pp)
      continue;
    tps.insert(c.options.tp);
  }
  return {tps.begin(), tps.end()};
}

bool ranks_before(const DisaggOption& a, const DisaggOption& b) {
  const auto tier = [](const DisaggOption& o) { return o.meets_slo ? 0 : (o.found ? 1 : (o.pruned ? 3 : 2)); };
  if (tier(a) != tier(b)) return tier(a) < tier(b);
  if (tier(a) == 0 && *a.cost_per_hour_usd != *b.cost_per_hour_usd) return *a.cost_per_hour_usd < *b.cost_per_hour_usd;
  if (a.max_rate_per_s != b.max_rate_per_s) return a.max_rate_per_s > b.max_rate_per_s;
  return a.index < b.index;
}

void simulate_layout(Layout& l, const ModelConfig& m, const GpuSpec& gp, const GpuSpec& gd, const Workload& w,
                     const DisaggSearchOptions& opt, double rate_per_s, double prompt_mean_tokens) {
  DisaggOption& o = l.option;
  cluster::DisaggLayout dl;
  dl.prefill.gpu = gp;
  dl.prefill.options = o.prefill_options;
  dl.prefill.instances = o.ratio.prefill;
  dl.decode.gpu = gd;
  dl.decode.options = o.decode_options;
  dl.decode.instances = o.ratio.decode;
  const cluster::DisaggSimulator s(m, dl);
  o.link = std::string(cluster::to_string(s.link().kind));
  o.link_why = s.link().why;
  o.transfer_mean_prompt_s = s.transfer_s(static_cast<int64_t>(std::llround(prompt_mean_tokens)));
  sim::SimOptions so;
  so.scheduler = o.scheduler;
  so.seed = opt.seed;
  so.requests = opt.requests_per_probe;
  cluster::MaxRateOptions mo;
  mo.requests = opt.requests_per_probe;
  mo.rel_tolerance = opt.rel_tolerance;
  const cluster::MaxRate mr = cluster::find_max_rate(s, w, so, mo);
  o.found = mr.found;
  o.max_rate_per_s = mr.max_rate_per_s;
  o.runs = mr.runs + 1;
  // Once more at the answer (at the workload's rate when none met the SLO): the pools'
  // and the link's figures are not in MaxRate.
  so.rate_scale = mr.found ? mr.rate_scale : 1.0;
  const cluster::DisaggResult r = s.run(w, so);
  o.ttft_p99_s = r.overall.ttft_s.p99;
  o.tpot_p99_s = r.overall.tpot_s.p99;
  o.transfer_p99_s = r.transfer_s.p99;
  o.prefill_busy_fraction = r.prefill.busy_fraction;
  o.decode_busy_fraction = r.decode.busy_fraction;
  if (o.found) {
    o.units = replicas_for(rate_per_s, o.max_rate_per_s);
    o.cost_per_hour_usd = disagg_cost_per_hour(o.units, o.ratio, o.prefill_options, gp, o.decode_options, gd);
    o.meets_slo = o.cost_per_hour_usd.has_value();
  }
  o.gpus_total = std::max<int64_t>(o.units, 1) *
                 (o.ratio.prefill * o.prefill_options.gpus_per_replica() +
                  o.ratio.decode * o.decode_options.gpus_per_replica());
}

std::string unit_label(const DisaggOption& o) {
  return fmt::format("{} x {} ({} TP{} -> {} TP{})", o.units, to_string(o.ratio), o.prefill_gpu, o.prefill_options.tp,
                     o.decode_gpu, o.decode_options.tp);
}

std::string agg_label(const Deployment& a) {
  const auto& o = a.candidate.options;
  return o.pp > 1 ? fmt::format("{} x {} TP{} PP{}", a.replicas, a.gpu, o.tp, o.pp)
                  : fmt::format("{} x {} TP{}", a.replicas, a.gpu, o.tp);
}

DisaggVerdict verdict(const std::string& model, const SizeResult& agg, const std::vector<DisaggOption>& options,
                      const Slo& slo) {
  DisaggVerdict v;
  v.model = model;
  const Deployment* a = nullptr;
  for (const auto& rec : agg.recommendations)
    if (rec.model == model) a = &agg.options[rec.option];
  if (a) {
    v.aggregated_layout = agg_label(*a);
    v.aggregated_cost_per_hour_usd = a->cost_per_hour_usd;
  }
  const DisaggOption* best_missing = nullptr;
  int64_t pruned = 0;
  for (size_t i = 0; i < options.size(); ++i) {
    if (options[i].model != model) continue;
    if (options[i].pruned) {
      ++pruned;
      continue;
    }
    if (options[i].meets_slo && !v.disaggregated) v.disaggregated = i;
    if (!best_missing && !options[i].meets_slo) best_missing = &options[i];
  }
  const DisaggOption* d = v.disaggregated ? &options[*v.disaggregated] : nullptr;
  // Requests per second each dollar-hour buys at full load, before rounding up to whole
  // replicas or units: what decides the cost when the rate needs many of them.
  const auto agg_rate_per_usd = [&] {
    return a->eval.max_rate_per_s / (*a->cost_per_hour_usd / static_cast<double>(a->replicas));
  };
  const auto dis_rate_per_usd = [&] { return d->max_rate_per_s / (*d->cost_per_hour_usd / static_cast<double>(d->units)); };
  if (a && d && a->cost_per_hour_usd) {
    const bool dis_wins = *d->cost_per_hour_usd < *a->cost_per_hour_usd;
    v.winner = dis_wins ? "disaggregated" : "aggregated";
    const std::string costs = fmt::format("${:.2f}/h for {} vs ${:.2f}/h for {} aggregated", *d->cost_per_hour_usd,
                                          unit_label(*d), *a->cost_per_hour_usd, v.aggregated_layout);
    const std::string per_usd = fmt::format("{:.3f} vs {:.3f} requests/s per $/h at full load (disaggregated vs aggregated)",
                                            dis_rate_per_usd(), agg_rate_per_usd());
    const std::string transfer =
        fmt::format("the KV transfer over {} adds p99 {:.1f} ms to TTFT (SLO {:.2f} s)", d->link, d->transfer_p99_s * 1e3,
                    slo.ttft_p99_s);
    if (dis_wins)
      v.why = fmt::format("cheaper: {}; {}; prefill runs apart from decode: p99 TTFT {:.3f} s and TPOT {:.1f} ms at their "
                          "max rates vs {:.3f} s and {:.1f} ms aggregated; {}",
                          costs, per_usd, d->ttft_p99_s, d->tpot_p99_s * 1e3, a->eval.at_max.ttft_p99_s,
                          a->eval.at_max.tpot_p99_s * 1e3, transfer);
    else if (*d->cost_per_hour_usd == *a->cost_per_hour_usd)
      // Equal cost at the workload's rate: one pool and no transfer is the simpler deployment.
      v.why = fmt::format("same cost, and one pool without a KV transfer is simpler to run: {}; {}; {}", costs, per_usd,
                          transfer);
    else
      v.why = fmt::format("cheaper: {}; {}; {}", costs, per_usd, transfer);
  } else if (d) {
    v.winner = "disaggregated";
    v.why = fmt::format("only disaggregated meets the SLO: {} at ${:.2f}/h, p99 TTFT {:.3f} s, TPOT {:.1f} ms",
                        unit_label(*d), *d->cost_per_hour_usd, d->ttft_p99_s, d->tpot_p99_s * 1e3);
  } else if (a) {
    v.winner = "aggregated";
    const std::string pruned_note =
        pruned > 0 ? fmt::format("; {} layouts were not simulated: one unit of each costs at least the aggregated ${:.2f}/h",
                                 pruned, a->cost_per_hour_usd.value_or(0))
                   : "";
    if (best_missing == nullptr && pruned > 0)
      v.why = fmt::format("cheaper: {} at ${:.2f}/h{}", v.aggregated_layout, *a->cost_per_hour_usd, pruned_note);
    else
      v.why = (best_missing == nullptr
                ? std::string("no disaggregated layout to compare: no GPU and TP the aggregated search kept")
                : fmt::format("no disaggregated layout meets the SLO: the best, {} {} -> {}, has p99 TTFT {:.3f} s "
                              "(SLO {:.2f} s) at the workload's rate, of which the KV transfer over {} takes p99 "
                              "{:.3f} s ({:.3f} s for a mean prompt on an idle link)",
                              to_string(best_missing->ratio), best_missing->prefill_gpu, best_missing->decode_gpu,
                              best_missing->ttft_p99_s, slo.ttft_p99_s, best_missing->link, best_missing->transfer_p99_s,
                              best_missing->transfer_mean_prompt_s)) +
              pruned_note;
  } else {
    v.winner = "none";
    v.why = "neither an aggregated option nor a disaggregated layout meets the SLO";
  }
  return v;
}

}  // namespace

DisaggSearchResult run_disagg_search(const SearchSpace& space, const SizeResult& aggregated, const Workload& w,
                                     const DisaggSearchOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.ratios.empty()) throw InputError("command line", "--disagg", "at least one xPyD ratio, e.g. 1P2D", "none");
  for (const auto& r : opt.ratios)
    if (r.prefill < 1 || r.decode < 1)
      throw InputError("command line", "--disagg", "xPyD pools of at least one instance each", "'" + to_string(r) + "'");
  DisaggSearchResult res;
  res.ratios = opt.ratios;

  std::vector<Layout> layouts;
  for (size_t mi = 0; mi < space.models.size(); ++mi) {
    const Deployment* src = format_source(aggregated, space.models[mi].name);
    if (!src) continue;
    std::optional<double> agg_cost;
    for (const auto& rec : aggregated.recommendations)
      if (rec.model == src->model) agg_cost = aggregated.options[rec.option].cost_per_hour_usd;
    for (size_t pg = 0; pg < space.gpus.size(); ++pg)
      for (size_t dg = 0; dg < space.gpus.size(); ++dg)
        for (const int64_t tp_p : viable_tps(aggregated, *src, static_cast<int64_t>(pg)))
          for (const int64_t tp_d : viable_tps(aggregated, *src, static_cast<int64_t>(dg)))
            for (const auto& ratio : opt.ratios) {
              Layout l;
              l.model = mi;
              l.prefill_gpu = pg;
              l.decode_gpu = dg;
              DisaggOption& o = l.option;
              o.index = static_cast<int64_t>(layouts.size());
              o.model = space.models[mi].name;
              o.prefill_gpu = space.gpus[pg].name;
              o.decode_gpu = space.gpus[dg].name;
              o.prefill_options = src->candidate.options;
              o.prefill_options.tp = tp_p;
              o.decode_options = src->candidate.options;
              o.decode_options.tp = tp_d;
              o.scheduler = src->candidate.scheduler;
              o.ratio = ratio;
              const auto unit_cost = disagg_cost_per_hour(1, ratio, o.prefill_options, space.gpus[pg],
                                                          o.decode_options, space.gpus[dg]);
              if (opt.prune && agg_cost && unit_cost && *unit_cost >= *agg_cost)
                o.pruned = fmt::format("one unit costs ${:.2f}/h, not less than the aggregated ${:.2f}/h", *unit_cost,
                                       *agg_cost);
              layouts.push_back(std::move(l));
            }
  }
  res.candidates = static_cast<int64_t>(layouts.size());
  parallel_for(static_cast<int64_t>(layouts.size()), thread_count(opt.threads), [&](int64_t i) {
    Layout& l = layouts[static_cast<size_t>(i)];
    if (l.option.pruned) return;
    simulate_layout(l, space.models[l.model], space.gpus[l.prefill_gpu], space.gpus[l.decode_gpu], w, opt,
                    aggregated.shape.rate_per_s, aggregated.shape.prompt_mean_tokens);
  });
  for (auto& l : layouts) {
    res.simulated += l.option.pruned ? 0 : 1;
    res.options.push_back(std::move(l.option));
  }
  std::stable_sort(res.options.begin(), res.options.end(), ranks_before);
  for (const auto& m : space.models) res.verdicts.push_back(verdict(m.name, aggregated, res.options, w.slo));
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace kvplan::size
