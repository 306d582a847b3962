// `kvplan size --disagg`: the verdicts (decided by size::run_disagg_search) and the ranked
// disaggregated layouts, as text, Markdown, HTML and the JSON's "disaggregated" key.
#include "reports/size_disagg_report.h"

#include <fmt/format.h>

#include "reports/html.h"
#include "reports/layout.h"
#include "reports/size_common.h"

namespace kvplan::reports {

using size::DisaggOption;
using size::DisaggSearchResult;
using size_detail::money;

namespace {

std::string pool_label(const std::string& gpu, const ServingOptions& o) {
  return o.pp > 1 ? fmt::format("{} TP{} PP{}", gpu, o.tp, o.pp) : fmt::format("{} TP{}", gpu, o.tp);
}

Table layouts_table(const DisaggSearchResult& d, size_t max_rows) {
  Table t;
  t.header = {"model", "xPyD", "prefill", "decode", "link", "max req/s", "units", "GPUs", "$/h", "TTFT p99", "TPOT p99",
              "transfer p99", "meets SLO"};
  t.right_align = {false, false, false, false, false, true, true, true, true, true, true, true, false};
  for (const auto& o : d.options) {
    if (o.pruned) continue;  // counted in the summary line; the JSON lists them
    if (max_rows > 0 && t.rows.size() >= max_rows) break;
    t.rows.push_back({o.model, size::to_string(o.ratio), pool_label(o.prefill_gpu, o.prefill_options),
                      pool_label(o.decode_gpu, o.decode_options), o.link,
                      o.found ? fmt::format("{:.2f}", o.max_rate_per_s) : "-", o.found ? count(o.units) : "-",
                      o.found ? count(o.gpus_total) : "-", o.found ? money(o.cost_per_hour_usd) : "-",
                      seconds(o.ttft_p99_s), seconds(o.tpot_p99_s), seconds(o.transfer_p99_s),
                      o.meets_slo ? "yes" : "no"});
  }
  return t;
}

std::string winner_label(const std::string& winner) {
  if (winner == "aggregated") return "Aggregated wins";
  if (winner == "disaggregated") return "Disaggregated wins";
  return "Neither wins";
}

std::string ratios_label(const DisaggSearchResult& d) {
  std::string s;
  for (const auto& r : d.ratios) s += (s.empty() ? "" : ", ") + size::to_string(r);
  return s;
}

}  // namespace

nlohmann::json disagg_size_json(const DisaggSearchResult& d) {
  nlohmann::json j;
  j["ratios"] = nlohmann::json::array();
  for (const auto& r : d.ratios) j["ratios"].push_back(size::to_string(r));
  j["candidates"] = d.candidates;
  j["simulated"] = d.simulated;
  j["verdicts"] = nlohmann::json::array();
  for (const auto& v : d.verdicts) {
    nlohmann::json x{{"model", v.model}, {"winner", v.winner}, {"why", v.why}};
    x["aggregated_layout"] = v.aggregated_layout.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.aggregated_layout);
    x["aggregated_cost_per_hour_usd"] =
        v.aggregated_cost_per_hour_usd ? nlohmann::json(*v.aggregated_cost_per_hour_usd) : nlohmann::json(nullptr);
    x["disaggregated_rank"] = v.disaggregated ? nlohmann::json(*v.disaggregated + 1) : nlohmann::json(nullptr);
    j["verdicts"].push_back(x);
  }
  j["options"] = nlohmann::json::array();
  size_t rank = 0;
  for (const DisaggOption& o : d.options) {
    const auto pool = [](const std::string& gpu, const ServingOptions& so, int64_t n) {
      return nlohmann::json{{"gpu", gpu}, {"tp", so.tp}, {"pp", so.pp}, {"instances", n}};
    };
    j["options"].push_back({{"rank", ++rank},
                            {"model", o.model},
                            {"xpyd", size::to_string(o.ratio)},
                            {"prefill", pool(o.prefill_gpu, o.prefill_options, o.ratio.prefill)},
                            {"decode", pool(o.decode_gpu, o.decode_options, o.ratio.decode)},
                            {"link", o.link},
                            {"link_rule", o.link_why},
                            {"transfer_mean_prompt_s", o.transfer_mean_prompt_s},
                            {"found", o.found},
                            {"max_rate_per_s", o.max_rate_per_s},
                            {"runs", o.runs},
                            {"ttft_p99_s", o.ttft_p99_s},
                            {"tpot_p99_s", o.tpot_p99_s},
                            {"transfer_p99_s", o.transfer_p99_s},
                            {"prefill_busy_fraction", o.prefill_busy_fraction},
                            {"decode_busy_fraction", o.decode_busy_fraction},
                            {"units", o.units},
                            {"gpus_total", o.gpus_total},
                            {"cost_per_hour_usd", o.cost_per_hour_usd ? nlohmann::json(*o.cost_per_hour_usd)
                                                                      : nlohmann::json(nullptr)},
                            {"meets_slo", o.meets_slo},
                            {"pruned", o.pruned ? nlohmann::json(*o.pruned) : nlohmann::json(nullptr)}});
  }
  return j;
}

std::string disagg_size_text(const DisaggSearchResult& d, TextFormat f, size_t max_rows) {
  const bool md = f == TextFormat::md;
  std::string out = md ? "\n## Disaggregated prefill/decode\n\n" : "\nDisaggregated prefill/decode:\n";
  out += fmt::format("{}{} layouts, {} simulated, {} pruned (one unit costs at least the aggregated answer); ratios {}; "
                     "each model's aggregated formats; TPs the aggregated search kept per GPU.\n",
                     md ? "" : "  ", d.candidates, d.simulated, d.candidates - d.simulated, ratios_label(d));
  for (const auto& v : d.verdicts)
    out += fmt::format("{}{} for {}: {}.\n", md ? "- " : "  ", winner_label(v.winner), v.model, v.why);
  if (d.simulated == 0) return out;
  out += "\n" + render(layouts_table(d, max_rows), md ? TextFormat::md : TextFormat::table);
  if (max_rows > 0 && static_cast<size_t>(d.simulated) > max_rows)
    out += fmt::format("({} of {} simulated layouts; --format json lists all)\n", max_rows, d.simulated);
  return out;
}

std::string disagg_size_html(const DisaggSearchResult& d) {
  std::string s = "<section><h2>Disaggregated prefill/decode</h2>\n";
  s += fmt::format("<p>{} layouts, {} simulated (ratios {}).</p>\n<ul>\n", d.candidates, d.simulated,
                   html::escape(ratios_label(d)));
  for (const auto& v : d.verdicts)
    s += fmt::format("<li><b>{}</b> for {}: {}.</li>\n", html::escape(winner_label(v.winner)), html::escape(v.model),
                     html::escape(v.why));
  s += "</ul>\n";
  for (const auto& v : d.verdicts)
    if (v.winner == "disaggregated" && v.disaggregated && *v.disaggregated < d.options.size())
      s += "<figure>" + layout_svg(layout_of(d.options[*v.disaggregated])) + "</figure>\n";
  s += "<table>\n<tr>";
  const Table t = layouts_table(d, 20);
  for (const auto& h : t.header) s += "<th>" + html::escape(h) + "</th>";
  s += "</tr>\n";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (const auto& c : row) s += "<td>" + html::escape(c) + "</td>";
    s += "</tr>\n";
  }
  return s + "</table>\n</section>\n";
}

}  // namespace kvplan::reports
