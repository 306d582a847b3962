#include "reports/size_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reports/html.h"

namespace kvplan::reports {

namespace {

using size::Option;
using size::SizeResult;

std::string weight_label(const Option& o) {
  switch (o.candidate.options.quantization) {
    case WeightQuant::none:
      if (o.plan_valid) return std::string(to_string(o.plan.weight_dtype));
      return o.candidate.options.dtype ? std::string(to_string(*o.candidate.options.dtype)) : "auto";
    case WeightQuant::awq: return "int4 awq";
    case WeightQuant::gptq: return "int4 gptq";
    case WeightQuant::fp8: return "fp8";
    case WeightQuant::int8: return "int8";
  }
  return "?";
}

std::string kv_dtype_label(const Option& o) {
  if (o.plan_valid) return std::string(to_string(o.plan.kv_dtype));
  return o.candidate.options.kv_cache_dtype ? std::string(to_string(*o.candidate.options.kv_cache_dtype)) : "auto";
}

std::string kv_label(const Option& o) {
  const std::string d = kv_dtype_label(o);
  const bool quantized = o.plan_valid ? dtype_bits(o.plan.kv_dtype) < 8 : false;
  return quantized && o.candidate.options.kv_quant != KvQuant::raw
             ? d + " " + std::string(to_string(o.candidate.options.kv_quant))
             : d;
}

//! "continuous, 256 seqs" or "chunked, 128 seqs, 4096 tok": the engine limits searched.
std::string engine_label(const Option& o) {
  const auto& so = o.candidate.options;
  std::string out = fmt::format("{}, {} seqs", sim::to_string(o.candidate.scheduler), so.max_num_seqs);
  if (so.max_num_batched_tokens) out += fmt::format(", {} tok", *so.max_num_batched_tokens);
  return out;
}

std::string money(std::optional<double> v) { return v ? fmt::format("${:.2f}", *v) : "n/a"; }

nlohmann::json opt_num(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json load_json(const size::LoadPoint& p) {
  return {{"arrival_rate_per_s", p.arrival_rate_per_s},
          {"throughput_requests_per_s", p.throughput_requests_per_s},
          {"output_tokens_per_s", p.output_tokens_per_s},
          {"ttft_p99_s", p.ttft_p99_s},
          {"tpot_p99_s", p.tpot_p99_s},
          {"e2e_p99_s", p.e2e_p99_s},
          {"meets_slo", p.meets_slo}};
}

//! Short category of a pruning reason: the text before the first ':'.
std::string reason_kind(const std::string& reason) {
  const auto colon = reason.find(':');
  return colon == std::string::npos ? reason : reason.substr(0, colon);
}

std::vector<std::string> assumptions(const SizeResult& r) {
  std::vector<std::string> a;
  a.push_back("Units: GB = 1e9 bytes, GiB = 2^30 bytes; memory figures are per GPU unless stated.");
  a.push_back("FLOPs count 2 per multiply-add; step times are rooflines: max(FLOPs / (peak x efficiency), "
              "bytes / (bandwidth x efficiency)) plus tensor-parallel all-reduces.");
  a.push_back(fmt::format("Engine memory accounting: {} (usable = GPU memory x gpu_memory_utilization; the KV pool "
                          "is what is left after weights, activations and the runtime reserve).",
                          r.engine.empty() ? "ideal" : r.engine));
  if (r.calibrated)
    a.push_back(fmt::format("Efficiencies: measured calibration from {}.", r.calibration_device.empty() ? "a device" : r.calibration_device));
  else
    a.push_back("Efficiencies: documented defaults (no --calibration): 80 % of datasheet bandwidth, 70 % of peak "
                "FLOP/s in prefill, 50 % in decode.");
  a.push_back(fmt::format("Max rate per replica: the highest Poisson-scaled arrival rate whose simulated p99 TTFT and p99 "
                          "TPOT meet the SLO, found by doubling/halving then bisection to 2 %, {} requests per probe, "
                          "seed {} (the same requests for every option).",
                          r.requests_per_probe, r.seed));
  a.push_back("Replicas = ceil(workload rate / max rate per replica); cost per hour = replicas x TP x PP x GPU price; "
              "cost per million output tokens = cost per hour / (rate x mean output tokens x 3600) x 1e6.");
  a.push_back(fmt::format("Pruning uses the workload's p99 context ({} tokens) and p99 prompt ({} tokens), sampled from "
                          "{} generated requests.",
                          r.shape.context_p99_tokens, r.shape.prompt_p99_tokens, r.shape.samples));
  a.push_back("GPU prices are indicative list prices from the GPU catalog (configs/gpus), not quotes.");
  return a;
}

std::string validation_status(const SizeResult& r) {
  return r.calibrated ? "Predictions of kvplan's planner and simulator, with efficiencies measured on " +
                            (r.calibration_device.empty() ? std::string("a device") : r.calibration_device) +
                            "; other GPUs are extrapolated from the datasheets."
                      : "Predictions of kvplan's planner and simulator from datasheet figures and default efficiencies; "
                        "not validated against measurements of these deployments. Run `kvplan validate` on the "
                        "hardware and pass --calibration to tighten them.";
}

}  // namespace

std::string option_label(const Option& o) {
  const auto& so = o.candidate.options;
  std::string gpus = o.replicas > 0 ? fmt::format("{} x {}", o.gpus_total, o.gpu) : o.gpu;
  std::string shape = fmt::format("TP {}", so.tp);
  if (so.pp > 1) shape += fmt::format(" x PP {}", so.pp);
  if (o.replicas > 0) shape = fmt::format("{} replica{} of {}", o.replicas, o.replicas == 1 ? "" : "s", shape);
  return fmt::format("{} on {} ({}), {} weights, KV {}", o.model, gpus, shape, weight_label(o), kv_label(o));
}

nlohmann::json size_json(const SizeResult& r) {
  nlohmann::json out = {{"schema", "kvplan.size/1"}};
  const auto& w = r.workload;
  out["workload"] = {{"name", w.name},
                     {"rate_per_s", r.shape.rate_per_s},
                     {"slo", {{"ttft_p99_s", w.slo.ttft_p99_s}, {"tpot_p99_s", w.slo.tpot_p99_s}}},
                     {"prompt_p99_tokens", r.shape.prompt_p99_tokens},
                     {"context_p99_tokens", r.shape.context_p99_tokens},
                     {"prompt_mean_tokens", r.shape.prompt_mean_tokens},
                     {"output_mean_tokens", r.shape.output_mean_tokens}};
  out["search"] = {{"candidates", r.candidates},
                   {"evaluated", r.evaluated},
                   {"requests_per_probe", r.requests_per_probe},
                   {"seed", r.seed},
                   {"calibrated", r.calibrated},
                   {"engine", r.engine}};
  nlohmann::json list = nlohmann::json::array();
  int64_t rank = 0;
  for (const auto& o : r.options) {
    const auto& so = o.candidate.options;
    nlohmann::json j = {{"rank", ++rank},
                        {"model", o.model},
                        {"gpu", o.gpu},
                        {"gpus", o.gpus_total},
                        {"tp", so.tp},
                        {"pp", so.pp},
                        {"replicas", o.replicas},
                        {"kv_dtype", kv_dtype_label(o)},
                        {"kv_quant", std::string(to_string(so.kv_quant))},
                        {"weight_dtype", weight_label(o)},
                        {"quantization", std::string(to_string(so.quantization))},
                        {"scheduler", std::string(sim::to_string(o.candidate.scheduler))},
                        {"max_num_seqs", so.max_num_seqs},
                        {"max_num_batched_tokens", so.max_num_batched_tokens ? nlohmann::json(*so.max_num_batched_tokens)
                                                                             : nlohmann::json(nullptr)},
                        {"max_rate_per_s", o.eval.max_rate_per_s},
                        {"meets_slo", o.meets_slo},
                        {"cost_per_hour_usd", opt_num(o.cost_per_hour_usd)},
                        {"cost_per_million_output_tokens_usd", opt_num(o.cost_per_million_output_tokens_usd)},
                        {"ttft_p99_s", o.meets_slo ? nlohmann::json(o.operating.ttft_p99_s) : nlohmann::json(nullptr)},
                        {"tpot_p99_s", o.meets_slo ? nlohmann::json(o.operating.tpot_p99_s) : nlohmann::json(nullptr)},
                        {"e2e_p99_s", o.meets_slo ? nlohmann::json(o.operating.e2e_p99_s) : nlohmann::json(nullptr)},
                        {"pareto", o.pareto},
                        {"binding", o.pruned ? nlohmann::json(nullptr) : nlohmann::json(std::string(size::to_string(o.eval.binding)))},
                        {"binding_detail", o.eval.binding_detail},
                        {"changes_quality", o.changes_quality},
                        {"quality", o.quality},
                        {"pruned", o.pruned ? nlohmann::json(*o.pruned) : nlohmann::json(nullptr)}};
    if (!o.pruned) {
      j["at_max_rate"] = load_json(o.eval.at_max);
      j["at_max_rate"]["preemptions"] = o.eval.preemptions_at_max;
      j["at_max_rate"]["rejected"] = o.eval.rejected_at_max;
      j["at_max_rate"]["kv_peak_utilization"] = o.eval.kv_peak_utilization_at_max;
      j["at_max_rate"]["batch_mean"] = o.eval.batch_mean_at_max;
      j["simulations"] = o.eval.runs;
    }
    if (o.plan_valid) {
      const auto& m = o.plan.memory;
      j["memory"] = {{"gpu_bytes", m.gpu_bytes},           {"usable_bytes", m.usable_bytes},
                     {"weights_bytes", m.weights_bytes},   {"activation_bytes", m.activation_bytes},
                     {"reserve_bytes", m.reserve_bytes},   {"kv_budget_bytes", m.kv_budget_bytes},
                     {"kv_bytes_per_token", o.plan.kv_bytes_per_token}};
      j["capacity"] = {{"context_tokens", o.plan.context_tokens},
                       {"max_concurrent_requests", o.plan.capacity.max_concurrent_requests},
                       {"max_kv_tokens", o.plan.capacity.max_kv_tokens}};
    }
    list.push_back(std::move(j));
  }
  out["options"] = std::move(list);
  return out;
}

Table size_table(const SizeResult& r, size_t max_rows, bool include_pruned) {
  Table t;
  t.header = {"#", "model", "gpu", "GPUs", "TP", "PP", "replicas", "weights", "KV", "engine", "max rate/replica",
              "$/h", "$/M out tok", "p99 TTFT", "p99 TPOT", "binds", "meets SLO", "pareto", "quality"};
  t.right_align = {true, false, false, true, true, true, true, false, false, false, true,
                   true, true, true, true, false, false, false, false};
  size_t n = 0;
  for (const auto& o : r.options) {
    if (o.pruned && !include_pruned) continue;
    if (max_rows > 0 && n >= max_rows) break;
    ++n;
    const auto& so = o.candidate.options;
    const bool ok = o.meets_slo;
    t.rows.push_back({std::to_string(n), o.model, o.gpu, ok ? std::to_string(o.gpus_total) : "",
                      std::to_string(so.tp), std::to_string(so.pp), ok ? std::to_string(o.replicas) : "",
                      weight_label(o), kv_label(o), engine_label(o),
                      o.pruned ? "" : fmt::format("{:.2f}/s", o.eval.max_rate_per_s),
                      ok ? money(o.cost_per_hour_usd) : "", ok ? money(o.cost_per_million_output_tokens_usd) : "",
                      ok ? seconds(o.operating.ttft_p99_s) : "", ok ? seconds(o.operating.tpot_p99_s) : "",
                      o.pruned ? "pruned" : std::string(size::to_string(o.eval.binding)),
                      ok ? "yes" : "no", o.pareto ? "*" : "", o.changes_quality ? "changes" : ""});
  }
  return t;
}

Table size_table_raw(const SizeResult& r) {
  Table t;
  t.header = {"rank", "model", "gpu", "gpus", "tp", "pp", "replicas", "weight_dtype", "kv_dtype", "kv_quant",
              "scheduler", "max_num_seqs", "max_rate_per_s", "meets_slo", "cost_per_hour_usd",
              "cost_per_million_output_tokens_usd", "ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "binding", "pareto",
              "changes_quality", "pruned"};
  t.right_align.assign(t.header.size(), false);
  const auto num = [](std::optional<double> v) { return v ? fmt::format("{:.6g}", *v) : std::string(); };
  size_t rank = 0;
  for (const auto& o : r.options) {
    const auto& so = o.candidate.options;
    const bool ok = o.meets_slo;
    t.rows.push_back({std::to_string(++rank), o.model, o.gpu, std::to_string(o.gpus_total), std::to_string(so.tp),
                      std::to_string(so.pp), std::to_string(o.replicas), weight_label(o), kv_dtype_label(o),
                      std::string(to_string(so.kv_quant)), std::string(sim::to_string(o.candidate.scheduler)),
                      std::to_string(so.max_num_seqs), o.pruned ? "" : fmt::format("{:.6g}", o.eval.max_rate_per_s),
                      ok ? "true" : "false", num(o.cost_per_hour_usd), num(o.cost_per_million_output_tokens_usd),
                      ok ? num(o.operating.ttft_p99_s) : "", ok ? num(o.operating.tpot_p99_s) : "",
                      ok ? num(o.operating.e2e_p99_s) : "", o.pruned ? "" : std::string(size::to_string(o.eval.binding)),
                      o.pareto ? "true" : "false", o.changes_quality ? "true" : "false", o.pruned.value_or("")});
  }
  return t;
}

std::string size_text(const SizeResult& r, TextFormat f, size_t max_rows) {
  const bool md = f == TextFormat::md;
  std::string out;
  int64_t meeting = 0, pruned = 0;
  std::map<std::string, int64_t> reasons;
  for (const auto& o : r.options) {
    meeting += o.meets_slo ? 1 : 0;
    if (o.pruned) {
      ++pruned;
      ++reasons[reason_kind(*o.pruned)];
    }
  }
  const auto& w = r.workload;
  if (md) out += fmt::format("# kvplan size: {}\n\n", w.name);
  out += fmt::format("Workload {}: {:.2f} requests/s, SLO p99 TTFT {} and p99 TPOT {}; {} candidates, {} pruned, {} "
                     "simulated, {} meet the SLO.\n",
                     w.name, r.shape.rate_per_s, seconds(w.slo.ttft_p99_s), seconds(w.slo.tpot_p99_s), r.candidates,
                     pruned, r.evaluated, meeting);
  if (md) out += "\n";
  // One recommendation per model: the cheapest option meeting the SLO, and the cheapest
  // with no quality cost when that is a different one.
  std::set<std::string> seen;
  for (const auto& o : r.options) {
    if (!o.meets_slo || seen.count(o.model)) continue;
    seen.insert(o.model);
    out += fmt::format("{}Recommended for {}: {}: {}/h, {} per million output tokens; max {:.2f} requests/s per "
                       "replica, bound by {}{}.\n",
                       md ? "- **" : "", o.model, option_label(o) + (md ? "**" : ""), money(o.cost_per_hour_usd),
                       money(o.cost_per_million_output_tokens_usd), o.eval.max_rate_per_s, size::to_string(o.eval.binding),
                       o.changes_quality ? " (changes quality: " + o.quality + ")" : "");
    if (o.eval.rejected_at_max > 0)
      out += fmt::format("{}Note: {} of {} simulated requests rejected (prompt reaches max-model-len).\n", md ? "- " : "  ",
                         o.eval.rejected_at_max, r.requests_per_probe);
    if (o.changes_quality)
      for (const auto& q : r.options)
        if (q.meets_slo && q.model == o.model && !q.changes_quality) {
          out += fmt::format("{}Without a quality cost: {}: {}/h.\n", md ? "- " : "  ", option_label(q),
                             money(q.cost_per_hour_usd));
          break;
        }
  }
  if (seen.empty()) out += "No option meets the SLO at any rate: relax the SLO or add GPUs to --gpus.\n";
  out += "\n";
  out += render(size_table(r, max_rows), md ? TextFormat::md : TextFormat::table);
  if (max_rows > 0 && static_cast<size_t>(r.evaluated) > max_rows)
    out += fmt::format("(first {} of {} evaluated options; --format json or csv lists all)\n", max_rows, r.evaluated);
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

// ------------------------------------------------------------------------------ HTML

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

std::string td(const std::string& s, bool num = false) {
  return std::string(num ? "<td class=\"n\">" : "<td>") + html::escape(s) + "</td>";
}

//! "#3 llama-3-8b l40s TP1 fp8/int4": the rank ties a chart entry to the options table.
std::string short_label(const Option& o, size_t rank) {
  const auto& so = o.candidate.options;
  const std::string weights =
      so.quantization == WeightQuant::none ? weight_label(o) : std::string(to_string(so.quantization));
  return fmt::format("#{} {} {} TP{}{} {}/{}", rank, o.model, o.gpu, so.tp, so.pp > 1 ? fmt::format("xPP{}", so.pp) : "",
                     weights, kv_dtype_label(o));
}

}  // namespace

std::string size_html(const SizeResult& r) {
  using html::escape;
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
                   "{} simulated, {} meet the SLO. Requests: mean prompt {:.0f} tokens, mean output {:.0f} tokens, p99 "
                   "context {} tokens.</p>\n",
                   escape(join(models)), escape(join(gpus)), r.candidates, pruned, r.evaluated, meeting,
                   r.shape.prompt_mean_tokens, r.shape.output_mean_tokens, r.shape.context_p99_tokens);

  // Recommendation per model.
  std::set<std::string> seen;
  for (const auto& o : r.options) {
    if (!o.meets_slo || seen.count(o.model)) continue;
    seen.insert(o.model);
    const auto& so = o.candidate.options;
    h += "<div class=\"rec\"><h3>Recommendation for " + escape(o.model) + "</h3>";
    h += fmt::format("<p class=\"big\">{} × {} — {}/h, {} per million output tokens</p>", o.gpus_total, escape(o.gpu),
                     escape(money(o.cost_per_hour_usd)), escape(money(o.cost_per_million_output_tokens_usd)));
    h += fmt::format("<p>{} replica{} of tensor-parallel {}{}; weights {}, KV cache {}; scheduler {}, max-num-seqs {}. "
                     "One replica sustains {:.2f} requests/s within the SLO (bound by {}: {}). At its share of the "
                     "load ({:.2f} requests/s) the simulated p99 TTFT is {} and p99 TPOT {}.</p>",
                     o.replicas, o.replicas == 1 ? "" : "s", so.tp, so.pp > 1 ? fmt::format(" × pipeline {}", so.pp) : "",
                     escape(weight_label(o)), escape(kv_label(o)), escape(std::string(sim::to_string(o.candidate.scheduler))),
                     so.max_num_seqs, o.eval.max_rate_per_s, escape(std::string(size::to_string(o.eval.binding))),
                     escape(o.eval.binding_detail), o.operating.arrival_rate_per_s, escape(seconds(o.operating.ttft_p99_s)),
                     escape(seconds(o.operating.tpot_p99_s)));
    if (o.eval.rejected_at_max > 0)
      h += fmt::format("<p><b>Note:</b> {} of {} simulated requests were rejected: their prompts reach the model's "
                       "context limit (max-model-len); the SLO covers only the requests served.</p>",
                       o.eval.rejected_at_max, r.requests_per_probe);
    if (o.changes_quality) {
      h += "<p><span class=\"q\">changes quality</span> " + escape(o.quality) + "</p>";
      for (const auto& q : r.options)
        if (q.meets_slo && q.model == o.model && !q.changes_quality) {
          h += "<p class=\"alt\">Cheapest without a quality cost: <b>" + escape(option_label(q)) + "</b> — " +
               escape(money(q.cost_per_hour_usd)) + "/h, " + escape(money(q.cost_per_million_output_tokens_usd)) +
               " per million output tokens.</p>";
          break;
        }
    }
    h += "</div>\n";
  }
  if (seen.empty())
    h += "<div class=\"rec\"><p class=\"big\">No option meets the SLO at any rate.</p><p>Relax the SLO, allow more "
         "GPUs per replica, or add GPU types.</p></div>\n";

  // Options tables: one per model (models differ in quality, so they are not mixed),
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
      const Option& o = r.options[i];
      if (!o.meets_slo || o.model != model) continue;
      ++total;
      if (shown >= max_shown) continue;
      ++shown;
      const auto& so = o.candidate.options;
      h += shown == 1 ? "<tr class=\"best\">" : "<tr>";
      h += td(std::to_string(i + 1), true) + td(o.gpu) + td(std::to_string(o.gpus_total), true) +
           td(std::to_string(so.tp), true) + td(std::to_string(so.pp), true) + td(std::to_string(o.replicas), true) +
           td(weight_label(o)) + td(kv_label(o)) + td(engine_label(o)) +
           td(fmt::format("{:.2f}/s", o.eval.max_rate_per_s), true) +
           td(money(o.cost_per_hour_usd), true) + td(money(o.cost_per_million_output_tokens_usd), true) +
           td(seconds(o.operating.ttft_p99_s), true) + td(seconds(o.operating.tpot_p99_s), true) +
           td(seconds(o.operating.e2e_p99_s), true) + td(std::string(size::to_string(o.eval.binding)));
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
       "max-num-seqs (engine limit), SLO (the latency target binds before the GPU is saturated).</p>\n";

  // Charts.
  h += "<h2>Charts</h2>\n<div class=\"charts\">\n";
  std::vector<const Option*> charted;
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
      const Option* o = charted[i];
      const auto& m = o->plan.memory;
      b.bars.push_back(short_label(*o, charted_rank[i]));
      const double other = static_cast<double>(m.usable_bytes - m.weights_bytes - m.activation_bytes - m.reserve_bytes -
                                                m.kv_budget_bytes);
      b.values.push_back({static_cast<double>(m.weights_bytes) / 1e9, static_cast<double>(m.kv_budget_bytes) / 1e9,
                          static_cast<double>(m.activation_bytes) / 1e9, static_cast<double>(m.reserve_bytes) / 1e9,
                          (static_cast<double>(m.gpu_bytes - m.usable_bytes) + std::max(0.0, other)) / 1e9});
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

  // Quality.
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

  // Pruned.
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

  // Assumptions.
  h += "<h2>Assumptions</h2>\n<ul>\n";
  for (const auto& a : assumptions(r)) h += "<li>" + escape(a) + "</li>\n";
  h += "</ul>\n<h2>Validation status</h2>\n<p>" + escape(validation_status(r)) + "</p>\n";
  h += "<p class=\"small\">Generated by kvplan size. Self-contained: no scripts, fonts or network resources.</p>\n";
  h += "</body></html>\n";
  return h;
}

}  // namespace kvplan::reports
