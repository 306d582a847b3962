#include "io/workload_io.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

#include "io/config_io.h"
#include "io/csv.h"
#include "io/yaml_util.h"

namespace kvplan::io {

namespace fs = std::filesystem;

namespace {

std::string show(const YAML::Node& v) {
  if (v.IsScalar()) return "'" + v.Scalar() + "'";
  if (v.IsSequence()) return "a list";
  if (v.IsMap()) return "a mapping";
  return "nothing";
}

//! The mapping under `key` with its keys renamed "key.child", so the strict accessors
//! name nested keys in full. Keys outside `allowed` are an error (a typo would otherwise
//! silently fall back to a default).
YAML::Node section(const YAML::Node& root, const std::string& key, const std::string& file,
                   const std::vector<std::string>& allowed, const std::string& what) {
  const YAML::Node v = root[key];
  if (!v.IsDefined() || v.IsNull()) throw InputError(file, key, what + " (the key is required)", "nothing");
  if (!v.IsMap()) throw InputError(file, key, what, show(v));
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError(file, key + "." + k, "one of the keys " + list, "an unknown key");
    }
    out[key + "." + k] = kv.second;
  }
  return out;
}

double positive(const YAML::Node& n, const std::string& key, const std::string& file) {
  const double d = req_num(n, key, file, 0);
  if (!(d > 0)) throw InputError(file, key, "a positive number", "'" + n[key].Scalar() + "'");
  return d;
}

LengthDist length_dist(const YAML::Node& root, const std::string& key, const std::string& file) {
  const YAML::Node n = section(root, key, file, {"dist", "value", "min", "max", "mean", "sigma"},
                               "a mapping with dist: fixed|uniform|lognormal|trace");
  const std::string dist_key = key + ".dist";
  const std::string dist = req_str(n, dist_key, file);
  LengthDist d;
  if (dist == "fixed") {
    d.kind = LengthKind::fixed;
    d.value = req_int(n, key + ".value", file, 1);
  } else if (dist == "uniform") {
    d.kind = LengthKind::uniform;
    d.min = req_int(n, key + ".min", file, 1);
    d.max = req_int(n, key + ".max", file, 1);
    if (d.max < d.min)
      throw InputError(file, key + ".max", "at least " + key + ".min (" + std::to_string(d.min) + ")",
                       std::to_string(d.max));
  } else if (dist == "lognormal") {
    d.kind = LengthKind::lognormal;
    d.mean = positive(n, key + ".mean", file);
    d.sigma = req_num(n, key + ".sigma", file, 0, 10);
    d.min = opt_int(n, key + ".min", file, 1).value_or(1);
    d.max = opt_int(n, key + ".max", file, 1).value_or(int64_t{1} << 30);
    if (d.max < d.min)
      throw InputError(file, key + ".max", "at least " + key + ".min (" + std::to_string(d.min) + ")",
                       std::to_string(d.max));
    // Draws are clipped to [min, max]: a mean outside it cannot be the lengths' mean (a
    // min above the mean would make nearly every request min tokens long).
    if (static_cast<double>(d.min) > d.mean)
      throw InputError(file, key + ".min", "at most " + key + ".mean (" + n[key + ".mean"].Scalar() + ")",
                       std::to_string(d.min));
    if (static_cast<double>(d.max) < d.mean)
      throw InputError(file, key + ".max", "at least " + key + ".mean (" + n[key + ".mean"].Scalar() + ")",
                       std::to_string(d.max));
  } else if (dist == "trace") {
    d.kind = LengthKind::trace;
  } else {
    throw InputError(file, dist_key, "fixed, uniform, lognormal or trace", "'" + dist + "'");
  }
  return d;
}

//! Parses a whole CSV field as a number; false when it is not one.
template <typename T>
bool parse_field(std::string_view s, T& out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

fs::path resolve_trace(const std::string& trace, const std::string& workload_file) {
  std::error_code ec;
  const fs::path p(trace);
  if (p.is_absolute()) {
    if (fs::is_regular_file(p, ec)) return p;
  } else {
    const fs::path beside = fs::path(workload_file).parent_path() / p;
    if (fs::is_regular_file(beside, ec)) return beside;
    if (const auto root = find_data_root()) {
      const fs::path under_root = *root / p;
      if (fs::is_regular_file(under_root, ec)) return under_root;
    }
  }
  throw InputError(workload_file, "trace",
                   "an existing CSV file (a relative path is looked up beside the workload file, "
                   "then under the project root)",
                   "'" + trace + "'");
}

std::vector<TraceRow> parse_trace(const std::string& text, const std::string& file) {
  std::vector<TraceRow> rows;
  for_each_csv_row(text, file, "arrival_s,prompt_tokens,output_tokens",
                   [&](const auto& f, int64_t /*line_no*/, const std::string& where) {
    if (f.size() != 3) throw InputError(file, "", "3 comma-separated columns", std::to_string(f.size()) + where);
    TraceRow r;
    if (!parse_field(f[0], r.arrival_s) || !std::isfinite(r.arrival_s) || r.arrival_s < 0)
      throw InputError(file, "arrival_s", "a finite number of seconds >= 0", "'" + std::string(f[0]) + "'" + where);
    if (!parse_field(f[1], r.prompt_tokens) || r.prompt_tokens < 1)
      throw InputError(file, "prompt_tokens", "an integer >= 1", "'" + std::string(f[1]) + "'" + where);
    if (!parse_field(f[2], r.output_tokens) || r.output_tokens < 1)
      throw InputError(file, "output_tokens", "an integer >= 1", "'" + std::string(f[2]) + "'" + where);
    if (!rows.empty() && r.arrival_s < rows.back().arrival_s)
      throw InputError(file, "arrival_s", "arrival times in non-decreasing order",
                       "'" + std::string(f[0]) + "' after " + std::to_string(rows.back().arrival_s) + where);
    rows.push_back(r);
  });
  if (rows.empty()) throw InputError(file, "", "at least one request after the header", "none");
  const double first_s = rows.front().arrival_s;
  for (auto& r : rows) r.arrival_s -= first_s;
  return rows;
}

std::shared_ptr<const std::vector<TraceRow>> load_trace(const fs::path& path) {
  return std::make_shared<const std::vector<TraceRow>>(parse_trace(read_file(path, kMaxTraceBytes), path.string()));
}

LengthDist parse_length_option(const std::string& text, const std::string& option) {
  const std::string where = "command line";
  YAML::Node root(YAML::NodeType::Map);
  YAML::Node d(YAML::NodeType::Map);
  const bool bare = !text.empty() && text.find_first_not_of("0123456789_") == std::string::npos;
  if (bare) {
    d["dist"] = "fixed";
    d["value"] = text;
  } else {
    for (size_t start = 0; start <= text.size();) {
      const size_t comma = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, comma - start);
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw InputError(where, option,
                         "a token count (512) or key=value pairs of a workload file's lengths "
                         "(dist=uniform,min=128,max=1024)",
                         "'" + text + "'");
      const std::string key = item.substr(0, eq);
      if (d[key].IsDefined()) throw InputError(where, option + "." + key, "the key once", "it twice");
      d[key] = item.substr(eq + 1);
      start = comma + 1;
    }
  }
  // 4_096 reads as 4096, as kvplan's integer options read it.
  for (auto kv : d) {
    std::string v = kv.second.Scalar();
    if (v.find('_') != std::string::npos && v.find_first_not_of("0123456789_") == std::string::npos) {
      v.erase(std::remove(v.begin(), v.end(), '_'), v.end());
      kv.second = v;
    }
  }
  root[option] = d;
  const LengthDist dist = length_dist(root, option, where);
  if (dist.kind == LengthKind::trace)
    throw InputError(where, option + ".dist", "fixed, uniform or lognormal (a trace's lengths come with its file)",
                     "'trace'");
  return dist;
}

Workload parse_workload(const std::string& text, const std::string& file) {
  const YAML::Node root = parse_yaml_mapping(text, file);
  // A misspelt top-level key would otherwise be a silent default (docs/formats.md lists them).
  static const std::vector<std::string> kKeys{"name",          "source", "requests",      "arrival", "random",
                                              "prompt_tokens", "output_tokens", "shared_prefix", "trace",   "slo",
                                              "lora"};
  for (const auto& kv : root) {
    const std::string k = kv.first.Scalar();
    if (std::find(kKeys.begin(), kKeys.end(), k) == kKeys.end()) {
      std::string list;
      for (const auto& a : kKeys) list += (list.empty() ? "" : ", ") + a;
      throw InputError(file, k, "a workload key: " + list, "an unknown key");
    }
  }
  Workload w;
  w.file = file;
  w.name = opt_str(root, "name", file).value_or(fs::path(file).stem().string());
  w.source = opt_str(root, "source", file).value_or("");

  const YAML::Node a = section(root, "arrival", file, {"process", "rate_per_s", "cv", "stages"},
                               "a mapping with process: poisson|gamma|fixed|trace");
  const std::string process = req_str(a, "arrival.process", file);
  if (process == "poisson") {
    w.arrival.process = ArrivalProcess::poisson;
  } else if (process == "gamma") {
    w.arrival.process = ArrivalProcess::gamma;
    w.arrival.cv = positive(a, "arrival.cv", file);
  } else if (process == "fixed") {
    w.arrival.process = ArrivalProcess::fixed;
  } else if (process == "trace") {
    w.arrival.process = ArrivalProcess::trace;
  } else {
    throw InputError(file, "arrival.process", "poisson, gamma, fixed or trace", "'" + process + "'");
  }
  const YAML::Node stages = a["arrival.stages"];
  if (stages.IsDefined() && !stages.IsNull()) {
    if (w.arrival.process == ArrivalProcess::trace)
      throw InputError(file, "arrival.stages", "no stages with arrival.process trace", "a list");
    if (!stages.IsSequence() || stages.size() == 0)
      throw InputError(file, "arrival.stages", "a non-empty list of {rate_per_s, duration_s}", show(stages));
    double n = 0, t = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      const std::string key = "arrival.stages[" + std::to_string(i) + "]";
      YAML::Node wrap(YAML::NodeType::Map);
      wrap[key] = stages[i];
      const YAML::Node st = section(wrap, key, file, {"rate_per_s", "duration_s"}, "a mapping {rate_per_s, duration_s}");
      Stage stage;
      stage.rate_per_s = positive(st, key + ".rate_per_s", file);
      stage.duration_s = positive(st, key + ".duration_s", file);
      n += stage.rate_per_s * stage.duration_s;
      t += stage.duration_s;
      w.arrival.stages.push_back(stage);
    }
    if (a["arrival.rate_per_s"].IsDefined())
      throw InputError(file, "arrival.rate_per_s", "either rate_per_s or stages, not both", "both");
    w.arrival.rate_per_s = n / t;
  } else if (w.arrival.process != ArrivalProcess::trace) {
    w.arrival.rate_per_s = positive(a, "arrival.rate_per_s", file);
  }

  if (root["random"].IsDefined()) {
    const YAML::Node r = section(root, "random", file, {"input_len", "output_len", "range_ratio", "prefix_len"},
                                 "a mapping with input_len, output_len, range_ratio, prefix_len (vLLM bench's "
                                 "random dataset)");
    for (const char* key : {"prompt_tokens", "output_tokens", "shared_prefix"})
      if (root[key].IsDefined())
        throw InputError(file, key, "no " + std::string(key) + " beside random (random sets the lengths)", "both");
    RandomDataset d;
    d.input_len = req_int(r, "random.input_len", file, 1);
    d.output_len = req_int(r, "random.output_len", file, 1);
    d.range_ratio = opt_num(r, "random.range_ratio", file, 0).value_or(0);
    d.prefix_len = opt_int(r, "random.prefix_len", file, 0).value_or(0);
    std::string expected;
    if (const char* field = d.invalid_field(&expected))
      throw InputError(file, std::string("random.") + field, expected, d.describe());
    w.use_random(d);
  } else {
    w.prompt_tokens = length_dist(root, "prompt_tokens", file);
    w.output_tokens = length_dist(root, "output_tokens", file);
  }

  if (root["shared_prefix"].IsDefined()) {
    const YAML::Node sp = section(root, "shared_prefix", file,
                                  {"groups", "users_per_group", "system_prompt_tokens", "multi_turn"},
                                  "a mapping with groups, users_per_group, system_prompt_tokens, multi_turn");
    w.shared_prefix.groups = req_int(sp, "shared_prefix.groups", file, 1);
    w.shared_prefix.users_per_group = req_int(sp, "shared_prefix.users_per_group", file, 1);
    w.shared_prefix.system_prompt_tokens = req_int(sp, "shared_prefix.system_prompt_tokens", file, 0);
    const YAML::Node mt = sp["shared_prefix.multi_turn"];
    if (mt.IsDefined()) {
      const std::string v = mt.IsScalar() ? mt.Scalar() : "";
      if (v != "true" && v != "false")
        throw InputError(file, "shared_prefix.multi_turn", "true or false", show(mt));
      w.shared_prefix.multi_turn = v == "true";
    }
    if (w.prompt_tokens.kind == LengthKind::trace)
      throw InputError(file, "prompt_tokens.dist", "fixed, uniform or lognormal question lengths with shared_prefix",
                       "'trace'");
  }

  const bool uses_trace = w.arrival.process == ArrivalProcess::trace ||
                          w.prompt_tokens.kind == LengthKind::trace ||
                          w.output_tokens.kind == LengthKind::trace;
  const auto trace = opt_str(root, "trace", file);
  if (uses_trace && !trace)
    throw InputError(file, "trace", "a trace CSV path (arrival or a length distribution is 'trace')", "nothing");
  if (trace) {
    const fs::path p = resolve_trace(*trace, file);
    w.trace_file = p.string();
    w.trace = load_trace(p);
  }

  const auto requests = opt_int(root, "requests", file, 1);
  // A billion requests simulate in minutes; more is a typo, not a workload.
  constexpr int64_t kMaxRequests = 1'000'000'000;
  if (requests && *requests > kMaxRequests)
    throw InputError(file, "requests", "at most 1,000,000,000 requests", std::to_string(*requests));
  if (requests) {
    w.requests = *requests;
  } else if (!w.arrival.stages.empty()) {
    double n = 0;
    for (const auto& st : w.arrival.stages) n += st.rate_per_s * st.duration_s;
    w.requests = std::max<int64_t>(1, static_cast<int64_t>(std::llround(n)));
  } else if (w.arrival.process == ArrivalProcess::trace) {
    w.requests = static_cast<int64_t>(w.trace->size());
  } else {
    throw InputError(file, "requests", "an integer >= 1 (the key is required unless arrivals come from a trace)",
                     "nothing");
  }

  if (root["lora"].IsDefined()) {
    const YAML::Node l = section(root, "lora", file, {"adapters", "popularity", "zipf_s", "base_fraction"},
                                 "a mapping with adapters, popularity (uniform|zipf), zipf_s, base_fraction");
    w.lora.adapters = req_int(l, "lora.adapters", file, 1);
    // A million adapters is beyond any server's --max-cpu-loras; more is a typo.
    if (w.lora.adapters > 1'000'000)
      throw InputError(file, "lora.adapters", "at most 1,000,000 adapters", std::to_string(w.lora.adapters));
    const std::string popularity = opt_str(l, "lora.popularity", file).value_or("uniform");
    if (popularity == "zipf") {
      w.lora.zipf_s = positive(l, "lora.zipf_s", file);
    } else if (popularity != "uniform") {
      throw InputError(file, "lora.popularity", "uniform or zipf", "'" + popularity + "'");
    } else if (l["lora.zipf_s"].IsDefined()) {
      throw InputError(file, "lora.zipf_s", "no zipf_s with popularity uniform (popularity: zipf uses it)", "both");
    }
    w.lora.base_fraction = opt_num(l, "lora.base_fraction", file, 0, 1).value_or(0);
    if (!(w.lora.base_fraction < 1))
      throw InputError(file, "lora.base_fraction", "a number in [0, 1) (1: no request on an adapter; drop the key)",
                       "1");
  }

  // The SLO is optional (simulate reports latencies without a verdict); when given, both
  // targets are.
  if (root["slo"].IsDefined() && !root["slo"].IsNull()) {
    const YAML::Node slo = section(root, "slo", file, {"ttft_p99_s", "tpot_p99_s"},
                                   "a mapping with ttft_p99_s and tpot_p99_s");
    w.slo.ttft_p99_s = positive(slo, "slo.ttft_p99_s", file);
    w.slo.tpot_p99_s = positive(slo, "slo.tpot_p99_s", file);
  }
  return w;
}

Workload load_workload(const std::string& name_or_path) {
  const fs::path p = resolve("workloads", name_or_path);
  return parse_workload(read_file(p), p.string());
}

}  // namespace kvplan::io
