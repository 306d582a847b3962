// Weight quantization: what a stored weight costs, scales and zero points included.
// Layouts (bits per weight; metadata per group of weights):
//  fp8 / int8 (--quantization)  8 bits, one fp32 scale per output channel (vLLM's
//                               Fp8LinearMethod / W8A8 per-channel).
//  awq / gptq (--quantization)  4 bits, per 128 weights an fp16 scale and a 4-bit zero
//                               point packed into int32 (AutoAWQ / AutoGPTQ layouts).
// Checkpoint layouts (quantization_config) are read by io/config_io.cpp into QuantSpec;
// docs/models.md lists each with its source.
#include <algorithm>

#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan {

QuantSpec quant_spec(WeightQuant q) {
  QuantSpec s;
  switch (q) {
    case WeightQuant::none: break;
    case WeightQuant::fp8:
    case WeightQuant::int8:
      s.method = q == WeightQuant::fp8 ? "fp8" : "int8";
      s.bits = 8;
      s.group = 0;
      s.scale_bits = 32;
      s.compute = q == WeightQuant::fp8 ? DType::fp8 : DType::int8;
      break;
    case WeightQuant::awq:
    case WeightQuant::gptq:
      s.method = q == WeightQuant::awq ? "awq" : "gptq";
      s.bits = 4;
      s.group = 128;
      s.scale_bits = 16;
      s.zero_bits = 4;
      break;
  }
  return s;
}

QuantSpec weight_quant_of(const ModelConfig& m, const ServingOptions& o) {
  if (o.quantization_given || o.quantization != WeightQuant::none) return quant_spec(o.quantization);
  return m.weight_quant;
}

int64_t quantized_bytes(const QuantSpec& q, int64_t params, int64_t rows, int64_t act_bytes) {
  using detail::ceil_div;
  using detail::checked_add;
  using detail::checked_mul;
  if (!q.active()) return checked_mul(params, act_bytes, "weights");
  int64_t bytes = ceil_div(checked_mul(params, q.bits, "weights"), 8);
  int64_t scales = 0;
  if (q.block_rows > 0 && q.group > 0) scales = ceil_div(params, checked_mul(q.block_rows, q.group, "weights"));
  else if (q.group > 0) scales = ceil_div(params, q.group);
  else if (q.group == 0) scales = rows;
  else scales = params > 0 ? 1 : 0;
  bytes = checked_add(bytes, ceil_div(checked_mul(scales, q.scale_bits + q.zero_bits, "weights"), 8), "weights");
  return bytes;
}

DType compute_dtype(const ModelConfig& m, const ServingOptions& o) {
  const QuantSpec q = weight_quant_of(m, o);
  return q.compute ? *q.compute : o.activation_dtype(m);
}

std::string weight_label(const ModelConfig& m, const ServingOptions& o) {
  const QuantSpec q = weight_quant_of(m, o);
  if (!q.active()) return std::string(to_string(o.activation_dtype(m)));
  std::string s = q.method + " (" + std::to_string(q.bits) + "-bit";
  if (q.block_rows > 0) s += ", " + std::to_string(q.block_rows) + "x" + std::to_string(q.group) + " blocks";
  else if (q.group > 0) s += ", group " + std::to_string(q.group);
  else if (q.group == 0) s += ", per channel";
  else s += ", per tensor";
  s += q.compute ? ", W8A8)" : ", weight-only)";
  return s;
}

}  // namespace kvplan
