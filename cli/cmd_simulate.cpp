// kvplan simulate: one workload through the discrete-event serving simulator (sim/sim.h),
// reported as a readable summary, JSON ("kvplan.sim/1", ARCHITECTURE.md), Markdown or CSV;
// optionally the per-step time series (CSV) and the highest arrival rate meeting the SLO.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "cli/cli.h"
#include "cli/sim_options.h"
#include "cli/workload_options.h"
#include "cluster/fleet.h"
#include "cluster/max_rate.h"
#include "planner/error_bars.h"
#include "planner/speculative.h"
#include "io/config_io.h"
#include "io/workload_io.h"
#include "planner/planner.h"
#include "reports/sim_report.h"
#include "sim/sim.h"

namespace kvplan::cli {

namespace {

//! A fleet steps every replica in one thread: 1,024 replicas is beyond any fleet the
//! catalog prices, and the cap keeps a typo (--replicas 1000000) from running for hours.
constexpr int64_t kMaxReplicas = 1024;

std::string render(const reports::SimReport& r, Format f) {
  switch (f) {
    case Format::json: return reports::sim_json(r).dump(2) + "\n";
    case Format::md: return reports::sim_text(r, reports::TextFormat::md);
    case Format::csv: return reports::render(reports::sim_csv_record(r), reports::TextFormat::csv);
    case Format::table: break;
  }
  return reports::sim_text(r, reports::TextFormat::table);
}

//! Streams one CSV row per engine step to `path` (refusing to overwrite unless --force);
//! a fleet's rows lead with the replica's index.
class TimeSeries {
 public:
  TimeSeries(const std::string& path, bool force, int64_t num_blocks, bool fleet)
      : path_(path), num_blocks_(num_blocks) {
    check_output_path("--timeseries", path, force);
    out_.open(path, std::ios::binary | std::ios::trunc);
    if (!out_) throw InputError("--timeseries", "", "a writable path", "'" + path + "', which cannot be opened for writing");
    out_ << (fleet ? "replica," : "")
         << "time_s,step_s,batch,prefill_tokens,decode_seqs,kv_blocks_used,kv_utilization,queue,running\n";
  }
  void add(int64_t replica, const sim::StepSample& s) {
    out_ << replica << ',';
    add(s);
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
  const std::string max_rate_requests_help = fmt::format(
      "requests per run of the --find-max-rate search (at least {}; with --replicas N the default is N x {})",
      sim::min_requests_for_percentile(0.99), cluster::kProbeRequests);
  po::options_description desc("kvplan simulate: a workload through a simulated serving engine");
  desc.add_options()
      ("help,h", "this help")
      ("model", po::value<std::string>(), "catalog name or file: HF config.json or YAML")
      ("gpu", po::value<std::string>(), "catalog name or file")
      ("workload", po::value<std::string>(), "catalog name (configs/workloads) or YAML file")
      ("requests", po::value<std::string>(), "requests to simulate (default: the workload's)")
      ("seed", po::value<std::string>()->default_value("0"), "random seed (arrivals and lengths)")
      ("scheduler", po::value<std::string>()->default_value("auto"),
       "auto (the engine's own: vLLM V1 chunked, V0 continuous, sglang, trtllm; --engine ideal continuous) | "
       "continuous (vLLM V0) | chunked (chunked prefill, vLLM V1) | static | sglang | trtllm")
      ("swap", po::bool_switch(), "preempt by swapping KV blocks to host memory (default: recompute)")
      ("host-link-gb-per-s", po::value<std::string>()->default_value("25"),
       "host link bandwidth for --swap, GB/s (1e9 B/s; PCIe 4.0 x16 ~ 25)")
      ("disk-gb-per-s", po::value<std::string>()->default_value("6.9"),
       "with --kv-disk-size: one GPU's NVMe read bandwidth, GB/s (a PCIe Gen4 datacenter SSD's sequential read, 6.9)")
      ("disk-latency-us", po::value<std::string>()->default_value("85"),
       "with --kv-disk-size: the drive's latency per read, microseconds (Samsung PM983's typical random read, 85)")
      ("disk-write-gb-per-s", po::value<std::string>()->default_value("3.5"),
       "with --kv-disk-size: one GPU's NVMe write bandwidth, GB/s; demotions take the drive's time from reads (PM9A3 U.2 sequential write, 3.5)")
      ("remote-gb-per-s", po::value<std::string>()->default_value("23.75"),
       "with --kv-remote-size: one GPU's share of the network to the store, GB/s (Mooncake's transfer engine: 190 GB/s "
       "over 8 x 400 Gb/s RoCE NICs, 23.75 per NIC)")
      ("remote-latency-us", po::value<std::string>(),
       "with --kv-remote-size: the store's latency per fetch, microseconds (required: no public figure to default to)")
      ("rate", po::value<std::string>(),
       "arrival rate in requests/s (default: the workload's; a trace is time-scaled); inf: every request at once")
      ("max-concurrency", po::value<std::string>(),
       "a benchmark client's limit (vllm bench serve --max-concurrency): at most N requests in flight, the next sent "
       "as one ends; a list N1,N2,... prints a sweep")
      ("warmup-requests", po::value<std::string>(), "leave the first N finished requests out of every figure")
      ("random-input-len", po::value<std::string>(), "vLLM bench's random dataset: input length (default 1024)")
      ("random-output-len", po::value<std::string>(), "vLLM bench's random dataset: output length (default 128)")
      ("random-range-ratio", po::value<std::string>(),
       "vLLM bench's random dataset: lengths uniform in [len x (1 - r), len x (1 + r)], r in [0, 1) (default 0)")
      ("random-prefix-len", po::value<std::string>(),
       "vLLM bench's random dataset: a prefix of N tokens every prompt shares (default 0)")
      ("num-gpu-blocks-override", po::value<std::string>(),
       "KV pool in blocks per GPU, in place of the engine's accounting (vLLM's flag; e.g. the '# GPU blocks' a server logged)")
      ("timeseries", po::value<std::string>(), "write one CSV row per engine step to FILE")
      ("find-max-rate", po::bool_switch(), "also search the highest arrival rate meeting the workload's SLO")
      ("max-rate-requests", po::value<std::string>()->default_value(std::to_string(cluster::kProbeRequests)),
       max_rate_requests_help.c_str())
      ("max-rate-seeds", po::value<std::string>()->default_value(std::to_string(cluster::kProbeSeeds)),
       "seeds --find-max-rate runs, for the range of its answer")
      ("replicas", po::value<std::string>(),
       "simulate N identical replicas behind a router (the rows are then the fleet's, with one per replica)")
      ("router", po::value<std::string>(),
       "round-robin (default) | least-outstanding | least-kv | prefix-aware: how --replicas share the requests")
      ("disagg", po::bool_switch(), "disaggregated prefill/decode: --prefill-pool and --decode-pool in place of --gpu")
      ("prefill-pool", po::value<std::string>(), "with --disagg: GPU[:tpN][:ppN][:xN], e.g. h100-sxm:tp2:x3")
      ("decode-pool", po::value<std::string>(), "with --disagg: GPU[:tpN][:ppN][:xN], e.g. l40s:tp1:x4")
      ("kv-link", po::value<std::string>(),
       "with --disagg: nvlink|pcie|rdma|ethernet (default: by whether the pools share a node)");
  add_serving_options(desc);
  add_scheduler_options(desc);
  add_output_options(desc);
  add_workload_question_options(desc, false);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n" << kListHelp;
    return 0;
  }
  // The benchmark client drives the lone engine or a fleet, warm-up is counted by the
  // lone engine; none of them, nor the random lengths, applies to --disagg.
  if (vm["disagg"].as<bool>()) {
    for (const char* flag : {"max-concurrency", "warmup-requests", "random-input-len", "random-output-len",
                             "random-range-ratio", "random-prefix-len"})
      if (vm.count(flag))
        throw InputError("command line", std::string("--") + flag,
                         "a run without --disagg (the benchmark client drives one engine or a fleet)", "both");
    if (vm.count("rate") && vm["rate"].as<std::string>() == "inf")
      throw InputError("command line", "--rate", "a number with --disagg", "'inf'");
  }
  if (vm.count("replicas") && vm.count("warmup-requests"))
    throw InputError("command line", "--warmup-requests",
                     "a run without --replicas (warm-up is counted by the lone engine)", "both");
  if (vm["disagg"].as<bool>()) {
    for (const char* flag : {"replicas", "router"})
      if (vm.count(flag))
        throw InputError("command line", std::string("--") + flag,
                         "no --disagg alongside it (a disaggregated layout counts its instances in --prefill-pool and "
                         "--decode-pool)",
                         "both");
    refuse_question_options(vm, "--disagg");
    return cmd_simulate_disagg(vm);
  }
  for (const char* flag : {"prefill-pool", "decode-pool", "kv-link"})
    if (vm.count(flag))
      throw InputError("command line", std::string("--") + flag, "--disagg with it (pools are for disaggregated serving)",
                       "no --disagg");
  if (!vm.count("model")) throw InputError("command line", "--model", "a model name or file (see `kvplan models`)", "nothing");
  if (!vm.count("gpu")) throw InputError("command line", "--gpu", "a GPU name or file (see `kvplan gpus`)", "nothing");
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");

  const ModelConfig m = io::load_model(vm["model"].as<std::string>());
  const GpuSpec g = io::load_gpu(vm["gpu"].as<std::string>());
  const auto all_options = expand_serving_options(vm);
  if (all_options.size() != 1)
    throw InputError("command line", "", "one value per serving option (simulate runs one configuration)",
                     std::to_string(all_options.size()) + " combinations");
  reports::SimReport r;
  r.model = m.name;
  r.moe = m.is_moe();
  r.gpu = g.name;
  ServingOptions given = all_options.front();
  apply_engine_limit_flags(vm, given);
  r.options = with_engine_defaults(g, given);
  r.scale_out_note = scale_out_note(g, r.options);
  r.bandwidth_transfer = memory_bandwidth_transfer(r.options.calibration, g);
  r.gemm_transfer = gemm_flops_transfer(r.options.calibration, g);
  r.workload = question_workload(
      vm, "simulate", vm.count("requests") ? parse_int_option(vm["requests"].as<std::string>(), "--requests") : 0);
  apply_random_options(vm, r.workload);

  r.sim = parse_sim_options(vm, r.workload, sim::kSchedulerNames.expected());
  sim::SimOptions& so = r.sim;
  const std::vector<int64_t> concurrencies = parse_client_options(vm, r.workload, so);
  if (vm.count("num-gpu-blocks-override"))
    so.num_blocks = parse_int_option(vm["num-gpu-blocks-override"].as<std::string>(), "--num-gpu-blocks-override");

  if (vm.count("router") && !vm.count("replicas"))
    throw InputError("command line", "--router", "--replicas N alongside it (a router picks among replicas)",
                     "'" + vm["router"].as<std::string>() + "' alone");
  if (vm.count("replicas")) {
    cluster::FleetOptions f;
    f.replicas = parse_int_option(vm["replicas"].as<std::string>(), "--replicas");
    if (f.replicas > kMaxReplicas)
      throw InputError("command line", "--replicas", "at most " + std::to_string(kMaxReplicas) + " replicas",
                       std::to_string(f.replicas));
    if (vm.count("router")) {
      const auto router = cluster::parse_router(vm["router"].as<std::string>());
      if (!router)
        throw InputError("command line", "--router", cluster::kRouterNames.expected(),
                         "'" + vm["router"].as<std::string>() + "'");
      f.router = *router;
    }
    r.fleet = f;
  }
  const std::optional<int64_t> max_rate_requests =
      vm["find-max-rate"].as<bool>() ? parse_max_rate_requests(vm, r.workload) : std::nullopt;
  validate(m, r.options, "command line");
  const sim::Simulator simulator(m, g, r.options);
  r.kv_block_bytes_per_gpu = kv_block_bytes_per_gpu(apply_what_if(m, r.options), r.options);
  r.lora_bytes_per_gpu = lora_bytes_per_gpu(apply_what_if(m, r.options), r.options);
  r.spec = spec_statement(apply_what_if(m, r.options), r.options);
  const sim::SchedulerChoice choice = simulator.scheduler(so.scheduler);
  so.scheduler = choice.scheduler;
  r.scheduler_why = choice.why;
  const sim::EngineLimits limits = simulator.limits(so.scheduler);
  r.max_num_batched_tokens = limits.max_num_batched_tokens;
  r.host_tier = host_kv_tier(apply_what_if(m, r.options), r.options, so.num_blocks.value_or(simulator.num_blocks()));
  r.max_num_seqs = limits.max_num_seqs;
  r.max_model_len = simulator.max_model_len();
  refuse_same_path(vm, "output", "timeseries");
  if (vm.count("output")) check_output_path("--output", vm["output"].as<std::string>(), vm["force"].as<bool>());
  std::optional<TimeSeries> series;
  if (vm.count("timeseries")) {
    series.emplace(vm["timeseries"].as<std::string>(), vm.count("force") && vm["force"].as<bool>(),
                   so.num_blocks.value_or(simulator.num_blocks()), r.fleet.has_value());
    so.on_step = [&series](const sim::StepSample& s) { series->add(s); };
  }
  if (r.fleet) {
    cluster::FleetOptions f = *r.fleet;
    if (series) f.on_step = [&series](int64_t i, const sim::StepSample& s) { series->add(i, s); };
    cluster::FleetResult fr = cluster::simulate_fleet(simulator, r.workload, so, f);
    r.result = fr.fleet;
    r.replica_results = std::move(fr.replicas);
  } else {
    r.result = simulator.run(r.workload, so);
  }
  // Progress on a terminal (stderr only: stdout may be the report) for the runs beyond
  // the first: the sweep's points and the max-rate searches.
  const bool terminal = isatty(STDERR_FILENO) != 0;
  const auto wall0 = std::chrono::steady_clock::now();
  int progress_runs = 0;
  const auto on_run = [&](const std::string& what) -> decltype(cluster::MaxRateOptions::on_run) {
    if (!terminal) return nullptr;
    return [what, &progress_runs](uint64_t seed, int runs, std::optional<double> meets, std::optional<double> misses) {
      ++progress_runs;
      std::cerr << reports::max_rate_progress(what, seed, runs, meets, misses) << std::flush;
    };
  };
  // A sweep: the same requests under each concurrency in turn (--timeseries holds the
  // first run's steps).
  for (size_t i = 0; concurrencies.size() > 1 && i < concurrencies.size(); ++i) {
    if (terminal && i > 0) {
      ++progress_runs;
      std::cerr << reports::sweep_progress(concurrencies[i], i + 1, concurrencies.size()) << std::flush;
    }
    sim::SimOptions point = so;
    point.max_concurrency = concurrencies[i];
    point.on_step = nullptr;
    sim::SimResult result = r.result;
    if (i > 0) result = r.fleet ? cluster::simulate_fleet(simulator, r.workload, point, *r.fleet).fleet
                                : simulator.run(r.workload, point);
    r.sweep.push_back({concurrencies[i], result});
  }
  so.on_step = nullptr;
  if (series) series->close();
  if (vm["find-max-rate"].as<bool>()) {
    cluster::MaxRateOptions mo;
    mo.requests = max_rate_requests;
    mo.on_run = on_run("");
    // With --replicas the search is over the fleet's arrival rate, the same router.
    r.max_rate_requests = cluster::probe_requests(mo, r.fleet ? r.fleet->replicas : 1);
    r.max_rate = r.fleet ? cluster::find_max_rate(simulator, *r.fleet, r.workload, so, mo)
                         : cluster::find_max_rate(simulator, r.workload, so, mo);
    const auto seeds = parse_int_option(vm["max-rate-seeds"].as<std::string>(), "--max-rate-seeds");
    if (seeds > 20) throw InputError("command line", "--max-rate-seeds", "an integer from 1 to 20", std::to_string(seeds));
    const int n = static_cast<int>(seeds);
    r.max_rate_range = r.fleet ? cluster::max_rate_range(simulator, *r.fleet, r.workload, so, mo, *r.max_rate, n)
                               : cluster::max_rate_range(simulator, r.workload, so, mo, *r.max_rate, n);
  }
  r.error_bars = error_bars(r.options.calibration, r.gpu);
  if (r.error_bars && r.result.slo.given() && r.result.completed > 0)
    r.slo_probability = slo_probability(*r.error_bars, r.result.ttft_s.p99, r.result.tpot_s.p99, r.result.slo);
  if (r.max_rate && r.error_bars) {
    // At a band edge the measured latencies are f x the predicted ones (f: measured /
    // predicted). Steps f times as long serve rate x like the model serves rate x f, with
    // every latency f times as long, so the true max rate against the SLO is the model's
    // against SLO / f, divided by f (f of TPOT, the step-time error, for the rate; each
    // target divided by its own metric's f).
    auto at_edge = [&](double f_ttft, double f_tpot) {
      Workload w = r.workload;
      w.slo.ttft_p99_s /= f_ttft;
      w.slo.tpot_p99_s /= f_tpot;
      cluster::MaxRateOptions mo;
      mo.requests = max_rate_requests;
      mo.on_run = on_run(f_tpot > 1 ? "the error band's slow edge" : "the error band's fast edge");
      const cluster::MaxRate found = r.fleet ? cluster::find_max_rate(simulator, *r.fleet, w, so, mo)
                                             : cluster::find_max_rate(simulator, w, so, mo);
      return found.found ? found.max_rate_per_s / f_tpot : 0.0;
    };
    const ErrorBars& b = *r.error_bars;
    r.max_rate_band_per_s = Band{at_edge(b.ttft.hi, b.tpot.hi), at_edge(b.ttft.lo, b.tpot.lo)};
  }
  if (progress_runs > 0)
    std::cerr << reports::progress_done(progress_runs,
                                        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count())
              << std::flush;
  emit(vm, render(r, format));
  return 0;
}

}  // namespace kvplan::cli
