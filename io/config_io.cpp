#include "io/config_io.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "io/yaml_util.h"
#include "planner/planner.h"

namespace kvplan::io {

namespace fs = std::filesystem;

fs::path config_root() {
  if (const char* env = std::getenv("KVPLAN_CONFIG_DIR"); env && *env) return env;
  return fs::path(KVPLAN_SOURCE_DIR) / "configs";
}

std::vector<std::string> catalog(const std::string& kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_root() / kind, ec)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json"))
      names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

fs::path resolve(const std::string& kind, const std::string& name_or_path) {
  std::error_code ec;
  const fs::path given(name_or_path);
  const auto given_ext = given.extension();
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || given_ext == ".yaml" || given_ext == ".yml" || given_ext == ".json";
  if (looks_like_path || fs::exists(given, ec)) {
    if (!fs::exists(given, ec)) throw InputError(name_or_path, "", "an existing file", "no such file");
    return given;
  }
  for (const char* ext : {".yaml", ".yml", ".json"}) {
    const fs::path p = config_root() / kind / (name_or_path + ext);
    if (fs::exists(p, ec)) return p;
  }
  std::string known;
  for (const auto& n : catalog(kind)) known += (known.empty() ? "" : ", ") + n;
  const std::string singular = kind == "gpus" ? "GPU" : kind.substr(0, kind.size() - 1);
  throw InputError("--" + (kind == "gpus" ? std::string("gpu") : singular), "",
                   "a file or a catalog " + singular + " name (" + known + ")", "'" + name_or_path + "'");
}

std::string read_file(const fs::path& path, int64_t max_bytes) {
  // Checked before opening: a FIFO would block the open, /dev/zero would never end.
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path.string(), "", "a readable file", "no such file");
  if (fs::is_directory(st)) throw InputError(path.string(), "", "a file", "a directory");
  if (!fs::is_regular_file(st))
    throw InputError(path.string(), "", "a regular file",
                     fs::is_fifo(st) ? "a named pipe" : fs::is_character_file(st) ? "a character device"
                                     : fs::is_block_file(st)   ? "a block device"
                                     : fs::is_socket(st)       ? "a socket"
                                                               : "a special file");
  const auto too_big = [&] {
    return InputError(path.string(), "", "a file of at most " + std::to_string(max_bytes >> 20) + " MiB", "a larger file");
  };
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(max_bytes)) throw too_big();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "", "a readable file", "cannot open it");
  // Chunks up to the cap, not the size seen above: the file may grow while it is read.
  std::string text;
  std::array<char, 1 << 16> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (std::cmp_greater(text.size(), max_bytes)) throw too_big();
  }
  if (in.bad()) throw InputError(path.string(), "", "a readable file", "a read error");
  return text;
}

namespace {

DType parse_dtype_key(const YAML::Node& n, const std::string& key, const std::string& file, DType dflt) {
  const auto s = opt_str(n, key, file);
  if (!s) return dflt;
  const auto d = parse_dtype(*s);
  if (!d) throw InputError(file, key, "a dtype (float32, float16, bfloat16, ...)", "'" + *s + "'");
  return *d;
}

// Per-layer sliding windows from layer_types, or the model family's known pattern.
std::vector<int64_t> layer_windows(const YAML::Node& n, const std::string& file, const ModelConfig& m) {
  const bool use_sw = opt_bool(n, "use_sliding_window", file).value_or(true);
  const auto window = opt_int(n, "sliding_window", file, 1);
  const YAML::Node types = n["layer_types"];
  if (types.IsDefined() && !types.IsNull()) {
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.num_layers)
      throw InputError(file, "layer_types", "a list of " + std::to_string(m.num_layers) + " layer types", "");
    std::vector<int64_t> w(static_cast<size_t>(m.num_layers), 0);
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string t = types[i].IsScalar() ? types[i].Scalar() : "";
      if (t == "sliding_attention") {
        if (!window) throw InputError(file, "sliding_window", "a window size in tokens (layer_types has sliding layers)", "nothing");
        w[i] = *window;
      } else if (t != "full_attention") {
        throw InputError(file, "layer_types", "sliding_attention or full_attention for each layer", "'" + t + "'");
      }
    }
    return w;
  }
  if (!window || !use_sw) return {};
  std::vector<int64_t> w(static_cast<size_t>(m.num_layers), *window);
  if (m.model_type == "gemma2") {  // HF Gemma2: sliding on even layers
    for (size_t i = 1; i < w.size(); i += 2) w[i] = 0;
  }
  if (const auto pattern = opt_int(n, "sliding_window_pattern", file, 1)) {  // Gemma-3: every Nth global
    for (size_t i = 0; i < w.size(); ++i)
      if ((static_cast<int64_t>(i) + 1) % *pattern == 0) w[i] = 0;
  }
  return w;
}

}  // namespace

ModelConfig parse_model(const std::string& text, const std::string& file) {
  const YAML::Node n = parse_yaml_mapping(text, file);
  ModelConfig m;
  m.name = opt_str(n, "name", file).value_or(fs::path(file).stem().string());
  m.model_type = opt_str(n, "model_type", file).value_or("");
  m.hidden_size = req_int(n, "hidden_size", file);
  m.num_layers = req_int(n, "num_hidden_layers", file);
  // Per-layer tables (sliding windows) and loops are O(layers); published models have at
  // most a few hundred. Unbounded, 10^12 layers with a sliding window ran out of memory
  // and 3·10^8 ran for minutes (tests/bad_inputs/models/layers_too_many.yaml).
  constexpr int64_t kMaxLayers = 65536;
  if (m.num_layers > kMaxLayers)
    throw InputError(file, "num_hidden_layers", "at most " + std::to_string(kMaxLayers) + " layers",
                     std::to_string(m.num_layers));
  m.num_heads = req_int(n, "num_attention_heads", file);
  m.vocab_size = req_int(n, "vocab_size", file);
  m.intermediate_size = req_int(n, "intermediate_size", file);
  m.num_kv_heads = opt_int(n, "num_key_value_heads", file).value_or(m.num_heads);
  if (m.num_kv_heads > m.num_heads || m.num_heads % m.num_kv_heads != 0)
    throw InputError(file, "num_key_value_heads",
                     "a divisor of num_attention_heads (" + std::to_string(m.num_heads) + ")",
                     std::to_string(m.num_kv_heads));
  if (const auto hd = opt_int(n, "head_dim", file)) {
    m.head_dim = *hd;
  } else {
    if (m.hidden_size % m.num_heads != 0)
      throw InputError(file, "head_dim", "a head size (hidden_size is not a multiple of num_attention_heads)", "nothing");
    m.head_dim = m.hidden_size / m.num_heads;
  }
  m.tie_word_embeddings = opt_bool(n, "tie_word_embeddings", file).value_or(false);
  m.max_position_embeddings = opt_int(n, "max_position_embeddings", file).value_or(0);
  const std::string dtype_key = n["dtype"].IsDefined() && !n["dtype"].IsNull() ? "dtype" : "torch_dtype";
  m.torch_dtype = parse_dtype_key(n, dtype_key, file, DType::bf16);
  // GELU MLPs with biases everywhere (no gate matrix): the GPT-2 lineage and Phi-1/2.
  static const std::vector<std::string> ungated = {"phi", "gpt2", "gpt_neox", "gptj", "opt", "falcon", "bloom"};
  const bool plain = std::find(ungated.begin(), ungated.end(), m.model_type) != ungated.end();
  m.gated_mlp = !plain;
  m.linear_bias = plain;
  m.qkv_bias = m.model_type == "qwen2" || opt_bool(n, "attention_bias", file).value_or(false);

  m.num_experts = opt_int(n, "num_local_experts", file, 0)
                      .value_or(opt_int(n, "n_routed_experts", file, 0).value_or(opt_int(n, "num_experts", file, 0).value_or(0)));
  if (m.num_experts > 0) {
    m.experts_per_token = req_int(n, "num_experts_per_tok", file);
    if (m.experts_per_token > m.num_experts)
      throw InputError(file, "num_experts_per_tok", "at most the number of experts (" + std::to_string(m.num_experts) + ")",
                       std::to_string(m.experts_per_token));
    m.moe_intermediate_size = opt_int(n, "moe_intermediate_size", file).value_or(0);
    m.num_shared_experts = opt_int(n, "n_shared_experts", file, 0).value_or(0);
    m.first_dense_layers = opt_int(n, "first_k_dense_replace", file, 0).value_or(0);
  }
  m.kv_lora_rank = opt_int(n, "kv_lora_rank", file, 0).value_or(0);
  if (m.kv_lora_rank > 0) {
    m.q_lora_rank = opt_int(n, "q_lora_rank", file, 0).value_or(0);
    m.qk_rope_head_dim = req_int(n, "qk_rope_head_dim", file);
    m.qk_nope_head_dim = req_int(n, "qk_nope_head_dim", file);
    m.v_head_dim = req_int(n, "v_head_dim", file);
  }
  m.layer_window = layer_windows(n, file, m);
  m.published_params = opt_int(n, "params", file);
  m.source = opt_str(n, "source", file).value_or(file);
  // Sizes too large to count in 64 bits are this file's fault: say so naming it, rather
  // than later as an anonymous overflow (tests/bad_inputs/models/*overflow*.yaml).
  try {
    (void)count_params(m);
  } catch (const InputError&) {
    throw InputError(file, "", "a model whose parameter count fits in 64 bits (below 9.2e18)", "an overflow");
  }
  return m;
}

ModelConfig load_model(const std::string& name_or_path) {
  const fs::path p = resolve("models", name_or_path);
  return parse_model(read_file(p), p.string());
}

GpuSpec parse_gpu(const std::string& text, const std::string& file) {
  const YAML::Node n = parse_yaml_mapping(text, file);
  GpuSpec g;
  g.name = opt_str(n, "name", file).value_or(fs::path(file).stem().string());
  g.memory_bytes = req_int(n, "memory_bytes", file);
  g.memory_bandwidth_bytes_per_s = req_num(n, "memory_bandwidth_bytes_per_s", file, 1);
  const YAML::Node pf = n["peak_flops"];
  if (!pf.IsDefined() || pf.IsNull()) throw InputError(file, "peak_flops", "a mapping of dtype to FLOP/s (the key is required)", "nothing");
  if (!pf.IsMap()) throw InputError(file, "peak_flops", "a mapping of dtype to FLOP/s", "not a mapping");
  const std::string pfile = file;
  const auto rate = [&](const char* k) {
    try {
      return opt_num(pf, k, pfile, 0).value_or(0.0);
    } catch (const InputError&) {
      const YAML::Node v = pf[k];
      throw InputError(file, std::string("peak_flops.") + k, "a finite number >= 0",
                       v.IsScalar() ? "'" + v.Scalar() + "'" : "not a number");
    }
  };
  g.peak_flops = {rate("fp32"), rate("tf32"), rate("fp16"), rate("bf16"), rate("fp8"), rate("int8")};
  if (g.peak_flops.fp16 <= 0 && g.peak_flops.bf16 <= 0)
    throw InputError(file, "peak_flops.fp16", "a positive FLOP/s for fp16 or bf16", "nothing");
  if (g.peak_flops.fp16 <= 0) g.peak_flops.fp16 = g.peak_flops.bf16;
  if (g.peak_flops.bf16 <= 0) g.peak_flops.bf16 = g.peak_flops.fp16;
  g.interconnect_bytes_per_s = req_num(n, "interconnect_bytes_per_s", file, 1);
  g.price_per_hour_usd = opt_num(n, "price_per_hour_usd", file, 0);
  g.source = opt_str(n, "source", file).value_or("");
  return g;
}

GpuSpec load_gpu(const std::string& name_or_path) {
  const fs::path p = resolve("gpus", name_or_path);
  return parse_gpu(read_file(p), p.string());
}

Calibration load_calibration(const std::string& path) {
  const std::string text = read_file(path);
  const YAML::Node n = parse_yaml_mapping(text, path);
  const auto schema = opt_str(n, "schema", path);
  if (schema && *schema != "kvplan.calibration/1")
    throw InputError(path, "schema", "kvplan.calibration/1", "'" + *schema + "'");
  Calibration c;
  c.bandwidth_efficiency = req_num(n, "bandwidth_efficiency", path, 1e-3, 1);
  c.prefill_flops_efficiency = req_num(n, "prefill_flops_efficiency", path, 1e-3, 1);
  c.decode_flops_efficiency = opt_num(n, "decode_flops_efficiency", path, 1e-3, 1).value_or(c.prefill_flops_efficiency);
  c.runtime_reserve_bytes = opt_int(n, "runtime_reserve_bytes", path, 0);
  c.device = opt_str(n, "device", path).value_or("unknown");
  c.measured = true;
  return c;
}

}  // namespace kvplan::io
