// The kvplan.calibration/2 writer (the contract: docs/calibration.md; what the harness
// measures: docs/validate.md). One writer for every backend: the CPU run in CI exercises
// the same code as a GPU run.
#include <ctime>

#include "gpu_validate/json_writer.h"
#include "gpu_validate/validate.h"

namespace kvplan::gv {

std::optional<double> CalibrationOut::parameter(std::string_view name) const {
  for (const CalibrationParameter& p : parameters)
    if (p.name == name) return p.value;
  return std::nullopt;
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string calibration_json(const CalibrationOut& c) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "kvplan.calibration/2");
  w.field("device", std::string_view(c.device));
  if (!c.gpu.empty()) w.field("gpu", std::string_view(c.gpu));
  w.field("source", std::string_view(c.source));
  w.field("created", std::string_view(c.created));
  // A file with only measurements is valid: the loader fits the parameters from them.
  if (!c.parameters.empty()) {
    w.key("parameters").begin_object();
    for (const CalibrationParameter& p : c.parameters) {
      w.key(p.name).begin_object();
      w.field("value", p.value);
      w.field("unit", std::string_view(p.unit));
      w.field("source", std::string_view(p.source));
      w.end_object();
    }
    w.end_object();
  }
  w.key("measurements").begin_object();
  if (!c.hbm_copy.empty()) {
    w.key("hbm_copy").begin_array();
    for (const CopyRow& r : c.hbm_copy) {
      w.begin_object();
      w.field("bytes", r.bytes);
      w.field("time_s", r.time_s);
      w.end_object();
    }
    w.end_array();
  }
  if (!c.gemm.empty()) {
    w.key("gemm").begin_array();
    for (const GemmRow& r : c.gemm) {
      w.begin_object();
      w.field("m", r.m);
      w.field("n", r.n);
      w.field("k", r.k);
      w.field("dtype", std::string_view(r.dtype));
      w.field("time_s", r.time_s);
      w.end_object();
    }
    w.end_array();
  }
  if (!c.decode_attention.empty()) {
    w.key("decode_attention").begin_array();
    for (const AttentionRow& r : c.decode_attention) {
      w.begin_object();
      w.field("kind", std::string_view(r.kind));
      w.field("batch", r.batch);
      w.field("context_tokens", r.context_tokens);
      w.field("q_heads", r.q_heads);
      w.field("kv_heads", r.kv_heads);
      w.field("head_dim", r.head_dim);
      w.field("kv_dtype", std::string_view(r.kv_dtype));
      w.field("bytes_read", r.bytes_read);
      w.field("time_s", r.time_s);
      w.end_object();
    }
    w.end_array();
  }
  if (!c.launch.empty()) {
    w.key("launch").begin_array();
    for (const LaunchRow& r : c.launch) {
      w.begin_object();
      w.field("mode", std::string_view(r.mode));
      w.field("kernels", r.kernels);
      w.field("time_s", r.time_s);
      w.end_object();
    }
    w.end_array();
  }
  if (!c.all_reduce.empty()) {
    w.key("all_reduce").begin_array();
    for (const AllReduceRow& r : c.all_reduce) {
      w.begin_object();
      w.field("gpus", r.gpus);
      w.field("bytes", r.bytes);
      w.field("time_s", r.time_s);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace kvplan::gv
