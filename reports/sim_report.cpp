#include "reports/sim_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kvplan::reports {

namespace {

nlohmann::json percentiles_json(const sim::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

//! Why requests were rejected, e.g. " (300 prompts reach max_model_len 4,096)".
std::string rejected_why(const SimReport& r) {
  const sim::SimResult& s = r.result;
  if (s.rejected == 0) return "";
  std::vector<std::string> why;
  if (s.rejected_max_model_len > 0)
    why.push_back(fmt::format("{} prompts reach max_model_len {}", count(s.rejected_max_model_len),
                              count(r.max_model_len)));
  if (s.rejected_pool > 0) why.push_back(fmt::format("{} longer than the whole KV pool", count(s.rejected_pool)));
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : ", ") + w;
  return " (" + out + ")";
}

//! ", vLLM bench's random lengths (input 1,024, output 128, range ratio 0.5, prefix 0)", or
//! nothing when the workload's own distributions drew them.
std::string random_note(const Workload& w) {
  if (!w.random.given()) return "";
  const RandomDataset& d = w.random;
  return fmt::format(", vLLM bench's random lengths (input {}, output {}, range ratio {}, prefix {})", count(d.input_len),
                     count(d.output_len), number(d.range_ratio), count(d.prefix_len));
}

std::string no_latency(const sim::SimResult& s) {
  return s.rejected > 0 ? "none: no request completed (every one was rejected)" : "none: no request completed";
}

std::string latencies(const sim::SimResult& s, const sim::Percentiles& p) {
  if (s.completed == 0) return no_latency(s);
  if (p.p99 == 0 && p.p50 == 0) return "none: every output is one token (TPOT needs two)";
  return fmt::format("{} / {} / {}", seconds(p.p50), seconds(p.p90), seconds(p.p99));
}

//! "met", or "missed" with the reason a reader cannot see in the latency rows.
std::string slo_verdict(const sim::SimResult& s) {
  if (!s.slo.given()) return "no SLO in the workload";
  if (s.meets_slo) return "met";
  if (s.completed == 0) return "missed: no request completed";
  const int64_t judged = s.completed + s.rejected;
  if (s.rejected > 0 && 100 * s.rejected > judged)
    return fmt::format("missed: {} of {} requests rejected (more than the 1 % a p99 allows)", count(s.rejected),
                       count(judged));
  return "missed";
}

//! A progress line padded to a width no line of its kind exceeds, so a shorter one
//! overwrites a longer one entirely.
std::string progress_line(std::string s) {
  constexpr size_t kWidth = 96;
  if (s.size() < kWidth) s.append(kWidth - s.size(), ' ');
  return "\r" + s;
}

//! TensorRT-LLM's batch waiting on the scheduler line, when it is on.
std::string batch_wait_note(const SimReport& r) {
  const sim::BatchWait& w = r.sim.trtllm.batch_wait;
  if (!w.enabled()) return {};
  return fmt::format("; batch waiting: contexts held up to {} iterations while the step is under {} x {} tokens, "
                     "{} steps held",
                     w.timeout_iters, number(w.max_tokens_ratio), count(r.max_num_batched_tokens),
                     count(r.result.batch_wait_steps));
}

nlohmann::json requests_json(const sim::SimResult& s) {
  return {{"arrived", s.arrived},         {"completed", s.completed}, {"rejected", s.rejected},
          {"preemptions", s.preemptions}, {"truncated", s.truncated},
          {"rejected_max_model_len", s.rejected_max_model_len}, {"rejected_pool", s.rejected_pool}};
}

nlohmann::json throughput_json(const sim::SimResult& s) {
  return {{"requests_per_s", s.requests_per_s},
          {"output_tokens_per_s", s.output_tokens_per_s},
          {"prompt_tokens_per_s", s.prompt_tokens_per_s},
          {"goodput_requests_per_s", s.goodput_requests_per_s}};
}

nlohmann::json latency_json(const sim::SimResult& s) {
  return {{"ttft_s", percentiles_json(s.ttft_s)},
          {"tpot_s", percentiles_json(s.tpot_s)},
          {"e2e_s", percentiles_json(s.e2e_s)},
          {"queue_s", percentiles_json(s.queue_s)},
          {"queue_growth_s", s.queue_growth_s}};
}

//! Whether the run had a benchmark client in front (it then measured ITL).
bool client_run(const SimReport& r) { return r.sim.max_concurrency.has_value() || r.sim.all_at_once; }

double total_tokens_per_s(const sim::SimResult& s) { return s.output_tokens_per_s + s.prompt_tokens_per_s; }

//! One row of a sweep, as the benchmark clients report a run.
nlohmann::json sweep_json(const SimReport::SweepPoint& p) {
  const sim::SimResult& s = p.result;
  return {{"max_concurrency", p.max_concurrency},
          {"completed", s.completed},
          {"rejected", s.rejected},
          {"duration_s", s.duration_s},
          {"requests_per_s", s.requests_per_s},
          {"output_tokens_per_s", s.output_tokens_per_s},
          {"total_tokens_per_s", total_tokens_per_s(s)},
          {"ttft_s", percentiles_json(s.ttft_s)},
          {"tpot_s", percentiles_json(s.tpot_s)},
          {"itl_s", percentiles_json(s.itl_s)},
          {"e2e_s", percentiles_json(s.e2e_s)}};
}

//! The sweep as the benchmark clients print it: per concurrency, mean / median / p99.
Table sweep_table(const SimReport& r) {
  Table t;
  t.header = {"max concurrency", "requests/s", "output tok/s", "total tok/s"};
  for (const char* q : {"TTFT", "TPOT", "ITL"})
    for (const char* stat : {"mean", "median", "p99"}) t.header.push_back(fmt::format("{} {}", q, stat));
  t.right_align.assign(t.header.size(), true);
  for (const auto& p : r.sweep) {
    const sim::SimResult& s = p.result;
    std::vector<std::string> row = {count(p.max_concurrency), number(s.requests_per_s),
                                    number(s.output_tokens_per_s), number(total_tokens_per_s(s))};
    for (const sim::Percentiles* q : {&s.ttft_s, &s.tpot_s, &s.itl_s})
      for (double v : {q->mean, q->p50, q->p99}) row.push_back(s.completed == 0 ? "-" : seconds(v));
    t.rows.push_back(std::move(row));
  }
  return t;
}

//! One replica of a fleet: what differs between replicas (the pool is the same).
nlohmann::json replica_json(size_t index, const sim::SimResult& s) {
  return {{"replica", index},
          {"requests", requests_json(s)},
          {"throughput", throughput_json(s)},
          {"latency", latency_json(s)},
          {"slo", {{"attainment", s.slo_attainment}, {"meets", s.meets_slo}}},
          {"batch", {{"mean", s.batch_mean}, {"max", s.batch_max}}},
          {"kv", {{"peak_blocks", s.peak_blocks},
                  {"peak_utilization", s.peak_kv_utilization},
                  {"mean_utilization", s.mean_kv_utilization}}},
          {"prefix_cache", {{"cached_prompt_tokens", s.cached_prompt_tokens}}},
          {"sim", {{"events", s.events}, {"steps", s.steps}, {"simulated_s", s.duration_s}, {"busy_s", s.busy_s},
                   {"tokens_simulated", s.tokens_simulated}}}};
}

//! One replica's row: "1,040 requests, TTFT p99 13.5 ms, ..." (rejections, preemptions
//! and requests left unfinished only when there are any).
std::string replica_row(const sim::SimResult& s) {
  std::string out = fmt::format("{} requests", count(s.arrived));
  if (s.rejected > 0) out += fmt::format(", {} rejected", count(s.rejected));
  if (s.preemptions > 0) out += fmt::format(", {} preemptions", count(s.preemptions));
  if (s.completed > 0)
    out += fmt::format(", TTFT p99 {}, TPOT p99 {}", seconds(s.ttft_s.p99),
                       s.tpot_s.p99 == 0 ? std::string("none") : seconds(s.tpot_s.p99));
  return out + fmt::format(", KV peak {}, {} prompt tokens cached, busy {} s", percent(s.peak_kv_utilization),
                           count(s.cached_prompt_tokens), number(s.busy_s));
}

nlohmann::json band_json(const Band& b, double predicted) {
  return {{"lo", predicted * b.lo}, {"hi", predicted * b.hi}};
}

//! The bands around the p99s, the SLO probability, and the max rate's band.
nlohmann::json error_bars_json(const SimReport& r) {
  if (!r.error_bars) return nullptr;
  const ErrorBars& b = *r.error_bars;
  const sim::SimResult& s = r.result;
  nlohmann::json j = {{"coverage", b.coverage},
                      {"runs", b.runs},
                      {"on_gpu", b.on_gpu},
                      {"basis", "held_out_run_means"},
                      {"ttft_p99_s", band_json(b.ttft, s.ttft_s.p99)},
                      {"tpot_p99_s", band_json(b.tpot, s.tpot_s.p99)},
                      {"e2e_p99_s", band_json(b.e2e, s.e2e_s.p99)}};
  j["slo_probability"] = r.slo_probability ? nlohmann::json(*r.slo_probability) : nlohmann::json(nullptr);
  j["max_rate_per_s"] = r.max_rate_band_per_s ? nlohmann::json({{"lo", r.max_rate_band_per_s->lo},
                                                               {"hi", r.max_rate_band_per_s->hi}})
                                              : nlohmann::json(nullptr);
  return j;
}

//! "from 37 held-out runs on h100-sxm" or, with too few there, where they come from.
std::string band_basis(const ErrorBars& b) {
  return b.on_gpu ? fmt::format("{} held-out runs on {}", b.runs, b.gpu)
                  : fmt::format("{} held-out runs on any GPU (too few on {}: wider, less certain)", b.runs, b.gpu);
}

std::string error_band_row(const SimReport& r) {
  const ErrorBars& b = *r.error_bars;
  const sim::SimResult& s = r.result;
  if (s.completed == 0) return no_latency(s);
  return fmt::format("TTFT p99 {}-{}, TPOT p99 {}-{}, E2E p99 {}-{}: {:.0f} % of {}",
                     seconds(s.ttft_s.p99 * b.ttft.lo), seconds(s.ttft_s.p99 * b.ttft.hi),
                     seconds(s.tpot_s.p99 * b.tpot.lo), seconds(s.tpot_s.p99 * b.tpot.hi),
                     seconds(s.e2e_s.p99 * b.e2e.lo), seconds(s.e2e_s.p99 * b.e2e.hi), 100 * b.coverage,
                     band_basis(b));
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
  if (!r.scheduler_why.empty()) j["scheduler_why"] = r.scheduler_why;
  if (r.sim.trtllm.batch_wait.enabled()) {
    const sim::BatchWait& w = r.sim.trtllm.batch_wait;
    j["batch_wait"] = {{"timeout_iters", w.timeout_iters},
                       {"max_tokens_ratio", w.max_tokens_ratio},
                       {"held_steps", s.batch_wait_steps}};
  }
  j["preemption"] = r.sim.preemption == sim::Preemption::swap ? "swap" : "recompute";
  j["seed"] = r.sim.seed;
  j["tp"] = r.options.tp;
  j["pp"] = r.options.pp;
  j["max_num_seqs"] = r.max_num_seqs > 0 ? r.max_num_seqs : r.options.max_num_seqs;
  j["max_num_batched_tokens"] = r.max_num_batched_tokens;
  j["arrival_rate_per_s"] = r.workload.arrivals_at_one_instant()
                                ? nlohmann::json(nullptr)
                                : nlohmann::json(r.workload.base_rate_per_s() * r.sim.rate_scale);
  j["requests"] = requests_json(s);
  j["throughput"] = throughput_json(s);
  if (client_run(r)) {
    // Additive keys of a benchmark client's run (docs/formats.md "JSON contract").
    j["client"] = {{"max_concurrency", r.sim.max_concurrency ? nlohmann::json(*r.sim.max_concurrency)
                                                             : nlohmann::json(nullptr)},
                   {"all_at_once", r.sim.all_at_once}};
    j["throughput"]["total_tokens_per_s"] = total_tokens_per_s(s);
  }
  if (r.sim.warmup_requests > 0) j["requests"]["warmup"] = s.warmup;
  j["slo"] = {{"ttft_p99_s", s.slo.ttft_p99_s},
              {"tpot_p99_s", s.slo.tpot_p99_s},
              {"attainment", s.slo_attainment},
              {"meets", s.meets_slo}};
  j["latency"] = latency_json(s);
  if (client_run(r)) j["latency"]["itl_s"] = percentiles_json(s.itl_s);
  if (r.options.stream_interval) j["stream_interval"] = *r.options.stream_interval;
  if (!r.sweep.empty()) {
    nlohmann::json sweep = nlohmann::json::array();
    for (const auto& p : r.sweep) sweep.push_back(sweep_json(p));
    j["sweep"] = sweep;
  }
  j["batch"] = {{"mean", s.batch_mean}, {"max", s.batch_max}};
  j["kv"] = {{"num_blocks", s.num_blocks},
             {"block_size", s.block_size},
             {"decode_context_parallel_size", r.options.dcp},
             {"pool_bytes_per_gpu", s.num_blocks * r.kv_block_bytes_per_gpu},
             {"peak_blocks", s.peak_blocks},
             {"peak_utilization", s.peak_kv_utilization},
             {"mean_utilization", s.mean_kv_utilization}};
  const Calibration& c = r.options.calibration;
  j["calibration"] = {{"file", c.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.file)},
                      {"device", c.device},
                      {"fitted_on_gpu", c.gpu.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.gpu)},
                      {"source", c.source},
                      {"accuracy", c.accuracy_for(r.moe, r.gpu)},
                      {"unmeasured_on_gpu", c.accuracy_for(r.moe, r.gpu).empty()},
                      {"memory_bandwidth_transfer", r.bandwidth_transfer.measured ? nlohmann::json(r.bandwidth_transfer.factor)
                                                                                  : nlohmann::json(nullptr)},
                      {"gemm_flops_transfer",
                       r.gemm_transfer.measured ? nlohmann::json(r.gemm_transfer.factor) : nlohmann::json(nullptr)}};
  j["scale_out_note"] = r.scale_out_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.scale_out_note);
  j["error_bars"] = error_bars_json(r);
  j["prefix_cache"] = {{"enabled", r.options.enable_prefix_caching.value_or(true)},
                       {"cached_prompt_tokens", s.cached_prompt_tokens}};
  if (r.host_tier) {
    // Additive, with a host KV tier only (docs/formats.md "JSON contract", docs/kv-tiers.md).
    const sim::SimResult::HostTier& h = s.host_tier;
    j["host_kv_tier"] = {{"sized_by", r.host_tier->sized_by},
                         {"bytes_per_gpu", r.host_tier->bytes_per_gpu},
                         {"capacity_blocks", h.capacity_blocks},
                         {"capacity_tokens", h.capacity_blocks * s.block_size},
                         {"hit_tokens", h.hit_tokens},
                         {"gpu_hit_tokens", s.cached_prompt_tokens - h.hit_tokens},
                         {"loads", h.loads},
                         {"load_s", h.load_s},
                         {"stored_blocks", h.stored_blocks},
                         {"evicted_blocks", h.evicted_blocks},
                         {"host_link_bytes_per_s", r.sim.host_link_bytes_per_s}};
    const sim::SimResult::DiskTier& d = s.disk_tier;
    const sim::SimResult::RemoteTier& m = s.remote_tier;
    j["host_kv_tier"]["gpu_hit_tokens"] = s.cached_prompt_tokens - h.hit_tokens - d.hit_tokens - m.hit_tokens;
    j["host_kv_tier"]["disk"] =
        d.capacity_blocks > 0 ? nlohmann::json{{"bytes_per_gpu", r.host_tier->disk_bytes_per_gpu},
                                               {"capacity_blocks", d.capacity_blocks},
                                               {"capacity_tokens", d.capacity_blocks * s.block_size},
                                               {"hit_tokens", d.hit_tokens},
                                               {"loads", d.loads},
                                               {"load_s", d.load_s},
                                               {"demoted_blocks", d.stored_blocks},
                                               {"evicted_blocks", d.evicted_blocks},
                                               {"disk_bytes_per_s", r.sim.disk_bytes_per_s},
                                               {"disk_latency_s", r.sim.disk_latency_s},
                                               {"write_s", d.write_s},
                                               {"wait_s", d.wait_s},
                                               {"disk_write_bytes_per_s", r.sim.disk_write_bytes_per_s}}
                              : nlohmann::json(nullptr);
    j["host_kv_tier"]["remote"] =
        m.capacity_blocks > 0 ? nlohmann::json{{"kv_remote_bytes", r.options.kv_remote_bytes},
                                               {"capacity_blocks", m.capacity_blocks},
                                               {"capacity_tokens", m.capacity_blocks * s.block_size},
                                               {"hit_tokens", m.hit_tokens},
                                               {"loads", m.loads},
                                               {"load_s", m.load_s},
                                               {"stored_blocks", m.stored_blocks},
                                               {"evicted_blocks", m.evicted_blocks},
                                               {"remote_bytes_per_s", r.sim.remote_bytes_per_s},
                                               {"remote_latency_s", r.sim.remote_latency_s}}
                              : nlohmann::json(nullptr);
  }
  if (r.options.lora) {
    // Additive, with --enable-lora only (docs/formats.md "JSON contract", docs/lora.md).
    j["lora"] = {{"max_loras", r.options.lora->max_loras},
                 {"max_lora_rank", r.options.lora->max_lora_rank},
                 {"lora_bytes_per_gpu", r.lora_bytes_per_gpu},
                 {"adapters_from_workload", s.lora.tracked},
                 {"gpu_loads", s.lora.gpu_loads},
                 {"host_cache_misses", s.lora.host_misses},
                 {"load_s", s.lora.load_s},
                 {"waited_requests", s.lora.waited_requests},
                 {"adapters_mean", s.lora.tracked ? nlohmann::json(s.lora.adapters_mean) : nlohmann::json(nullptr)}};
  }
  if (r.spec && r.options.spec) {
    // Additive, with speculative decoding only (docs/formats.md "JSON contract", docs/speculative.md).
    const SpecDecode& d = *r.options.spec;
    j["speculative"] = {{"method", std::string(to_string(d.method))},
                        {"num_speculative_tokens", d.num_speculative_tokens},
                        {"draft", d.draft ? nlohmann::json(d.draft->name) : nlohmann::json(nullptr)},
                        {"acceptance_rates", r.spec->acceptance.rates},
                        {"acceptance_source", r.spec->acceptance.source},
                        {"expected_tokens_per_step", r.spec->expected_tokens_per_step},
                        {"slots_per_step_tokens", r.spec->slots_per_step},
                        {"draft_weight_bytes_per_gpu", r.spec->memory.weight_bytes_per_gpu},
                        {"draft_kv_bytes_per_token_per_gpu", r.spec->memory.kv_bytes_per_token_per_gpu},
                        {"decoder_steps", s.spec.decoder_steps},
                        {"decoded_tokens", s.spec.decoded_tokens},
                        {"tokens_per_step", s.spec.tokens_per_step()}};
  }
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
                     {"seeds", r.max_rate_range.seeds},
                     {"min_over_seeds_per_s", r.max_rate_range.min_per_s},
                     {"max_over_seeds_per_s", r.max_rate_range.max_per_s},
                     {"ttft_p99_s", r.max_rate->at_max.ttft_s.p99},
                     {"tpot_p99_s", r.max_rate->at_max.tpot_s.p99}};
  }
  if (r.fleet) {
    nlohmann::json per = nlohmann::json::array();
    for (size_t i = 0; i < r.replica_results.size(); ++i) per.push_back(replica_json(i, r.replica_results[i]));
    j["fleet"] = {{"replicas", r.fleet->replicas},
                  {"router", std::string(cluster::to_string(r.fleet->router))},
                  {"gpus", r.fleet->replicas * r.options.gpus_per_replica()},
                  {"per_replica", per}};
  }
  return j;
}

std::vector<std::pair<std::string, std::string>> sim_summary(const SimReport& r) {
  const sim::SimResult& s = r.result;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"model / GPU", fmt::format("{} on {} (TP {}, PP {}{})", r.model, r.gpu, r.options.tp, r.options.pp,
                                  r.options.ep > 1 || r.options.dp > 1
                                      ? fmt::format(", EP {}, DP {}: {} data-parallel ranks pooled, limits per rank",
                                                    r.options.ep, r.options.dp, r.options.dp)
                                      : "")},
  };
  if (r.fleet)
    rows.emplace_back("replicas", fmt::format("{} behind a {} router, {} GPUs: fleet totals below, then each replica",
                                              r.fleet->replicas, cluster::to_string(r.fleet->router),
                                              count(r.fleet->replicas * r.options.gpus_per_replica())));
  std::vector<std::pair<std::string, std::string>> main_rows = {
      {"workload", (r.sim.all_at_once
                        ? fmt::format("{}: {} requests, all sent at once (--rate inf)", r.workload.name, count(s.arrived))
                    : r.workload.arrivals_at_one_instant()
                        ? fmt::format("{}: {} requests, the trace's arrivals all at one instant (a burst: no arrival rate)",
                                      r.workload.name, count(s.arrived))
                        : fmt::format("{}: {} requests at {} requests/s", r.workload.name, count(s.arrived),
                                      number(r.workload.base_rate_per_s() * r.sim.rate_scale))) +
                       random_note(r.workload)},
      {"scheduler", fmt::format("{} ({}max {} seqs, {} batched tokens), preempt by {}, seed {}",
                                sim::to_string(r.sim.scheduler), r.scheduler_why.empty() ? "" : r.scheduler_why + "; ",
                                r.max_num_seqs > 0 ? r.max_num_seqs : r.options.max_num_seqs,
                                count(r.max_num_batched_tokens),
                                r.sim.preemption == sim::Preemption::swap ? "swap" : "recompute", r.sim.seed) +
                        batch_wait_note(r)},
      {"calibration", calibration_label(r.options.calibration, r.gpu, r.bandwidth_transfer, r.gemm_transfer)},
      {"prefix cache", r.options.enable_prefix_caching.value_or(true)
                           ? fmt::format("on, {} prompt tokens served from it", count(s.cached_prompt_tokens))
                           : std::string("off")},
      {"KV pool", fmt::format("{} blocks of {} tokens = {} per GPU{}", count(s.num_blocks), s.block_size,
                              gib(s.num_blocks * r.kv_block_bytes_per_gpu),
                              r.options.dcp > 1 ? fmt::format(" (DCP {}: each GPU holds {} tokens of a block)", r.options.dcp,
                                                              s.block_size / r.options.dcp)
                                                : std::string())},
      {"requests", fmt::format("{} completed, {} rejected{}, {} preemptions, {} outputs cut at max_model_len",
                               count(s.completed), count(s.rejected), rejected_why(r), count(s.preemptions),
                               count(s.truncated))},
      {"throughput", fmt::format("{} requests/s, {} output tokens/s, {} prompt tokens/s", number(s.requests_per_s),
                                 number(s.output_tokens_per_s), number(s.prompt_tokens_per_s))},
      {"goodput", !s.slo.given() ? std::string("no SLO in the workload: nothing to measure against")
                                 : fmt::format("{} requests/s within the SLO ({} of requests{}; TTFT <= {}, TPOT <= {})",
                                               number(s.goodput_requests_per_s), percent(s.slo_attainment),
                                               s.rejected > 0 ? ", rejected ones count as failed" : "",
                                               seconds(s.slo.ttft_p99_s), seconds(s.slo.tpot_p99_s))},
      {"SLO at p99", slo_verdict(s)},
      {"TTFT p50 / p90 / p99", latencies(s, s.ttft_s)},
      {"TPOT p50 / p90 / p99", latencies(s, s.tpot_s)},
      {"ITL p50 / p90 / p99", latencies(s, s.itl_s)},
      {"end-to-end p50 / p90 / p99", latencies(s, s.e2e_s)},
      {"queueing p50 / p99 / mean",
       s.completed == 0 ? no_latency(s)
                        : fmt::format("{} / {} / {}", seconds(s.queue_s.p50), seconds(s.queue_s.p99),
                                      seconds(s.queue_s.mean))},
      {"batch mean / max", fmt::format("{} / {} sequences", number(s.batch_mean), s.batch_max)},
      {"KV use mean / peak", fmt::format("{} / {} ({} blocks)", percent(s.mean_kv_utilization),
                                         percent(s.peak_kv_utilization), count(s.peak_blocks))},
      {"simulated", fmt::format("{} s of serving ({} s busy) in {} steps, {} events", number(s.duration_s),
                                number(s.busy_s), count(s.steps), count(s.events))},
      {"wall", fmt::format("{}, {} simulated tokens/s of wall time", seconds(s.wall_s),
                           number(s.tokens_per_wall_s))},
  };
  if (r.options.stream_interval.value_or(1) > 1) {
    const StreamDelivery d = stream_delivery(r.options);
    const int64_t n = d.interval, first = d.offset == 0 ? n : n + 1;
    const auto at = std::find_if(main_rows.begin(), main_rows.end(), [](const auto& row) { return row.first == "ITL p50 / p90 / p99"; });
    main_rows.insert(at + 1, {"streaming", fmt::format("--stream-interval {}: a request's tokens reach the client at its "
                                                       "tokens 1, {}, {}, ... and its last (the first at once; an ITL gap "
                                                       "per chunk; docs/engines.md \"Streaming\")",
                                                       n, first, first + n)});
  }
  if (r.host_tier) {
    const auto at = std::find_if(main_rows.begin(), main_rows.end(), [](const auto& row) { return row.first == "KV pool"; });
    const sim::SimResult::HostTier& h = s.host_tier;
    const auto share = [&](int64_t tokens) {
      return s.prompt_tokens > 0 ? percent(static_cast<double>(tokens) / static_cast<double>(s.prompt_tokens)) : "-";
    };
    main_rows.insert(
        at + 1,
        {"host KV tier",
         fmt::format("{} per GPU ({}: {} blocks = {} tokens per engine); prompt tokens from the GPU cache {}, from the "
                     "host tier {} ({} loads at {} GB/s, {} on the steps' critical path); {} blocks written through, "
                     "{} evicted",
                     gib(r.host_tier->bytes_per_gpu), r.host_tier->sized_by, count(h.capacity_blocks), count(h.capacity_blocks * s.block_size),
                     share(s.cached_prompt_tokens - h.hit_tokens - s.disk_tier.hit_tokens - s.remote_tier.hit_tokens), share(h.hit_tokens), count(h.loads),
                     number(r.sim.host_link_bytes_per_s / 1e9), seconds(h.load_s), count(h.stored_blocks),
                     count(h.evicted_blocks))});
    if (const sim::SimResult::DiskTier& d = s.disk_tier; d.capacity_blocks > 0)
      main_rows.insert(
          std::find_if(main_rows.begin(), main_rows.end(), [](const auto& row) { return row.first == "host KV tier"; }) + 1,
          {"disk KV tier",
           fmt::format("{} per GPU ({} blocks = {} tokens per engine); prompt tokens from the disk {} ({} loads at {} "
                       "GB/s and {} each, {} on the steps' critical path before the host link, {} of it waiting "
                       "behind writes); {} blocks written to it as the host tier evicted them ({} of the drive at {} "
                       "GB/s, off the critical path), {} evicted",
                       gib(r.host_tier->disk_bytes_per_gpu), count(d.capacity_blocks),
                       count(d.capacity_blocks * s.block_size), share(d.hit_tokens), count(d.loads),
                       number(r.sim.disk_bytes_per_s / 1e9), seconds(r.sim.disk_latency_s), seconds(d.load_s),
                       seconds(d.wait_s), count(d.stored_blocks), seconds(d.write_s),
                       number(r.sim.disk_write_bytes_per_s / 1e9), count(d.evicted_blocks))});
    if (const sim::SimResult::RemoteTier& m = s.remote_tier; m.capacity_blocks > 0) {
      const auto above = std::find_if(main_rows.begin(), main_rows.end(), [](const auto& row) {
        return row.first == "disk KV tier";
      });
      main_rows.insert(
          (above != main_rows.end() ? above
                                    : std::find_if(main_rows.begin(), main_rows.end(),
                                                   [](const auto& row) { return row.first == "host KV tier"; })) +
              1,
          {"remote KV tier",
           fmt::format("{} for the fleet ({} blocks = {} tokens, shared by every replica); prompt tokens from the "
                       "store {} ({} loads at {} GB/s and {} each, {} on the steps' critical path before the host "
                       "link); {} blocks written through, {} evicted",
                       gib(r.options.kv_remote_bytes), count(m.capacity_blocks), count(m.capacity_blocks * s.block_size),
                       share(m.hit_tokens), count(m.loads), number(r.sim.remote_bytes_per_s / 1e9),
                       seconds(r.sim.remote_latency_s), seconds(m.load_s), count(m.stored_blocks),
                       count(m.evicted_blocks))});
    }
  }
  if (r.options.lora) {
    // After "KV pool": the slots are what the pool lost.
    const auto at = std::find_if(main_rows.begin(), main_rows.end(), [](const auto& row) { return row.first == "KV pool"; });
    const LoraOptions& l = *r.options.lora;
    const std::string slots =
        fmt::format("{} slot{} of rank {}, {} per GPU taken from the KV pool; ", l.max_loras, l.max_loras == 1 ? "" : "s",
                    l.max_lora_rank, gib(r.lora_bytes_per_gpu));
    main_rows.insert(at + 1,
                     {"LoRA", s.lora.tracked
                                  ? slots + fmt::format("{:.1f} distinct adapters per step on average; {} loads into a GPU slot "
                                                        "({} from past the host cache of {}), {} on the steps' critical path; "
                                                        "{} requests waited for a slot (max_loras)",
                                                        s.lora.adapters_mean, count(s.lora.gpu_loads), count(s.lora.host_misses),
                                                        l.max_cpu_loras > 0 ? l.max_cpu_loras : l.max_loras, seconds(s.lora.load_s),
                                                        count(s.lora.waited_requests))
                                  : slots + fmt::format("the workload gives no adapters (no `lora` key): each step pays the LoRA "
                                                        "kernels of min(sequences, {}) distinct adapters, the worst case",
                                                        l.max_loras)});
  }
  if (r.spec && r.options.spec) {
    const auto at = std::find_if(main_rows.begin(), main_rows.end(), [](const auto& row) { return row.first == "KV pool"; });
    const SpecDecode& d = *r.options.spec;
    std::string rates;
    for (const double a : r.spec->acceptance.rates) rates += (rates.empty() ? "" : ", ") + fmt::format("{:.3g}", a);
    main_rows.insert(
        at + 1,
        {"speculative decoding",
         fmt::format("{}{}, {} draft token{} a step, acceptance {} ({}); tokens per decoder-step: expected {:.3f}, "
                     "simulated {:.3f} over {} decoder-steps; {}, {} slots per decoder while a step runs (the error "
                     "band was measured without speculation)",
                     to_string(d.method), d.draft ? " (" + d.draft->name + ")" : "", d.num_speculative_tokens,
                     d.num_speculative_tokens == 1 ? "" : "s", rates, r.spec->acceptance.source,
                     r.spec->expected_tokens_per_step, s.spec.tokens_per_step(), count(s.spec.decoder_steps),
                     r.spec->memory.weight_bytes_per_gpu > 0
                         ? "draft weights " + gib(r.spec->memory.weight_bytes_per_gpu) + " per GPU"
                         : std::string("no draft weights on the GPU"),
                     r.spec->slots_per_step)});
  }
  rows.insert(rows.end(), main_rows.begin(), main_rows.end());
  if (!client_run(r)) {
    rows.erase(std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.first == "ITL p50 / p90 / p99"; }));
  } else {
    const auto at = std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.first == "scheduler"; });
    rows.emplace(at, "client",
                 r.sim.max_concurrency
                     ? fmt::format("at most {} requests in flight (--max-concurrency), the next sent as one ends; "
                                   "latencies from the send",
                                   count(*r.sim.max_concurrency))
                     : std::string("no concurrency limit"));
  }
  // Beside the layout it qualifies: which collectives pay the scale-out link.
  if (!r.scale_out_note.empty()) {
    const auto at = std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.first == "calibration"; });
    rows.emplace(at, "scale-out", r.scale_out_note);
  }
  if (r.sim.warmup_requests > 0)
    rows.emplace_back("warm-up", fmt::format("the first {} finished requests left out of every figure above",
                                             count(s.warmup)));
  // The calibration's own measured error, right under the calibration it qualifies.
  auto after = std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.first == "calibration"; });
  const std::vector<std::string> measured = r.options.calibration.accuracy_for(r.moe, r.gpu);
  for (const std::string& note : measured) after = rows.emplace(after + 1, "measured error", note);
  if (measured.empty())
    rows.emplace(after + 1, "measured error",
                 "none on " + r.gpu + ": its latency figures are unmeasured (no calibration statement covers it)");
  if (r.error_bars) {
    // Right under the latencies they qualify.
    auto at = std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.first == "end-to-end p50 / p90 / p99"; });
    at = rows.emplace(at + 1, "error band", error_band_row(r));
    if (r.slo_probability)
      rows.emplace(at + 1, "P(SLO met)",
                   fmt::format("{:.0f} % of the {} keep p99 TTFT and TPOT within the SLO", 100 * *r.slo_probability,
                               band_basis(*r.error_bars)));
  }
  if (r.max_rate) {
    const cluster::MaxRate& m = *r.max_rate;
    rows.emplace_back("max rate within SLO",
                      m.found ? fmt::format("{} requests/s (TTFT p99 {}, TPOT p99 {}; {} runs of {} requests){}",
                                            number(m.max_rate_per_s), seconds(m.at_max.ttft_s.p99),
                                            seconds(m.at_max.tpot_s.p99), m.runs, count(r.max_rate_requests),
                                            r.max_rate_range.seeds > 1
                                                ? fmt::format("; {}-{} over {} seeds, differences within it are noise",
                                                              number(r.max_rate_range.min_per_s),
                                                              number(r.max_rate_range.max_per_s), r.max_rate_range.seeds)
                                                : "")
                              : fmt::format("none: the SLO is missed even at {} requests/s ({} runs)",
                                            number(r.workload.base_rate_per_s() * m.rate_scale), m.runs));
    if (r.max_rate_band_per_s)
      rows.emplace_back("max rate band",
                        fmt::format("{}-{} requests/s: the max rate if the steps and latencies are as far off as the "
                                    "{:.0f} % band's edges ({})",
                                    number(r.max_rate_band_per_s->lo), number(r.max_rate_band_per_s->hi),
                                    100 * r.error_bars->coverage, band_basis(*r.error_bars)));
  }
  for (size_t i = 0; i < r.replica_results.size(); ++i)
    rows.emplace_back(fmt::format("replica {}", i), replica_row(r.replica_results[i]));
  return rows;
}

Table sim_csv_record(const SimReport& r) { return json_csv_record(sim_json(r)); }

std::string sweep_text(const SimReport& r, TextFormat f) {
  const Table t = sweep_table(r);
  if (f != TextFormat::table) return render(t, f);
  const sim::SimResult& s = r.sweep.front().result;
  return fmt::format(
      "kvplan simulate: a benchmark client's concurrency sweep\n"
      "{} on {} (TP {}, PP {}), {}: {} requests per run{}{}{}, scheduler {}\n"
      "calibration: {}\n",
      r.model, r.gpu, r.options.tp, r.options.pp, r.workload.name, count(s.arrived),
      r.sim.all_at_once ? ", all sent at once"
                        : fmt::format(" arriving at {} requests/s", number(r.workload.base_rate_per_s() * r.sim.rate_scale)),
      random_note(r.workload),
      r.sim.warmup_requests > 0 ? fmt::format(", the first {} to finish left out", count(r.sim.warmup_requests)) : "",
      sim::to_string(r.sim.scheduler), calibration_label(r.options.calibration, r.gpu, r.bandwidth_transfer, r.gemm_transfer)) +
         render(t, TextFormat::table) +
         "Per concurrency N: at most N requests in flight, the next sent as one ends; latencies from the send. "
         "Median and p99 are nearest-rank. TTFT: send to first token; TPOT: (last - first token) / (output - 1); "
         "ITL: gap between consecutive tokens of a request.\n";
}

Table json_csv_record(const nlohmann::json& j) {
  Table t;
  t.rows.emplace_back();
  const auto walk = [&](const auto& self, const nlohmann::json& v, const std::string& path) -> void {
    if (v.is_object()) {
      for (const auto& [k, child] : v.items()) self(self, child, path.empty() ? k : path + "." + k);
      return;
    }
    if (v.is_array()) {  // a fleet's replicas: fleet.per_replica.0.requests.arrived, ...
      for (size_t i = 0; i < v.size(); ++i) self(self, v[i], path + "." + std::to_string(i));
      return;
    }
    t.header.push_back(path);
    t.rows.back().push_back(v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump());
  };
  walk(walk, j, "");
  t.right_align.assign(t.header.size(), false);
  return t;
}

std::string sim_text(const SimReport& r, TextFormat f) {
  if (!r.sweep.empty()) return sweep_text(r, f);
  Table t;
  t.header = {"quantity", "value"};
  t.right_align = {false, false};
  for (auto& [k, v] : sim_summary(r)) t.rows.push_back({k, v});
  if (f != TextFormat::table) return render(t, f);
  return "kvplan simulate\n" + render(t, TextFormat::table) +
         "TTFT: arrival to first token; TPOT: time per output token after the first; GiB = 2^30 bytes.\n";
}

std::string max_rate_progress(const std::string& what, uint64_t seed, int runs, std::optional<double> meets_per_s,
                              std::optional<double> misses_per_s) {
  std::string s = fmt::format("max rate{}, seed {}: run {}", what.empty() ? "" : " (" + what + ")", seed, runs);
  if (meets_per_s) s += fmt::format("; meets the SLO at {}/s", number(*meets_per_s));
  if (misses_per_s) s += fmt::format("{} misses at {}/s", meets_per_s ? "," : ";", number(*misses_per_s));
  return progress_line(s);
}

std::string sweep_progress(int64_t concurrency, size_t point, size_t points) {
  return progress_line(fmt::format("sweep: max concurrency {} ({} of {})", concurrency, point, points));
}

std::string progress_done(int runs, double wall_s) {
  return progress_line(fmt::format("simulated {} run{} in {:.1f} s", runs, runs == 1 ? "" : "s", wall_s)) + "\n";
}

}  // namespace kvplan::reports
