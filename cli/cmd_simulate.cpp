// kvplan simulate: one workload through the discrete-event serving simulator (sim/sim.h),
// reported as a readable summary, JSON ("kvplan.sim/1", ARCHITECTURE.md), Markdown or CSV;
// optionally the per-step time series (CSV) and the highest arrival rate meeting the SLO.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.h"
#include "io/config_io.h"
#include "io/workload_io.h"
#include "planner/planner.h"
#include "reports/table.h"
#include "sim/sim.h"

namespace kvplan::cli {

namespace {

struct Report {
  std::string model, gpu;
  ServingOptions options;
  sim::Workload workload;
  sim::SimOptions sim;
  sim::SimResult result;
  int64_t kv_block_bytes_per_gpu = 0;
  int64_t max_num_batched_tokens = 0;
  std::optional<sim::MaxRate> max_rate;
  sim::MaxRateRange max_rate_range;
  int64_t max_rate_requests = 0;
  int64_t max_model_len = 0;
};

nlohmann::json percentiles_json(const sim::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

nlohmann::json to_json(const Report& r) {
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
                   {"preemptions", s.preemptions}, {"truncated", s.truncated},
                   {"rejected_max_model_len", s.rejected_max_model_len}, {"rejected_pool", s.rejected_pool}};
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
  return j;
}

std::string pct(double f) { return fmt::format("{:.1f} %", 100 * f); }
//! Three significant digits: a whole number with thousands separators from 1,000 to a
//! million, scientific notation above.
std::string num(double x) {
  if (std::isfinite(x) && std::abs(x) >= 1000 && std::abs(x) < 1e6) return reports::count(std::llround(x));
  return fmt::format("{:.3g}", x);
}

//! Why requests were rejected, e.g. " (300 prompts reach max_model_len 4,096)".
std::string rejected_why(const Report& r) {
  const sim::SimResult& s = r.result;
  if (s.rejected == 0) return "";
  std::vector<std::string> why;
  if (s.rejected_max_model_len > 0)
    why.push_back(fmt::format("{} prompts reach max_model_len {}", reports::count(s.rejected_max_model_len),
                              reports::count(r.max_model_len)));
  if (s.rejected_pool > 0)
    why.push_back(fmt::format("{} longer than the whole KV pool", reports::count(s.rejected_pool)));
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : ", ") + w;
  return " (" + out + ")";
}

std::string no_latency(const sim::SimResult& s) {
  return s.rejected > 0 ? "none: no request completed (every one was rejected)" : "none: no request completed";
}

std::string latencies(const sim::SimResult& s, const sim::Percentiles& p) {
  if (s.completed == 0) return no_latency(s);
  if (p.p99 == 0 && p.p50 == 0) return "none: every output is one token (TPOT needs two)";
  return fmt::format("{} / {} / {}", reports::seconds(p.p50), reports::seconds(p.p90), reports::seconds(p.p99));
}

//! "met", or "missed" with the reason a reader cannot see in the latency rows.
std::string slo_verdict(const sim::SimResult& s) {
  if (!s.slo.given()) return "no SLO in the workload";
  if (s.meets_slo) return "met";
  if (s.completed == 0) return "missed: no request completed";
  const int64_t judged = s.completed + s.rejected;
  if (s.rejected > 0 && 100 * s.rejected > judged)
    return fmt::format("missed: {} of {} requests rejected (more than the 1 % a p99 allows)",
                       reports::count(s.rejected), reports::count(judged));
  return "missed";
}

//! The summary as (quantity, value) rows: the human table, Markdown and CSV all use it.
std::vector<std::pair<std::string, std::string>> summary(const Report& r) {
  const sim::SimResult& s = r.result;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"model / GPU", fmt::format("{} on {} (TP {}, PP {})", r.model, r.gpu, r.options.tp, r.options.pp)},
      {"workload", fmt::format("{}: {} requests at {} requests/s", r.workload.name,
                               reports::count(s.arrived), num(r.workload.base_rate_per_s() * r.sim.rate_scale))},
      {"scheduler", fmt::format("{} (max {} seqs, {} batched tokens), preempt by {}, seed {}",
                                sim::to_string(r.sim.scheduler), r.options.max_num_seqs,
                                reports::count(r.max_num_batched_tokens),
                                r.sim.preemption == sim::Preemption::swap ? "swap" : "recompute", r.sim.seed)},
      {"KV pool", fmt::format("{} blocks of {} tokens = {} per GPU", reports::count(s.num_blocks), s.block_size,
                              reports::gib(s.num_blocks * r.kv_block_bytes_per_gpu))},
      {"requests", fmt::format("{} completed, {} rejected{}, {} preemptions, {} outputs cut at max_model_len",
                               reports::count(s.completed), reports::count(s.rejected), rejected_why(r),
                               reports::count(s.preemptions), reports::count(s.truncated))},
      {"throughput", fmt::format("{} requests/s, {} output tokens/s, {} prompt tokens/s", num(s.requests_per_s),
                                 num(s.output_tokens_per_s), num(s.prompt_tokens_per_s))},
      {"goodput", !s.slo.given() ? std::string("no SLO in the workload: nothing to measure against")
                                 : fmt::format("{} requests/s within the SLO ({} of requests{}; TTFT <= {}, TPOT <= {})",
                                               num(s.goodput_requests_per_s), pct(s.slo_attainment),
                                               s.rejected > 0 ? ", rejected ones count as failed" : "",
                                               reports::seconds(s.slo.ttft_p99_s), reports::seconds(s.slo.tpot_p99_s))},
      {"SLO at p99", slo_verdict(s)},
      {"TTFT p50 / p90 / p99", latencies(s, s.ttft_s)},
      {"TPOT p50 / p90 / p99", latencies(s, s.tpot_s)},
      {"end-to-end p50 / p90 / p99", latencies(s, s.e2e_s)},
      {"queueing p50 / p99 / mean", s.completed == 0 ? no_latency(s)
                                                     : fmt::format("{} / {} / {}", reports::seconds(s.queue_s.p50),
                                                                   reports::seconds(s.queue_s.p99),
                                                                   reports::seconds(s.queue_s.mean))},
      {"batch mean / max", fmt::format("{} / {} sequences", num(s.batch_mean), s.batch_max)},
      {"KV use mean / peak", fmt::format("{} / {} ({} blocks)", pct(s.mean_kv_utilization),
                                         pct(s.peak_kv_utilization), reports::count(s.peak_blocks))},
      {"simulated", fmt::format("{} s of serving ({} s busy) in {} steps, {} events", num(s.duration_s),
                                num(s.busy_s), reports::count(s.steps), reports::count(s.events))},
      {"wall", fmt::format("{}, {} simulated tokens/s of wall time", reports::seconds(s.wall_s),
                           num(s.tokens_per_wall_s))},
  };
  if (r.max_rate) {
    const sim::MaxRate& m = *r.max_rate;
    rows.emplace_back("max rate within SLO",
                      m.found ? fmt::format("{} requests/s (TTFT p99 {}, TPOT p99 {}; {} runs of {} requests){}",
                                            num(m.max_rate_per_s), reports::seconds(m.at_max.ttft_s.p99),
                                            reports::seconds(m.at_max.tpot_s.p99), m.runs,
                                            reports::count(r.max_rate_requests),
                                            r.max_rate_range.seeds > 1
                                                ? fmt::format("; {}-{} over {} seeds, differences within it are noise",
                                                              num(r.max_rate_range.min_per_s),
                                                              num(r.max_rate_range.max_per_s), r.max_rate_range.seeds)
                                                : "")
                              : fmt::format("none: the SLO is missed even at {} requests/s ({} runs)",
                                            num(r.workload.base_rate_per_s() * m.rate_scale), m.runs));
  }
  return rows;
}

std::string render(const Report& r, Format f) {
  if (f == Format::json) return to_json(r).dump(2) + "\n";
  reports::Table t;
  t.header = {"quantity", "value"};
  t.right_align = {false, false};
  for (auto& [k, v] : summary(r)) t.rows.push_back({k, v});
  if (f == Format::md) return reports::render(t, reports::TextFormat::md);
  if (f == Format::csv) return reports::render(t, reports::TextFormat::csv);
  return "kvplan simulate\n" + reports::render(t, reports::TextFormat::table) +
         "TTFT: arrival to first token; TPOT: time per output token after the first; GiB = 2^30 bytes.\n";
}

//! Streams one CSV row per engine step to `path` (refusing to overwrite unless --force).
class TimeSeries {
 public:
  TimeSeries(const std::string& path, bool force, int64_t num_blocks) : num_blocks_(num_blocks) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !force)
      throw InputError("--timeseries", "", "a file that does not exist yet (or --force to overwrite it)",
                       "'" + path + "' exists");
    out_.open(path, std::ios::binary | std::ios::trunc);
    if (!out_) throw InputError("--timeseries", "", "a writable path", "'" + path + "'");
    out_ << "time_s,step_s,batch,prefill_tokens,decode_seqs,kv_blocks_used,kv_utilization,queue,running\n";
  }
  void add(const sim::StepSample& s) {
    out_ << fmt::format("{:.6f},{:.6g},{},{},{},{},{:.4f},{},{}\n", s.time_s, s.duration_s, s.batch,
                        s.prefill_tokens, s.decode_seqs, s.kv_blocks_used,
                        static_cast<double>(s.kv_blocks_used) / static_cast<double>(num_blocks_), s.waiting,
                        s.running);
  }

 private:
  std::ofstream out_;
  int64_t num_blocks_;
};

}  // namespace

int cmd_simulate(const Args& args) {
  po::options_description desc("kvplan simulate: a workload through a simulated serving engine");
  desc.add_options()
      ("help,h", "this help")
      ("model", po::value<std::string>(), "catalog name or file: HF config.json or YAML")
      ("gpu", po::value<std::string>(), "catalog name or file")
      ("workload", po::value<std::string>(), "catalog name (configs/workloads) or YAML file")
      ("requests", po::value<std::string>(), "requests to simulate (default: the workload's)")
      ("seed", po::value<std::string>()->default_value("0"), "random seed (arrivals and lengths)")
      ("scheduler", po::value<std::string>()->default_value("continuous"),
       "continuous (vLLM V0) | chunked (chunked prefill, vLLM V1) | static")
      ("swap", po::bool_switch(), "preempt by swapping KV blocks to host memory (default: recompute)")
      ("host-link-gb-per-s", po::value<std::string>()->default_value("25"),
       "host link bandwidth for --swap, GB/s (1e9 B/s; PCIe 4.0 x16 ~ 25)")
      ("rate", po::value<std::string>(), "arrival rate in requests/s (default: the workload's; a trace is time-scaled)")
      ("timeseries", po::value<std::string>(), "write one CSV row per engine step to FILE")
      ("find-max-rate", po::bool_switch(), "also search the highest arrival rate meeting the workload's SLO")
      ("max-rate-requests", po::value<std::string>()->default_value("4000"),
       "requests per run of the --find-max-rate search (at least 1,000)")
      ("max-rate-seeds", po::value<std::string>()->default_value("3"),
       "seeds --find-max-rate runs, for the range of its answer");
  add_serving_options(desc);
  add_output_options(desc);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (!vm.count("model")) throw InputError("command line", "--model", "a model name or file (see `kvplan models`)", "nothing");
  if (!vm.count("gpu")) throw InputError("command line", "--gpu", "a GPU name or file (see `kvplan gpus`)", "nothing");
  if (!vm.count("workload"))
    throw InputError("command line", "--workload", "a workload name or file (configs/workloads)", "nothing");
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");

  const ModelConfig m = io::load_model(vm["model"].as<std::string>());
  const GpuSpec g = io::load_gpu(vm["gpu"].as<std::string>());
  const auto all_options = expand_serving_options(vm);
  if (all_options.size() != 1)
    throw InputError("command line", "", "one value per serving option (simulate runs one configuration)",
                     std::to_string(all_options.size()) + " combinations");
  Report r;
  r.model = m.name;
  r.gpu = g.name;
  r.options = with_engine_defaults(g, all_options.front());
  r.workload = io::load_workload(vm["workload"].as<std::string>());

  sim::SimOptions& so = r.sim;
  const auto scheduler = sim::parse_scheduler(vm["scheduler"].as<std::string>());
  if (!scheduler)
    throw InputError("command line", "--scheduler", "continuous, chunked or static",
                     "'" + vm["scheduler"].as<std::string>() + "'");
  so.scheduler = *scheduler;
  so.seed = static_cast<uint64_t>(parse_int_option(vm["seed"].as<std::string>(), "--seed", 0));
  if (vm.count("requests")) {
    so.requests = parse_int_option(vm["requests"].as<std::string>(), "--requests");
    if (*so.requests > 1'000'000'000)
      throw InputError("command line", "--requests", "at most 1,000,000,000 requests", std::to_string(*so.requests));
  }
  if (vm["swap"].as<bool>()) so.preemption = sim::Preemption::swap;
  so.host_link_bytes_per_s = 1e9 * parse_num_option(vm["host-link-gb-per-s"].as<std::string>(), "--host-link-gb-per-s", 1e-3, 1e6);
  if (vm.count("rate"))
    so.rate_scale = parse_num_option(vm["rate"].as<std::string>(), "--rate", 1e-9, 1e12) / r.workload.base_rate_per_s();

  if (vm["find-max-rate"].as<bool>()) {
    const int64_t per_run = parse_int_option(vm["max-rate-requests"].as<std::string>(), "--max-rate-requests");
    const int64_t least = sim::min_requests_for_percentile(0.99);
    if (per_run < least)
      throw InputError("command line", "--max-rate-requests",
                       "at least " + std::to_string(least) + " requests, so that 10 lie above the p99 the SLO is judged on",
                       std::to_string(per_run));
    if (!r.workload.slo.given())
      throw InputError(r.workload.file, "slo", "a TTFT and TPOT target (slo: {ttft_p99_s, tpot_p99_s}): --find-max-rate "
                       "measures the highest rate against it", "nothing");
  }
  validate(m, r.options, "command line");
  const sim::Simulator simulator(m, g, r.options);
  r.kv_block_bytes_per_gpu = kv_block_bytes_per_gpu(apply_what_if(m, r.options), r.options);
  r.max_num_batched_tokens = simulator.max_num_batched_tokens(so.scheduler);
  r.max_model_len = simulator.max_model_len();
  std::optional<TimeSeries> series;
  if (vm.count("timeseries")) {
    series.emplace(vm["timeseries"].as<std::string>(), vm.count("force") && vm["force"].as<bool>(),
                   so.num_blocks.value_or(simulator.num_blocks()));
    so.on_step = [&series](const sim::StepSample& s) { series->add(s); };
  }
  r.result = simulator.run(r.workload, so);
  so.on_step = nullptr;
  if (vm["find-max-rate"].as<bool>()) {
    sim::MaxRateOptions mo;
    mo.requests = parse_int_option(vm["max-rate-requests"].as<std::string>(), "--max-rate-requests");
    r.max_rate_requests = mo.requests;
    r.max_rate = sim::find_max_rate(simulator, r.workload, so, mo);
    const auto seeds = parse_int_option(vm["max-rate-seeds"].as<std::string>(), "--max-rate-seeds");
    if (seeds > 20) throw InputError("command line", "--max-rate-seeds", "an integer from 1 to 20", std::to_string(seeds));
    r.max_rate_range = sim::max_rate_range(simulator, r.workload, so, mo, *r.max_rate, static_cast<int>(seeds));
  }
  emit(vm, render(r, format));
  return 0;
}

}  // namespace kvplan::cli
