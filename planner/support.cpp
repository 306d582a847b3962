// The engine support table (support.h). Read from each engine's own argument parsing:
//  vLLM v0.10.0: vllm/config.py CacheDType = "auto" | "fp8" | "fp8_e4m3" | "fp8_e5m2"
//    (| "fp8_inc", Gaudi only); quantization methods "fp8", "awq", "gptq",
//    "compressed-tensors" (int8 W8A8) in vllm/model_executor/layers/quantization/__init__.py.
//  SGLang v0.4.9: python/sglang/srt/server_args.py --kv-cache-dtype choices "auto",
//    "fp8_e5m2", "fp8_e4m3"; --quantization "fp8", "awq", "gptq", "w8a8_int8".
//  TensorRT-LLM v0.20: tensorrt_llm/quantization/mode.py QuantAlgo: KV cache FP8 or
//    INT8 (kv_cache_quant_algo), weights FP8, W8A8_SQ (int8), W4A16_AWQ, W4A16_GPTQ.
// Each stores an 8-bit cache with one scale per tensor (or per layer): kvplan's `raw`.
#include "planner/support.h"

#include <algorithm>

namespace kvplan {

namespace {
template <typename T>
bool has(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string describe_kv(const ModelConfig& m, const ServingOptions& o) {
  const DType d = o.kv_dtype(m);
  std::string s(to_string(d));
  if (dtype_bits(d) < 16 && o.kv_quant != KvQuant::raw) s += " " + std::string(to_string(o.kv_quant));
  return s;
}

std::optional<std::string> unsupported(const EngineSupport& e, const ModelConfig& m, const ServingOptions& o) {
  const DType kv = o.kv_dtype(m);
  if (!has(e.kv_dtypes, kv)) return "KV cache dtype " + std::string(to_string(kv));
  if (dtype_bits(kv) < 16 && !has(e.kv_quants, o.kv_quant))
    return "the " + std::string(to_string(o.kv_quant)) + " KV layout";
  if (!has(e.weights, o.quantization)) return "weights " + std::string(to_string(o.quantization));
  return std::nullopt;
}
}  // namespace

const std::vector<EngineSupport>& engine_support_table() {
  // The --quantization names vLLM and SGLang both list (vllm model_executor/layers/
  // quantization QUANTIZATION_METHODS, sglang server_args.py --quantization), with int8,
  // kvplan's W8A8 what-if; TensorRT-LLM reads ModelOpt checkpoints (FP8, NVFP4).
  const std::vector<WeightQuant> methods = {
      WeightQuant::none, WeightQuant::fp8, WeightQuant::int8, WeightQuant::awq, WeightQuant::gptq,
      WeightQuant::awq_marlin, WeightQuant::gptq_marlin, WeightQuant::marlin, WeightQuant::moe_wna16,
      WeightQuant::bitsandbytes, WeightQuant::compressed_tensors, WeightQuant::modelopt, WeightQuant::modelopt_fp4,
      WeightQuant::mxfp4, WeightQuant::fbgemm_fp8};
  static const std::vector<EngineSupport> table = {
      {Engine::vllm, "vLLM", "v0.10.0", "vllm/config.py CacheDType; vllm/model_executor/layers/quantization",
       {DType::fp32, DType::fp16, DType::bf16, DType::fp8},
       methods},
      {Engine::sglang, "SGLang", "v0.4.9", "python/sglang/srt/server_args.py --kv-cache-dtype, --quantization",
       {DType::fp32, DType::fp16, DType::bf16, DType::fp8},
       methods},
      {Engine::trtllm, "TensorRT-LLM", "v0.20", "tensorrt_llm/quantization/mode.py QuantAlgo",
       {DType::fp32, DType::fp16, DType::bf16, DType::fp8, DType::int8},
       {WeightQuant::none, WeightQuant::fp8, WeightQuant::int8, WeightQuant::awq, WeightQuant::gptq,
        WeightQuant::modelopt, WeightQuant::modelopt_fp4}},
  };
  return table;
}

std::optional<std::string> what_if_reason(const ModelConfig& m, const ServingOptions& o) {
  const auto& table = engine_support_table();
  if (o.engine != Engine::ideal) {
    const auto it = std::find_if(table.begin(), table.end(), [&](const EngineSupport& e) { return e.engine == o.engine; });
    if (it == table.end()) return std::nullopt;
    if (auto what = unsupported(*it, m, o))
      return std::string(it->name) + " " + std::string(it->version) + " cannot run " + *what + " (" +
             std::string(it->source) + "): a kvplan what-if";
    return std::nullopt;
  }
  for (const EngineSupport& e : table)
    if (!unsupported(e, m, o)) return std::nullopt;
  const std::string weights = o.quantization != WeightQuant::none ? std::string(to_string(o.quantization))
                              : m.weight_quant.active()          ? m.weight_quant.method
                                                                 : "unquantized";
  return "no engine in kvplan's support table (vLLM v0.10.0, SGLang v0.4.9, TensorRT-LLM v0.20) runs a KV cache of " +
         describe_kv(m, o) + " with " + weights + " weights: a kvplan what-if";
}

}  // namespace kvplan
