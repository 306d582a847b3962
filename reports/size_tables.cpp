// `kvplan size` as tables: the ranked one for a terminal or Markdown, the raw one for CSV.
#include <fmt/format.h>

#include <algorithm>

#include "reports/size_common.h"
#include "reports/size_report.h"

namespace kvplan::reports {

using namespace size_detail;
using size::Deployment;
using size::SizeResult;

Table size_table(const SizeResult& r, size_t max_rows, bool include_pruned) {
  Table t;
  t.header = {"#", "model", "gpu", "GPUs", "TP", "PP", "replicas", "weights", "KV", "engine", "max rate/replica",
              "$/h", "$/M out tok", "p99 TTFT", "p99 TPOT", "p99 E2E", "binds", "meets SLO", "pareto", "quality"};
  t.right_align = {true, false, false, true, true, true, true, false, false, false, true,
                   true, true, true, true, true, false, false, false, false};
  // Each model's recommended option first, so a cheaper model cannot crowd another out
  // of the first rows; then the rest by rank. "#" is the overall rank, as in the JSON.
  std::vector<size_t> shown;
  const auto take = [&](size_t i) {
    if (max_rows > 0 && shown.size() >= max_rows) return;
    if (std::find(shown.begin(), shown.end(), i) == shown.end()) shown.push_back(i);
  };
  for (const auto& rec : r.recommendations) take(rec.option);
  for (size_t i = 0; i < r.options.size(); ++i)
    if (!r.options[i].pruned || include_pruned) take(i);
  std::sort(shown.begin(), shown.end());
  for (const size_t i : shown) {
    const Deployment& o = r.options[i];
    const auto& so = o.candidate.options;
    const bool ok = o.meets_slo;
    t.rows.push_back({std::to_string(i + 1), o.model, o.gpu, ok ? std::to_string(o.gpus_total) : "",
                      so.dcp > 1 ? fmt::format("{} DCP {}", so.tp, so.dcp) : std::to_string(so.tp), std::to_string(so.pp),
                      ok ? std::to_string(o.replicas) : "",
                      weight_label(o), kv_label(o), engine_label(o),
                      o.pruned ? "" : fmt::format("{:.2f}/s", o.eval.max_rate_per_s),
                      ok ? money(o.cost_per_hour_usd) : "", ok ? money(o.cost_per_million_output_tokens_usd) : "",
                      ok ? seconds(o.operating.ttft_p99_s) : "", ok ? seconds(o.operating.tpot_p99_s) : "",
                      // The star's latency: the frontier is cost per hour against p99 E2E (mark_pareto).
                      ok ? seconds(o.operating.e2e_p99_s) : "", o.pruned ? "pruned" : binds_label(o),
                      ok ? "yes" : "no", o.pareto ? "*" : "", o.changes_quality ? "changes" : ""});
  }
  return t;
}

Table size_table_raw(const SizeResult& r) {
  Table t;
  t.header = {"rank", "model", "gpu", "gpus", "tp", "pp", "dcp", "replicas", "weight_dtype", "kv_dtype", "kv_quant",
              "scheduler", "max_num_seqs", "max_rate_per_s", "meets_slo", "cost_per_hour_usd",
              "cost_per_million_output_tokens_usd", "ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "binding", "pareto",
              "changes_quality", "pruned", "cost_per_million_input_tokens_usd", "cost_per_request_usd", "what_if"};
  t.right_align.assign(t.header.size(), false);
  const auto num = [](std::optional<double> v) { return v ? fmt::format("{:.6g}", *v) : std::string(); };
  size_t rank = 0;
  for (const auto& o : r.options) {
    const auto& so = o.candidate.options;
    const bool ok = o.meets_slo;
    t.rows.push_back({std::to_string(++rank), o.model, o.gpu, std::to_string(o.gpus_total), std::to_string(so.tp),
                      std::to_string(so.pp), std::to_string(so.dcp), std::to_string(o.replicas), weight_label(o), kv_dtype_label(o),
                      std::string(to_string(so.kv_quant)), std::string(sim::to_string(o.candidate.scheduler)),
                      std::to_string(so.max_num_seqs), o.pruned ? "" : fmt::format("{:.6g}", o.eval.max_rate_per_s),
                      ok ? "true" : "false", num(o.cost_per_hour_usd), num(o.cost_per_million_output_tokens_usd),
                      ok ? num(o.operating.ttft_p99_s) : "", ok ? num(o.operating.tpot_p99_s) : "",
                      ok ? num(o.operating.e2e_p99_s) : "", o.pruned ? "" : std::string(size::to_string(o.eval.binding)),
                      o.pareto ? "true" : "false", o.changes_quality ? "true" : "false", o.pruned.value_or(""),
                      num(o.cost_per_million_input_tokens_usd), num(o.cost_per_request_usd), o.what_if});
  }
  return t;
}

}  // namespace kvplan::reports
