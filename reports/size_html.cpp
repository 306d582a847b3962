// The HTML purchase report (size_html): self-contained HTML with inline CSS and SVG,
// assembled from one function per section (size_html_sections.h). Renders only.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "reports/html.h"
#include "reports/size_common.h"
#include "reports/size_html_sections.h"
#include "reports/size_report.h"

namespace kvplan::reports {

namespace size_detail {

using html::escape;
using size::Deployment;
using size::SizeResult;

namespace {
const char* kCss = R"(
body{font-family:-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1320px;color:#222;padding:0 16px}
h1{font-size:26px;margin-bottom:4px} h2{font-size:20px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin-top:0}
.rec{background:#eef6ee;border:1px solid #8bc48b;border-radius:8px;padding:12px 18px;margin:14px 0}
.rec h3{margin:4px 0 6px 0;font-size:18px} .rec .big{font-size:20px;font-weight:600;margin:4px 0}
.alt{color:#333;margin:4px 0}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
.scroll{overflow-x:auto}
th,td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;white-space:nowrap}
th{background:#f3f3f3;position:sticky;top:0} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.best td{background:#f2fbf2;font-weight:600}
.q{background:#fff1d6;color:#8a5a00;border-radius:4px;padding:1px 5px;font-size:11px}
.p{color:#0072B2;font-weight:bold}
.charts{display:flex;flex-wrap:wrap;gap:18px} .chart{border:1px solid #ddd;border-radius:6px}
.small{font-size:12px;color:#555} details{margin:8px 0}
)";

}  // namespace

std::string td(const std::string& s, bool num) {
  return std::string(num ? "<td class=\"n\">" : "<td>") + html::escape(s) + "</td>";
}

//! "#3 llama-3-8b l40s TP1 fp8/int4": the rank ties a chart entry to the options table.
std::string short_label(const Deployment& o, size_t rank) {
  const auto& so = o.candidate.options;
  const std::string weights =
      so.quantization == WeightQuant::none ? weight_label(o) : std::string(to_string(so.quantization));
  return fmt::format("#{} {} {} TP{}{}{} {}/{}", rank, o.model, o.gpu, so.tp, so.dcp > 1 ? fmt::format("xDCP{}", so.dcp) : "",
                     so.pp > 1 ? fmt::format("xPP{}", so.pp) : "", weights, kv_dtype_label(o));
}


std::string html_head(const SizeResult& r) {
  const auto& w = r.workload;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += "<title>kvplan sizing report: " + escape(w.name) + "</title><style>" + kCss + "</style></head><body>\n";
  int64_t meeting = 0, pruned = 0;
  std::set<std::string> models, gpus;
  for (const auto& o : r.options) {
    meeting += o.meets_slo ? 1 : 0;
    pruned += o.pruned ? 1 : 0;
    models.insert(o.model);
    gpus.insert(o.gpu);
  }
  const auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  h += fmt::format("<h1>What to buy for “{}”: {:.2f} requests/s within p99 TTFT {} and p99 TPOT {}</h1>\n",
                   escape(w.name), r.shape.rate_per_s, escape(seconds(w.slo.ttft_p99_s)), escape(seconds(w.slo.tpot_p99_s)));
  h += fmt::format("<p class=\"sub\">Models: {}. GPUs considered: {}. {} candidate deployments: {} pruned by the planner, "
                   "{} {}, {} meet the SLO. Requests: mean prompt {:.0f} tokens, mean output {:.0f} tokens, p99 "
                   "context {} tokens.{}</p>\n",
                   escape(join(models)), escape(join(gpus)), r.candidates, pruned, r.evaluated, evaluated_how(r), meeting,
                   r.shape.prompt_mean_tokens, r.shape.output_mean_tokens, r.shape.context_p99_tokens,
                   r.what_if_skipped > 0 ? fmt::format(" {} what-if candidates (formats no engine runs) left out.",
                                                       r.what_if_skipped)
                                         : "");
  return h;
}

std::string html_recommendations(const SizeResult& r) {
  std::string h;
  for (const auto& rec : r.recommendations) {
    const Deployment& o = r.options[rec.option];
    const auto& so = o.candidate.options;
    h += "<div class=\"rec\"><h3>Recommendation for " + escape(o.model) + "</h3>";
    h += fmt::format("<p class=\"big\">{} × {} — {}</p>", o.gpus_total, escape(o.gpu), escape(costs(o)));
    h += fmt::format("<p>{} replica{} of tensor-parallel {}{}{}; weights {}, KV cache {}; scheduler {}, max-num-seqs {}. "
                     "One replica sustains {} within the SLO ({}: {}). At its share of the load ({:.2f} requests/s) "
                     "the simulated p99 TTFT is {} and p99 TPOT {}.</p>",
                     o.replicas, o.replicas == 1 ? "" : "s", so.tp,
                     so.dcp > 1 ? fmt::format(" with decode context parallel {}", so.dcp) : "",
                     so.pp > 1 ? fmt::format(" × pipeline {}", so.pp) : "",
                     escape(weight_label(o)), escape(kv_label(o)), escape(std::string(sim::to_string(o.candidate.scheduler))),
                     so.max_num_seqs, escape(max_rate(o, rec).substr(4)), escape(binding(o, rec)),
                     escape(o.eval.binding_detail), o.operating.arrival_rate_per_s, escape(seconds(o.operating.ttft_p99_s)),
                     escape(seconds(o.operating.tpot_p99_s)));
    h += "<p>" + escape(headroom(r, rec)) + "</p>";
    if (!o.what_if.empty()) h += "<p><b>What-if:</b> " + escape(o.what_if) + "</p>";
    if (const std::string note = rejected_note(o); !note.empty()) h += "<p><b>Note:</b> " + escape(note) + "</p>";
    if (o.changes_quality) {
      h += "<p><span class=\"q\">changes quality</span> " + escape(o.quality) + "</p>";
      if (rec.lossless) {
        const Deployment& q = r.options[*rec.lossless];
        h += "<p class=\"alt\">Cheapest without a quality cost: <b>" + escape(option_label(q)) + "</b> — " +
             escape(money(q.cost_per_hour_usd)) + "/h, " + escape(money_small(q.cost_per_million_output_tokens_usd)) +
             " per million output tokens.</p>";
      }
    }
    h += "</div>\n";
  }
  for (const auto& u : r.unmet)
    h += "<div class=\"rec\"><h3>No option for " + escape(u.model) + "</h3><p>" + escape(unmet_reason(u)) + ".</p></div>\n";
  if (r.recommendations.empty() && r.unmet.empty())
    h += "<div class=\"rec\"><p class=\"big\">No option meets the SLO at any rate.</p><p>Relax the SLO, allow more "
         "GPUs per replica, or add GPU types.</p></div>\n";
  return h;
}

std::string html_option_tables(const SizeResult& r) {
  std::string h;
  // One per model (models differ in quality, so they are not mixed),
  // cheapest first; "#" is the overall rank, as in the JSON and the chart legends.
  std::vector<std::string> model_order;
  for (const auto& o : r.options)
    if (o.meets_slo && std::find(model_order.begin(), model_order.end(), o.model) == model_order.end())
      model_order.push_back(o.model);
  const size_t max_shown = 25;
  for (const auto& model : model_order) {
    h += "<h2>" + escape(model) + ": options meeting the SLO, cheapest first</h2>\n<div class=\"scroll\"><table><tr>";
    for (const char* c : {"#", "GPU", "GPUs", "TP", "PP", "replicas", "weights", "KV", "engine", "max rate / replica", "$ / h",
                          "$ / M output tokens", "p99 TTFT", "p99 TPOT", "p99 e2e", "binds", "Pareto", "quality"})
      h += std::string("<th>") + c + "</th>";
    h += "</tr>\n";
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < r.options.size(); ++i) {
      const Deployment& o = r.options[i];
      if (!o.meets_slo || o.model != model) continue;
      ++total;
      if (shown >= max_shown) continue;
      ++shown;
      const auto& so = o.candidate.options;
      h += shown == 1 ? "<tr class=\"best\">" : "<tr>";
      h += td(std::to_string(i + 1), true) + td(o.gpu) + td(std::to_string(o.gpus_total), true) +
           td(so.dcp > 1 ? fmt::format("{} DCP {}", so.tp, so.dcp) : std::to_string(so.tp), true) +
           td(std::to_string(so.pp), true) + td(std::to_string(o.replicas), true) +
           td(weight_label(o)) + td(kv_label(o)) + td(engine_label(o)) +
           td(fmt::format("{:.2f}/s", o.eval.max_rate_per_s), true) +
           td(money(o.cost_per_hour_usd), true) + td(money_small(o.cost_per_million_output_tokens_usd), true) +
           td(seconds(o.operating.ttft_p99_s), true) + td(seconds(o.operating.tpot_p99_s), true) +
           td(seconds(o.operating.e2e_p99_s), true) + td(binds_label(o));
      h += std::string("<td>") + (o.pareto ? "<span class=\"p\">★</span>" : "") + "</td>";
      h += std::string("<td>") +
           (o.changes_quality ? "<span class=\"q\" title=\"" + escape(o.quality) + "\">changes quality</span>" : "") +
           "</td></tr>\n";
    }
    h += "</table></div>\n";
    if (shown < total)
      h += fmt::format("<p class=\"small\">First {} of {} options of {} meeting the SLO; the JSON and CSV outputs list "
                       "all.</p>\n",
                       shown, total, escape(model));
  }
  h += "<p class=\"small\">p99 latencies are simulated for one replica at its share of the workload's rate. ★ = on the "
       "Pareto frontier of cost per hour against p99 end-to-end latency. “binds” names what stops one replica from "
       "taking more load: memory (KV pool full), bandwidth or compute (the decode step's roofline bound), "
       "max-num-seqs (engine limit; “(default)”: a limit you did not set), SLO (the latency target binds before the GPU is saturated).</p>\n";

  return h;
}

std::string html_quality(const SizeResult& r) {
  std::string h;
  std::set<std::string> notes;
  for (const auto& o : r.options)
    if (o.changes_quality) notes.insert(o.quality);
  h += "<h2>Options that change model quality</h2>\n";
  if (notes.empty()) {
    h += "<p>None of the options considered changes quality beyond 16/8-bit rounding.</p>\n";
  } else {
    h += "<p>Low-bit KV caches (int4, int2) and int4 weights change what the model computes, not only how much "
         "memory it takes. Published costs, for the formats in this report:</p><ul>\n";
    for (const auto& n : notes) h += "<li>" + escape(n) + "</li>\n";
    h += "</ul><p class=\"small\">Perplexity deltas are for the models named (wikitext-2); check them on your own model "
         "and task before buying for a quantized option. fp8 weights and KV caches are treated as quality-neutral here.</p>\n";
  }

  return h;
}

std::string html_pruned(const SizeResult& r) {
  std::string h;
  int64_t meeting = 0;
  for (const auto& o : r.options) meeting += o.meets_slo ? 1 : 0;
  std::map<std::string, int64_t> reasons;
  for (const auto& o : r.options)
    if (o.pruned) ++reasons[reason_kind(*o.pruned)];
  h += "<h2>Pruned and failing candidates</h2>\n";
  if (reasons.empty() && meeting == static_cast<int64_t>(r.options.size())) {
    h += "<p>Every candidate was simulated and meets the SLO at some rate.</p>\n";
  } else {
    h += "<ul>";
    for (const auto& [k, n] : reasons) h += fmt::format("<li>{}: {} pruned by the planner</li>", escape(k), n);
    const int64_t failing = r.evaluated - meeting;
    if (failing > 0) h += fmt::format("<li>{} simulated but miss the SLO at every rate tried</li>", failing);
    h += "</ul>\n<details><summary>Every pruned or failing candidate, with the reason</summary><table><tr><th>model</th>"
         "<th>GPU</th><th>TP</th><th>weights</th><th>KV</th><th>why</th></tr>\n";
    for (const auto& o : r.options) {
      if (o.meets_slo) continue;
      h += "<tr>" + td(o.model) + td(o.gpu) + td(std::to_string(o.candidate.options.tp), true) + td(weight_label(o)) +
           td(kv_label(o)) + td(o.pruned ? *o.pruned : "misses the SLO: " + o.eval.binding_detail) + "</tr>\n";
    }
    h += "</table></details>\n";
  }

  return h;
}

std::string html_assumptions(const SizeResult& r) {
  std::string h;
  h += "<h2>Assumptions</h2>\n<ul>\n";
  for (const auto& a : assumptions(r)) h += "<li>" + escape(a) + "</li>\n";
  h += "</ul>\n<h2>Validation status</h2>\n<p>" + escape(validation_status(r)) + "</p>\n";
  h += "<p class=\"small\">Generated by kvplan size. Self-contained: no scripts, fonts or network resources.</p>\n";
  h += "</body></html>\n";
  return h;
}

}  // namespace size_detail

std::string size_html(const size::SizeResult& r) {
  using namespace size_detail;
  // The report's sections, in order (size_html_sections.h).
  using Section = std::string (*)(const size::SizeResult&);
  static constexpr Section kSections[] = {html_head,   html_recommendations, html_layouts, html_option_tables,
                                          html_charts, html_quality,         html_pruned,  html_assumptions};
  std::string h;
  for (const Section s : kSections) h += s(r);
  return h;
}

}  // namespace kvplan::reports
