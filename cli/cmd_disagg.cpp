// kvplan simulate --disagg: a workload through disaggregated prefill and decode pools
// (cluster/disagg.h), each given as GPU[:tpN][:ppN][:xN].
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/sim_options.h"
#include "cluster/max_rate.h"
#include "io/config_io.h"
#include "io/workload_io.h"
#include "planner/planner.h"
#include "reports/disagg_report.h"

namespace kvplan::cli {

namespace {

constexpr const char* kPoolGrammar = "GPU[:tpN][:ppN][:xN] (a catalog GPU or file; TP, PP and instances default to 1), "
                                     "e.g. h100-sxm:tp2:x3";

//! "h100-sxm:tp2:x3" -> GPU h100-sxm, TP 2, 3 instances; the serving options of the
//! command line (everything but TP and PP) apply to every pool.
cluster::PoolSpec parse_pool(const std::string& spec, const std::string& option, const ServingOptions& common) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const auto bad = [&](const std::string& why) {
    return InputError("command line", option, kPoolGrammar, "'" + spec + "'" + why);
  };
  if (parts.front().empty()) throw bad(" (no GPU)");
  cluster::PoolSpec p;
  p.options = common;
  bool tp = false, pp = false, x = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const size_t digits = part.find_first_of("0123456789");
    const std::string key = part.substr(0, digits);
    const std::string value = digits == std::string::npos ? "" : part.substr(digits);
    bool* seen = key == "tp" ? &tp : key == "pp" ? &pp : key == "x" ? &x : nullptr;
    if (seen == nullptr || value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
      throw bad(fmt::format(" ('{}' is not tpN, ppN or xN)", part));
    if (*seen) throw bad(fmt::format(" ({} given twice)", key));
    *seen = true;
    if (value.size() > 6 || std::stoll(value) < 1) throw bad(fmt::format(" ({} must be from 1 to 999,999)", key));
    const int64_t n = std::stoll(value);
    (key == "tp" ? p.options.tp : key == "pp" ? p.options.pp : p.instances) = n;
  }
  try {
    p.gpu = io::load_gpu(parts.front());
  } catch (const InputError& e) {
    // The catalog lookup names --gpu; here the GPU came from this flag.
    const std::string what = e.what(), prefix = "--gpu: expected ";
    if (e.file() != "--gpu" || what.rfind(prefix, 0) != 0) throw;
    throw InputError(option, "", what.substr(prefix.size()));
  }
  p.options = with_engine_defaults(p.gpu, p.options);
  return p;
}

}  // namespace

int cmd_simulate_disagg(const po::variables_map& vm) {
  for (const char* flag : {"gpu", "tensor-parallel-size", "pipeline-parallel-size", "timeseries",
                           "num-gpu-blocks-override"})
    if (vm.count(flag))
      throw InputError("command line", std::string("--") + flag,
                       "no --gpu, --tp, --pp, --num-gpu-blocks-override or --timeseries with --disagg "
                       "(each pool names its GPU, TP and PP: --prefill-pool/--decode-pool " +
                           std::string(kPoolGrammar) + ")",
                       "--" + std::string(flag));
  if (vm.count("kv-remote-size"))
    throw InputError("command line", "--kv-remote-size",
                     "no remote KV store with --disagg (a store shared by the pools is not modelled; "
                     "docs/kv-tiers.md)",
                     vm["kv-remote-size"].as<std::string>());
  for (const char* flag : {"prefill-pool", "decode-pool"})
    if (!vm.count(flag)) throw InputError("command line", std::string("--") + flag, kPoolGrammar, "nothing");
  if (!vm.count("model")) throw InputError("command line", "--model", "a model name or file (see `kvplan models`)", "nothing");
  if (!vm.count("workload"))
    throw InputError("command line", "--workload", "a workload name or file (configs/workloads)", "nothing");
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");
  const auto all_options = expand_serving_options(vm);
  if (all_options.size() != 1)
    throw InputError("command line", "", "one value per serving option (simulate runs one configuration)",
                     std::to_string(all_options.size()) + " combinations");
  ServingOptions common = all_options.front();
  apply_engine_limit_flags(vm, common);
  cluster::DisaggLayout layout;
  layout.prefill = parse_pool(vm["prefill-pool"].as<std::string>(), "--prefill-pool", common);
  layout.decode = parse_pool(vm["decode-pool"].as<std::string>(), "--decode-pool", common);
  if (vm.count("kv-link")) {
    const auto k = cluster::parse_link(vm["kv-link"].as<std::string>());
    if (!k)
      throw InputError("command line", "--kv-link", cluster::kLinkKindNames.expected(),
                       "'" + vm["kv-link"].as<std::string>() + "'");
    layout.link = *k;
  }
  const ModelConfig m = io::load_model(vm["model"].as<std::string>());
  validate(m, layout.prefill.options, "--prefill-pool");
  validate(m, layout.decode.options, "--decode-pool");

  reports::DisaggReport r;
  r.base.model = m.name;
  r.base.moe = m.is_moe();
  r.base.gpu = layout.prefill.gpu.name + "+" + layout.decode.gpu.name;
  r.base.options = layout.decode.options;
  r.base.workload = io::load_workload(vm["workload"].as<std::string>());
  r.base.sim = parse_sim_options(vm, r.base.workload, "continuous or chunked");
  sim::SimOptions& so = r.base.sim;

  if (!vm["max-rate-seeds"].defaulted())
    throw InputError("command line", "--max-rate-seeds",
                     "no --max-rate-seeds with --disagg (its --find-max-rate runs one seed)", "--max-rate-seeds");
  const bool max_rate = vm["find-max-rate"].as<bool>();
  cluster::MaxRateOptions mo;
  if (max_rate) mo.requests = parse_max_rate_requests(vm, r.base.workload);
  const cluster::DisaggSimulator simulator(m, layout);
  r.layout = layout;
  r.base.kv_block_bytes_per_gpu = kv_block_bytes_per_gpu(apply_what_if(m, layout.decode.options), layout.decode.options);
  r.prefill_kv_block_bytes_per_gpu =
      kv_block_bytes_per_gpu(apply_what_if(m, layout.prefill.options), layout.prefill.options);
  // The report names the decode pool's scheduler (each pool resolves `auto` for its own GPU).
  const sim::SchedulerChoice choice = simulator.decode_engine().scheduler(so.scheduler);
  r.base.scheduler_why = choice.why;
  r.base.max_num_batched_tokens = simulator.decode_engine().limits(so.scheduler).max_num_batched_tokens;
  r.base.max_num_seqs = simulator.decode_engine().limits(so.scheduler).max_num_seqs;
  r.base.max_model_len = simulator.decode_engine().max_model_len();
  r.base.spec = spec_statement(apply_what_if(m, layout.decode.options), layout.decode.options);
  // The prefill pool's tier is the one prompts hit (the decode pool's receives its KV).
  r.base.host_tier = host_kv_tier(apply_what_if(m, layout.prefill.options), layout.prefill.options,
                                  layout.prefill.num_blocks.value_or(simulator.prefill_engine().num_blocks()));
  if (vm.count("output")) check_output_path("--output", vm["output"].as<std::string>(), vm["force"].as<bool>());
  r.result = simulator.run(r.base.workload, so);
  r.base.result = r.result.overall;
  if (max_rate) {
    // One seed: --max-rate-seeds applies to single-engine runs only.
    r.base.max_rate = cluster::find_max_rate(simulator, r.base.workload, so, mo);
    r.base.max_rate_requests = cluster::probe_requests(mo);
    r.base.max_rate_range.seeds = 1;
    r.base.max_rate_range.min_per_s = r.base.max_rate_range.max_per_s =
        r.base.max_rate->found ? r.base.max_rate->max_rate_per_s : 0;
  }
  so.scheduler = choice.scheduler;
  std::string text;
  switch (format) {
    case Format::json: text = reports::disagg_json(r).dump(2) + "\n"; break;
    case Format::md: text = reports::disagg_text(r, reports::TextFormat::md); break;
    case Format::csv: text = reports::disagg_text(r, reports::TextFormat::csv); break;
    case Format::table: text = reports::disagg_text(r, reports::TextFormat::table); break;
  }
  emit(vm, text);
  return 0;
}

}  // namespace kvplan::cli
