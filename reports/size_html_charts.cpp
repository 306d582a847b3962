// The charts of the HTML purchase report (size_html_sections.h: html_charts).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "reports/html.h"
#include "reports/size_common.h"
#include "reports/size_html_sections.h"
#include "reports/table.h"

namespace kvplan::reports::size_detail {

using size::Deployment;
using size::SizeResult;

std::string html_charts(const SizeResult& r) {
  const auto& w = r.workload;
  std::string h;
  h += "<h2>Charts</h2>\n<div class=\"charts\">\n";
  std::vector<const Deployment*> charted;
  std::vector<size_t> charted_rank;
  for (size_t i = 0; i < r.options.size(); ++i)
    if (r.options[i].meets_slo && !r.options[i].capacity_curve.empty()) {
      charted.push_back(&r.options[i]);
      charted_rank.push_back(i + 1);
    }
  {
    html::Chart c;
    c.title = "Cost against p99 end-to-end latency (options meeting the SLO)";
    c.x = {"p99 end-to-end latency at the operating point (s, log scale)", true, std::nullopt, std::nullopt};
    c.y = {"cost (USD per hour)", false, 0.0, std::nullopt};
    std::map<std::string, html::Series> by_gpu;
    std::map<std::string, html::Series> frontiers;  // one per model
    for (const auto& o : r.options) {
      if (!o.meets_slo || !o.cost_per_hour_usd) continue;
      auto [it, added] = by_gpu.try_emplace(o.gpu);
      if (added) {
        it->second.label = o.gpu;
        it->second.line = false;
      }
      it->second.points.emplace_back(o.operating.e2e_p99_s, *o.cost_per_hour_usd);
      if (o.pareto) {
        auto& f = frontiers[o.model];
        f.label = "Pareto frontier: " + o.model;
        f.points.emplace_back(o.operating.e2e_p99_s, *o.cost_per_hour_usd);
      }
    }
    size_t i = 0;
    for (auto& [name, s] : by_gpu) {
      s.color = html::palette(i++);
      c.series.push_back(s);
    }
    const std::vector<std::string> greys = {"#222222", "#777777", "#aaaaaa"};
    size_t k = 0;
    for (auto& [name, f] : frontiers) {
      std::sort(f.points.begin(), f.points.end());
      f.color = greys[k++ % greys.size()];
      c.series.push_back(f);
    }
    c.note = "One dot per option; each line joins the options of one model that no other beats on cost and latency.";
    // An option of hundreds of replicas would put every other on the axis: the cost axis
    // ends at the costs' upper fence, and the note says what lies above it.
    std::vector<double> costs;
    for (const auto& o : r.options)
      if (o.meets_slo && o.cost_per_hour_usd) costs.push_back(*o.cost_per_hour_usd);
    if (const auto fence = html::upper_fence(costs)) {
      c.y.max = *fence;
      const auto above = std::count_if(costs.begin(), costs.end(), [&](double x) { return x > *fence; });
      c.note += fmt::format(" {} option{} above ${:.2f}/h lie{} off the chart (the tables list {}).", above,
                            above == 1 ? "" : "s", *fence, above == 1 ? "s" : "", above == 1 ? "it" : "them");
    }
    h += html::line_chart(c) + "\n";
  }
  {
    html::Chart c;
    c.title = "KV capacity against context length (one replica)";
    c.x = {"context per request (tokens, log scale; 1k = 1024)", true, std::nullopt, std::nullopt};
    c.y = {"concurrent requests that fit in the KV pool", false, 0.0, std::nullopt};
    for (size_t i = 0; i < charted.size(); ++i) {
      html::Series s{short_label(*charted[i], charted_rank[i]), html::palette(i), {}, true, i == 0, {}};
      for (const auto& [ctx, n] : charted[i]->capacity_curve)
        s.points.emplace_back(static_cast<double>(ctx), static_cast<double>(n));
      c.series.push_back(std::move(s));
    }
    c.note = "Requests of that context held at once (paged blocks); the batch is also capped by max-num-seqs.";
    h += html::line_chart(c) + "\n";
  }
  {
    html::StackedBars b;
    b.title = "Memory of one GPU: weights, KV pool, activations, reserve";
    b.unit = "GB per GPU (1 GB = 1e9 bytes)";
    b.segments = {"weights", "KV cache pool", "activations", "runtime reserve", "left unused (utilization cap)"};
    b.colors = {"#0072B2", "#009E73", "#E69F00", "#CC79A7", "#d9d9d9"};
    for (size_t i = 0; i < charted.size(); ++i) {
      const Deployment* o = charted[i];
      const auto& m = o->plan.memory;
      b.bars.push_back(short_label(*o, charted_rank[i]));
      const double other = static_cast<double>(m.usable_bytes - m.weights_bytes - m.activation_bytes - m.reserve_bytes -
                                                m.kv_budget_bytes);
      b.values.push_back({to_gb(static_cast<double>(m.weights_bytes)), to_gb(static_cast<double>(m.kv_budget_bytes)),
                          to_gb(static_cast<double>(m.activation_bytes)), to_gb(static_cast<double>(m.reserve_bytes)),
                          to_gb(static_cast<double>(m.gpu_bytes - m.usable_bytes) + std::max(0.0, other))});
    }
    h += html::stacked_bars(b) + "\n";
  }
  for (const bool ttft : {true, false}) {
    html::Chart c;
    c.title = ttft ? "Throughput against p99 time to first token (one replica)"
                   : "Throughput against p99 time per output token (one replica)";
    c.x = {"throughput (completed requests/s per replica)", false, 0.0, std::nullopt};
    c.y = {ttft ? "p99 TTFT (s)" : "p99 TPOT (s)", false, 0.0, std::nullopt};
    double ymax = 0;
    for (size_t i = 0; i < charted.size(); ++i) {
      html::Series s{short_label(*charted[i], charted_rank[i]), html::palette(i), {}, true, i == 0, {}};
      for (const auto& p : charted[i]->load_curve) {
        s.points.emplace_back(p.throughput_requests_per_s, ttft ? p.ttft_p99_s : p.tpot_p99_s);
        s.hollow.push_back(!p.meets_slo);
      }
      c.series.push_back(std::move(s));
    }
    const double slo = ttft ? w.slo.ttft_p99_s : w.slo.tpot_p99_s;
    if (slo > 0) {
      c.refs.push_back({"SLO " + seconds(slo), slo});
      ymax = 3 * slo;  // saturated points shoot up; keep the SLO region readable
      c.y.max = ymax;
    }
    c.note = "Probes at 25-125 % of each option's max rate; open markers miss the SLO.";
    h += html::line_chart(c) + "\n";
  }
  h += "</div>\n";

  return h;
}

}  // namespace kvplan::reports::size_detail
