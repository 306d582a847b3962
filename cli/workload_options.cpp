#include "cli/workload_options.h"

#include <array>

#include "io/workload_io.h"

namespace kvplan::cli {

namespace {

const std::string kWhere = "command line";
constexpr std::array<const char*, 5> kQuestion{"rate", "ttft-p99", "tpot-p99", "prompt-tokens", "output-tokens"};

bool given(const po::variables_map& vm, const char* name) { return vm.count(name) > 0; }

//! A latency target with its unit, "2s" or "150ms": a bare number could be either.
double duration_s(const po::variables_map& vm, const std::string& name) {
  const std::string v = vm[name].as<std::string>();
  const std::string flag = "--" + name;
  double scale = 0;
  std::string number;
  if (v.size() > 2 && v.substr(v.size() - 2) == "ms") {
    scale = 1e-3;
    number = v.substr(0, v.size() - 2);
  } else if (v.size() > 1 && v.back() == 's') {
    scale = 1;
    number = v.substr(0, v.size() - 1);
  } else {
    throw InputError(kWhere, flag, "a duration with its unit: 2s or 150ms", "'" + v + "'");
  }
  // Bounds and value as the user wrote them, with the unit (parse_num_option would name
  // the bare number).
  const std::string expected = "a duration above 0 and at most 1e9 in its unit (2s or 150ms)";
  double x = 0;
  try {
    x = parse_num_option(number, flag, 0, 1e9);
  } catch (const InputError&) {
    throw InputError(kWhere, flag, expected, "'" + v + "'");
  }
  if (!(x > 0)) throw InputError(kWhere, flag, expected, "'" + v + "'");
  return x * scale;
}

}  // namespace

void add_workload_question_options(po::options_description& desc, bool with_rate) {
  const auto s = [] { return po::value<std::string>(); };
  if (with_rate)
    desc.add_options()("rate", s(), "arrival rate in requests/s, in place of the workload's (Poisson without --workload)");
  desc.add_options()
      ("ttft-p99", s(), "SLO: p99 time to first token, with its unit (2s, 500ms), in place of the workload's")
      ("tpot-p99", s(), "SLO: p99 time per output token, with its unit (50ms), in place of the workload's")
      ("prompt-tokens", s(),
       "prompt lengths in place of the workload's: N, or a workload file's keys as key=value pairs "
       "(dist=uniform,min=128,max=1024; dist=lognormal,mean=600,sigma=0.8,max=4096)")
      ("output-tokens", s(), "output lengths, as --prompt-tokens");
}

Workload question_workload(const po::variables_map& vm, const std::string& command, int64_t requests) {
  Workload w;
  if (given(vm, "workload")) {
    w = io::load_workload(vm["workload"].as<std::string>());
  } else {
    for (const char* need : {"rate", "prompt-tokens", "output-tokens"})
      if (!given(vm, need))
        throw InputError(kWhere, "--workload",
                         "a workload name or file (configs/workloads), or --rate, --prompt-tokens and --output-tokens "
                         "in its place",
                         std::string("no --workload and no --") + need);
    if (requests < 1)
      throw InputError(kWhere, "--requests", "the number of requests to simulate (no workload file gives it)", "nothing");
    w.name = "command line";
    w.arrival.process = ArrivalProcess::poisson;
    w.requests = requests;
  }
  if (given(vm, "rate") && command == "size") {
    if (w.arrival.process == ArrivalProcess::trace || !w.arrival.stages.empty())
      throw InputError(kWhere, "--rate",
                       "a workload with one arrival rate (size --rate replaces rate_per_s; a trace or staged "
                       "arrivals have none to replace)",
                       "workload " + w.name);
    w.arrival.rate_per_s = parse_num_option(vm["rate"].as<std::string>(), "--rate", 1e-9, 1e12);
  } else if (!given(vm, "workload")) {
    // simulate's --rate scales the workload's rate: the stand-in workload's is the rate itself.
    const std::string r = vm["rate"].as<std::string>();
    if (r == "inf") throw InputError(kWhere, "--rate", "a number without --workload (the arrivals are Poisson)", "'inf'");
    w.arrival.rate_per_s = parse_num_option(r, "--rate", 1e-9, 1e12);
  }
  for (const char* key : {"prompt-tokens", "output-tokens"}) {
    if (!given(vm, key)) continue;
    if (w.random.given() || w.shared_prefix.groups > 0)
      throw InputError(kWhere, std::string("--") + key,
                       "a workload whose lengths are prompt_tokens and output_tokens (not random or shared_prefix)",
                       "workload " + w.name);
    const LengthDist d = io::parse_length_option(vm[key].as<std::string>(), std::string("--") + key);
    (std::string(key) == "prompt-tokens" ? w.prompt_tokens : w.output_tokens) = d;
  }
  const bool ttft = given(vm, "ttft-p99"), tpot = given(vm, "tpot-p99");
  if ((ttft || tpot) && !w.slo.given() && !(ttft && tpot))
    throw InputError(kWhere, ttft ? "--tpot-p99" : "--ttft-p99",
                     "both targets (the workload has no slo to take the other from)", "only " +
                         std::string(ttft ? "--ttft-p99" : "--tpot-p99"));
  if (ttft) w.slo.ttft_p99_s = duration_s(vm, "ttft-p99");
  if (tpot) w.slo.tpot_p99_s = duration_s(vm, "tpot-p99");
  return w;
}

void refuse_question_options(const po::variables_map& vm, const std::string& mode) {
  for (const char* key : kQuestion)
    if (std::string(key) != "rate" && given(vm, key))
      throw InputError(kWhere, std::string("--") + key, "a run without " + mode + " (it reads --workload's file)", "both");
}

}  // namespace kvplan::cli
