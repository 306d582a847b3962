#include "cli/sim_options.h"

#include <string>
#include <utility>
#include <vector>

#include "planner/speculative.h"
#include "planner/units.h"

namespace kvplan::cli {

sim::SimOptions parse_sim_options(const po::variables_map& vm, const Workload& w, const std::string& schedulers) {
  sim::SimOptions so;
  const auto scheduler = sim::parse_scheduler(vm["scheduler"].as<std::string>());
  if (!scheduler)
    throw InputError("command line", "--scheduler", schedulers, "'" + vm["scheduler"].as<std::string>() + "'");
  so.scheduler = *scheduler;
  if (vm.count("schedule-conservativeness"))
    so.sglang.schedule_conservativeness =
        parse_num_option(vm["schedule-conservativeness"].as<std::string>(), "--schedule-conservativeness", 0, 1e6);
  so.sglang.enable_mixed_chunk = vm.count("enable-mixed-chunk") && vm["enable-mixed-chunk"].as<bool>();
  if (vm.count("capacity-scheduler-policy")) {
    const std::string v = vm["capacity-scheduler-policy"].as<std::string>();
    const auto policy = sim::kCapacityPolicyNames.parse(v);
    if (!policy) throw InputError("command line", "--capacity-scheduler-policy", sim::kCapacityPolicyNames.expected(), "'" + v + "'");
    so.trtllm.capacity_policy = *policy;
  }
  so.trtllm.enable_chunked_prefill = vm.count("enable-chunked-prefill") && vm["enable-chunked-prefill"].as<bool>();
  if (vm.count("batch-wait-timeout-iters"))
    so.trtllm.batch_wait.timeout_iters =
        parse_int_option(vm["batch-wait-timeout-iters"].as<std::string>(), "--batch-wait-timeout-iters", 0);
  if (vm.count("batch-wait-max-tokens-ratio"))
    so.trtllm.batch_wait.max_tokens_ratio =
        parse_num_option(vm["batch-wait-max-tokens-ratio"].as<std::string>(), "--batch-wait-max-tokens-ratio", 0, 1);
  so.seed = static_cast<uint64_t>(parse_int_option(vm["seed"].as<std::string>(), "--seed", 0));
  if (vm.count("requests")) {
    so.requests = parse_int_option(vm["requests"].as<std::string>(), "--requests");
    if (*so.requests > 1'000'000'000)
      throw InputError("command line", "--requests", "at most 1,000,000,000 requests", std::to_string(*so.requests));
  }
  if (vm["swap"].as<bool>()) so.preemption = sim::Preemption::swap;
  so.host_link_bytes_per_s =
      kBytesPerGB * parse_num_option(vm["host-link-gb-per-s"].as<std::string>(), "--host-link-gb-per-s", 1e-3, 1e6);
  so.disk_bytes_per_s =
      kBytesPerGB * parse_num_option(vm["disk-gb-per-s"].as<std::string>(), "--disk-gb-per-s", 1e-3, 1e6);
  so.disk_latency_s = 1e-6 * parse_num_option(vm["disk-latency-us"].as<std::string>(), "--disk-latency-us", 0, 1e9);
  so.disk_write_bytes_per_s =
      kBytesPerGB * parse_num_option(vm["disk-write-gb-per-s"].as<std::string>(), "--disk-write-gb-per-s", 1e-3, 1e6);
  so.remote_bytes_per_s =
      kBytesPerGB * parse_num_option(vm["remote-gb-per-s"].as<std::string>(), "--remote-gb-per-s", 1e-3, 1e6);
  if (vm.count("remote-latency-us"))
    so.remote_latency_s =
        1e-6 * parse_num_option(vm["remote-latency-us"].as<std::string>(), "--remote-latency-us", 0, 1e9);
  if (w.arrivals_at_one_instant() && (vm.count("rate") || vm["find-max-rate"].as<bool>()))
    throw InputError(w.trace_file, "arrival_s",
                     "arrivals spread over time (--rate and --find-max-rate scale the trace's arrival rate)",
                     "every arrival at one instant");
  // Past its last row a trace replays one mean gap later; a burst has no gap to replay at.
  if (w.arrivals_at_one_instant() && std::cmp_greater(so.requests.value_or(w.requests), w.trace->size()))
    throw InputError(w.trace_file, "requests",
                     "at most the trace's " + std::to_string(w.trace->size()) +
                         " rows (its arrivals share one instant, so it cannot be replayed at a rate)",
                     std::to_string(so.requests.value_or(w.requests)));
  if (vm.count("rate") && vm["rate"].as<std::string>() == "inf") {
    // vLLM bench's --request-rate inf: every request sent at once.
    if (!w.arrival.stages.empty())
      throw InputError("command line", "--rate",
                       "a number with staged arrivals (inf sends every request at once: the stages would mean nothing)",
                       "'inf'");
    if (vm["find-max-rate"].as<bool>())
      throw InputError("command line", "--rate", "a number with --find-max-rate (it searches the rate)", "'inf'");
    so.all_at_once = true;
  } else if (vm.count("rate")) {
    so.rate_scale = parse_num_option(vm["rate"].as<std::string>(), "--rate", 1e-9, 1e12) / w.base_rate_per_s();
  }
  return so;
}

std::optional<reports::SimReport::Spec> spec_statement(const ModelConfig& applied, const ServingOptions& o) {
  if (!o.spec) return std::nullopt;
  reports::SimReport::Spec sp;
  sp.acceptance = resolve_acceptance(*o.spec, applied);
  sp.expected_tokens_per_step = expected_tokens_per_step(sp.acceptance.rates);
  sp.slots_per_step = spec_slots_per_step(*o.spec);
  sp.memory = spec_memory(applied, o);
  return sp;
}

void add_scheduler_options(po::options_description& desc) {
  desc.add_options()
      ("schedule-conservativeness", po::value<std::string>(),
       "SGLang: scales the initial new-token ratio 0.7 of its admission estimate (default 1.0)")
      ("enable-mixed-chunk", po::bool_switch(), "SGLang: decode the running batch in the prefill batch's step")
      ("chunked-prefill-size", po::value<std::string>(), "SGLang: tokens per prefill batch (= --max-num-batched-tokens)")
      ("max-running-requests", po::value<std::string>(), "SGLang: most running requests (= --max-num-seqs)")
      ("capacity-scheduler-policy", po::value<std::string>(),
       "TensorRT-LLM: GUARANTEED_NO_EVICT (default) | MAX_UTILIZATION")
      ("enable-chunked-prefill", po::bool_switch(), "TensorRT-LLM: chunk contexts into max_num_tokens (default off)")
      ("batch-wait-timeout-iters", po::value<std::string>(),
       "TensorRT-LLM: hold new contexts back while requests generate, up to N iterations (batch_wait_timeout_iters; 0 off)")
      ("batch-wait-max-tokens-ratio", po::value<std::string>(),
       "TensorRT-LLM: ... or until the step reaches R x max_num_tokens tokens (batch_wait_max_tokens_ratio, 0-1; 0 off)")
      ("max-batch-size", po::value<std::string>(), "TensorRT-LLM: most requests in one step (= --max-num-seqs)")
      ("max-num-tokens", po::value<std::string>(), "TensorRT-LLM: most tokens in one step (= --max-num-batched-tokens)");
}

void apply_engine_limit_flags(const po::variables_map& vm, ServingOptions& o) {
  struct Alias {
    const char* flag;
    Engine engine;
    bool seqs;           // sets max_num_seqs, else max_num_batched_tokens
    const char* shared;  // the engine-neutral flag it names
  };
  static constexpr Alias kAliases[] = {
      {"max-running-requests", Engine::sglang, true, "max-num-seqs"},
      {"chunked-prefill-size", Engine::sglang, false, "max-num-batched-tokens"},
      {"max-batch-size", Engine::trtllm, true, "max-num-seqs"},
      {"max-num-tokens", Engine::trtllm, false, "max-num-batched-tokens"},
  };
  for (const Alias& a : kAliases) {
    if (!vm.count(a.flag)) continue;
    const std::string flag = std::string("--") + a.flag;
    if (o.engine != a.engine)
      throw InputError("command line", flag,
                       "--engine " + std::string(to_string(a.engine)) + " (its own name of --" + a.shared + ")",
                       "--engine " + std::string(to_string(o.engine)));
    if (vm.count(a.shared))
      throw InputError("command line", flag, "either it or --" + std::string(a.shared) + " (the same limit)", "both");
    const int64_t v = parse_int_option(vm[a.flag].as<std::string>(), flag, 1);
    if (a.seqs) {
      o.max_num_seqs = v;
      o.max_num_seqs_given = true;
    } else {
      o.max_num_batched_tokens = v;
    }
  }
}

std::vector<int64_t> parse_client_options(const po::variables_map& vm, const Workload& w, sim::SimOptions& so) {
  std::vector<int64_t> concurrencies;
  if (vm.count("max-concurrency"))
    for (const std::string& v : split_list(vm["max-concurrency"].as<std::string>(), "--max-concurrency"))
      concurrencies.push_back(parse_int_option(v, "--max-concurrency"));
  if (!concurrencies.empty() && vm["find-max-rate"].as<bool>())
    throw InputError("command line", "--max-concurrency",
                     "no --find-max-rate alongside it (the search scales open-loop arrivals)", "both");
  if (!concurrencies.empty()) so.max_concurrency = concurrencies.front();
  if (vm.count("warmup-requests")) {
    so.warmup_requests = parse_int_option(vm["warmup-requests"].as<std::string>(), "--warmup-requests", 0);
    const int64_t requests = so.requests.value_or(w.requests);
    if (so.warmup_requests >= requests)
      throw InputError("command line", "--warmup-requests",
                       "fewer than the " + std::to_string(requests) + " requests simulated (nothing would be measured)",
                       std::to_string(so.warmup_requests));
  }
  return concurrencies;
}

void apply_random_options(const po::variables_map& vm, Workload& w) {
  static constexpr const char* kFlags[] = {"random-input-len", "random-output-len", "random-range-ratio",
                                           "random-prefix-len"};
  bool any = false;
  for (const char* f : kFlags) any = any || vm.count(f) > 0;
  if (!any) return;
  const std::string first = [&] {
    for (const char* f : kFlags)
      if (vm.count(f)) return std::string("--") + f;
    return std::string();
  }();
  if (w.shared_prefix.groups > 0 || w.prompt_tokens.kind == LengthKind::trace || w.output_tokens.kind == LengthKind::trace)
    throw InputError("command line", first,
                     "a workload whose lengths are drawn (not from a trace or shared_prefix: the random lengths "
                     "replace them)",
                     "workload " + w.name);
  // vLLM bench's defaults (vllm/benchmarks/datasets/random.py, RandomDataset.DEFAULT_*):
  // input 1024, output 128, range ratio 0, prefix 0; the workload's random keys, when it
  // has them, in their place.
  RandomDataset d = w.random.given() ? w.random : RandomDataset{1024, 128, 0.0, 0};
  if (vm.count("random-input-len")) d.input_len = parse_int_option(vm["random-input-len"].as<std::string>(), "--random-input-len");
  if (vm.count("random-output-len"))
    d.output_len = parse_int_option(vm["random-output-len"].as<std::string>(), "--random-output-len");
  if (vm.count("random-prefix-len"))
    d.prefix_len = parse_int_option(vm["random-prefix-len"].as<std::string>(), "--random-prefix-len", 0);
  if (vm.count("random-range-ratio")) {
    const std::string v = vm["random-range-ratio"].as<std::string>();
    d.range_ratio = parse_num_option(v, "--random-range-ratio", -1e300, 1e300);
    if (!(d.range_ratio >= 0 && d.range_ratio < 1))
      throw InputError("command line", "--random-range-ratio", "a number in [0, 1)", "'" + v + "'");
  }
  std::string expected;
  if (const char* field = d.invalid_field(&expected)) {
    const std::string flag = std::string(field) == "input_len"     ? "--random-input-len"
                             : std::string(field) == "output_len"  ? "--random-output-len"
                             : std::string(field) == "prefix_len"  ? "--random-prefix-len"
                                                                   : "--random-range-ratio";
    throw InputError("command line", flag, expected, d.describe());
  }
  w.use_random(d);
}

std::optional<int64_t> parse_max_rate_requests(const po::variables_map& vm, const Workload& w) {
  const int64_t requests = parse_int_option(vm["max-rate-requests"].as<std::string>(), "--max-rate-requests");
  const int64_t least = sim::min_requests_for_percentile(0.99);
  if (requests < least)
    throw InputError("command line", "--max-rate-requests",
                     "at least " + std::to_string(least) + " requests, so that 10 lie above the p99 the SLO is judged on",
                     std::to_string(requests));
  if (!w.slo.given())
    throw InputError(w.file, "slo",
                     "a TTFT and TPOT target (slo: {ttft_p99_s, tpot_p99_s}): --find-max-rate measures the highest "
                     "rate against it",
                     "nothing");
  if (vm["max-rate-requests"].defaulted()) return std::nullopt;
  return requests;
}

}  // namespace kvplan::cli
