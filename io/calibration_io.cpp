#include "io/calibration_io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "io/config_io.h"

namespace kvplan::io {

namespace {

//! Where each named parameter goes, with its valid range.
struct Slot {
  std::function<void(Calibration&, double)> set;
  double min, max;
};

const std::map<std::string, Slot>& slots() {
  static const std::map<std::string, Slot> s = {
      {"bandwidth_efficiency", {[](Calibration& c, double v) { c.bandwidth_efficiency = v; }, 1e-3, 1}},
      {"prefill_flops_efficiency", {[](Calibration& c, double v) { c.prefill_flops_efficiency = v; }, 1e-3, 1}},
      {"decode_flops_efficiency", {[](Calibration& c, double v) { c.decode_flops_efficiency = v; }, 1e-3, 1}},
      {"runtime_reserve_bytes",
       {[](Calibration& c, double v) { c.runtime_reserve_bytes = static_cast<int64_t>(v); }, 0, 1e15}},
      {"request_overhead_s", {[](Calibration& c, double v) { c.request_overhead_s = v; }, 0, 10}},
      {"output_overhead_s", {[](Calibration& c, double v) { c.output_overhead_s = v; }, 0, 1}},
      {"output_overhead_per_seq_s", {[](Calibration& c, double v) { c.output_overhead_per_seq_s = v; }, 0, 1e-2}},
      {"step_overhead_s", {[](Calibration& c, double v) { c.step_overhead_s = v; }, 0, 1}},
      {"step_overhead_per_seq_s", {[](Calibration& c, double v) { c.step_overhead_per_seq_s = v; }, 0, 1}},
      {"kernel_floor_s", {[](Calibration& c, double v) { c.kernel_floor_s = v; }, 0, 1e-2}},
      {"gemm_bandwidth_efficiency", {[](Calibration& c, double v) { c.gemm_bandwidth_efficiency = v; }, 1e-3, 1}},
      {"gemm_flops_efficiency", {[](Calibration& c, double v) { c.gemm_flops_efficiency = v; }, 1e-3, 1}},
      {"elementwise_bandwidth_efficiency",
       {[](Calibration& c, double v) { c.elementwise_bandwidth_efficiency = v; }, 1e-3, 1}},
      {"allreduce_latency_s", {[](Calibration& c, double v) { c.allreduce_latency_s = v; }, 0, 1e-1}},
      {"allreduce_bus_bytes_per_s", {[](Calibration& c, double v) { c.allreduce_bus_bytes_per_s = v; }, 1e6, 1e14}},
  };
  return s;
}

double dtype_bytes(const std::string& d, const std::string& file, const std::string& key) {
  if (d == "fp32") return 4;
  if (d == "bf16" || d == "fp16") return 2;
  if (d == "fp8") return 1;
  throw InputError(file, key, "bf16, fp16, fp8 or fp32", "'" + d + "'");
}

using Json = nlohmann::json;

std::string show(const Json& v) {
  if (v.is_null()) return "nothing";
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  return v.dump();
}

const Json* member(const Json& obj, const std::string& key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

double num(const Json& obj, const std::string& name, const std::string& file, const std::string& key, double lo,
           double hi) {
  const Json* v = member(obj, name);
  const std::string want = fmt::format("a number in [{:g}, {:g}]", lo, hi);
  if (!v || !v->is_number()) throw InputError(file, key, want, v ? show(*v) : "nothing");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) throw InputError(file, key, want, show(*v));
  return d;
}

int64_t integer(const Json& obj, const std::string& name, const std::string& file, const std::string& key,
                int64_t lo) {
  const Json* v = member(obj, name);
  const std::string want = "an integer >= " + std::to_string(lo);
  if (!v || !v->is_number()) throw InputError(file, key, want, v ? show(*v) : "nothing");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(lo) || d > 9.0e15)
    throw InputError(file, key, want, show(*v));
  return static_cast<int64_t>(d);
}

std::optional<std::string> opt_text(const Json& obj, const std::string& name, const std::string& file,
                                    const std::string& key) {
  const Json* v = member(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw InputError(file, key, "a string", show(*v));
  return v->get<std::string>();
}

std::string text(const Json& obj, const std::string& name, const std::string& file, const std::string& key) {
  auto v = opt_text(obj, name, file, key);
  if (!v) throw InputError(file, key, "a string (the key is required)", "nothing");
  return *v;
}

//! Calls f(row, "measurements.<table>[i]") for each row of the table.
template <typename F>
void each_row(const Json& meas, const std::string& table, const std::string& file, F f) {
  const Json* t = member(meas, table);
  if (!t) return;
  const std::string key = "measurements." + table;
  if (!t->is_array()) throw InputError(file, key, "a list of rows", show(*t));
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!(*t)[i].is_object()) throw InputError(file, at, "a mapping", show((*t)[i]));
    f((*t)[i], at);
  }
}

}  // namespace

CalibrationFile parse_calibration_v2(const std::string& body, const std::string& file) {
  Json n;
  try {
    n = Json::parse(body);
  } catch (const Json::parse_error& e) {
    throw InputError(file, "", "JSON", e.what());
  }
  if (!n.is_object()) throw InputError(file, "", "a JSON object", show(n));
  const auto schema = opt_text(n, "schema", file, "schema");
  if (!schema || *schema != "kvplan.calibration/2")
    throw InputError(file, "schema", "kvplan.calibration/2", schema ? "'" + *schema + "'" : "nothing");
  CalibrationFile c;
  c.device = text(n, "device", file, "device");
  c.gpu = opt_text(n, "gpu", file, "gpu").value_or("");
  c.source = text(n, "source", file, "source");
  c.created = opt_text(n, "created", file, "created").value_or("");
  if (const Json* params = member(n, "parameters")) {
    if (!params->is_object()) throw InputError(file, "parameters", "a mapping of name: {value, unit, source}", show(*params));
    for (const auto& [name, v] : params->items()) {
      const std::string key = "parameters." + name;
      // The lag-steps model multiplied the step that produced a token, which the engine
      // does not do; its fitted value means nothing in the model that replaced it.
      if (name == "output_lag_steps")
        throw InputError(file, key,
                         "output_overhead_s and output_overhead_per_seq_s (token delivery is now the API "
                         "server's output queue; refit the profile, docs/calibration.md \"Rebuild the shipped "
                         "profile\")",
                         "the retired output_lag_steps");
      const auto slot = slots().find(name);
      if (slot == slots().end()) {
        std::string list;
        for (const auto& [k, unused] : slots()) list += (list.empty() ? "" : ", ") + k;
        throw InputError(file, key, "one of " + list, "an unknown parameter");
      }
      if (!v.is_object()) throw InputError(file, key, "a mapping {value, unit, source}", show(v));
      calib::Parameter p;
      p.value = num(v, "value", file, key + ".value", slot->second.min, slot->second.max);
      p.unit = opt_text(v, "unit", file, key + ".unit").value_or("");
      p.source = text(v, "source", file, key + ".source");
      c.parameters[name] = p;
    }
  }
  if (const Json* meas = member(n, "measurements")) {
    if (!meas->is_object()) throw InputError(file, "measurements", "a mapping of tables", show(*meas));
    for (const auto& [t, unused] : meas->items()) {
      // decode_attention and launch rows are part of the file contract (gpu_validate writes
      // them); the model takes attention and launch costs from other terms (docs/calibration.md).
      if (t != "gemm" && t != "all_reduce" && t != "hbm_copy" && t != "elementwise" && t != "decode_attention" &&
          t != "launch")
        throw InputError(file, "measurements." + t,
                         "one of the tables gemm, all_reduce, hbm_copy, elementwise, decode_attention, launch",
                         "an unknown table");
    }
    each_row(*meas, "gemm", file, [&](const Json& r, const std::string& at) {
      calib::GemmSample g;
      g.m = integer(r, "m", file, at + ".m", 1);
      g.n = integer(r, "n", file, at + ".n", 1);
      g.k = integer(r, "k", file, at + ".k", 1);
      g.bytes_per_elem = dtype_bytes(text(r, "dtype", file, at + ".dtype"), file, at + ".dtype");
      g.time_s = num(r, "time_s", file, at + ".time_s", 1e-9, 1e3);
      c.measurements.gemm.push_back(g);
    });
    each_row(*meas, "all_reduce", file, [&](const Json& r, const std::string& at) {
      calib::AllReduceSample a;
      a.gpus = integer(r, "gpus", file, at + ".gpus", 2);
      a.bytes = integer(r, "bytes", file, at + ".bytes", 1);
      a.time_s = num(r, "time_s", file, at + ".time_s", 1e-9, 1e3);
      c.measurements.all_reduce.push_back(a);
    });
    for (const char* table : {"hbm_copy", "elementwise"})
      each_row(*meas, table, file, [&](const Json& r, const std::string& at) {
        calib::BytesSample b;
        b.bytes = integer(r, "bytes", file, at + ".bytes", 1);
        b.time_s = num(r, "time_s", file, at + ".time_s", 1e-9, 1e3);
        (std::string(table) == "hbm_copy" ? c.measurements.hbm_copy : c.measurements.elementwise).push_back(b);
      });
  }
  if (const Json* acc = member(n, "accuracy")) {
    if (!acc->is_array()) throw InputError(file, "accuracy", "a list of {scope, text}", show(*acc));
    for (size_t i = 0; i < acc->size(); ++i) {
      const std::string at = "accuracy[" + std::to_string(i) + "]";
      if (!(*acc)[i].is_object()) throw InputError(file, at, "a mapping {scope, text}", show((*acc)[i]));
      AccuracyNote note;
      const std::string scope = text((*acc)[i], "scope", file, at + ".scope");
      if (scope == "all") note.scope = AccuracyNote::Scope::all;
      else if (scope == "dense") note.scope = AccuracyNote::Scope::dense;
      else if (scope == "moe") note.scope = AccuracyNote::Scope::moe;
      else throw InputError(file, at + ".scope", "all, dense or moe", "'" + scope + "'");
      if (const Json* gpus = member((*acc)[i], "gpus")) {
        if (!gpus->is_array()) throw InputError(file, at + ".gpus", "a list of catalog GPU names", show(*gpus));
        for (size_t k = 0; k < gpus->size(); ++k) {
          if (!(*gpus)[k].is_string() || (*gpus)[k].get<std::string>().empty())
            throw InputError(file, at + ".gpus[" + std::to_string(k) + "]", "a catalog GPU name", show((*gpus)[k]));
          note.gpus.push_back((*gpus)[k].get<std::string>());
        }
      }
      note.text = text((*acc)[i], "text", file, at + ".text");
      if (note.text.empty()) throw InputError(file, at + ".text", "a statement", "an empty string");
      c.accuracy.push_back(note);
    }
  }
  if (const Json* errs = member(n, "held_out_errors")) {
    if (!errs->is_array()) throw InputError(file, "held_out_errors", "a list of {run, gpu, moe, ttft, tpot, e2e}", show(*errs));
    for (size_t i = 0; i < errs->size(); ++i) {
      const std::string at = "held_out_errors[" + std::to_string(i) + "]";
      const Json& r = (*errs)[i];
      if (!r.is_object()) throw InputError(file, at, "a mapping {run, gpu, moe, ttft, tpot, e2e}", show(r));
      MeasuredError e;
      e.run = text(r, "run", file, at + ".run");
      e.gpu = text(r, "gpu", file, at + ".gpu");
      const Json* moe = member(r, "moe");
      if (!moe || !moe->is_boolean()) throw InputError(file, at + ".moe", "true or false", moe ? show(*moe) : "nothing");
      e.moe = moe->get<bool>();
      // A signed relative error (predicted - measured) / measured: above -1 (a positive
      // prediction), and a factor of 10 either way is a misread run, not an error.
      e.ttft = num(r, "ttft", file, at + ".ttft", -0.9, 9);
      e.tpot = num(r, "tpot", file, at + ".tpot", -0.9, 9);
      e.e2e = num(r, "e2e", file, at + ".e2e", -0.9, 9);
      c.held_out_errors.push_back(e);
    }
  }
  if (c.parameters.empty() && c.measurements.empty())
    throw InputError(file, "parameters", "parameters or measurements to fit them from", "neither");
  return c;
}

void fit_missing(CalibrationFile& c, const std::string& file) {
  if (c.measurements.empty()) return;
  calib::Datasheet d;
  if (!c.measurements.gemm.empty() || !c.measurements.hbm_copy.empty()) {
    if (c.gpu.empty())
      throw InputError(file, "gpu", "a catalog GPU (efficiencies are fitted relative to its datasheet)", "nothing");
    const GpuSpec g = load_gpu(c.gpu);
    d.peak_flops_per_s = g.peak_flops.bf16;
    d.bandwidth_bytes_per_s = g.memory_bandwidth_bytes_per_s;
  }
  for (auto& [name, p] : calib::fit(c.measurements, d, file)) c.parameters.try_emplace(name, p);
}

Calibration to_calibration(const CalibrationFile& c, const std::string& file) {
  Calibration out;
  for (const auto& [name, p] : c.parameters) slots().at(name).set(out, p.value);
  if (!c.parameters.count("decode_flops_efficiency") && c.parameters.count("prefill_flops_efficiency"))
    out.decode_flops_efficiency = out.prefill_flops_efficiency;
  out.device = c.device;
  out.source = c.source;
  out.file = file;
  out.accuracy = c.accuracy;
  out.held_out_errors = c.held_out_errors;
  out.measured = true;
  if (!c.gpu.empty()) {
    out.gpu = c.gpu;
    const GpuSpec fitted = load_gpu(c.gpu);
    out.gpu_interconnect_bytes_per_s = fitted.interconnect_bytes_per_s;
    out.gpu_memory_bandwidth_bytes_per_s = fitted.memory_bandwidth_bytes_per_s;
    out.gpu_measured_memory_bandwidth_bytes_per_s = fitted.measured_memory_bandwidth_bytes_per_s.value_or(0.0);
    if (fitted.measured_gemm_flops_per_s) {
      out.gpu_measured_gemm_flops_fraction =
          *fitted.measured_gemm_flops_per_s / fitted.peak_flops.for_dtype(fitted.measured_gemm_dtype);
      out.gpu_measured_gemm_dtype = fitted.measured_gemm_dtype;
    }
  }
  return out;
}

std::string calibration_json(const CalibrationFile& c) {
  nlohmann::ordered_json j;
  j["schema"] = "kvplan.calibration/2";
  j["device"] = c.device;
  if (!c.gpu.empty()) j["gpu"] = c.gpu;
  j["source"] = c.source;
  if (!c.created.empty()) j["created"] = c.created;
  nlohmann::ordered_json ps = nlohmann::ordered_json::object();
  for (const auto& [name, p] : c.parameters) ps[name] = {{"value", p.value}, {"unit", p.unit}, {"source", p.source}};
  j["parameters"] = ps;
  if (!c.accuracy.empty()) {
    nlohmann::ordered_json acc = nlohmann::ordered_json::array();
    for (const AccuracyNote& a : c.accuracy) {
      nlohmann::ordered_json n = {{"scope", a.scope == AccuracyNote::Scope::all     ? "all"
                                            : a.scope == AccuracyNote::Scope::dense ? "dense"
                                                                                    : "moe"}};
      if (!a.gpus.empty()) n["gpus"] = a.gpus;
      n["text"] = a.text;
      acc.push_back(n);
    }
    j["accuracy"] = acc;
  }
  if (!c.held_out_errors.empty()) {
    nlohmann::ordered_json errs = nlohmann::ordered_json::array();
    for (const MeasuredError& e : c.held_out_errors)
      errs.push_back({{"run", e.run}, {"gpu", e.gpu}, {"moe", e.moe}, {"ttft", e.ttft}, {"tpot", e.tpot}, {"e2e", e.e2e}});
    j["held_out_errors"] = errs;
  }
  return j.dump(2) + "\n";
}

}  // namespace kvplan::io
