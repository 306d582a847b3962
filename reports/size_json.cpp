// `kvplan size` as JSON (schema kvplan.size/1, docs/ARCHITECTURE.md) and the one-line
// option label.
#include <fmt/format.h>

#include "planner/speculative.h"
#include "reports/size_common.h"
#include "reports/size_report.h"

namespace kvplan::reports {

using namespace size_detail;
using size::Deployment;
using size::SizeResult;

namespace {

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

}  // namespace

std::string option_label(const Deployment& o) {
  const auto& so = o.candidate.options;
  std::string gpus = o.replicas > 0 ? fmt::format("{} x {}", o.gpus_total, o.gpu) : o.gpu;
  std::string shape = fmt::format("TP {}", so.tp);
  if (so.dcp > 1) shape += fmt::format(", DCP {}", so.dcp);
  if (so.dp > 1) shape += fmt::format(" x DP {}", so.dp);
  if (so.ep > 1) shape += fmt::format(", EP {}", so.ep);
  if (so.pp > 1) shape += fmt::format(" x PP {}", so.pp);
  if (o.replicas > 0) shape = fmt::format("{} replica{} of {}", o.replicas, o.replicas == 1 ? "" : "s", shape);
  const std::string lora =
      so.lora ? fmt::format(", {} LoRA slot{} of rank {}", so.lora->max_loras, so.lora->max_loras == 1 ? "" : "s",
                            so.lora->max_lora_rank)
              : "";
  const std::string spec =
      so.spec ? fmt::format(", speculative decoding {} with {} draft token{}", to_string(so.spec->method),
                            so.spec->num_speculative_tokens, so.spec->num_speculative_tokens == 1 ? "" : "s")
              : "";
  const std::string tier =
      so.kv_offloading_bytes > 0
          ? fmt::format(", a {:g} GiB host KV tier", to_gib(static_cast<double>(so.kv_offloading_bytes)))
      : so.hicache ? (so.hicache->size_bytes_per_gpu > 0
                          ? fmt::format(", HiCache of {:g} GB per GPU", to_gb(static_cast<double>(so.hicache->size_bytes_per_gpu)))
                          : fmt::format(", HiCache of {:g} GPU pools", so.hicache->ratio))
                   : "";
  return fmt::format("{} on {} ({}), {} weights, KV {}{}{}{}", o.model, gpus, shape, weight_label(o), kv_label(o), lora,
                     spec, tier);
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
                   {"what_if", r.what_if},
                   {"what_if_skipped", r.what_if_skipped},
                   {"evaluated", r.evaluated},
                   {"exhaustive", r.exhaustive},
                   {"evaluator", r.simulated ? "simulator" : "planner"},
                   {"pruned_by_bound", r.pruned_by_bound},
                   {"pruned_infeasible", r.pruned_infeasible},
                   {"reused_simulations", r.reused},
                   {"requests_per_probe", r.requests_per_probe},
                   {"seed", r.seed},
                   {"calibrated", r.calibrated},
                   {"unmeasured_gpus", r.unmeasured_gpus},
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
                        {"dcp", so.dcp},
                        {"replicas", o.replicas},
                        {"kv_dtype", kv_dtype_label(o)},
                        {"kv_quant", std::string(to_string(so.kv_quant))},
                        {"weight_dtype", weight_label(o)},
                        {"quantization", std::string(to_string(so.quantization))},
                        {"scheduler", std::string(sim::to_string(o.candidate.scheduler))},
                        {"max_num_seqs", so.max_num_seqs},
                        {"max_num_batched_tokens", so.max_num_batched_tokens ? nlohmann::json(*so.max_num_batched_tokens)
                                                                             : nlohmann::json(nullptr)},
                        {"speculative", so.spec ? nlohmann::json{{"method", std::string(to_string(so.spec->method))},
                                                                 {"num_speculative_tokens", so.spec->num_speculative_tokens}}
                                                : nlohmann::json(nullptr)},
                        {"host_kv_tier",
                         so.kv_offloading_bytes > 0 || so.hicache
                             ? nlohmann::json{{"kv_offloading_bytes", so.kv_offloading_bytes},
                                              {"hicache_ratio", so.hicache ? nlohmann::json(so.hicache->ratio) : nlohmann::json(nullptr)},
                                              {"hicache_size_bytes_per_gpu",
                                               so.hicache ? nlohmann::json(so.hicache->size_bytes_per_gpu) : nlohmann::json(nullptr)}}
                             : nlohmann::json(nullptr)},
                        {"max_rate_per_s", o.eval.max_rate_per_s},
                        {"rate_ceiling_per_s", opt_num(o.rate_ceiling_per_s)},
                        {"meets_slo", o.meets_slo},
                        {"cost_per_hour_usd", opt_num(o.cost_per_hour_usd)},
                        {"cost_per_million_output_tokens_usd", opt_num(o.cost_per_million_output_tokens_usd)},
                        {"cost_per_million_input_tokens_usd", opt_num(o.cost_per_million_input_tokens_usd)},
                        {"cost_per_request_usd", opt_num(o.cost_per_request_usd)},
                        {"what_if", o.what_if.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.what_if)},
                        {"ttft_p99_s", o.meets_slo ? nlohmann::json(o.operating.ttft_p99_s) : nlohmann::json(nullptr)},
                        {"tpot_p99_s", o.meets_slo ? nlohmann::json(o.operating.tpot_p99_s) : nlohmann::json(nullptr)},
                        {"e2e_p99_s", o.meets_slo ? nlohmann::json(o.operating.e2e_p99_s) : nlohmann::json(nullptr)},
                        {"pareto", o.pareto},
                        {"binding", o.pruned ? nlohmann::json(nullptr) : nlohmann::json(std::string(size::to_string(o.eval.binding)))},
                        {"binding_detail", o.eval.binding_detail},
                        {"changes_quality", o.changes_quality},
                        {"quality", o.quality},
                        {"scale_out_note", o.plan_valid && !o.plan.scale_out_note.empty() ? nlohmann::json(o.plan.scale_out_note)
                                                                                          : nlohmann::json(nullptr)},
                        {"pruned", o.pruned ? nlohmann::json(*o.pruned) : nlohmann::json(nullptr)}};
    if (!o.pruned) {
      j["at_max_rate"] = load_json(o.eval.at_max);
      j["at_max_rate"]["preemptions"] = o.eval.preemptions_at_max;
      j["at_max_rate"]["rejected"] = o.eval.rejected_at_max;
      j["at_max_rate"]["rejected_max_model_len"] = o.eval.rejected_max_model_len_at_max;
      j["at_max_rate"]["requests"] = o.eval.requests_at_max;
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
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& rec : r.recommendations) {
    nlohmann::json j = {{"model", rec.model},
                        {"rank", rec.option + 1},
                        {"lossless_rank", rec.lossless ? nlohmann::json(*rec.lossless + 1) : nlohmann::json(nullptr)},
                        {"utilization", rec.utilization},
                        {"replicas_n_plus_one", rec.replicas_n_plus_one},
                        {"cost_per_hour_n_plus_one_usd", opt_num(rec.cost_per_hour_n_plus_one_usd)},
                        {"binds_on_default_max_num_seqs", rec.binds_on_default_max_num_seqs}};
    if (rec.failures) {
      const size::FailurePlan& f = *rec.failures;
      j["failures"] = {{"availability_asked", f.asked.availability},
                       {"gpu_failures_per_year", f.asked.gpu_failures_per_year},
                       {"repair_hours", f.asked.repair_hours},
                       {"gpus_per_replica", f.gpus_per_replica},
                       {"replica_unavailability", f.replica_unavailability},
                       {"replicas_needed", f.replicas_needed},
                       {"spares", f.spares},
                       {"availability", f.availability},
                       {"cost_per_hour_usd", opt_num(f.cost_per_hour_usd)},
                       {"one_down_share_per_s", f.one_down_share_per_s},
                       {"one_down", f.one_down ? nlohmann::json{{"ttft_p99_s", f.one_down->ttft_p99_s},
                                                                {"tpot_p99_s", f.one_down->tpot_p99_s},
                                                                {"meets_slo", f.one_down->meets_slo}}
                                               : nlohmann::json(nullptr)}};
    }
    if (rec.spread.seeds > 1)
      j["max_rate_spread"] = {{"seeds", rec.spread.seeds},
                              {"min_per_s", rec.spread.min_per_s},
                              {"max_per_s", rec.spread.max_per_s},
                              {"mean_per_s", rec.spread.mean_per_s},
                              {"replicas_at_min_rate", rec.replicas_at_min_rate}};
    if (rec.confidence) {
      nlohmann::json levels = nlohmann::json::array();
      for (const size::SloConfidence::Level& l : rec.confidence->levels)
        levels.push_back({{"probability", l.q},
                          {"max_rate_per_s", l.max_rate_per_s},
                          {"replicas", l.replicas},
                          {"worst_run", l.worst_run}});
      j["slo_confidence"] = {{"runs", rec.confidence->runs},
                             {"on_gpu", rec.confidence->on_gpu},
                             {"probability", rec.confidence->probability},
                             {"levels", levels}};
    }
    recs.push_back(std::move(j));
  }
  out["recommendations"] = std::move(recs);
  nlohmann::json unmet = nlohmann::json::array();
  for (const auto& u : r.unmet) unmet.push_back({{"model", u.model},
                     {"rejected_max_model_len", u.rejected_max_model_len},
                     {"requests", u.requests},
                     {"evaluated", u.evaluated},
                     {"why", unmet_reason(u)}});
  out["unmet"] = std::move(unmet);
  return out;
}

}  // namespace kvplan::reports
