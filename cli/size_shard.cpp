#include "cli/size_shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "io/config_io.h"

namespace kvplan::cli {

namespace {

const std::string kSchema = "kvplan.size-shard/1";

//! Evaluations by candidate index: those a shard made, or those a merge read.
struct ShardState {
  std::mutex mu;
  int64_t index = 0, count = 0;  //!< the slice (shard runs)
  Args args;                     //!< size's arguments without the ones that only name outputs
  std::map<int64_t, size::Evaluation> evaluations;
  bool merging = false;
};

ShardState& state() {
  static ShardState s;
  return s;
}

//! Options that name where the answer goes or how fast it comes, not what it is: a
//! shard and its merge may differ in them (the search's answer does not depend on its
//! thread count).
bool output_only(const std::string& a) {
  for (const char* o : {"--shard", "--format", "--output", "-o", "--report", "--force", "--threads"})
    if (a == o || a.rfind(std::string(o) + "=", 0) == 0) return true;
  return false;
}

Args search_args(const Args& args) {
  Args out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (output_only(args[i])) {
      const bool takes_value = args[i] != "--force" && args[i].find('=') == std::string::npos;
      if (takes_value) ++i;
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

// Doubles as C99 hex-floats: exact, and infinities survive (JSON numbers cannot hold them).
std::string hex(double x) { return fmt::format("{:a}", x); }
double unhex(const nlohmann::json& j, const std::string& file) {
  if (!j.is_string()) throw InputError(file, "evaluations", "numbers written as hex-float strings", j.dump());
  const std::string s = j.get<std::string>();
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || s.empty()) throw InputError(file, "evaluations", "a hex-float number", "'" + s + "'");
  return x;
}

nlohmann::json to_json(const size::Evaluation& e) {
  const auto& p = e.at_max;
  return {{"found", e.found},
          {"max_rate_per_s", hex(e.max_rate_per_s)},
          {"binding", static_cast<int>(e.binding)},
          {"binding_detail", e.binding_detail},
          {"at_max",
           {hex(p.arrival_rate_per_s), hex(p.throughput_requests_per_s), hex(p.output_tokens_per_s), hex(p.ttft_p99_s),
            hex(p.tpot_p99_s), hex(p.e2e_p99_s), p.meets_slo, hex(p.busy_fraction)}},
          {"counts",
           {e.preemptions_at_max, e.rejected_at_max, e.rejected_max_model_len_at_max, e.requests_at_max, e.runs}},
          {"kv_peak_utilization_at_max", hex(e.kv_peak_utilization_at_max)},
          {"batch_mean_at_max", hex(e.batch_mean_at_max)}};
}

size::Evaluation from_json(const nlohmann::json& j, const std::string& file) {
  try {
    size::Evaluation e;
    e.found = j.at("found").get<bool>();
    e.max_rate_per_s = unhex(j.at("max_rate_per_s"), file);
    const int b = j.at("binding").get<int>();
    if (b < 0 || b > static_cast<int>(size::Binding::engine_limit))
      throw InputError(file, "evaluations.binding", "0 to 5", std::to_string(b));
    e.binding = static_cast<size::Binding>(b);
    e.binding_detail = j.at("binding_detail").get<std::string>();
    const auto& a = j.at("at_max");
    auto& p = e.at_max;
    p.arrival_rate_per_s = unhex(a.at(0), file);
    p.throughput_requests_per_s = unhex(a.at(1), file);
    p.output_tokens_per_s = unhex(a.at(2), file);
    p.ttft_p99_s = unhex(a.at(3), file);
    p.tpot_p99_s = unhex(a.at(4), file);
    p.e2e_p99_s = unhex(a.at(5), file);
    p.meets_slo = a.at(6).get<bool>();
    p.busy_fraction = unhex(a.at(7), file);
    const auto& c = j.at("counts");
    e.preemptions_at_max = c.at(0).get<int64_t>();
    e.rejected_at_max = c.at(1).get<int64_t>();
    e.rejected_max_model_len_at_max = c.at(2).get<int64_t>();
    e.requests_at_max = c.at(3).get<int64_t>();
    e.runs = c.at(4).get<int>();
    e.kv_peak_utilization_at_max = unhex(j.at("kv_peak_utilization_at_max"), file);
    e.batch_mean_at_max = unhex(j.at("batch_mean_at_max"), file);
    return e;
  } catch (const nlohmann::json::exception& ex) {
    throw InputError(file, "evaluations", "evaluations as `kvplan size --shard` writes them", ex.what());
  }
}

}  // namespace

void add_shard_options(po::options_description& desc) {
  desc.add_options()("shard", po::value<std::string>(),
                     "I/N: evaluate only the candidates whose index is I modulo N (0 <= I < N) and write them for "
                     "`kvplan merge` (docs/sharding.md)");
}

bool setup_shard(const po::variables_map& vm, const Args& args, const std::string& evaluator, size::SizeOptions& opt) {
  ShardState& s = state();
  if (s.merging) {
    // Read, not simulated; a candidate a shard did not reach (its simulation was shared
    // with another candidate there) is simulated here, as the unsharded run would.
    opt.wrap_simulator = [](size::Evaluator inner) -> size::Evaluator {
      return [inner = std::move(inner)](const size::Candidate& c, const ModelConfig& m, const GpuSpec& g,
                                         const Workload& w, const size::WorkloadShape& shape) {
        {
          ShardState& st = state();
          const std::lock_guard<std::mutex> lock(st.mu);
          if (const auto it = st.evaluations.find(c.index); it != st.evaluations.end()) return it->second;
        }
        return inner(c, m, g, w, shape);
      };
    };
    return false;
  }
  if (!vm.count("shard")) return false;
  const std::string v = vm["shard"].as<std::string>();
  const size_t slash = v.find('/');
  if (slash == std::string::npos) throw InputError("command line", "--shard", "I/N, e.g. 0/3", "'" + v + "'");
  s.index = parse_int_option(v.substr(0, slash), "--shard", 0);
  s.count = parse_int_option(v.substr(slash + 1), "--shard");
  if (s.index >= s.count) throw InputError("command line", "--shard", "I/N with I < N", "'" + v + "'");
  if (evaluator != "sim")
    throw InputError("command line", "--shard", "the simulator evaluator (the planner's is quick on one machine)",
                     "--evaluator " + evaluator);
  for (const char* o : {"report", "disagg"})
    if (vm.count(o))
      throw InputError("command line", "--shard", std::string("no --") + o + " (kvplan merge writes the whole answer)",
                       std::string("--") + o);
  s.args = search_args(args);
  // The cost bound stays on: a shard proves fewer options than the whole search, so its
  // best cost per model is at least the whole search's and it skips only candidates the
  // whole search skips too; the merge then reads every evaluation it needs.
  opt.wrap_simulator = [](size::Evaluator inner) -> size::Evaluator {
    return [inner = std::move(inner)](const size::Candidate& c, const ModelConfig& m, const GpuSpec& g,
                                       const Workload& w, const size::WorkloadShape& shape) {
      ShardState& st = state();
      if (c.index % st.count != st.index) return size::Evaluation{};  // another shard's
      size::Evaluation e = inner(c, m, g, w, shape);
      const std::lock_guard<std::mutex> lock(st.mu);
      st.evaluations[c.index] = e;
      return e;
    };
  };
  return true;
}

std::string shard_output() {
  ShardState& s = state();
  nlohmann::json evals = nlohmann::json::object();
  for (const auto& [i, e] : s.evaluations) evals[std::to_string(i)] = to_json(e);
  const nlohmann::json doc = {{"schema", kSchema}, {"shard", s.index}, {"of", s.count}, {"args", s.args},
                              {"evaluations", evals}};
  return doc.dump(1) + "\n";
}

int cmd_merge(const Args& args) {
  po::options_description desc("kvplan merge: the answer of `kvplan size` from its shards (size ... --shard I/N)");
  desc.add_options()("help,h", "this help")("shards", po::value<std::vector<std::string>>(), "shard files");
  desc.add_options()("report", po::value<std::string>(), "also write the HTML purchase report to FILE.html");
  add_output_options(desc);
  po::positional_options_description pos;
  pos.add("shards", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError("command line", "", "shard files and --format, -o, --report, --force", e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: kvplan merge SHARD.json... [options]\n" << desc;
    return 0;
  }
  if (!vm.count("shards")) throw InputError("command line", "SHARD", "the files `kvplan size --shard I/N` wrote", "none");
  ShardState& s = state();
  std::optional<Args> common;
  std::vector<std::string> seen;
  int64_t of = 0;
  for (const std::string& file : vm["shards"].as<std::vector<std::string>>()) {
    const nlohmann::json doc = nlohmann::json::parse(io::read_file(file), nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || doc.value("schema", "") != kSchema)
      throw InputError(file, "schema", kSchema + " (a file `kvplan size --shard I/N -o FILE` wrote)", "another file");
    Args a;
    int64_t index = 0, count = 0;
    try {
      a = doc.at("args").get<Args>();
      index = doc.at("shard").get<int64_t>();
      count = doc.at("of").get<int64_t>();
    } catch (const nlohmann::json::exception& e) {
      throw InputError(file, "args", "the shard's size arguments and slice", e.what());
    }
    if (common && a != *common)
      throw InputError(file, "args", "the same size arguments in every shard", "different ones");
    if (of != 0 && count != of) throw InputError(file, "of", "the same N in every shard (" + std::to_string(of) + ")", std::to_string(count));
    const std::string slice = std::to_string(index) + "/" + std::to_string(count);
    if (std::find(seen.begin(), seen.end(), slice) != seen.end())
      throw InputError(file, "shard", "each shard once", "shard " + slice + " twice");
    seen.push_back(slice);
    common = a;
    of = count;
    for (const auto& [key, e] : doc.at("evaluations").items()) s.evaluations[parse_int_option(key, file + ": evaluations", 0)] = from_json(e, file);
  }
  if (static_cast<int64_t>(seen.size()) != of)
    throw InputError("command line", "SHARD", "all " + std::to_string(of) + " shards of the sweep",
                     std::to_string(seen.size()) + " of them");
  Args size_args = *common;
  for (const char* o : {"format", "output", "report"})
    if (vm.count(o)) {
      size_args.push_back(std::string("--") + o);
      size_args.push_back(vm[o].as<std::string>());
    }
  if (vm.count("force") && vm["force"].as<bool>()) size_args.emplace_back("--force");
  s.merging = true;
  return cmd_size(size_args);
}

}  // namespace kvplan::cli
