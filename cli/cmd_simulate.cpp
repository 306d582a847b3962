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
  int64_t max_rate_requests = 0;
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
  j["arrival_rate_per_s"] = r.workload.arrivals_at_one_instant()
                                ? nlohmann::json(nullptr)
                                : nlohmann::json(r.workload.base_rate_per_s() * r.sim.rate_scale);
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

std::string pct(double f) { return fmt::format("{:.1f} %", 100 * f); }
//! Three significant digits: a whole number with thousands separators from 1,000 to a
//! million, scientific notation above.
std::string num(double x) {
  if (std::isfinite(x) && std::abs(x) >= 1000 && std::abs(x) < 1e6) return reports::count(std::llround(x));
  return fmt::format("{:.3g}", x);
}

//! The summary as (quantity, value) rows: the human table and Markdown use it.
std::vector<std::pair<std::string, std::string>> summary(const Report& r) {
  const sim::SimResult& s = r.result;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"model / GPU", fmt::format("{} on {} (TP {}, PP {})", r.model, r.gpu, r.options.tp, r.options.pp)},
      {"workload", r.workload.arrivals_at_one_instant()
                       ? fmt::format("{}: {} requests, the trace's arrivals all at one instant (a burst: no arrival rate)",
                                     r.workload.name, reports::count(s.arrived))
                       : fmt::format("{}: {} requests at {} requests/s", r.workload.name, reports::count(s.arrived),
                                     num(r.workload.base_rate_per_s() * r.sim.rate_scale))},
      {"scheduler", fmt::format("{} (max {} seqs, {} batched tokens), preempt by {}, seed {}",
                                sim::to_string(r.sim.scheduler), r.options.max_num_seqs,
                                reports::count(r.max_num_batched_tokens),
                                r.sim.preemption == sim::Preemption::swap ? "swap" : "recompute", r.sim.seed)},
      {"KV pool", fmt::format("{} blocks of {} tokens = {} per GPU", reports::count(s.num_blocks), s.block_size,
                              reports::gib(s.num_blocks * r.kv_block_bytes_per_gpu))},
      {"requests", fmt::format("{} completed, {} rejected, {} preemptions, {} outputs cut at max_model_len",
                               reports::count(s.completed), reports::count(s.rejected),
                               reports::count(s.preemptions), reports::count(s.truncated))},
      {"throughput", fmt::format("{} requests/s, {} output tokens/s, {} prompt tokens/s", num(s.requests_per_s),
                                 num(s.output_tokens_per_s), num(s.prompt_tokens_per_s))},
      {"goodput", fmt::format("{} requests/s within the SLO ({} of requests; TTFT <= {}, TPOT <= {})",
                              num(s.goodput_requests_per_s), pct(s.slo_attainment),
                              reports::seconds(s.slo.ttft_p99_s), reports::seconds(s.slo.tpot_p99_s))},
      {"SLO at p99", s.meets_slo ? "met" : "missed"},
      {"TTFT p50 / p90 / p99", fmt::format("{} / {} / {}", reports::seconds(s.ttft_s.p50),
                                           reports::seconds(s.ttft_s.p90), reports::seconds(s.ttft_s.p99))},
      {"TPOT p50 / p90 / p99", fmt::format("{} / {} / {}", reports::seconds(s.tpot_s.p50),
                                           reports::seconds(s.tpot_s.p90), reports::seconds(s.tpot_s.p99))},
      {"end-to-end p50 / p90 / p99", fmt::format("{} / {} / {}", reports::seconds(s.e2e_s.p50),
                                                 reports::seconds(s.e2e_s.p90), reports::seconds(s.e2e_s.p99))},
      {"queueing p50 / p99 / mean", fmt::format("{} / {} / {}", reports::seconds(s.queue_s.p50),
                                                reports::seconds(s.queue_s.p99), reports::seconds(s.queue_s.mean))},
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
                      m.found ? fmt::format("{} requests/s (TTFT p99 {}, TPOT p99 {}; {} runs of {} requests)",
                                            num(m.max_rate_per_s), reports::seconds(m.at_max.ttft_s.p99),
                                            reports::seconds(m.at_max.tpot_s.p99), m.runs,
                                            reports::count(r.max_rate_requests))
                              : fmt::format("none: the SLO is missed even at {} requests/s ({} runs)",
                                            num(r.workload.base_rate_per_s() * m.rate_scale), m.runs));
  }
  return rows;
}

//! The JSON as one CSV record for machines: a column per leaf, named by its dotted path
//! ("latency.ttft_s.p99"), raw numbers (units are in the names), null as an empty field.
reports::Table csv_record(const nlohmann::json& j) {
  reports::Table t;
  t.rows.emplace_back();
  const auto walk = [&](const auto& self, const nlohmann::json& v, const std::string& path) -> void {
    if (v.is_object()) {
      for (const auto& [k, child] : v.items()) self(self, child, path.empty() ? k : path + "." + k);
      return;
    }
    t.header.push_back(path);
    t.rows.back().push_back(v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump());
  };
  walk(walk, j, "");
  return t;
}

std::string render(const Report& r, Format f) {
  if (f == Format::json) return to_json(r).dump(2) + "\n";
  if (f == Format::csv) return reports::render(csv_record(to_json(r)), reports::TextFormat::csv);
  reports::Table t;
  t.header = {"quantity", "value"};
  t.right_align = {false, false};
  for (auto& [k, v] : summary(r)) t.rows.push_back({k, v});
  if (f == Format::md) return reports::render(t, reports::TextFormat::md);
  return "kvplan simulate\n" + reports::render(t, reports::TextFormat::table) +
         "TTFT: arrival to first token; TPOT: time per output token after the first; GiB = 2^30 bytes.\n";
}

//! Streams one CSV row per engine step to `path` (refusing to overwrite unless --force).
class TimeSeries {
 public:
  TimeSeries(const std::string& path, bool force, int64_t num_blocks) : path_(path), num_blocks_(num_blocks) {
    check_output_path("--timeseries", path, force);
    out_.open(path, std::ios::binary | std::ios::trunc);
    if (!out_) throw InputError("--timeseries", "", "a writable path", "'" + path + "', which cannot be opened for writing");
    out_ << "time_s,step_s,batch,prefill_tokens,decode_seqs,kv_blocks_used,kv_utilization,queue,running\n";
  }
  void add(const sim::StepSample& s) {
    out_ << fmt::format("{:.6f},{:.6g},{},{},{},{},{:.4f},{},{}\n", s.time_s, s.duration_s, s.batch,
                        s.prefill_tokens, s.decode_seqs, s.kv_blocks_used,
                        static_cast<double>(s.kv_blocks_used) / static_cast<double>(num_blocks_), s.waiting,
                        s.running);
  }
  //! A full disk shows only when the last buffer is flushed.
  void close() {
    out_.close();
    if (out_.fail()) throw InputError("--timeseries", "", "a path that can be written in full", "'" + path_ + "': write failed");
  }

 private:
  std::string path_;
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
       "requests per run of the --find-max-rate search");
  add_serving_options(desc);
  add_output_options(desc);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n" << kListHelp;
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
  if (r.workload.arrivals_at_one_instant() && (vm.count("rate") || vm["find-max-rate"].as<bool>()))
    throw InputError(r.workload.trace_file, "arrival_s",
                     "arrivals spread over time (--rate and --find-max-rate scale the trace's arrival rate)",
                     "every arrival at one instant");
  // Past its last row a trace replays one mean gap later; a burst has no gap to replay at.
  if (r.workload.arrivals_at_one_instant() &&
      std::cmp_greater(so.requests.value_or(r.workload.requests), r.workload.trace->size()))
    throw InputError(r.workload.trace_file, "requests",
                     "at most the trace's " + std::to_string(r.workload.trace->size()) +
                         " rows (its arrivals share one instant, so it cannot be replayed at a rate)",
                     std::to_string(so.requests.value_or(r.workload.requests)));
  if (vm.count("rate"))
    so.rate_scale = parse_num_option(vm["rate"].as<std::string>(), "--rate", 1e-9, 1e12) / r.workload.base_rate_per_s();

  validate(m, r.options, "command line");
  const sim::Simulator simulator(m, g, r.options);
  r.kv_block_bytes_per_gpu = kv_block_bytes_per_gpu(apply_what_if(m, r.options), r.options);
  r.max_num_batched_tokens = simulator.max_num_batched_tokens(so.scheduler);
  refuse_same_path(vm, "output", "timeseries");
  if (vm.count("output")) check_output_path("--output", vm["output"].as<std::string>(), vm["force"].as<bool>());
  std::optional<TimeSeries> series;
  if (vm.count("timeseries")) {
    series.emplace(vm["timeseries"].as<std::string>(), vm.count("force") && vm["force"].as<bool>(),
                   so.num_blocks.value_or(simulator.num_blocks()));
    so.on_step = [&series](const sim::StepSample& s) { series->add(s); };
  }
  r.result = simulator.run(r.workload, so);
  so.on_step = nullptr;
  if (series) series->close();
  if (vm["find-max-rate"].as<bool>()) {
    sim::MaxRateOptions mo;
    mo.requests = parse_int_option(vm["max-rate-requests"].as<std::string>(), "--max-rate-requests");
    r.max_rate_requests = mo.requests;
    r.max_rate = sim::find_max_rate(simulator, r.workload, so, mo);
  }
  emit(vm, render(r, format));
  return 0;
}

}  // namespace kvplan::cli
