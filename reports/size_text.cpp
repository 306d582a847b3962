// `kvplan size` for a reader: the recommendation per model (from size::recommend, not
// decided here), the ranked table, pruning counts and the assumptions, as terminal text
// or Markdown.
#include <fmt/format.h>

#include <map>
#include <set>

#include "planner/speculative.h"
#include "reports/size_common.h"
#include "reports/size_report.h"

namespace kvplan::reports {

using namespace size_detail;
using size::Deployment;
using size::SizeResult;

namespace {

std::string summary_line(const SizeResult& r) {
  int64_t meeting = 0, pruned = 0;
  for (const auto& o : r.options) {
    meeting += o.meets_slo ? 1 : 0;
    pruned += o.pruned ? 1 : 0;
  }
  const auto& w = r.workload;
  std::string s = fmt::format("Workload {}: {:.2f} requests/s, SLO p99 TTFT {} and p99 TPOT {}; {} candidates, {} pruned, "
                              "{} {}, {} meet the SLO",
                              w.name, r.shape.rate_per_s, seconds(w.slo.ttft_p99_s), seconds(w.slo.tpot_p99_s),
                              r.candidates, pruned, r.evaluated, evaluated_how(r), meeting);
  if (r.pruned_by_bound + r.pruned_infeasible > 0)
    s += fmt::format(" ({} of the pruned could not beat an option already proven, {} fail on rejections alone; "
                     "--exhaustive simulates them)",
                     r.pruned_by_bound, r.pruned_infeasible);
  if (r.what_if_skipped > 0)
    s += fmt::format("; {} more are what-ifs no engine runs, left out (--what-if searches them)", r.what_if_skipped);
  s += ".\n";
  // --enable-lora: the slots the candidates hold (docs/lora.md); the table's engine
  // column names each candidate's.
  std::set<int64_t> slots, ranks;
  for (const Deployment& o : r.options)
    if (o.candidate.options.lora) {
      slots.insert(o.candidate.options.lora->max_loras);
      ranks.insert(o.candidate.options.lora->max_lora_rank);
    }
  if (!slots.empty()) {
    const auto list = [](const std::set<int64_t>& v) {
      std::string out;
      for (const int64_t x : v) out += (out.empty() ? "" : " or ") + std::to_string(x);
      return out;
    };
    s += fmt::format("LoRA: every candidate holds {} adapter slots of rank {} (taken from its KV pool); ", list(slots),
                     list(ranks));
    s += w.lora.given() ? fmt::format("the workload's requests use {} adapters, scheduled by vLLM's max_loras rule with "
                                      "their loads into GPU slots simulated (docs/lora.md).\n",
                                      count(w.lora.adapters))
                        : fmt::format("the workload gives no adapters, so each step pays the LoRA kernels of "
                                      "min(sequences, slots) distinct adapters, the worst case.\n");
  }
  // Speculative decoding: which candidates run it (the engine column names it).
  int64_t with_spec = 0;
  const SpecDecode* spec = nullptr;
  for (const Deployment& o : r.options)
    if (o.candidate.options.spec) {
      ++with_spec;
      spec = o.candidate.options.spec.get();
    }
  if (spec) {
    std::string rates;
    for (const double a : spec->acceptance_rates) rates += (rates.empty() ? "" : ", ") + fmt::format("{:.3g}", a);
    const std::string acceptance = spec->acceptance_length > 0
                                       ? fmt::format("mean acceptance length {:.3g}", spec->acceptance_length)
                                       : rates.empty() ? std::string("the shipped acceptance default")
                                                       : "acceptance " + rates;
    s += fmt::format("Speculative decoding: {} of the {} candidates run {} with {} draft token{} ({}), vLLM V1's "
                     "scheduler; the others decode plainly (docs/speculative.md).\n",
                     with_spec, r.options.size(), to_string(spec->method), spec->num_speculative_tokens,
                     spec->num_speculative_tokens == 1 ? "" : "s", acceptance);
  }
  return s;
}

std::string recommendation(const SizeResult& r, const size::Recommendation& rec, bool md) {
  const Deployment& o = r.options[rec.option];
  const std::string bullet = md ? "- " : "  ";
  std::string out = fmt::format("{}Recommended for {}: {}: {}; {}, {}{}.\n", md ? "- **" : "", o.model,
                                option_label(o) + (md ? "**" : ""), costs(o), max_rate(o, rec), binding(o, rec),
                                o.changes_quality ? " (changes quality: " + o.quality + ")" : "");
  out += bullet + headroom(r, rec) + "\n";
  if (!o.what_if.empty()) out += bullet + o.what_if + "\n";
  if (const std::string note = rejected_note(o); !note.empty()) out += bullet + "Note: " + note + "\n";
  if (rec.lossless) {
    const Deployment& q = r.options[*rec.lossless];
    out += fmt::format("{}Without a quality cost: {}: {}/h.\n", bullet, option_label(q), money(q.cost_per_hour_usd));
  }
  return out;
}

}  // namespace

std::string size_text(const SizeResult& r, TextFormat f, size_t max_rows) {
  const bool md = f == TextFormat::md;
  std::string out;
  if (md) out += fmt::format("# kvplan size: {}\n\n", r.workload.name);
  out += summary_line(r);
  if (md) out += "\n";
  for (const auto& rec : r.recommendations) out += recommendation(r, rec, md);
  for (const auto& u : r.unmet) out += fmt::format("{}No option for {} meets the SLO: {}.\n", md ? "- " : "", u.model, unmet_reason(u));
  if (r.recommendations.empty() && r.unmet.empty())
    out += "No option meets the SLO at any rate: relax the SLO or add GPUs to --gpus.\n";
  out += "\n";
  out += render(size_table(r, max_rows), md ? TextFormat::md : TextFormat::table);
  if (max_rows > 0 && static_cast<size_t>(r.evaluated) > max_rows)
    out += fmt::format("({} of {} evaluated options, each model's best included; --format json or csv lists all)\n",
                       max_rows, r.evaluated);
  std::map<std::string, int64_t> reasons;
  for (const auto& o : r.options)
    if (o.pruned) ++reasons[reason_kind(*o.pruned)];
  if (!reasons.empty()) {
    out += md ? "\n## Pruned before simulation\n\n" : "\nPruned before simulation:";
    for (const auto& [k, n] : reasons) out += md ? fmt::format("- {}: {}\n", k, n) : fmt::format(" {} {};", k, n);
    out += "\n";
  }
  out += md ? "\n## Assumptions\n\n" : "\n";
  for (const auto& a : assumptions(r)) out += (md ? "- " : "") + a + "\n";
  out += (md ? "\n**Validation status:** " : "Validation: ") + validation_status(r) + "\n";
  return out;
}

}  // namespace kvplan::reports
