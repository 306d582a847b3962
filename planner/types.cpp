#include "planner/types.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace kvplan {

namespace {
std::string message(const std::string& file, const std::string& key, const std::string& expected,
                    const std::string& got) {
  std::string msg = file;
  if (!key.empty()) msg += ": key '" + key + "'";
  msg += ": expected " + expected;
  if (!got.empty()) msg += ", got " + got;
  // Binary garbage in a file must not reach the terminal as control characters.
  std::string clean;
  for (const char c : msg) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      clean += "\\x";
      clean += kHex[u >> 4];
      clean += kHex[u & 0xf];
    } else {
      clean += c;
    }
  }
  return clean;
}

}  // namespace

InputError::InputError(std::string file, std::string key, const std::string& expected, const std::string& got)
    : std::runtime_error(message(file, key, expected, got)),
      file_(std::move(file)),
      key_(std::move(key)) {}

int dtype_bits(DType d) {
  switch (d) {
    case DType::fp32: return 32;
    case DType::fp16:
    case DType::bf16: return 16;
    case DType::fp8:
    case DType::int8: return 8;
    case DType::int4: return 4;
    case DType::int2: return 2;
  }
  return 16;
}

std::string_view to_string(DType d) { return kDTypeNames.name(d); }
std::optional<DType> parse_dtype(std::string_view s) { return kDTypeNames.parse(s); }
std::string_view to_string(WeightQuant q) { return kWeightQuantNames.name(q); }
std::optional<WeightQuant> parse_weight_quant(std::string_view s) { return kWeightQuantNames.parse(s); }
std::string_view to_string(KvQuant q) { return kKvQuantNames.name(q); }
std::optional<KvQuant> parse_kv_quant(std::string_view s) { return kKvQuantNames.parse(s); }
std::string_view to_string(Engine e) { return kEngineNames.name(e); }
std::optional<Engine> parse_engine(std::string_view s) { return kEngineNames.parse(s); }

int64_t ModelConfig::q_dim() const {
  if (is_mla()) return num_heads * (qk_nope_head_dim + qk_rope_head_dim);
  return num_heads * head_dim;
}

double PeakFlops::for_dtype(DType d) const {
  switch (d) {
    case DType::fp32: return fp32;
    case DType::fp16: return fp16;
    case DType::bf16: return bf16;
    case DType::fp8: return fp8;
    case DType::int8:
    case DType::int4:
    case DType::int2: return int8;
  }
  return 0;
}

DType ServingOptions::activation_dtype(const ModelConfig& m) const {
  if (dtype) return *dtype;
  // fp32 checkpoints are served in bf16 by every engine kvplan models.
  return m.torch_dtype == DType::fp32 ? DType::bf16 : m.torch_dtype;
}

DType ServingOptions::kv_dtype(const ModelConfig& m) const {
  return kv_cache_dtype ? *kv_cache_dtype : activation_dtype(m);
}

}  // namespace kvplan

namespace kvplan {

bool ModelConfig::has_state_layers() const {
  return std::any_of(layer_mixer.begin(), layer_mixer.end(), [](Mixer x) {
    return x == Mixer::mamba1 || x == Mixer::mamba2 || x == Mixer::linear_attention || x == Mixer::short_conv ||
           x == Mixer::cross_attention;
  });
}

int64_t ModelConfig::attention_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_layers; ++l) n += caches_kv(l) ? 1 : 0;
  return n;
}

}  // namespace kvplan
