// `kvplan size`: the sizing search (size/size.h) wired to the command line, with a
// progress bar on stderr when it is a terminal, and the reports (reports/size_output.h).
#include <iostream>
#include <memory>
#include <unistd.h>

#include "cli/buy_options.h"
#include "cli/cli.h"
#include "cli/size_shard.h"
#include "cli/workload_options.h"
#include "io/config_io.h"
#include "io/workload_io.h"
#include "reports/size_output.h"
#include "size/disagg_search.h"
#include "size/size.h"

namespace kvplan::cli {

namespace {

//! --disagg's ratios, with the aggregated search's seed, probe size and threads.
size::DisaggSearchOptions disagg_options(const po::variables_map& vm, const size::SizeOptions& opt,
                                         const std::string& evaluator, Format format) {
  if (evaluator != "sim")
    throw InputError("command line", "--disagg", "the simulator evaluator (--evaluator sim)", "'" + evaluator + "'");
  if (format == Format::csv)
    throw InputError("command line", "--disagg", "--format table, md or json (the CSV holds aggregated options only)",
                     "--format csv");
  size::DisaggSearchOptions d;
  d.ratios.clear();
  for (const auto& s : split_list(vm["disagg"].as<std::string>(), "--disagg")) {
    const auto r = size::parse_disagg_ratio(s);
    if (!r) throw InputError("command line", "--disagg", "xPyD ratios with x, y >= 1, e.g. 1P2D", "'" + s + "'");
    d.ratios.push_back(*r);
  }
  d.threads = opt.threads;
  d.requests_per_probe = opt.requests_per_probe;
  d.rel_tolerance = opt.rel_tolerance;
  d.seed = opt.seed;
  d.prune = !vm["disagg-all"].as<bool>();
  return d;
}

}  // namespace

int cmd_size(const Args& args) {
  po::options_description desc(
      "kvplan size: the cheapest deployments meeting a workload's SLO (GPU x TP x KV x weights search)");
  desc.add_options()
      ("help,h", "this help")
      ("model", po::value<std::string>(), "catalog name(s) or file(s), comma-separated")
      ("workload", po::value<std::string>(), "workload name (configs/workloads) or file, with an slo")
      ("gpus", po::value<std::string>(), "GPUs to consider (default: the whole catalog)")
      ("scheduler", po::value<std::string>()->default_value("auto"),
       "auto (each candidate's engine's own) | continuous | chunked | static | sglang | trtllm (list ok)")
      ("report", po::value<std::string>(), "also write the HTML purchase report to FILE.html")
      ("threads", po::value<std::string>(), "worker threads (default: all cores)")
      ("requests", po::value<std::string>()->default_value(std::to_string(size::SizeOptions::kDefaultRequestsPerProbe)), "simulated requests per rate probe")
      ("seed", po::value<std::string>()->default_value("0"), "random seed of the simulated requests")
      ("top", po::value<std::string>()->default_value("20"), "rows in the table and Markdown outputs (0 = all)")
      ("evaluator", po::value<std::string>()->default_value("sim"), "sim (simulator) | planner (fast estimate)")
      ("what-if", po::bool_switch(), "also search formats no engine runs (int4/int2 KV caches, KIVI, KVQuant)")
      ("exhaustive", po::bool_switch(),
       "simulate every candidate the planner keeps (default: skip those whose cheapest possible deployment costs "
       "more than an option already proven; same recommendations)")
      ("disagg", po::value<std::string>()->implicit_value("1P1D,1P2D,1P3D,2P3D"),
       "also search disaggregated prefill/decode layouts, xPyD ratios (default 1P1D,1P2D,1P3D,2P3D), GPU mixes included")
      ("speculation", po::value<std::string>(),
       "with speculative decoding flags: both (default: each candidate with and without it) | on (only with it)")
      ("disagg-all", po::bool_switch(),
       "with --disagg, also simulate layouts whose one unit costs at least the aggregated answer (same verdict, slower)");
  add_serving_options(desc);
  add_output_options(desc);
  add_buy_options(desc);
  add_workload_question_options(desc, true);
  add_shard_options(desc);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n" << kListHelp << "\nSearched unless given as options: --tp 1,2,4,8; --quantization none,fp8,awq;\n"
                         "--kv-cache-dtype auto,fp8,int4,int2 (int4/int2 with --kv-quant kvquant: what-ifs, searched\n"
                         "only with --what-if; docs/engines.md lists what each engine runs); --pp 1.\n"
                         "Engine limits are searched when given as lists, e.g. --max-num-seqs 256,1024\n"
                         "--max-num-batched-tokens 2048,8192 --scheduler continuous,chunked.\n"
                         "--dcp auto adds every decode context parallel size vLLM runs at each TP (docs/long-context.md).\n";
    return 0;
  }
  if (!vm.count("model")) throw InputError("command line", "--model", "a model name or file (see `kvplan models`)", "nothing");
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");
  const BuyRequest buy_request = parse_buy_options(vm);

  size::SearchSpace space;
  for (const auto& name : split_list(vm["model"].as<std::string>(), "--model")) space.models.push_back(io::load_model(name));
  const auto gpu_names = vm.count("gpus") ? split_list(vm["gpus"].as<std::string>(), "--gpus") : io::catalog("gpus");
  for (const auto& name : gpu_names) space.gpus.push_back(io::load_gpu(name));
  // `--dcp auto`: every size the engine runs at each searched TP (size::SearchSpace).
  space.dcp_auto = vm.count("decode-context-parallel-size") && vm["decode-context-parallel-size"].as<std::string>() == "auto";
  if (space.dcp_auto) {
    po::variables_map fixed = vm;
    fixed.erase("decode-context-parallel-size");
    space.base = expand_serving_options(fixed);
  } else {
    space.base = expand_serving_options(vm);
  }
  // The store's latency per fetch has no default and size takes no --remote-latency-us;
  // nor is the store priced (docs/kv-tiers.md "The remote tier").
  if (vm.count("kv-remote-size"))
    throw InputError("command line", "--kv-remote-size",
                     "simulate --replicas N for a remote KV store (size neither prices the store nor takes its "
                     "--remote-latency-us)",
                     vm["kv-remote-size"].as<std::string>());
  // Speculation helps at low batch and hurts when steps are compute-bound
  // (docs/speculative.md), so by default each candidate is searched both ways.
  if (vm.count("speculation")) {
    const std::string v = vm["speculation"].as<std::string>();
    if (v != "both" && v != "on") throw InputError("command line", "--speculation", "both or on", "'" + v + "'");
    if (!space.base.front().spec)
      throw InputError("command line", "--speculation", "--speculative-config or --speculative-algorithm beside it",
                       "no speculative decoding");
  }
  if (space.base.front().spec && (!vm.count("speculation") || vm["speculation"].as<std::string>() == "both")) {
    const size_t n = space.base.size();
    for (size_t i = 0; i < n; ++i) {
      ServingOptions plain = space.base[i];
      plain.spec.reset();
      space.base.push_back(plain);
    }
  }
  // Dimensions the user fixed stay as given (in `base`); the others are searched.
  if (!vm.count("tensor-parallel-size")) space.tp = size::default_tp_options();
  if (!vm.count("quantization")) space.weights = size::default_weight_options();
  if (!vm.count("kv-cache-dtype") && !vm.count("kv-quant")) space.kv = size::default_kv_options();
  space.schedulers.clear();
  for (const auto& s : split_list(vm["scheduler"].as<std::string>(), "--scheduler")) {
    const auto sch = sim::parse_scheduler(s);
    if (!sch) throw InputError("command line", "--scheduler", sim::kSchedulerNames.expected(), "'" + s + "'");
    space.schedulers.push_back(*sch);
  }
  space.what_if = vm["what-if"].as<bool>();
  const Workload workload =
      question_workload(vm, "size", parse_int_option(vm["requests"].as<std::string>(), "--requests"));
  if (workload.arrivals_at_one_instant())
    throw InputError(workload.trace_file, "arrival_s", "arrivals spread over time (size searches arrival rates)",
                     "every arrival at one instant");

  size::SizeOptions opt;
  opt.threads = vm.count("threads") ? static_cast<int>(parse_int_option(vm["threads"].as<std::string>(), "--threads")) : 0;
  opt.exhaustive = vm["exhaustive"].as<bool>();
  set_buy_options(buy_request, space.gpus, opt);
  opt.requests_per_probe = parse_int_option(vm["requests"].as<std::string>(), "--requests");
  opt.seed = static_cast<uint64_t>(parse_int_option(vm["seed"].as<std::string>(), "--seed", 0));
  const auto top = static_cast<size_t>(parse_int_option(vm["top"].as<std::string>(), "--top", 0));
  const std::string evaluator = vm["evaluator"].as<std::string>();
  if (evaluator == "planner") {
    opt.evaluator = size::planner_evaluate;
  } else if (evaluator != "sim") {
    throw InputError("command line", "--evaluator", "sim or planner", "'" + evaluator + "'");
  }
  const bool shard = setup_shard(vm, args, evaluator, opt);
  if (vm.count("disagg"))
    opt.disagg = std::make_shared<const size::DisaggSearchOptions>(disagg_options(vm, opt, evaluator, format));
  else if (vm["disagg-all"].as<bool>()) throw InputError("command line", "--disagg-all", "--disagg as well", "--disagg-all alone");
  const bool force = vm.count("force") && vm["force"].as<bool>();
  refuse_same_path(vm, "output", "report");
  if (vm.count("report")) check_output_path("--report", vm["report"].as<std::string>(), force);
  if (vm.count("output")) check_output_path("--output", vm["output"].as<std::string>(), force);

  const bool bar = isatty(STDERR_FILENO) != 0;
  if (bar) opt.on_progress = [](int64_t done, int64_t total) { std::cerr << reports::size_progress(done, total) << std::flush; };
  const size::SizeResult result = size::run_search(space, workload, opt);
  if (bar) std::cerr << reports::size_done(result);
  if (bar && result.disagg) std::cerr << reports::disagg_done(*result.disagg);
  if (shard) {
    emit(vm, shard_output());
    return 0;
  }

  if (vm.count("report")) write_output("--report", vm["report"].as<std::string>(), reports::size_output_html(result), force);
  std::string text;
  switch (format) {
    case Format::json: text = reports::size_output_json(result).dump(2) + "\n"; break;
    case Format::csv: text = reports::size_output_text(result, reports::TextFormat::csv, top); break;
    case Format::md: text = reports::size_output_text(result, reports::TextFormat::md, top); break;
    case Format::table: text = reports::size_output_text(result, reports::TextFormat::table, top); break;
  }
  emit(vm, text);
  return 0;
}

}  // namespace kvplan::cli
