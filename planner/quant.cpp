// Weight quantization: what a stored weight costs, scales and zero points included.
// Layouts (bits per weight; metadata per group of weights):
//  fp8 / int8 (--quantization)  8 bits, one fp32 scale per output channel (vLLM's
//                               Fp8LinearMethod / W8A8 per-channel).
//  awq / gptq (--quantization)  4 bits, per 128 weights an fp16 scale and a 4-bit zero
//                               point packed into int32 (AutoAWQ / AutoGPTQ layouts).
//  bitsandbytes (in-flight)    4 bits, an fp32 absmax per 64 weights.
//  modelopt / modelopt_fp4     FP8 per tensor / NVFP4 (ModelOpt hf_quant_config.json).
// Checkpoint layouts (quantization_config) are read by io/config_io.cpp into QuantSpec;
// docs/models.md lists each with its source. A quantized checkpoint loads as stored:
// --quantization may only name its method (or a kernel of it), as in vLLM.
#include <algorithm>

#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan {

QuantSpec quant_spec(WeightQuant q) {
  QuantSpec s;
  switch (q) {
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
    case WeightQuant::bitsandbytes:
      // vLLM's in-flight bitsandbytes (BitsAndBytesConfig defaults): 4-bit NF4 with an
      // fp32 absmax per 64 weights, weight-only.
      s.method = "bitsandbytes";
      s.bits = 4;
      s.group = 64;
      s.scale_bits = 32;
      break;
    case WeightQuant::modelopt:
    case WeightQuant::modelopt_fp4:
      // A ModelOpt export whose quantization sits in hf_quant_config.json, not config.json
      // (vLLM reads that file for these methods): FP8 per tensor, W8A8; NVFP4 e2m1 with an
      // e4m3 scale per 16 (config_io.cpp reads the same layouts from quant_algo).
      s.method = q == WeightQuant::modelopt ? "modelopt" : "nvfp4";
      s.bits = q == WeightQuant::modelopt ? 8 : 4;
      s.group = q == WeightQuant::modelopt ? -1 : 16;
      s.scale_bits = q == WeightQuant::modelopt ? 32 : 8;
      if (q == WeightQuant::modelopt) s.compute = DType::fp8;
      if (q == WeightQuant::modelopt_fp4) {
        // ModelOptNvFp4LinearMethod: weight_scale_2 and input_scale, one fp32 each per
        // matrix; the input scale quantizes the activations to NVFP4 (W4A4).
        s.fp4_activations = true;
        s.tensor_scale_bits = 64;
      }
      break;
    case WeightQuant::none:
    case WeightQuant::awq_marlin:
    case WeightQuant::gptq_marlin:
    case WeightQuant::marlin:
    case WeightQuant::moe_wna16:
    case WeightQuant::compressed_tensors:
    case WeightQuant::mxfp4:
    case WeightQuant::fbgemm_fp8:
      break;  // kernels or formats of a quantized checkpoint: its quantization_config
  }
  return s;
}

namespace {

// The --quantization names vLLM accepts for a checkpoint whose quant_method is `m`: the
// method itself, or an override of it (override_quantization_method: awq_marlin, marlin
// and moe_wna16 take an AWQ checkpoint, gptq_marlin, marlin and moe_wna16 a GPTQ one).
// vllm-project/vllm@0052a5b8 vllm/config/model.py ModelConfig._verify_quantization:
// any other name "does not match the quantization method specified in the model config".
bool accepts(const std::string& m, WeightQuant q) {
  using W = WeightQuant;
  if (m == "awq") return q == W::awq || q == W::awq_marlin || q == W::marlin || q == W::moe_wna16;
  if (m == "gptq") return q == W::gptq || q == W::gptq_marlin || q == W::marlin || q == W::moe_wna16;
  return m == to_string(q);
}

}  // namespace

std::optional<std::string> quantization_refusal(const ModelConfig& m, const ServingOptions& o) {
  const QuantSpec& ckpt = m.weight_quant;
  const WeightQuant q = o.quantization;
  if (q == WeightQuant::none) return std::nullopt;  // vLLM without --quantization: the checkpoint's own
  if (ckpt.active()) {
    if (accepts(ckpt.engine_method, q)) return std::nullopt;
    std::string names;
    const auto& entries = kWeightQuantNames.entries();
    for (size_t i = 0; i < entries.size(); ++i)
      if (kWeightQuantNames.canonical(i) && entries[i].value != WeightQuant::none &&
          accepts(ckpt.engine_method, entries[i].value))
        names += std::string(entries[i].name) + ", ";
    return names + "auto or none for " + m.name + " (its quantization_config is " + ckpt.engine_method +
           "; vLLM refuses a --quantization that does not match the model config, ModelConfig._verify_quantization)";
  }
  if (!quant_spec(q).active())
    return "none, fp8, int8, awq, gptq, bitsandbytes, modelopt or modelopt_fp4 for " + m.name + " (unquantized; " + std::string(to_string(q)) +
           " reads a checkpoint stored in that format)";
  return std::nullopt;
}

QuantSpec weight_quant_of(const ModelConfig& m, const ServingOptions& o) {
  if (const auto refused = quantization_refusal(m, o))
    throw InputError("--quantization", "", *refused, "'" + std::string(to_string(o.quantization)) + "'");
  if (o.quantization == WeightQuant::none) return m.weight_quant;
  return m.weight_quant.active() ? m.weight_quant : quant_spec(o.quantization);
}

QuantSpec QuantSpec::for_part(WeightPart part, int64_t layer) const {
  const bool whole = std::find(skip_layers.begin(), skip_layers.end(), layer) != skip_layers.end();
  const bool global = part == WeightPart::attention        ? skip_attention
                      : part == WeightPart::dense_mlp      ? skip_dense_mlp
                      : part == WeightPart::experts        ? skip_experts
                                                           : skip_shared;
  const bool one = std::find(skip_parts.begin(), skip_parts.end(), LayerPart{layer, part}) != skip_parts.end();
  if (whole || global || one) return QuantSpec{};
  const auto& own = parts[static_cast<size_t>(part)];
  return own ? *own : *this;
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
  // Once per call: a call is one matrix, or one part of a layer (params.cpp), where the
  // few matrices beyond the first leave out 8 bytes each.
  if (params > 0) bytes = checked_add(bytes, ceil_div(q.tensor_scale_bits, 8), "weights");
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
  s += q.compute ? ", W8A8)" : q.fp4_activations ? ", W4A4 from CC 10.0, else weight-only)" : ", weight-only)";
  return s;
}

}  // namespace kvplan
