// The CPU backend: every check on the references, with small shapes (< 20 s on a loaded
// 2-core CI machine). Timing checks compare ratios (naive/cached, MHA/GQA), never
// absolute times: a CPU has no datasheet the planner could predict from.
#include <cstdio>
#include <fstream>

#include "gpu_validate/checks_internal.h"
#include "gpu_validate/decoder_ref.h"

namespace kvplan::gv::detail {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

ModelConfig one_layer(int64_t n_heads, int64_t n_kv, int64_t head_dim) {
  ModelConfig m = tiny_decoder_config(n_heads * head_dim, 1, n_heads, n_kv, 4 * n_heads * head_dim, 256);
  m.head_dim = head_dim;
  return m;
}

namespace {
// "cpu: <model name>" from /proc/cpuinfo (Linux); the calibration names its device.
std::string cpu_device_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return "cpu: " + line.substr(colon + 2);
  }
  return "cpu: unknown model";
}
}  // namespace

Report run_cpu(const Options& o) {
  Report r;
  r.backend = Backend::cpu;
  r.device = "cpu (host reference; no GPU)";
  r.calibration.device = cpu_device_name();
  r.calibration.created = utc_date();
  r.calibration.source =
      "kvplan_harness --backend cpu: host memcpy and the reference's fp32 GEMM, thread CPU "
      "time, fastest of several runs; no datasheet, so no efficiencies (docs/validate.md)";
  add_decode_flop_checks(r.checks, o.quick);
  add_decode_time_checks(r.checks, o.quick);
  add_attention_checks(r.checks, o.quick);
  add_kv_quant_checks(r.checks, o);
  add_memory_cpu_checks(r.checks);
  add_host_ceiling_checks(r.checks, r.calibration, o.quick);
  return r;
}

}  // namespace kvplan::gv::detail
