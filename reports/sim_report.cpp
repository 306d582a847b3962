#include "reports/sim_report.h"

#include <fmt/format.h>

#include <cmath>

namespace kvplan::reports {

namespace {

std::string pct(double f) { return fmt::format("{:.1f} %", 100 * f); }
//! Three significant digits: a whole number with thousands separators from 1,000 to a
//! million, scientific notation above.
std::string num(double x) {
  if (std::isfinite(x) && std::abs(x) >= 1000 && std::abs(x) < 1e6) return count(std::llround(x));
  return fmt::format("{:.3g}", x);
}

nlohmann::json percentiles_json(const sim::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

}  // namespace

nlohmann::json sim_json(const SimReport& r) {
  const sim::SimResult& s = r.result;
  nlohmann::json j;
  j["schema"] = "kvplan.sim/1";
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["workload"] = r.workload.name;
  j["scheduler"] = std::string(sim::to_string(r.sim.scheduler));
  j["preemption"] = r.sim.preemption == sim::Preemption::swap ? "swap" : "recompute";
  j["seed"] = r.sim.seed;
  j["tp"] = r.options.tp;
  j["pp"] = r.options.pp;
  j["max_num_seqs"] = r.options.max_num_seqs;
  j["max_num_batched_tokens"] = r.max_num_batched_tokens;
  j["arrival_rate_per_s"] = r.workload.base_rate_per_s() * r.sim.rate_scale;
  j["requests"] = {{"arrived", s.arrived},         {"completed", s.completed}, {"rejected", s.rejected},
                   {"preemptions", s.preemptions}, {"truncated", s.truncated}};
  j["throughput"] = {{"requests_per_s", s.requests_per_s},
                     {"output_tokens_per_s", s.output_tokens_per_s},
                     {"prompt_tokens_per_s", s.prompt_tokens_per_s},
                     {"goodput_requests_per_s", s.goodput_requests_per_s}};
  j["slo"] = {{"ttft_p99_s", s.slo.ttft_p99_s},
              {"tpot_p99_s", s.slo.tpot_p99_s},
              {"attainment", s.slo_attainment},
              {"meets", s.meets_slo}};
  j["latency"] = {{"ttft_s", percentiles_json(s.ttft_s)},
                  {"tpot_s", percentiles_json(s.tpot_s)},
                  {"e2e_s", percentiles_json(s.e2e_s)},
                  {"queue_s", percentiles_json(s.queue_s)},
                  {"queue_growth_s", s.queue_growth_s}};
  j["batch"] = {{"mean", s.batch_mean}, {"max", s.batch_max}};
  j["kv"] = {{"num_blocks", s.num_blocks},
             {"block_size", s.block_size},
             {"pool_bytes_per_gpu", s.num_blocks * r.kv_block_bytes_per_gpu},
             {"peak_blocks", s.peak_blocks},
             {"peak_utilization", s.peak_kv_utilization},
             {"mean_utilization", s.mean_kv_utilization}};
  const Calibration& c = r.options.calibration;
  j["calibration"] = {{"file", c.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.file)},
                      {"device", c.device},
                      {"source", c.source}};
  j["prefix_cache"] = {{"enabled", r.options.enable_prefix_caching.value_or(true)},
                       {"cached_prompt_tokens", s.cached_prompt_tokens}};
  j["sim"] = {{"events", s.events},
              {"steps", s.steps},
              {"wall_s", s.wall_s},
              {"simulated_s", s.duration_s},
              {"busy_s", s.busy_s},
              {"tokens_simulated", s.tokens_simulated},
              {"tokens_per_wall_s", s.tokens_per_wall_s}};
  if (r.max_rate) {
    j["max_rate_per_s"] = r.max_rate->max_rate_per_s;
    j["max_rate"] = {{"found", r.max_rate->found},
                     {"rate_scale", r.max_rate->rate_scale},
                     {"runs", r.max_rate->runs},
                     {"requests_per_run", r.max_rate_requests},
                     {"ttft_p99_s", r.max_rate->at_max.ttft_s.p99},
                     {"tpot_p99_s", r.max_rate->at_max.tpot_s.p99}};
  }
  return j;
}

std::vector<std::pair<std::string, std::string>> sim_summary(const SimReport& r) {
  const sim::SimResult& s = r.result;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"model / GPU", fmt::format("{} on {} (TP {}, PP {})", r.model, r.gpu, r.options.tp, r.options.pp)},
      {"workload", fmt::format("{}: {} requests at {} requests/s", r.workload.name,
                               count(s.arrived), num(r.workload.base_rate_per_s() * r.sim.rate_scale))},
      {"scheduler", fmt::format("{} (max {} seqs, {} batched tokens), preempt by {}, seed {}",
                                sim::to_string(r.sim.scheduler), r.options.max_num_seqs,
                                count(r.max_num_batched_tokens),
                                r.sim.preemption == sim::Preemption::swap ? "swap" : "recompute", r.sim.seed)},
      {"calibration", r.options.calibration.file.empty()
                          ? std::string("none: datasheet roofline (80 % bandwidth, 70 %/50 % of peak FLOP/s)")
                          : fmt::format("{} ({})", r.options.calibration.file, r.options.calibration.device)},
      {"prefix cache", r.options.enable_prefix_caching.value_or(true)
                           ? fmt::format("on, {} prompt tokens served from it", count(s.cached_prompt_tokens))
                           : std::string("off")},
      {"KV pool", fmt::format("{} blocks of {} tokens = {} per GPU", count(s.num_blocks), s.block_size,
                              gib(s.num_blocks * r.kv_block_bytes_per_gpu))},
      {"requests", fmt::format("{} completed, {} rejected, {} preemptions, {} outputs cut at max_model_len",
                               count(s.completed), count(s.rejected),
                               count(s.preemptions), count(s.truncated))},
      {"throughput", fmt::format("{} requests/s, {} output tokens/s, {} prompt tokens/s", num(s.requests_per_s),
                                 num(s.output_tokens_per_s), num(s.prompt_tokens_per_s))},
      {"goodput", fmt::format("{} requests/s within the SLO ({} of requests; TTFT <= {}, TPOT <= {})",
                              num(s.goodput_requests_per_s), pct(s.slo_attainment),
                              seconds(s.slo.ttft_p99_s), seconds(s.slo.tpot_p99_s))},
      {"SLO at p99", s.meets_slo ? "met" : "missed"},
      {"TTFT p50 / p90 / p99", fmt::format("{} / {} / {}", seconds(s.ttft_s.p50),
                                           seconds(s.ttft_s.p90), seconds(s.ttft_s.p99))},
      {"TPOT p50 / p90 / p99", fmt::format("{} / {} / {}", seconds(s.tpot_s.p50),
                                           seconds(s.tpot_s.p90), seconds(s.tpot_s.p99))},
      {"end-to-end p50 / p90 / p99", fmt::format("{} / {} / {}", seconds(s.e2e_s.p50),
                                                 seconds(s.e2e_s.p90), seconds(s.e2e_s.p99))},
      {"queueing p50 / p99 / mean", fmt::format("{} / {} / {}", seconds(s.queue_s.p50),
                                                seconds(s.queue_s.p99), seconds(s.queue_s.mean))},
      {"batch mean / max", fmt::format("{} / {} sequences", num(s.batch_mean), s.batch_max)},
      {"KV use mean / peak", fmt::format("{} / {} ({} blocks)", pct(s.mean_kv_utilization),
                                         pct(s.peak_kv_utilization), count(s.peak_blocks))},
      {"simulated", fmt::format("{} s of serving ({} s busy) in {} steps, {} events", num(s.duration_s),
                                num(s.busy_s), count(s.steps), count(s.events))},
      {"wall", fmt::format("{}, {} simulated tokens/s of wall time", seconds(s.wall_s),
                           num(s.tokens_per_wall_s))},
  };
  if (r.max_rate) {
    const sim::MaxRate& m = *r.max_rate;
    rows.emplace_back("max rate within SLO",
                      m.found ? fmt::format("{} requests/s (TTFT p99 {}, TPOT p99 {}; {} runs of {} requests)",
                                            num(m.max_rate_per_s), seconds(m.at_max.ttft_s.p99),
                                            seconds(m.at_max.tpot_s.p99), m.runs,
                                            count(r.max_rate_requests))
                              : fmt::format("none: the SLO is missed even at {} requests/s ({} runs)",
                                            num(r.workload.base_rate_per_s() * m.rate_scale), m.runs));
  }
  return rows;
}

std::string sim_text(const SimReport& r, TextFormat f) {
  Table t;
  t.header = {"quantity", "value"};
  t.right_align = {false, false};
  for (auto& [k, v] : sim_summary(r)) t.rows.push_back({k, v});
  if (f != TextFormat::table) return render(t, f);
  return "kvplan simulate\n" + render(t, TextFormat::table) +
         "TTFT: arrival to first token; TPOT: time per output token after the first; GiB = 2^30 bytes.\n";
}

}  // namespace kvplan::reports
