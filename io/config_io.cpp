#include "io/config_io.h"
#include "io/hf_model.h"

#include "io/calibration_io.h"
#include "io/hardware_io.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <system_error>
#include <utility>

#include "io/model_registry.h"
#include "io/yaml_util.h"
#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan::io {

namespace fs = std::filesystem;

namespace {

// Where the running executable lies (Linux: /proc/self/exe); empty when unknown.
fs::path executable_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

bool has_configs(const fs::path& root) {
  std::error_code ec;
  return fs::is_directory(root / "configs", ec);
}

// True when `p` is `dir` or lies below it (both made canonical where they exist).
bool inside(const fs::path& p, const fs::path& dir) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(p, ec);
  if (ec) return false;
  const fs::path b = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  const fs::path rel = a.lexically_relative(b);
  return !rel.empty() && *rel.begin() != "..";
}

const char* data_dir_env() {
  const char* env = std::getenv("KVPLAN_DATA_DIR");
  return env && *env ? env : nullptr;
}

}  // namespace

std::optional<fs::path> find_data_root() {
  if (const char* env = data_dir_env()) {
    if (has_configs(env)) return fs::path(env);
    return std::nullopt;  // set but wrong: data_root() says so rather than looking elsewhere
  }
  const fs::path exe = executable_path();
  if (exe.empty()) return std::nullopt;
  const fs::path installed = exe.parent_path() / KVPLAN_DATA_REL;
  if (has_configs(installed)) return installed.lexically_normal();
  if (inside(exe, KVPLAN_BUILD_DIR) && has_configs(KVPLAN_SOURCE_DIR)) return fs::path(KVPLAN_SOURCE_DIR);
  return std::nullopt;
}

fs::path data_root() {
  if (auto root = find_data_root()) return *root;
  if (const char* env = data_dir_env())
    throw InputError("KVPLAN_DATA_DIR", "", "a kvplan data folder holding configs/models and configs/gpus",
                     "'" + std::string(env) + "', which has no configs/ folder");
  const fs::path exe = executable_path();
  const std::string installed = exe.empty() ? std::string(KVPLAN_DATA_REL) + " beside the executable"
                                            : (exe.parent_path() / KVPLAN_DATA_REL).lexically_normal().string();
  throw InputError("catalog", "",
                   "a configs/ folder (models, GPUs, workloads) in $KVPLAN_DATA_DIR or in " + installed +
                       " (where `cmake --install` puts it)",
                   "neither: KVPLAN_DATA_DIR is unset and " + installed + "/configs does not exist");
}

fs::path config_root() { return data_root() / "configs"; }

std::vector<std::string> catalog(const std::string& kind) {
  const fs::path dir = config_root() / kind;
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw InputError(dir.string(), "", "a catalog folder of " + kind, "cannot read it (" + ec.message() + ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto ext = it->path().extension();
    std::error_code entry_ec;  // an entry that cannot be read (a broken link) is not a catalog file
    if (it->is_regular_file(entry_ec) && (ext == ".yaml" || ext == ".yml" || ext == ".json"))
      names.push_back(it->path().stem().string());
  }
  if (ec) throw InputError(dir.string(), "", "a readable catalog folder", "an error while listing it (" + ec.message() + ")");
  if (names.empty()) throw InputError(dir.string(), "", "at least one .yaml, .yml or .json file", "an empty catalog");
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
  const std::string singular = kind == "gpus" ? "GPU" : kind == "calibration" ? kind : kind.substr(0, kind.size() - 1);
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
  // The size seen above, so that a large file is not copied through each doubling of the
  // string (2,207 page faults a process for MiniMax-M3-NVFP4's 3.1 MB instead of 2,944).
  if (!ec) text.reserve(static_cast<size_t>(size));
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

bool has(const YAML::Node& n, const std::string& key) {
  const YAML::Node v = n[key];
  return v.IsDefined() && !v.IsNull();
}

// ------------------------------------------------------------ supported architectures
// How each family's config.json is read: a row of the registry (io/model_registry.cpp,
// listed in docs/models.md); the reader below follows the row's fields.
using Family = ModelFamily;

// Keys that change a model's geometry. A family that does not place one of them must
// not produce numbers: the file is refused naming the keys.
constexpr const char* kGeometryKeys[] = {
  "hybrid_override_pattern", "layers_block_type", "attn_layer_period", "attn_layer_offset",
  "expert_layer_period", "expert_layer_offset", "full_attention_interval", "linear_num_key_heads",
  "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "mamba_d_state",
  "mamba_d_conv", "mamba_expand", "mamba_num_heads", "mamba_head_dim", "mamba_n_heads",
  "mamba_d_head", "ssm_state_size", "ssm_cfg", "num_kv_shared_layers", "cross_attention_layers",
  "hybrid_layer_pattern", "swa_num_key_value_heads", "swa_num_attention_heads", "swa_head_dim",
  "swa_v_head_dim", "attention_chunk_size", "interleave_moe_layer_step", "index_topk",
  "index_head_dim", "block_types", "layer_block_types", "attn_type_list", "global_attn_every_n_layers",
  "multi_query", "new_decoder_architecture", "parallel_attn", "mlp_only_layers", "decoder_sparse_step",
  "moe_layer_freq", "shared_expert_intermediate_size", "intermediate_size_mlp", "v_head_dim",
  "sliding_window_pattern", "use_sliding_window", "max_window_layers", "moe_layer_start_index",
  "num_local_experts", "n_routed_experts", "num_experts", "rotary_dim", "partial_rotary_factor",
  "block_configs", "global_head_dim", "num_global_key_value_heads", "attention_k_eq_v", "enable_moe_block",
  "top_k_experts", "hidden_size_per_layer_input", "conv_L_cache", "conv_dim", "block_ff_dim",
  "block_auto_adjust_ff_dim", "block_ffn_dim_multiplier", "full_attn_idxs", "moe_layer_end_index",
};

// Keys whose mere presence does not change geometry for the values below.
bool trivially_default(const YAML::Node& v, const std::string& key) {
  if (!v.IsScalar()) return key == "mlp_only_layers" && v.IsSequence() && v.size() == 0;
  const std::string& s = v.Scalar();
  if (key == "multi_query" || key == "new_decoder_architecture" || key == "parallel_attn") return s == "false";
  if (key == "decoder_sparse_step" || key == "moe_layer_freq" || key == "interleave_moe_layer_step") return s == "1";
  if (key == "attention_k_eq_v" || key == "enable_moe_block") return s == "false";
  if (key == "hidden_size_per_layer_input") return s == "0";
  return key == "partial_rotary_factor" || key == "rotary_dim";  // RoPE only: no size
}

std::string node_key_list(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// ------------------------------------------------------------ the standard decoder
// A model_type without a family entry is read as a standard decoder when its config holds
// nothing else: Llama's layout (LlamaForCausalLM, transformers v4.57
// models/llama/modeling_llama.py: q/k/v/o projections, a gated MLP of three matrices, two
// RMSNorms a layer, untied LM head unless tie_word_embeddings) with the keys below. Any
// other key may change the layer plan, so it is refused by name: never a number from a key
// kvplan did not understand.
constexpr const char* kDecoderKeys[] = {
  "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
  "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings", "torch_dtype", "dtype",
  "rope_scaling", "attention_bias", "layer_types", "sliding_window",
};
// Keys that change no size: token ids, numerics, dropout, RoPE base, bookkeeping.
constexpr const char* kInertKeys[] = {
  "architectures", "model_type", "_name_or_path", "auto_map", "bos_token_id", "eos_token_id", "pad_token_id",
  "transformers_version", "use_cache", "initializer_range", "rms_norm_eps", "rope_theta", "attention_dropout",
  "hidden_act", "pretraining_tp", "tokenizer_class", "quantization_config", "name", "params", "source",
  "partial_rotary_factor", "rope_parameters", "output_attentions", "output_hidden_states", "return_dict",
  "no_rope_layers", "no_rope_layer_interval",  // NoPE layers (SmolLM3): positions, not sizes
};

bool in_list(const std::string& k, const auto& list) {
  return std::any_of(std::begin(list), std::end(list), [&](const char* x) { return k == x; });
}

// The note for a standard-decoder read, or InputError naming the first key outside the
// vocabulary (with the rest) for a model that is neither registered nor standard.
std::string standard_decoder_note(const YAML::Node& n, const std::string& file, const std::string& what) {
  std::vector<std::string> outside, used;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const YAML::Node v = kv.second;
    // A sliding window is standard only with layer_types saying which layers slide; mlp_bias
    // and use_sliding_window only when false.
    const bool window_alone = k == "sliding_window" && !v.IsNull() && !has(n, "layer_types");
    const bool off = v.IsScalar() && (v.Scalar() == "false" || v.Scalar() == "null") &&
                     (k == "mlp_bias" || k == "use_sliding_window");
    if (!window_alone && in_list(k, kDecoderKeys)) used.push_back(k);
    else if (window_alone || (!in_list(k, kInertKeys) && !off)) outside.push_back(k);
  }
  if (!outside.empty())
    throw InputError(file, outside.front(),
                     "a supported architecture (" + supported_model_types() +
                         "; docs/models.md), or a standard decoder's keys only (docs/models.md \"Unregistered families\")",
                     what + ", with keys kvplan cannot place: " + node_key_list(outside));
  return "read as a standard decoder (Llama's layout: gated MLP, two RMSNorms a layer), model_type not registered; "
         "keys used: " + node_key_list(used);
}

struct Reader {
  const YAML::Node& n;
  const std::string& file;
  const Family* family;  // for the configuration class's defaults; nullptr for a standard decoder
  bool nested;           // a wrapper's text config: the family's nested_defaults apply too
  std::vector<std::string> used;
  void use(std::initializer_list<const char*> keys) {
    for (const char* k : keys) used.emplace_back(k);
  }
  std::optional<int64_t> i(const char* key, int64_t min = 1) {
    used.emplace_back(key);
    if (const auto v = opt_int(n, key, file, min)) return v;
    return has(n, key) ? std::nullopt : family_default(family, key, nested);
  }
  int64_t req(const char* key, int64_t min = 1) {
    used.emplace_back(key);
    if (!has(n, key))
      if (const auto d = family_default(family, key, nested)) return *d;
    return req_int(n, key, file, min);
  }
  std::optional<bool> b(const char* key) {
    used.emplace_back(key);
    return opt_bool(n, key, file);
  }
};

// Per-layer sliding windows from layer_types, or the model family's known pattern.
// `state_type`: the layer_types name of the family's state layers (Qwen3-Next's
// linear_attention, LFM2's conv), nullptr where it has none.
std::vector<int64_t> layer_windows(Reader& r, const ModelConfig& m, const char* state_type) {
  const YAML::Node& n = r.n;
  const std::string& file = r.file;
  const bool use_sw = r.b("use_sliding_window").value_or(true);
  const auto window = r.i("sliding_window", 1);
  r.use({"sliding_window_pattern", "max_window_layers"});
  const YAML::Node types = n["layer_types"];
  if (types.IsDefined() && !types.IsNull()) {
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.num_layers)
      throw InputError(file, "layer_types", "a list of " + std::to_string(m.num_layers) + " layer types", "");
    std::vector<int64_t> w(static_cast<size_t>(m.num_layers), 0);
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string t = types[i].IsScalar() ? types[i].Scalar() : "";
      if (t == "sliding_attention" || t == "chunked_attention") {
        if (!window) throw InputError(file, "sliding_window", "a window size in tokens (layer_types has sliding layers)", "nothing");
        w[i] = *window;
      } else if (t != "full_attention" && !(state_type && t == state_type) &&
                 !(t == "deepseek_sparse_attention" && m.index_head_dim > 0)) {  // GLM-5: every layer indexed MLA
        throw InputError(file, "layer_types", "sliding_attention or full_attention for each layer", "'" + t + "'");
      }
    }
    return w;
  }
  const Family* fam = r.family;
  if (fam && fam->sliding == Sliding::nope_layers) {
    // SmolLM3Config: without layer_types, the layers without RoPE slide, and only with
    // use_sliding_window (default false) and a sliding_window.
    if (!window || !opt_bool(n, "use_sliding_window", file).value_or(false)) return {};
    const int64_t every = opt_int(n, "no_rope_layer_interval", file).value_or(4);
    const YAML::Node nope = n["no_rope_layers"];
    if (nope.IsDefined() && !nope.IsNull() && (!nope.IsSequence() || static_cast<int64_t>(nope.size()) != m.num_layers))
      throw InputError(file, "no_rope_layers", "a list of " + std::to_string(m.num_layers) + " flags (1 = RoPE)", "");
    std::vector<int64_t> w(static_cast<size_t>(m.num_layers), 0);
    for (size_t i = 0; i < w.size(); ++i) {
      const bool rope = nope.IsSequence() ? nope[i].as<int64_t>() != 0 : (static_cast<int64_t>(i) + 1) % every != 0;
      if (!rope) w[i] = *window;
    }
    return w;
  }
  if (!window || !use_sw) return {};
  // Qwen2: sliding only when use_sliding_window is true (its default is false).
  const bool qwen = fam && fam->sliding == Sliding::qwen;
  if (qwen && !opt_bool(n, "use_sliding_window", file).value_or(false)) return {};
  std::vector<int64_t> w(static_cast<size_t>(m.num_layers), *window);
  if (qwen) {  // HF Qwen2: sliding from max_window_layers on
    const int64_t first = opt_int(n, "max_window_layers", file, 0).value_or(0);
    for (size_t i = 0; i < w.size() && static_cast<int64_t>(i) < first; ++i) w[i] = 0;
  }
  // Every Nth layer global: sliding_window_pattern (Gemma-3), else the family's period
  // (Gemma2: odd layers; Gemma3TextConfig: sliding_window_pattern 6).
  const int64_t period = opt_int(n, "sliding_window_pattern", file, 1).value_or(fam ? fam->global_every : 0);
  if (period > 0)
    for (size_t i = 0; i < w.size(); ++i)
      if ((static_cast<int64_t>(i) + 1) % period == 0) w[i] = 0;
  return w;
}

// ------------------------------------------------------------ quantization_config
// The layer index a module name holds (model.layers.12.mlp), or -1 for a wildcard.
int64_t layer_of(const std::string& e) {
  if (const auto p = e.find("layers."); p != std::string::npos) {
    size_t i = p + 7, j = i;
    while (j < e.size() && std::isdigit(static_cast<unsigned char>(e[j]))) ++j;
    if (j > i && j - i < 10) return std::stoll(e.substr(i, j - i));
  }
  return -1;
}

// Which part of a layer one modules_to_not_convert / ignore entry names. mlp_beside: the
// family's "mlp" is the dense MLP beside its routed "experts" (Gemma-4), not the MoE block.
void place_skip(QuantSpec& q, std::string e, const std::string& file, const std::string& key, bool mlp_beside) {
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (e.rfind("re:", 0) == 0) e = e.substr(3);
  const auto in = [&](const char* s) { return e.find(s) != std::string::npos; };
  const auto ends = [&](const std::string& s) {
    std::string t = e;
    while (!t.empty() && (t.back() == '$' || t.back() == ')')) t.pop_back();
    return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0;
  };
  const int64_t layer = layer_of(e);
  if (in("lm_head") || in("embed") || in("vision") || in("visual") || in("multi_modal") || in("mm_projector") ||
      in("audio") || in("image") || in("patch") || in("mtp") || in("nextn"))
    return;  // kept 16-bit anyway (towers, embeddings, LM head) or not counted (MTP)
  if (ends("gate") || ends("router") || in("router") || ends("shared_expert_gate") || ends("mlp.gate") || in("gate.")) {
    if (!in("gate_proj") && !in("gate_up")) return;  // the MoE router stays 16-bit anyway
  }
  // A name inside one layer (model.layers.12.self_attn.q_proj, as llm-compressor writes
  // its expanded ignore lists) keeps that part of that layer 16-bit; a wildcard (no layer
  // index) keeps the part in every layer; a bare layer (model.layers.61.*) the whole layer.
  const auto part = [&](WeightPart w, bool& every) {
    if (layer >= 0) q.skip_parts.push_back({layer, w});
    else every = true;
  };
  if (in("shared_expert")) return part(WeightPart::shared_experts, q.skip_shared);
  if (in("experts")) return part(WeightPart::experts, q.skip_experts);
  if (in("attn") || in("attention") || in("mixer") || in("linear_attn")) return part(WeightPart::attention, q.skip_attention);
  if (mlp_beside && in("mlp")) {
    // The dense MLP of a layer: kvplan's dense_mlp in a dense layer, the shared expert in a
    // MoE one; the routed experts are named apart.
    if (layer >= 0)
      for (const WeightPart w : {WeightPart::dense_mlp, WeightPart::shared_experts}) q.skip_parts.push_back({layer, w});
    else q.skip_dense_mlp = q.skip_shared = true;
    return;
  }
  if (in("mlp") || in("ffn") || in("feed_forward")) {
    // One layer's MLP block: its dense MLP, or (a MoE layer) everything under it.
    if (layer >= 0)
      for (const WeightPart w : {WeightPart::dense_mlp, WeightPart::experts, WeightPart::shared_experts})
        q.skip_parts.push_back({layer, w});
    else q.skip_dense_mlp = true;
    return;
  }
  if (layer >= 0) {
    q.skip_layers.push_back(layer);
    return;
  }
  throw InputError(file, key, "module names kvplan can place (attention, mlp, experts, shared_expert, router, lm_head, ...)",
                   "'" + e + "'");
}

void read_skips(QuantSpec& q, const YAML::Node& qc, const char* key, const std::string& file, bool mlp_beside) {
  const YAML::Node v = qc[key];
  if (!v.IsDefined() || v.IsNull()) return;
  if (!v.IsSequence()) throw InputError(file, std::string("quantization_config.") + key, "a list of module names", "");
  for (const auto& e : v)
    if (e.IsScalar()) place_skip(q, e.Scalar(), file, std::string("quantization_config.") + key, mlp_beside);
}

// ModelOpt MIXED_PRECISION (vllm-project/vllm@00155cde model_executor/layers/quantization/
// modelopt.py ModelOptMixedPrecisionConfig, vLLM's modelopt_mixed): quantized_layers maps
// each module to its quant_algo, FP8 (per-tensor W8A8), NVFP4 (W4A4) or W4A16_NVFP4
// (weight-only: the fp8 scale per 16 and weight_scale_2); a module it does not name stays
// 16-bit. Read per part (attention, dense MLP, routed experts, shared experts, LM head):
// a part must take one format in every layer that names it.
bool is_mixed_precision(const YAML::Node& qc) {
  return qc.IsMap() && has(qc, "quantized_layers") && qc["quant_algo"].IsScalar() &&
         qc["quant_algo"].Scalar() == "MIXED_PRECISION" && qc["quant_method"].IsScalar() &&
         qc["quant_method"].Scalar() == "modelopt";
}

QuantSpec mixed_precision_algo(const std::string& algo, const std::string& file, const std::string& key) {
  QuantSpec q;
  q.method = q.engine_method = "modelopt_mixed";
  if (algo == "FP8") {
    q.bits = 8, q.group = -1, q.scale_bits = 32, q.compute = DType::fp8;
  } else if (algo == "NVFP4" || algo == "W4A16_NVFP4") {
    q.bits = 4, q.group = 16, q.scale_bits = 8;
    q.fp4_activations = algo == "NVFP4";
    q.tensor_scale_bits = algo == "NVFP4" ? 64 : 32;  // weight_scale_2 (+ input_scale for W4A4), fp32
  } else {
    throw InputError(file, key, "FP8, NVFP4 or W4A16_NVFP4 (the formats ModelOptMixedPrecisionConfig loads)", "'" + algo + "'");
  }
  return q;
}

QuantSpec parse_mixed_precision(const YAML::Node& qc, ModelDocument& doc, const std::string& file, const ModelConfig& m) {
  const std::string where = "quantization_config.quantized_layers";
  const YAML::Node layers = qc["quantized_layers"];
  if (!layers.IsMap()) throw InputError(file, where, "a mapping of module names to formats", "");
  const ModuleTable table = doc.take_table(layers);
  if (table.entries.empty()) throw InputError(file, where, "a mapping of module names to formats", "");
  constexpr size_t kParts = 4;
  std::array<std::optional<QuantSpec>, kParts> spec;
  std::array<std::vector<char>, kParts> named;  // per layer: the mapping names this part there
  // Each distinct value read once, where it first appears (its errors name that module).
  std::vector<std::optional<QuantSpec>> format(table.values.size());
  QuantSpec q;
  for (const auto& entry : table.entries) {
    const std::string& module = entry.first;
    const size_t value = entry.second;
    std::string e = module;
    const auto key = [&] { return where + "." + module; };
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!format[value]) {
      const YAML::Node& v = table.values[value];
      if (!v.IsMap()) throw InputError(file, key(), "a mapping with quant_algo", "");
      const QuantSpec f = mixed_precision_algo(opt_str(v, "quant_algo", file).value_or(""), file, key() + ".quant_algo");
      if (const auto g = opt_int(v, "group_size", file); g && f.group > 0 && *g != f.group)
        throw InputError(file, key() + ".group_size", std::to_string(f.group) + " (NVFP4's block)", std::to_string(*g));
      format[value] = f;
    }
    const QuantSpec& f = *format[value];
    const auto in = [&](const char* t) { return e.find(t) != std::string::npos; };
    if (in("mtp") || in("nextn")) continue;  // the MTP layers are not counted
    if (e == "lm_head" || e.ends_with(".lm_head")) {
      q.lm_head = std::make_shared<const QuantSpec>(f);
      continue;
    }
    std::optional<WeightPart> part;
    if (in("shared_expert")) part = WeightPart::shared_experts;
    else if (in("experts")) part = WeightPart::experts;
    else if (in("attn") || in("attention")) part = WeightPart::attention;
    else if (in("gate_proj") || in("up_proj") || in("down_proj")) part = WeightPart::dense_mlp;
    const int64_t layer = layer_of(e);
    if (!part || layer < 0)
      throw InputError(file, key(), "attention, MLP, expert or lm_head modules of numbered layers", "a module kvplan cannot place");
    const auto i = static_cast<size_t>(*part);
    if (spec[i] && (spec[i]->bits != f.bits || spec[i]->fp4_activations != f.fp4_activations || spec[i]->compute != f.compute))
      throw InputError(file, key() + ".quant_algo", "one format per part in every layer (per-layer formats of one part are not read)",
                       "a second format");
    spec[i] = f;
    if (layer < m.num_layers) {
      named[i].resize(static_cast<size_t>(m.num_layers));
      named[i][static_cast<size_t>(layer)] = 1;
    }
  }
  // The routed experts' format first (most of the weights), else the densest part's: the
  // spec the label and the GEMM dtype take.
  for (const WeightPart w : {WeightPart::experts, WeightPart::dense_mlp, WeightPart::attention, WeightPart::shared_experts})
    if (spec[static_cast<size_t>(w)]) {
      const QuantSpec lm = q.lm_head ? *q.lm_head : QuantSpec{};
      q = *spec[static_cast<size_t>(w)];
      if (lm.active()) q.lm_head = std::make_shared<const QuantSpec>(lm);
      break;
    }
  if (!q.active()) throw InputError(file, where, "at least one quantized layer module", "none");
  for (size_t i = 0; i < kParts; ++i) {
    if (!spec[i]) {
      switch (static_cast<WeightPart>(i)) {
        case WeightPart::attention: q.skip_attention = true; break;
        case WeightPart::dense_mlp: q.skip_dense_mlp = true; break;
        case WeightPart::experts: q.skip_experts = true; break;
        case WeightPart::shared_experts: q.skip_shared = true; break;
      }
      continue;
    }
    q.parts[i] = std::make_shared<const QuantSpec>(*spec[i]);
    // A layer whose part the mapping does not name keeps it 16-bit.
    for (int64_t l = 0; l < m.num_layers; ++l)
      if (named[i].empty() || !named[i][static_cast<size_t>(l)]) q.skip_parts.push_back({l, static_cast<WeightPart>(i)});
  }
  read_skips(q, qc, "ignore", file, false);
  return q;
}

QuantSpec parse_quantization(const YAML::Node& qc, const std::string& file, bool mlp_beside) {
  QuantSpec q;
  const std::string where = "quantization_config";
  if (!qc.IsMap()) throw InputError(file, where, "a mapping", "");
  std::string method = opt_str(qc, "quant_method", file).value_or("");
  std::transform(method.begin(), method.end(), method.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // ModelOpt exports name their algorithm without a quant_method.
  if (method.empty() && has(qc, "quant_algo")) method = "modelopt";
  // ModelOpt's per-layer formats that parse_mixed_precision does not take (no quantized_layers,
  // or under another quant_method, as vLLM's ModelOptMixedPrecisionConfig does not): one
  // format read for all would misstate the weights.
  if (opt_str(qc, "quant_algo", file).value_or("") == "MIXED_PRECISION")
    throw InputError(file, where + ".quant_algo",
                     "FP8 or NVFP4, or MIXED_PRECISION with quant_method modelopt and a quantized_layers mapping "
                     "(vLLM's ModelOptMixedPrecisionConfig)",
                     "'MIXED_PRECISION'" + std::string(method == "modelopt" ? " without quantized_layers" : " under quant_method '" + method + "'"));
  // vLLM normalizes the library's Python spelling (ModelConfig._verify_quantization).
  if (method == "compressed_tensors") method = "compressed-tensors";
  q.method = method;
  // The method vLLM derives: the Marlin kernels are overrides of AWQ/GPTQ checkpoints.
  q.engine_method = method == "awq_marlin" ? "awq" : method == "gptq_marlin" ? "gptq" : method;
  if (method == "fp8" || method == "fbgemm_fp8") {
    // DeepSeek / Qwen FP8: e4m3 weights with fp32 scales per 128x128 block
    // (weight_block_size), else per tensor (fbgemm_fp8: per output channel); W8A8.
    q.bits = 8;
    q.scale_bits = 32;
    q.compute = DType::fp8;
    const YAML::Node blk = qc["weight_block_size"];
    if (blk.IsDefined() && !blk.IsNull()) {
      if (!blk.IsSequence() || blk.size() != 2) throw InputError(file, where + ".weight_block_size", "[rows, cols]", "");
      q.block_rows = blk[0].as<int64_t>();
      q.group = blk[1].as<int64_t>();
    } else {
      q.group = method == "fbgemm_fp8" ? 0 : -1;
    }
  } else if (method == "gptq" || method == "awq" || method == "awq_marlin" || method == "gptq_marlin") {
    // AutoGPTQ / AutoAWQ: packed b-bit weights, per group an fp16 scale and a b-bit
    // zero point (qzeros, packed into int32); group_size -1 = per output channel.
    q.bits = req_int(qc, method.rfind("awq", 0) == 0 && has(qc, "w_bit") ? "w_bit" : "bits", file, 2);
    if (q.bits != 2 && q.bits != 3 && q.bits != 4 && q.bits != 8)
      throw InputError(file, where + ".bits", "2, 3, 4 or 8", std::to_string(q.bits));
    const auto g = has(qc, "q_group_size") ? opt_int(qc, "q_group_size", file, -1) : opt_int(qc, "group_size", file, -1);
    q.group = g.value_or(128) == -1 ? 0 : g.value_or(128);
    q.scale_bits = 16;
    q.zero_bits = q.bits;
    read_skips(q, qc, "modules_to_not_convert", file, mlp_beside);
  } else if (method == "mxfp4") {
    // OCP MX FP4 (gpt-oss): e2m1 values, one e8m0 scale per 32; weight-only on H100/H200.
    q.bits = 4;
    q.group = 32;
    q.scale_bits = 8;
    read_skips(q, qc, "modules_to_not_convert", file, mlp_beside);
  } else if (method == "modelopt") {
    const std::string algo = opt_str(qc, "quant_algo", file).value_or("");
    if (algo == "FP8") {
      q.bits = 8, q.group = -1, q.scale_bits = 32, q.compute = DType::fp8;
    } else if (algo == "NVFP4") {
      q.engine_method = "modelopt_fp4";  // ModelOptNvFp4Config.override_quantization_method
      q.bits = 4, q.group = 16, q.scale_bits = 8;  // e4m3 scale per 16
      q.fp4_activations = true, q.tensor_scale_bits = 64;  // fp32 weight_scale_2 + input_scale: W4A4
    } else {
      throw InputError(file, where + ".quant_algo", "FP8 or NVFP4", "'" + algo + "'");
    }
    read_skips(q, qc, "exclude_modules", file, mlp_beside);
    read_skips(q, qc, "ignore", file, mlp_beside);
  } else if (method == "bitsandbytes") {
    // bitsandbytes: 4-bit NF4/FP4 with an absmax per 64 weights (fp32, or 8-bit with
    // bnb_4bit_use_double_quant), weight-only; 8-bit LLM.int8 with an fp32 scale per row.
    if (opt_bool(qc, "load_in_4bit", file).value_or(false)) {
      q.bits = 4, q.group = 64;
      q.scale_bits = opt_bool(qc, "bnb_4bit_use_double_quant", file).value_or(false) ? 8 : 32;
    } else if (opt_bool(qc, "load_in_8bit", file).value_or(false)) {
      q.bits = 8, q.group = 0, q.scale_bits = 32;
    } else {
      throw InputError(file, where, "load_in_4bit or load_in_8bit true", "neither");
    }
    read_skips(q, qc, "llm_int8_skip_modules", file, mlp_beside);
  } else if (method == "compressed-tensors") {
    // compressed-tensors (llm-compressor): config_groups.*.weights {num_bits, type,
    // strategy tensor|channel|group|block, group_size, symmetric}; input_activations
    // of 8 bits make it W8A8. One scheme for all targeted Linear layers is read.
    const YAML::Node groups = qc["config_groups"];
    if (!groups.IsDefined() || !groups.IsMap() || groups.size() == 0)
      throw InputError(file, where + ".config_groups", "a mapping of quantization groups", "nothing");
    const YAML::Node g = groups.begin()->second;
    const YAML::Node w = g["weights"];
    // Groups of different weight formats (format mixed-precision: FP8 attention beside NVFP4
    // MLPs) would each need their targets placed: refused rather than all read as the first.
    for (const auto& other : groups)
      if (YAML::Dump(other.second["weights"]) != YAML::Dump(w))
        throw InputError(file, where + ".config_groups",
                         "one weight format for every group (groups of different formats are not read)",
                         "'" + other.first.as<std::string>() + "' differs from '" + groups.begin()->first.as<std::string>() + "'");
    if (!w.IsDefined() || !w.IsMap()) throw InputError(file, where + ".config_groups.*.weights", "a mapping", "nothing");
    q.bits = req_int(w, "num_bits", file, 2);
    const std::string type = opt_str(w, "type", file).value_or("int");
    const std::string strategy = opt_str(w, "strategy", file).value_or("tensor");
    const bool sym = opt_bool(w, "symmetric", file).value_or(true);
    if (strategy == "tensor") q.group = -1;
    else if (strategy == "channel") q.group = 0;
    else if (strategy == "group" || strategy == "tensor_group") q.group = req_int(w, "group_size", file, 1);
    else if (strategy == "block") {
      const YAML::Node bs = w["block_structure"];
      if (!bs.IsDefined() || !bs.IsSequence() || bs.size() != 2) throw InputError(file, where + ".weights.block_structure", "[rows, cols]", "");
      q.block_rows = bs[0].as<int64_t>();
      q.group = bs[1].as<int64_t>();
    } else {
      throw InputError(file, where + ".weights.strategy", "tensor, channel, group, tensor_group or block", "'" + strategy + "'");
    }
    // NVFP4 (float, 4 bits, groups of 16) scales are fp8; others store bf16 scales.
    q.scale_bits = (type == "float" && q.bits == 4) ? 8 : (q.group <= 0 || q.block_rows > 0 ? 32 : 16);
    q.zero_bits = sym ? 0 : (type == "int" ? q.bits : 0);
    const YAML::Node a = g["input_activations"];
    if (a.IsDefined() && a.IsMap() && opt_int(a, "num_bits", file).value_or(16) == 8)
      q.compute = opt_str(a, "type", file).value_or("int") == "float" ? DType::fp8 : DType::int8;
    if (type == "float" && q.bits == 4) {
      q.method = "nvfp4";
      q.tensor_scale_bits = 32;  // weight_global_scale, fp32
      // W4A4 (CompressedTensorsW4A4Fp4): 4-bit float activations with their global scale.
      if (a.IsDefined() && a.IsMap() && opt_int(a, "num_bits", file).value_or(16) == 4 &&
          opt_str(a, "type", file).value_or("int") == "float")
        q.fp4_activations = true, q.tensor_scale_bits = 64;
    }
    read_skips(q, qc, "ignore", file, mlp_beside);
  } else {
    throw InputError(file, where + ".quant_method",
                     "a quantization kvplan can size (fp8, fbgemm_fp8, gptq, awq, mxfp4, modelopt, bitsandbytes, "
                     "compressed-tensors)",
                     "'" + method + "'");
  }
  return q;
}

// ------------------------------------------------------------ vision / audio towers
// A ViT encoder from its own sub-config: per layer q/k/v/o with biases, a (gated or
// plain) MLP with biases, two LayerNorms; the patch embedding; learned positions when
// image_size is given; then the projector into the language model (Qwen-VL: a patch
// merger MLP over spatial_merge_size^2 patches; others: one linear layer).
int64_t tower_params(const YAML::Node& root, const YAML::Node& given, const std::string& file, int64_t text_hidden,
                     VisionProjector projector, std::string& note) {
  // transformers saves a sub-config with only the keys that differ from its class's
  // defaults: a Qwen2-VL fine-tune's vision_config can be {in_chans, model_type qwen2_vl,
  // spatial_patch_size}. The keys it leaves out take Qwen2VLVisionConfig's defaults
  // (transformers models/qwen2_vl/configuration_qwen2_vl.py, as vLLM reads them too).
  YAML::Node v = given;
  if (given["model_type"].IsDefined() && given["model_type"].IsScalar() && given["model_type"].Scalar() == "qwen2_vl") {
    v = YAML::Clone(given);
    const std::pair<const char*, const char*> qwen2_vl_defaults[] = {
        {"depth", "32"},      {"embed_dim", "1280"}, {"mlp_ratio", "4"},          {"hidden_act", "quick_gelu"},
        {"patch_size", "14"}, {"in_channels", "3"},  {"spatial_merge_size", "2"}, {"temporal_patch_size", "2"}};
    for (const auto& [key, value] : qwen2_vl_defaults)
      if (!v[key].IsDefined()) v[key] = value;
  }
  // Qwen2-VL's vision_config names the ViT width embed_dim and the merger's output
  // hidden_size (= the language model's): embed_dim first.
  // Kimi-K2.5's MoonViT names them vt_hidden_size, vt_num_hidden_layers and
  // vt_intermediate_size, its patch merger merge_kernel_size [2, 2].
  const int64_t d = opt_int(v, "embed_dim", file)
                        .value_or(opt_int(v, "hidden_size", file).value_or(opt_int(v, "vt_hidden_size", file).value_or(0)));
  const int64_t layers =
      opt_int(v, "num_hidden_layers", file)
          .value_or(opt_int(v, "depth", file).value_or(opt_int(v, "vt_num_hidden_layers", file).value_or(0)));
  if (d == 0 || layers == 0)
    throw InputError(file, "vision_config", "hidden_size (or embed_dim) and num_hidden_layers (or depth)", "nothing");
  const int64_t width = opt_int(v, "intermediate_size", file)
                            .value_or(opt_int(v, "vt_intermediate_size", file)
                                          .value_or(opt_int(v, "mlp_ratio", file).value_or(4) * d));
  const int64_t patch = opt_int(v, "patch_size", file).value_or(14);
  const int64_t channels = opt_int(v, "num_channels", file).value_or(opt_int(v, "in_channels", file).value_or(3));
  const int64_t temporal = opt_int(v, "temporal_patch_size", file).value_or(1);
  const std::string act = opt_str(v, "hidden_act", file).value_or("gelu");
  const bool gated = act == "silu";  // Qwen2.5-VL's SwiGLU blocks
  int64_t p = layers * (4 * d * d + 4 * d + (gated ? 3 : 2) * d * width + width * (gated ? 2 : 1) + d + 4 * d);
  p += channels * patch * patch * temporal * d + d;
  if (const auto img = opt_int(v, "image_size", file)) p += (*img / patch) * (*img / patch) * d;
  const int64_t out = opt_int(v, "out_hidden_size", file).value_or(text_hidden);
  std::optional<int64_t> merge = opt_int(v, "spatial_merge_size", file);
  if (const YAML::Node k = v["merge_kernel_size"]; !merge && k.IsDefined() && k.IsSequence() && k.size() == 2 &&
                                                  k[0].IsScalar() && k[0].Scalar() == k[1].Scalar())
    merge = k[0].as<int64_t>();
  if (merge && *merge < 1) throw InputError(file, "vision_config.merge_kernel_size", "a positive patch-merge size", std::to_string(*merge));
  if (projector == VisionProjector::mllama) {
    // MllamaVisionModel (transformers models/mllama/modeling_mllama.py): a patch convolution
    // without bias, a class embedding, the gated position embedding (one row per patch and
    // the class token, a gate, and a tile table per aspect ratio and tile), pre- and
    // post-tile aspect-ratio embeddings with their gates, LayerNorms before and after, the
    // local layers (q/k/v/o without biases, fc1/fc2 with, two LayerNorms) and
    // num_global_layers more with two gates each; the projector maps vision_output_dim to
    // the text width with a bias.
    const int64_t img = req_int(v, "image_size", file), tiles = req_int(v, "max_num_tiles", file);
    const int64_t global = req_int(v, "num_global_layers", file), vision_out = req_int(v, "vision_output_dim", file);
    const YAML::Node ratios = v["supported_aspect_ratios"];
    if (!ratios.IsDefined() || !ratios.IsSequence() || ratios.size() == 0)
      throw InputError(file, "vision_config.supported_aspect_ratios", "a list of [tiles across, tiles down] pairs", "nothing");
    const auto ids = static_cast<int64_t>(ratios.size()) + 1;  // max_aspect_ratio_id + 1 rows
    const int64_t positions = (img / patch) * (img / patch) + 1;
    const int64_t layer = 4 * d * d + 2 * d * width + width + d + 4 * d;
    int64_t t = channels * patch * patch * d + d;
    t += positions * d + 1 + ids * tiles * positions * d;
    t += 2 * (ids * tiles * d + 1) + 4 * d;  // pre/post tile tables with gates; layernorm_pre/post
    t += (layers + global) * layer + 2 * global;
    t += vision_out * out + out;
    note = "vision: " + std::to_string(layers) + " + " + std::to_string(global) + " global layers x " + std::to_string(d) +
           " (MllamaVisionModel from vision_config)";
    return t;
  }
  if (projector == VisionProjector::pixel_unshuffle_mlp) {
    // LFM2-VL: SigLIP2 NaFlex's num_patches learned positions and its post_layernorm; the
    // projector over downsample_factor^2 patches (Lfm2VlMultiModalProjector): an optional
    // LayerNorm, linear_1 to projector_hidden_size and linear_2 to the text width, with
    // biases by projector_bias.
    if (!opt_int(v, "image_size", file)) p += opt_int(v, "num_patches", file).value_or(0) * d;
    p += 2 * d;
    const int64_t f = req_int(root, "downsample_factor", file);
    const int64_t in = d * f * f, mid = req_int(root, "projector_hidden_size", file);
    const bool bias = opt_bool(root, "projector_bias", file).value_or(true);
    p += (opt_bool(root, "projector_use_layernorm", file).value_or(true) ? 2 * in : 0) + in * mid + mid * out +
         (bias ? mid + out : 0);
  } else if (projector == VisionProjector::llava_mlp) {
    const YAML::Node fl = root["vision_feature_layer"];
    const int64_t in = d * (fl.IsDefined() && fl.IsSequence() ? static_cast<int64_t>(fl.size()) : 1);
    const bool bias = opt_bool(root, "multimodal_projector_bias", file).value_or(true);
    p += in * out + out * out + (bias ? 2 * out : 0);
  } else if (merge) {
    const int64_t in = d * *merge * *merge;
    p += in * in + in + in * out + out + 2 * d;
  } else {
    p += d * out + out;
  }
  note = "vision: " + std::to_string(layers) + " layers x " + std::to_string(d) + " (ViT estimate from vision_config)";
  return p;
}

// Voxtral's audio tower (transformers models/voxtral/modular_voxtral.py: VoxtralEncoder, a
// Whisper encoder as Qwen2AudioEncoder): conv1 num_mel_bins -> d and conv2 d -> d of 3
// taps with biases, max_source_positions learned positions, per layer q/k/v/o (no bias on
// k), two LayerNorms, fc1 / fc2 with biases, a final LayerNorm; then
// VoxtralMultiModalProjector: intermediate_size -> text width -> text width, no biases.
int64_t whisper_tower_params(const YAML::Node& a, const std::string& file, int64_t text_hidden, std::string& note) {
  const int64_t d = req_int(a, "hidden_size", file), layers = req_int(a, "num_hidden_layers", file);
  const int64_t ffn = req_int(a, "intermediate_size", file), mels = req_int(a, "num_mel_bins", file);
  const int64_t positions = req_int(a, "max_source_positions", file);
  const int64_t heads = req_int(a, "num_attention_heads", file);
  if (const auto kv = opt_int(a, "num_key_value_heads", file); kv && *kv != heads)
    throw InputError(file, "audio_config.num_key_value_heads", "num_attention_heads (" + std::to_string(heads) + ", Whisper's MHA)",
                     std::to_string(*kv));
  if (const auto hd = opt_int(a, "head_dim", file); hd && *hd * heads != d)
    throw InputError(file, "audio_config.head_dim", "hidden_size / num_attention_heads (" + std::to_string(d / heads) + ")",
                     std::to_string(*hd));
  int64_t p = mels * d * 3 + d + d * d * 3 + d + positions * d;
  p += layers * (4 * d * d + 3 * d + 2 * d * ffn + ffn + d + 4 * d);
  p += 2 * d;
  p += ffn * text_hidden + text_hidden * text_hidden;
  note = "audio: " + std::to_string(layers) + " layers x " + std::to_string(d) + " (Whisper encoder from audio_config)";
  return p;
}

// ------------------------------------------------------------ hybrid layer plans
void read_mamba2(Reader& r, ModelConfig& m, const char* heads, const char* head_dim, const char* state,
                 const char* groups, const char* kernel) {
  m.mamba_heads = r.req(heads);
  m.mamba_head_dim = r.req(head_dim);
  m.mamba_state = r.req(state);
  m.mamba_groups = r.i(groups).value_or(1);
  m.mamba_conv_kernel = r.i(kernel).value_or(4);
  m.mamba_inner = m.mamba_heads * m.mamba_head_dim;
}

// Nemotron-NAS block_configs (DeciLMDecoderLayer): per layer an attention block (no_op,
// or GQA with num_attention_heads / n_heads_in_group K/V heads) and an FFN block (no_op,
// or a gated MLP of _ffn_mult_to_intermediate_size(ffn_mult, hidden)); each present block
// has its RMSNorm. Every other variant the format can state is refused by its path.
void apply_nas_blocks(Reader& r, ModelConfig& m) {
  const std::string& file = r.file;
  const auto L = static_cast<size_t>(m.num_layers);
  r.use({"block_configs"});
  const YAML::Node blocks = r.n["block_configs"];
  if (!blocks.IsDefined() || !blocks.IsSequence() || blocks.size() != L)
    throw InputError(file, "block_configs", "a list of " + std::to_string(L) + " blocks (num_hidden_layers)",
                     blocks.IsSequence() ? std::to_string(blocks.size()) + " blocks" : "no list");
  const auto shown = [](const YAML::Node& v) { return v.IsScalar() ? "'" + v.Scalar() + "'" : std::string("a non-scalar"); };
  const auto present = [](const YAML::Node& v) { return v.IsDefined() && !v.IsNull(); };
  int64_t group = 0;  // n_heads_in_group of the first attention layer
  size_t group_layer = 0;
  m.block_norms = true;
  for (size_t l = 0; l < L; ++l) {
    const std::string at = "block_configs[" + std::to_string(l) + "]";
    const YAML::Node b = blocks[l];
    if (!b.IsMap()) throw InputError(file, at, "a mapping with attention and ffn", shown(b));
    for (const auto& kv : b) {
      const std::string k = kv.first.Scalar();
      if (k != "attention" && k != "ffn")
        throw InputError(file, at + "." + k, "only attention and ffn (kvplan cannot place a '" + k + "' block)", "the key");
    }
    // Flags that must be absent, null or false, and values that must be absent or null, for
    // the layer kvplan counts; keys outside these lists may change the layer: refused.
    const auto part = [&](const char* name, std::initializer_list<const char*> falses,
                          std::initializer_list<const char*> nulls, std::initializer_list<const char*> read) {
      const YAML::Node p = b[name];
      const std::string where = at + "." + name;
      if (!p.IsDefined() || !p.IsMap()) throw InputError(file, where, "a mapping", present(p) ? shown(p) : "nothing");
      for (const auto& kv : p) {
        const std::string k = kv.first.Scalar();
        const auto is = [&](std::initializer_list<const char*> list) {
          return std::any_of(list.begin(), list.end(), [&](const char* x) { return k == x; });
        };
        const YAML::Node v = kv.second;
        if (k == "no_op" || is(falses)) {
          if (present(v) && !(v.IsScalar() && (v.Scalar() == "false" || v.Scalar() == "true")))
            throw InputError(file, where + "." + k, "true or false", shown(v));
          if (k != "no_op" && present(v) && v.Scalar() == "true")
            throw InputError(file, where + "." + k, "false (kvplan does not model this block variant)", "true");
        } else if (is(nulls)) {
          if (present(v)) throw InputError(file, where + "." + k, "null (kvplan does not model this block variant)", shown(v));
        } else if (!is(read)) {
          throw InputError(file, where + "." + k, "a key kvplan can place (docs/models.md, nemotron-nas)", "the key");
        }
      }
      const YAML::Node no_op = p["no_op"];
      return std::pair{p, present(no_op) && no_op.Scalar() == "true"};
    };
    const auto [attn, attn_no_op] = part("attention", {"replace_with_linear", "unshifted_sink", "use_prefill_window_in_sink_attention"},
                                         {"sparsify", "window_length", "num_sink_tokens"}, {"n_heads_in_group"});
    const auto [ffn, ffn_no_op] = part("ffn", {"replace_with_linear"}, {"sparsify"}, {"ffn_mult"});
    if (attn_no_op) {
      m.layer_mixer.push_back(Mixer::none);
    } else {
      const std::string key = at + ".attention.n_heads_in_group";
      const YAML::Node g = attn["n_heads_in_group"];
      int64_t n = 0;
      if (g.IsScalar()) n = std::atoll(g.Scalar().c_str());
      if (!present(g) || n < 1 || std::to_string(n) != g.Scalar() || m.num_heads % n != 0)
        throw InputError(file, key, "a divisor of num_attention_heads (" + std::to_string(m.num_heads) + ")",
                         present(g) ? shown(g) : "nothing");
      if (group == 0) group = n, group_layer = l;
      if (n != group)
        throw InputError(file, key,
                         std::to_string(group) + " as in block_configs[" + std::to_string(group_layer) +
                             "] (one K/V head count in every attention layer; per-layer counts are not modelled)",
                         std::to_string(n));
      m.layer_mixer.push_back(Mixer::attention);
    }
    if (ffn_no_op) {
      m.layer_ffn.push_back(Ffn::none);
      m.layer_intermediate.push_back(0);
    } else {
      const std::string key = at + ".ffn.ffn_mult";
      const YAML::Node f = ffn["ffn_mult"];
      double mult = 0;
      try {
        mult = present(f) && f.IsScalar() ? f.as<double>() : 0;
      } catch (const YAML::Exception&) {
        mult = 0;
      }
      if (!(mult > 0) || !std::isfinite(mult)) throw InputError(file, key, "a positive number", present(f) ? shown(f) : "nothing");
      // _ffn_mult_to_intermediate_size: int(2 * ffn_mult * n_embd / 3) rounded up to 256,
      // in the same floating-point order.
      const auto width = static_cast<int64_t>(2.0 * mult * static_cast<double>(m.hidden_size) / 3.0);
      m.layer_ffn.push_back(Ffn::dense);
      m.layer_intermediate.push_back(detail::ceil_div(width, 256) * 256);
    }
  }
  m.num_kv_heads = group > 0 ? m.num_heads / group : m.num_heads;
  m.intermediate_size = *std::max_element(m.layer_intermediate.begin(), m.layer_intermediate.end());
}

void apply_layer_plan(Reader& r, ModelConfig& m, LayerPlan h) {
  const std::string& file = r.file;
  const auto L = static_cast<size_t>(m.num_layers);
  switch (h) {
    case LayerPlan::standard: return;
    case LayerPlan::nemotron_h: {
      // HF NemotronHConfig: hybrid_override_pattern, one character per block:
      // M = Mamba2, * = attention, - = MLP, E = MoE.
      r.use({"hybrid_override_pattern", "expand", "chunk_size", "mamba_num_heads", "mamba_head_dim", "ssm_state_size",
             "n_groups", "conv_kernel", "use_conv_bias", "mamba_proj_bias", "use_bias", "attention_head_dim", "mlp_bias"});
      const std::string pat = req_str(r.n, "hybrid_override_pattern", file);
      if (pat.size() != L)
        throw InputError(file, "hybrid_override_pattern", std::to_string(L) + " characters (num_hidden_layers)",
                         std::to_string(pat.size()));
      read_mamba2(r, m, "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel");
      m.mamba_conv_bias = opt_bool(r.n, "use_conv_bias", file).value_or(true);
      m.mamba_proj_bias = opt_bool(r.n, "use_bias", file).value_or(false);
      if (const auto hd = opt_int(r.n, "attention_head_dim", file)) m.head_dim = *hd;
      m.gated_mlp = false;  // relu2 MLP: up and down only
      for (char c : pat) {
        switch (c) {
          case 'M': m.layer_mixer.push_back(Mixer::mamba2), m.layer_ffn.push_back(Ffn::none); break;
          case '*': m.layer_mixer.push_back(Mixer::attention), m.layer_ffn.push_back(Ffn::none); break;
          case '-': m.layer_mixer.push_back(Mixer::none), m.layer_ffn.push_back(Ffn::dense); break;
          case 'E': m.layer_mixer.push_back(Mixer::none), m.layer_ffn.push_back(Ffn::moe); break;
          default:
            throw InputError(file, "hybrid_override_pattern", "M (Mamba2), * (attention), - (MLP) or E (MoE) per layer",
                             std::string("'") + c + "'");
        }
      }
      if (std::find(m.layer_ffn.begin(), m.layer_ffn.end(), Ffn::moe) != m.layer_ffn.end()) {
        r.use({"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
               "moe_shared_expert_intermediate_size"});
        m.num_experts = r.req("n_routed_experts");
        m.experts_per_token = r.req("num_experts_per_tok");
        m.moe_intermediate_size = r.req("moe_intermediate_size");
        m.shared_expert_intermediate_size = r.i("moe_shared_expert_intermediate_size").value_or(0);
      }
      return;
    }
    case LayerPlan::jamba: {
      // HF JambaConfig: attention every attn_layer_period layers from attn_layer_offset
      // (defaults 8, 4), MoE every expert_layer_period from expert_layer_offset (2, 1);
      // the others are Mamba (v1) layers with d_inner = mamba_expand x hidden.
      const int64_t ap = r.i("attn_layer_period").value_or(8), ao = r.i("attn_layer_offset", 0).value_or(4);
      const int64_t ep = r.i("expert_layer_period").value_or(2), eo = r.i("expert_layer_offset", 0).value_or(1);
      m.mamba_state = r.i("mamba_d_state").value_or(16);
      m.mamba_conv_kernel = r.i("mamba_d_conv").value_or(4);
      m.mamba_inner = r.i("mamba_expand").value_or(2) * m.hidden_size;
      m.mamba_dt_rank = detail::ceil_div(m.hidden_size, 16);
      if (const YAML::Node dt = r.n["mamba_dt_rank"]; dt.IsDefined() && dt.IsScalar() && dt.Scalar() != "auto")
        m.mamba_dt_rank = req_int(r.n, "mamba_dt_rank", file);
      r.use({"mamba_dt_rank", "mamba_conv_bias", "mamba_proj_bias"});
      m.mamba_conv_bias = opt_bool(r.n, "mamba_conv_bias", file).value_or(true);
      m.mamba_proj_bias = opt_bool(r.n, "mamba_proj_bias", file).value_or(false);
      m.mamba_dt_norms = true;
      for (size_t l = 0; l < L; ++l) {
        const auto i = static_cast<int64_t>(l);
        m.layer_mixer.push_back(i % ap == ao ? Mixer::attention : Mixer::mamba1);
        m.layer_ffn.push_back(m.num_experts > 0 && i % ep == eo ? Ffn::moe : Ffn::dense);
      }
      return;
    }
    case LayerPlan::gated_deltanet: {
      // HF Qwen3NextConfig: full attention every full_attention_interval layers (default
      // 4, the last of each group), Gated DeltaNet linear attention elsewhere; gated
      // q_proj; every layer MoE (decoder_sparse_step 1, no mlp_only_layers) with a
      // shared expert and its sigmoid gate.
      const int64_t every = r.i("full_attention_interval").value_or(4);
      m.linear_key_heads = r.req("linear_num_key_heads");
      m.linear_value_heads = r.req("linear_num_value_heads");
      m.linear_key_head_dim = r.req("linear_key_head_dim");
      m.linear_value_head_dim = r.req("linear_value_head_dim");
      m.linear_conv_kernel = r.i("linear_conv_kernel_dim").value_or(4);
      m.attn_output_gate = r.b("attn_output_gate").value_or(true);
      m.shared_expert_gate = true;
      // vLLM's Qwen3_5ForConditionalGenerationConfig (vllm/model_executor/models/config.py,
      // MODELS_CONFIG_MAP: Qwen3_5ForConditionalGeneration and its MoE twin only) sets
      // mamba_ssm_cache_dtype from the text config's mamba_ssm_dtype: the delta-rule state
      // is held in it, the conv state in the model dtype. The text-only architectures keep
      // the model dtype.
      r.use({"mamba_ssm_dtype", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings"});
      if (has(r.n, "mamba_ssm_dtype") &&
          (m.architecture == "Qwen3_5ForConditionalGeneration" || m.architecture == "Qwen3_5MoeForConditionalGeneration"))
        m.ssm_state_dtype = parse_dtype_key(r.n, "mamba_ssm_dtype", file, m.torch_dtype);
      r.use({"layer_types", "decoder_sparse_step", "mlp_only_layers", "shared_expert_intermediate_size"});
      const YAML::Node types = r.n["layer_types"];
      for (size_t l = 0; l < L; ++l) {
        bool full = (static_cast<int64_t>(l) + 1) % every == 0;
        if (types.IsDefined() && types.IsSequence() && types.size() == L)
          full = types[l].IsScalar() && types[l].Scalar() == "full_attention";
        m.layer_mixer.push_back(full ? Mixer::attention : Mixer::linear_attention);
      }
      m.layer_window.clear();
      return;
    }
    case LayerPlan::mimo_v2: {
      // MiMo-V2-Flash: hybrid_layer_pattern 1 = sliding layer with its own swa_* heads and
      // head sizes, 0 = full layer (head_dim for Q/K, v_head_dim for V); moe_layer_freq
      // lists MoE (1) and dense (0) layers.
      r.use({"hybrid_layer_pattern", "moe_layer_freq", "sliding_window_size", "attention_chunk_size"});
      const YAML::Node pat = r.n["hybrid_layer_pattern"], moe = r.n["moe_layer_freq"];
      if (!pat.IsDefined() || !pat.IsSequence() || pat.size() != L)
        throw InputError(file, "hybrid_layer_pattern", "a list of " + std::to_string(L) + " entries", "");
      if (!moe.IsDefined() || !moe.IsSequence() || moe.size() != L)
        throw InputError(file, "moe_layer_freq", "a list of " + std::to_string(L) + " entries", "");
      const int64_t window = r.req("sliding_window");
      m.swa_num_heads = r.req("swa_num_attention_heads");
      m.swa_num_kv_heads = r.req("swa_num_key_value_heads");
      m.swa_head_dim = r.req("swa_head_dim");
      m.swa_v_head_dim = r.req("swa_v_head_dim");
      m.attn_v_head_dim = r.req("v_head_dim");
      m.layer_window.assign(L, 0);
      for (size_t l = 0; l < L; ++l) {
        if (pat[l].as<int64_t>() == 1) m.layer_window[l] = window;
        m.layer_ffn.push_back(moe[l].as<int64_t>() == 1 ? Ffn::moe : Ffn::dense);
      }
      return;
    }
    case LayerPlan::nemotron_nas: {
      apply_nas_blocks(r, m);
      return;
    }
    case LayerPlan::gemma4: {
      // Gemma4TextConfig (see the registry row): sliding layers keep head_dim and
      // num_key_value_heads (kvplan's swa_* geometry), full layers take global_head_dim and,
      // with attention_k_eq_v, num_global_key_value_heads and no V projection.
      r.use({"vocab_size_per_layer_input", "use_double_wide_mlp", "final_logit_softcapping", "use_bidirectional_attention"});
      if (const auto ple = r.i("hidden_size_per_layer_input", 0); ple && *ple > 0)
        throw InputError(file, "hidden_size_per_layer_input",
                         "0 (the per-layer embeddings of Gemma-4 E2B/E4B are not modelled)", std::to_string(*ple));
      if (const auto shared = r.i("num_kv_shared_layers", 0); shared && *shared > 0)
        throw InputError(file, "num_kv_shared_layers", "0 (Gemma-4's KV-shared layers are not modelled)",
                         std::to_string(*shared));
      if (m.layer_window.empty())
        throw InputError(file, "layer_types", "Gemma-4's sliding_attention / full_attention list", "nothing");
      const bool k_eq_v = r.b("attention_k_eq_v").value_or(false);
      m.swa_num_heads = m.num_heads;
      m.swa_num_kv_heads = m.num_kv_heads;
      m.swa_head_dim = m.swa_v_head_dim = m.head_dim;
      m.head_dim = r.i("global_head_dim").value_or(m.head_dim);
      if (k_eq_v) m.num_kv_heads = r.req("num_global_key_value_heads");
      if (m.num_heads % m.num_kv_heads != 0)
        throw InputError(file, "num_global_key_value_heads",
                         "a divisor of num_attention_heads (" + std::to_string(m.num_heads) + ")",
                         std::to_string(m.num_kv_heads));
      m.attn_k_eq_v = k_eq_v;
      if (r.b("enable_moe_block").value_or(false)) {
        if (m.num_experts == 0) m.num_experts = r.req("num_experts");
        m.moe_intermediate_size = r.req("moe_intermediate_size");
        // The dense MLP runs beside the routed experts in every layer: a shared expert of
        // intermediate_size without a gate.
        m.shared_expert_intermediate_size = m.intermediate_size;
        m.shared_expert_gate = false;
        m.router_scales = true;
        m.moe_layer_norms = 3;  // pre_feedforward_layernorm_2, post_feedforward_layernorm_1 and _2
      } else {
        m.num_experts = m.experts_per_token = 0;  // no MoE block without enable_moe_block
      }
      return;
    }
    case LayerPlan::lfm2: {
      // Lfm2Config / Lfm2DecoderLayer (see the registry row): layer_types name each layer
      // conv (Lfm2ShortConv) or full_attention; without them full_attn_idxs lists the
      // attention layers, and without either every layer attends (the class's default).
      r.use({"layer_types", "full_attn_idxs", "conv_dim_out", "block_dim", "block_use_swiglu"});
      const YAML::Node types = r.n["layer_types"], idxs = r.n["full_attn_idxs"];
      if (has(r.n, "layer_types") && (!types.IsSequence() || types.size() != L))
        throw InputError(file, "layer_types", "a list of " + std::to_string(L) + " layer types (conv or full_attention)", "");
      std::vector<bool> attends(L, !has(r.n, "layer_types") && !has(r.n, "full_attn_idxs"));
      if (has(r.n, "layer_types")) {
        for (size_t l = 0; l < L; ++l) attends[l] = types[l].IsScalar() && types[l].Scalar() == "full_attention";
      } else if (has(r.n, "full_attn_idxs")) {
        if (!idxs.IsSequence()) throw InputError(file, "full_attn_idxs", "a list of layer indices", "");
        for (const auto& i : idxs) {
          const auto l = i.IsScalar() ? std::atoll(i.Scalar().c_str()) : -1;
          if (l < 0 || static_cast<size_t>(l) >= L)
            throw InputError(file, "full_attn_idxs", "layer indices below num_hidden_layers (" + std::to_string(L) + ")", "");
          attends[static_cast<size_t>(l)] = true;
        }
      }
      for (size_t l = 0; l < L; ++l) m.layer_mixer.push_back(attends[l] ? Mixer::attention : Mixer::short_conv);
      m.layer_window.clear();
      // HF builds the conv, its projections and the MLP input on hidden_size; vLLM on
      // conv_dim / conv_dim_out / block_dim: a checkpoint where they differ is refused.
      for (const char* k : {"conv_dim", "conv_dim_out", "block_dim"})
        if (const auto v = r.i(k); v && *v != m.hidden_size)
          throw InputError(file, k, "hidden_size (" + std::to_string(m.hidden_size) + ")", std::to_string(*v));
      if (const auto swiglu = r.b("block_use_swiglu"); swiglu && !*swiglu)
        throw InputError(file, "block_use_swiglu", "true (Lfm2MLP is always SwiGLU)", "false");
      m.short_conv_dim = m.hidden_size;
      m.short_conv_kernel = r.req("conv_L_cache", 2);
      m.short_conv_bias = r.b("conv_bias").value_or(false);
      // Lfm2MLP: int(2 x block_ff_dim / 3) with block_auto_adjust_ff_dim, then (a multiplier
      // given) int(multiplier x that) rounded up to block_multiple_of.
      int64_t width = has(r.n, "block_ff_dim") ? r.req("block_ff_dim") : r.req("intermediate_size");
      r.use({"block_ff_dim", "intermediate_size", "block_ffn_dim_multiplier"});
      if (r.b("block_auto_adjust_ff_dim").value_or(true)) {
        width = 2 * width / 3;
        const YAML::Node mult = r.n["block_ffn_dim_multiplier"];
        const double factor = !mult.IsDefined() ? 1.0 : mult.IsNull() ? 0.0 : opt_num(r.n, "block_ffn_dim_multiplier", file, 1e-9).value_or(1.0);
        if (factor > 0) {
          const int64_t of = r.req("block_multiple_of");
          width = detail::ceil_div(static_cast<int64_t>(factor * static_cast<double>(width)), of) * of;
        }
      }
      m.intermediate_size = width;
      return;
    }
    case LayerPlan::mllama: {
      // MllamaTextModel: the layers in cross_attention_layers attend to the image tokens.
      r.use({"cross_attention_layers"});
      const YAML::Node cross = r.n["cross_attention_layers"];
      if (!cross.IsDefined() || !cross.IsSequence() || cross.size() == 0)
        throw InputError(file, "cross_attention_layers", "a list of the cross-attention layers' indices", "nothing");
      m.layer_mixer.assign(L, Mixer::attention);
      for (const auto& c : cross) {
        const auto l = c.IsScalar() ? std::atoll(c.Scalar().c_str()) : -1;
        if (l < 0 || static_cast<size_t>(l) >= L)
          throw InputError(file, "cross_attention_layers", "layer indices below num_hidden_layers (" + std::to_string(L) + ")",
                           c.IsScalar() ? "'" + c.Scalar() + "'" : "a non-scalar");
        m.layer_mixer[static_cast<size_t>(l)] = Mixer::cross_attention;
      }
      m.extra_embedding_rows = 8;  // MllamaTextModel.embed_tokens: vocab_size + 8 rows
      return;
    }
    case LayerPlan::llama4: {
      // HF Llama4TextConfig: MoE layers every interleave_moe_layer_step (from step - 1),
      // experts of intermediate_size plus one shared expert of the same width, dense
      // layers of intermediate_size_mlp; chunked local attention (attention_chunk_size)
      // on RoPE layers, global NoPE attention where no_rope_layers is 0 (default every
      // 4th). A chunked layer holds at most one chunk: kvplan caps it like a window.
      const int64_t step = r.i("interleave_moe_layer_step").value_or(1);
      const int64_t chunk = r.i("attention_chunk_size").value_or(8192);
      m.moe_intermediate_size = m.intermediate_size;
      m.intermediate_size = r.i("intermediate_size_mlp").value_or(m.intermediate_size);
      m.num_shared_experts = 1;
      r.use({"no_rope_layers", "no_rope_layer_interval", "moe_layers"});
      const YAML::Node nrl = r.n["no_rope_layers"];
      m.layer_window.assign(L, 0);
      for (size_t l = 0; l < L; ++l) {
        const auto i = static_cast<int64_t>(l);
        const bool rope = nrl.IsDefined() && nrl.IsSequence() && nrl.size() == L ? nrl[l].as<int64_t>() != 0 : (i + 1) % 4 != 0;
        if (rope) m.layer_window[l] = chunk;
        m.layer_ffn.push_back((i + 1) % step == 0 ? Ffn::moe : Ffn::dense);
      }
      return;
    }
  }
}

// DeepSeek-V4's compressed sparse attention (the registry row's sources): its per-layer
// compress ratios and the shapes of the projections, indexer and hyper-connections.
void read_compressed_sparse(Reader& r, ModelConfig& m) {
  const std::string& file = r.file;
  if (m.num_kv_heads != 1)
    throw InputError(file, "num_key_value_heads", "1 (DeepSeek-V4 caches one K=V latent per token)",
                     std::to_string(m.num_kv_heads));
  m.csa_window = r.req("sliding_window");
  m.q_lora_rank = r.req("q_lora_rank");
  m.qk_rope_head_dim = r.req("qk_rope_head_dim");
  if (m.qk_rope_head_dim >= m.head_dim || (m.head_dim - m.qk_rope_head_dim) % 64 != 0)
    throw InputError(file, "qk_rope_head_dim",
                     "below head_dim (" + std::to_string(m.head_dim) +
                         ") by a multiple of 64 (the fp8 part of the cached latent has a scale per 64)",
                     std::to_string(m.qk_rope_head_dim));
  m.o_groups = r.req("o_groups");
  m.o_lora_rank = r.req("o_lora_rank");
  if (m.num_heads % m.o_groups != 0)
    throw InputError(file, "o_groups", "a divisor of num_attention_heads (" + std::to_string(m.num_heads) + ")",
                     std::to_string(m.o_groups));
  m.hc_mult = r.req("hc_mult");
  m.hash_layers = r.i("num_hash_layers", 0).value_or(0);
  if (m.hash_layers > m.num_layers)
    throw InputError(file, "num_hash_layers", "at most num_hidden_layers (" + std::to_string(m.num_layers) + ")",
                     std::to_string(m.hash_layers));
  m.index_head_dim = r.req("index_head_dim");
  if (m.index_head_dim % 128 != 0)
    throw InputError(file, "index_head_dim", "a multiple of 128 (the indexer cache has an fp32 scale per 128)",
                     std::to_string(m.index_head_dim));
  m.index_heads = r.req("index_n_heads");
  r.use({"compress_rope_theta", "compress_rope_parameters", "qk_nope_head_dim", "kv_lora_rank"});
  // The list may go on past the decoder layers for the MTP layers, which vLLM gives no
  // compression (DeepseekV4Attention: compress_ratio 1 from num_hidden_layers on).
  r.use({"compress_ratios"});
  const YAML::Node ratios = r.n["compress_ratios"];
  if (!ratios.IsDefined() || !ratios.IsSequence() || static_cast<int64_t>(ratios.size()) < m.num_layers)
    throw InputError(file, "compress_ratios",
                     "a list of at least num_hidden_layers (" + std::to_string(m.num_layers) + ") compress ratios",
                     ratios.IsDefined() && ratios.IsSequence() ? std::to_string(ratios.size()) + " entries" : "nothing");
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const YAML::Node v = ratios[static_cast<size_t>(l)];
    const std::string t = v.IsScalar() ? v.Scalar() : "a non-scalar";
    // vLLM: max(1, ratio); only 1, 4 and 128 have kernels (DeepseekV4MLAAttention._forward_decode).
    if (t != "0" && t != "1" && t != "4" && t != "128")
      throw InputError(file, "compress_ratios", "0, 1, 4 or 128 for each layer (vLLM's kernels)", "'" + t + "'");
    m.layer_compress_ratio.push_back(std::max<int64_t>(1, std::stoll(t)));
  }
  m.index_topk = r.req("index_topk");  // the ratio-4 entries each query attends (DeepseekV4Indexer)
}

ModelConfig parse_lm(Reader& r, const Family* fam, ModelConfig m) {
  const YAML::Node& n = r.n;
  const std::string& file = r.file;
  if (fam)
    for (const FixedKey& f : fam->fixed) {
      r.use({f.key});
      if (has(n, f.key) && (!n[f.key].IsScalar() || n[f.key].Scalar() != f.value))
        throw InputError(file, f.key, std::string(f.value) + " (the layer kvplan counts for " + fam->model_type + ")",
                         n[f.key].IsScalar() ? "'" + n[f.key].Scalar() + "'" : "a non-scalar");
    }
  m.hidden_size = r.req("hidden_size");
  m.num_layers = r.req("num_hidden_layers");
  // Per-layer tables (sliding windows) and loops are O(layers); published models have at
  // most a few hundred. Unbounded, 10^12 layers with a sliding window ran out of memory
  // and 3·10^8 ran for minutes (tests/bad_inputs/models/layers_too_many.yaml).
  constexpr int64_t kMaxLayers = 65536;
  if (m.num_layers > kMaxLayers)
    throw InputError(file, "num_hidden_layers", "at most " + std::to_string(kMaxLayers) + " layers",
                     std::to_string(m.num_layers));
  m.num_heads = r.req("num_attention_heads");
  m.vocab_size = r.req("vocab_size");
  // Qwen3_5MoeTextConfig has no intermediate_size: every layer is sparse (qwen3_5.py builds a
  // Qwen3NextSparseMoeBlock in each, whatever mlp_only_layers says).
  const bool all_sparse = fam && fam->all_sparse;
  const std::string width_key = fam ? fam->intermediate_key : "intermediate_size";
  if (!width_key.empty()) m.intermediate_size = all_sparse && !has(n, width_key) ? 0 : r.req(width_key.c_str());
  m.num_kv_heads = r.i("num_key_value_heads").value_or(m.num_heads);
  // vLLM's RWConfig for Falcon's first model_types: n_head_kv defaults to 1 and the new
  // decoder is forced at hidden_size 8192 ("Hack for falcon-40b").
  const bool rw_config = m.model_type == "RefinedWeb" || m.model_type == "RefinedWebModel";
  const bool falcon_nda = fam && fam->attention == Attention::falcon &&
                          (opt_bool(n, "new_decoder_architecture", file).value_or(false) ||
                           (rw_config && m.hidden_size == 8192));
  if (fam && fam->attention == Attention::falcon) {
    // HF FalconConfig: multi_query (default true) = one K/V head unless
    // new_decoder_architecture, which uses num_kv_heads (RWConfig: n_head_kv).
    r.use({"multi_query", "new_decoder_architecture", "parallel_attn", "num_kv_heads", "n_head_kv"});
    if (falcon_nda) {
      m.num_kv_heads = opt_int(n, "num_kv_heads", file).value_or(opt_int(n, "n_head_kv", file).value_or(rw_config ? 1 : m.num_heads));
    } else if (opt_bool(n, "multi_query", file).value_or(true)) {
      m.num_kv_heads = 1;
    }
    m.intermediate_size = r.i("ffn_hidden_size").value_or(4 * m.hidden_size);
  }
  if (m.num_kv_heads > m.num_heads || m.num_heads % m.num_kv_heads != 0)
    throw InputError(file, "num_key_value_heads",
                     "a divisor of num_attention_heads (" + std::to_string(m.num_heads) + ")",
                     std::to_string(m.num_kv_heads));
  if (const auto hd = r.i("head_dim")) {
    m.head_dim = *hd;
  } else {
    if (m.hidden_size % m.num_heads != 0)
      throw InputError(file, "head_dim", "a head size (hidden_size is not a multiple of num_attention_heads)", "nothing");
    m.head_dim = m.hidden_size / m.num_heads;
  }
  m.tie_word_embeddings = r.b("tie_word_embeddings").value_or(fam ? fam->tie_default : false);
  m.max_position_embeddings = r.i("max_position_embeddings").value_or(0);
  if (fam && fam->learned_positions_offset >= 0) {
    if (m.max_position_embeddings == 0)
      throw InputError(file, "max_position_embeddings", "the learned position table's length", "nothing");
    m.learned_positions = m.max_position_embeddings + fam->learned_positions_offset;
  }
  // OPT's options that change the layer plan, read only at the values kvplan counts
  // (modeling_opt.py): embeddings of hidden_size (else project_in/out matrices),
  // pre-norm layers with the final LayerNorm, biases and LayerNorm weights present.
  if (const auto proj = r.i("word_embed_proj_dim"); proj && *proj != m.hidden_size)
    throw InputError(file, "word_embed_proj_dim",
                     "hidden_size (" + std::to_string(m.hidden_size) + "; the project_in/out matrices of a narrower "
                     "embedding are not modelled)",
                     std::to_string(*proj));
  for (const auto& [key, counted] : {std::pair{"do_layer_norm_before", true}, std::pair{"_remove_final_layer_norm", false},
                                     std::pair{"enable_bias", true}, std::pair{"layer_norm_elementwise_affine", true}})
    if (const auto v = r.b(key); v && *v != counted)
      throw InputError(file, key, std::string(counted ? "true" : "false") + " (the layer plan kvplan counts)",
                       counted ? "false" : "true");
  // Speculative decoding's extra layers: DeepSeek-V3's MTP module, an EAGLE-3 head's vocabulary.
  m.num_nextn_predict_layers = r.i("num_nextn_predict_layers", 0).value_or(0);
  m.draft_vocab_size = r.i("draft_vocab_size").value_or(0);
  const std::string dtype_key = has(n, "dtype") ? "dtype" : "torch_dtype";
  if (has(n, dtype_key)) m.torch_dtype = parse_dtype_key(n, dtype_key, file, m.torch_dtype);
  if (const YAML::Node rs = n["rope_scaling"]; rs.IsDefined() && !rs.IsNull()) {
    r.use({"rope_scaling"});
    if (!rs.IsMap()) throw InputError(file, "rope_scaling", "a mapping (rope_type, factor, ...) or null", rs.Scalar());
    m.rope_type = opt_str(rs, "rope_type", file).value_or(opt_str(rs, "type", file).value_or(""));
    if (m.rope_type.empty())
      throw InputError(file, "rope_scaling", "a 'type' or 'rope_type' key (vLLM requires one)", "neither");
    m.rope_factor = opt_num(rs, "factor", file, 1e-9).value_or(1.0);
    m.rope_original_max_position_embeddings = opt_int(rs, "original_max_position_embeddings", file).value_or(0);
    if (m.rope_type == "yarn" && m.rope_original_max_position_embeddings == 0)
      throw InputError(file, "rope_scaling.original_max_position_embeddings", "the pre-YaRN length (yarn needs it)",
                       "nothing");
  }
  // GELU MLPs with biases everywhere (no gate matrix): the GPT-2 lineage and Phi-1/2.
  const bool plain = fam ? fam->ungated : false;
  // LlamaMLP and its copies (SmolLM3, Voxtral's text model) put biases on the gated MLP's
  // three matrices with mlp_bias: not counted, so refused rather than under-counted.
  if (fam && !plain && r.b("mlp_bias").value_or(false))
    throw InputError(file, "mlp_bias", "false (biases on the gated MLP are not counted)", "true");
  m.gated_mlp = !plain;
  m.linear_bias = plain;
  m.lm_head_bias = fam && fam->lm_head_bias;
  m.norms_per_layer = fam ? fam->norms : 2;
  // Glm4MoeAttention: RMSNorm(head_dim) on q and k only with use_qk_norm (Llama-4's
  // use_qk_norm is a weightless L2 norm, no parameters).
  m.qk_norm = fam && (fam->qk_norm == QkNorm::always || fam->qk_norm == QkNorm::whole ||
                      (fam->qk_norm == QkNorm::by_use_qk_norm && r.b("use_qk_norm").value_or(false)));
  m.qk_norm_whole = fam && fam->qk_norm == QkNorm::whole;
  const bool attn_bias = r.b("attention_bias").value_or(false);
  m.qkv_bias = (fam && fam->qkv_bias_default) || attn_bias;
  m.o_bias = attn_bias && !(fam && fam->o_bias_never);
  if (fam && fam->attention == Attention::falcon) {
    m.linear_bias = opt_bool(n, "bias", file).value_or(false);
    m.qkv_bias = m.o_bias = m.linear_bias;
    m.norms_per_layer = falcon_nda ? 2 : 1;
  }

  m.num_experts = r.i("num_local_experts", 0).value_or(r.i("n_routed_experts", 0).value_or(r.i("num_experts", 0).value_or(0)));
  if (m.num_experts > 0) {
    m.experts_per_token =
        r.i("num_experts_per_tok").value_or(r.i("experts_per_token").value_or(r.i("top_k_experts").value_or(0)));
    if (m.experts_per_token == 0) m.experts_per_token = r.req("num_experts_per_tok");
    if (m.experts_per_token > m.num_experts)
      throw InputError(file, "num_experts_per_tok", "at most the number of experts (" + std::to_string(m.num_experts) + ")",
                       std::to_string(m.experts_per_token));
    m.moe_intermediate_size = r.i("moe_intermediate_size").value_or(0);
    m.num_shared_experts = r.i("n_shared_experts", 0).value_or(0);
    m.first_dense_layers = r.i("first_k_dense_replace", 0).value_or(0);
    m.shared_expert_intermediate_size = r.i("shared_expert_intermediate_size", 0).value_or(0);
    // Qwen2-MoE / Qwen3-MoE: MoE every decoder_sparse_step layers unless in mlp_only_layers.
    const int64_t step = r.i("decoder_sparse_step").value_or(1);
    const YAML::Node only = n["mlp_only_layers"];
    r.use({"mlp_only_layers", "moe_layer_freq"});
    if (m.shared_expert_intermediate_size > 0) m.shared_expert_gate = true;
    // Shared experts of their own width (BailingMoE): the same matrices as one MLP of their
    // summed width, with no sigmoid gate.
    if (fam && *fam->shared_expert_width_key != '\0' && m.num_shared_experts > 0)
      if (const auto w = r.i(fam->shared_expert_width_key)) {
        m.shared_expert_intermediate_size = detail::checked_add(
            m.shared_expert_intermediate_size, detail::checked_mul(m.num_shared_experts, *w, file.c_str()), file.c_str());
        m.num_shared_experts = 0;
      }
    if (step != 1 || (only.IsDefined() && only.IsSequence() && only.size() > 0)) {
      for (int64_t l = 0; l < m.num_layers; ++l) {
        bool dense = (l + 1) % step != 0 || l < m.first_dense_layers;
        if (only.IsDefined() && only.IsSequence())
          for (const auto& x : only) dense = dense || x.as<int64_t>() == l;
        m.layer_ffn.push_back(dense ? Ffn::dense : Ffn::moe);
      }
    }
    // The last MoE layer (ERNIE-4.5's moe_layer_end_index; -1 = the last layer): dense after it.
    if (const auto end = r.i("moe_layer_end_index", -1); end && *end != -1 && *end < m.num_layers - 1) {
      if (m.layer_ffn.empty())
        for (int64_t l = 0; l < m.num_layers; ++l) m.layer_ffn.push_back(l < m.first_dense_layers ? Ffn::dense : Ffn::moe);
      for (int64_t l = *end + 1; l < m.num_layers; ++l) m.layer_ffn[static_cast<size_t>(l)] = Ffn::dense;
    }
    if (all_sparse) m.layer_ffn.clear();
    if (has(n, "moe_layer_freq") && n["moe_layer_freq"].IsScalar() && n["moe_layer_freq"].Scalar() != "1" &&
        !(fam && fam->plan == LayerPlan::mimo_v2))
      throw InputError(file, "moe_layer_freq", "1 (a MoE block in every layer after first_k_dense_replace)",
                       "'" + n["moe_layer_freq"].Scalar() + "'");
  }
  m.kv_lora_rank = r.i("kv_lora_rank", 0).value_or(0);
  if (m.kv_lora_rank > 0) {
    m.q_lora_rank = r.i("q_lora_rank", 0).value_or(0);
    m.qk_rope_head_dim = r.req("qk_rope_head_dim");
    m.qk_nope_head_dim = r.req("qk_nope_head_dim");
    m.v_head_dim = r.req("v_head_dim");
    if (fam && fam->attention == Attention::mla_indexed) {
      m.index_head_dim = r.req("index_head_dim");
      m.index_heads = r.req("index_n_heads");
      r.use({"index_topk"});
    }
  }
  if (fam && fam->attention == Attention::compressed_sparse) read_compressed_sparse(r, m);
  if (fam && fam->attention == Attention::softmax_list && has(n, "attn_type_list")) {
    // MiniMax's attn_type_list (modeling_minimax_m2.py, as MiniMax-Text-01): 1 = softmax
    // attention, 0 = lightning (linear) attention; M2 has softmax attention in every layer.
    r.use({"attn_type_list"});
    const YAML::Node types = n["attn_type_list"];
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.num_layers)
      throw InputError(file, "attn_type_list", "a list of " + std::to_string(m.num_layers) + " layer types", "");
    for (const auto& t : types)
      if (!t.IsScalar() || t.Scalar() != "1")
        throw InputError(file, "attn_type_list", "1 (softmax attention) in every layer; kvplan cannot place lightning attention (0)",
                         "'" + (t.IsScalar() ? t.Scalar() : std::string("a non-scalar")) + "'");
  }
  // DeepSeek-V4's sliding_window is the window every layer keeps beside its compressed latents.
  if (!m.is_csa())
    m.layer_window = layer_windows(r, m,
                                   !fam                                       ? nullptr
                                   : fam->plan == LayerPlan::gated_deltanet ? "linear_attention"
                                   : fam->plan == LayerPlan::lfm2           ? "conv"
                                                                            : nullptr);
  if (fam) apply_layer_plan(r, m, fam->plan);
  if (fam && fam->o_bias_with_qkv) m.o_bias = m.qkv_bias;

  // A key that changes geometry but was not placed by this family: refuse.
  std::vector<std::string> unplaced;
  for (const char* k : kGeometryKeys) {
    if (!has(n, k) || std::find(r.used.begin(), r.used.end(), k) != r.used.end()) continue;
    if (trivially_default(n[k], k)) continue;
    unplaced.emplace_back(k);
  }
  if (!unplaced.empty()) {
    const std::string arch = m.architecture.empty() ? (m.model_type.empty() ? "this model" : m.model_type) : m.architecture;
    throw InputError(file, unplaced.front(),
                     "only keys kvplan can place for " + arch + " (docs/models.md lists the supported families)",
                     "keys it cannot place: " + node_key_list(unplaced));
  }
  if (m.num_layers > 0 && m.attention_layers() == 0)
    throw InputError(file, "num_hidden_layers", "at least one attention layer (the paged KV pool needs one)", "none");
  return m;
}

}  // namespace

namespace {
ModelConfig parse_model_unguarded(const std::string& text, const std::string& file) {
  ModelDocument doc = parse_model_document(text, file);
  const YAML::Node& root = doc.root;
  ModelConfig m;
  m.name = opt_str(root, "name", file).value_or(fs::path(file).stem().string());
  m.model_type = opt_str(root, "model_type", file).value_or("");
  const YAML::Node archs = root["architectures"];
  if (archs.IsDefined() && archs.IsSequence() && archs.size() > 0 && archs[0].IsScalar()) m.architecture = archs[0].Scalar();

  // The language model: the root, or a wrapper's nested text config.
  YAML::Node lm = root;
  const std::string& lm_file = file;
  bool nested_lm = false;
  if (const Family* w = find_wrapper(m.model_type)) {
    // A missing key yields an invalid node, which reset() would throw on: check first.
    const YAML::Node nested = root[w->text_key];
    const bool nested_ok = nested.IsDefined() && nested.IsMap();
    if (!nested_ok && w->top_level && has(root, "hidden_size")) {
      m.model_type += "_text";  // the language keys are the root's own
    } else {
      if (!nested_ok) throw InputError(file, w->text_key, "the language model's config (a mapping)", "nothing");
      lm.reset(nested);
      nested_lm = true;
      m.model_type = opt_str(lm, "model_type", file).value_or(m.model_type + "_text");
      if (!find_family(m.model_type))
        throw InputError(file, std::string(w->text_key) + ".model_type",
                         "a supported language model (" + supported_model_types() + ")", "'" + m.model_type + "'");
    }
  }
  const bool described = !m.model_type.empty() || !m.architecture.empty();
  const Family* fam = find_family(m.model_type);
  if (!fam && m.model_type.empty()) fam = find_family_by_architecture(m.architecture);
  std::string note;
  if (described && !fam) {
    const std::string what = (m.architecture.empty() ? std::string() : "'" + m.architecture + "' ") +
                             (m.model_type.empty() ? std::string() : "(model_type '" + m.model_type + "')");
    note = standard_decoder_note(lm, file, what);
  }
  if (fam && !fam->aliases.empty()) {
    // The family's own spelling of a common key, read under the common name.
    YAML::Node renamed = YAML::Clone(lm);
    for (const KeyAlias& a : fam->aliases) {
      if (!has(renamed, a.key)) continue;
      if (has(renamed, a.means))
        throw InputError(file, a.key, std::string("either ") + a.key + " or " + a.means + " (the same setting)", "both");
      renamed[a.means] = YAML::Clone(renamed[a.key]);
      renamed.remove(a.key);
    }
    lm.reset(renamed);
  }
  Reader r{lm, lm_file, fam, nested_lm, {}};
  m = parse_lm(r, fam, m);
  m.reading_note = note;

  // quantization_config: at the root (most), or in the text config.
  const bool mlp_beside = fam && fam->mlp_beside_experts;
  const YAML::Node qc = has(root, "quantization_config") ? root["quantization_config"] : lm["quantization_config"];
  if (has(root, "quantization_config") || has(lm, "quantization_config"))
    m.weight_quant = is_mixed_precision(qc) ? parse_mixed_precision(qc, doc, file, m) : parse_quantization(qc, file, mlp_beside);
  // DeepSeek-V4's expert_dtype (vLLM DeepseekV4FP8Config.get_quant_method): fp4 stores the
  // routed experts in MXFP4 (e2m1, a ue8m0 scale per 32: Mxfp4MoEMethod) beside the block-FP8
  // linears; fp8, or the key absent, in the block-FP8 format of quantization_config.
  if (const auto ed = opt_str(lm, "expert_dtype", file); ed && fam && fam->attention == Attention::compressed_sparse) {
    if (*ed != "fp4" && *ed != "fp8") throw InputError(file, "expert_dtype", "fp4 or fp8 (vLLM's DeepSeek-V4 expert formats)", "'" + *ed + "'");
    if (*ed == "fp4") {
      if (m.weight_quant.method != "fp8")
        throw InputError(file, "expert_dtype", "fp8, or fp4 with quantization_config.quant_method fp8 (MXFP4 experts beside FP8 linears)",
                         "'fp4' with quant_method '" + m.weight_quant.method + "'");
      QuantSpec mx;
      mx.method = "mxfp4", mx.engine_method = m.weight_quant.engine_method;
      mx.bits = 4, mx.group = 32, mx.scale_bits = 8;
      m.weight_quant.parts[static_cast<size_t>(WeightPart::experts)] = std::make_shared<const QuantSpec>(mx);
    }
  }

  // Vision towers of multimodal checkpoints; an audio tower where the wrapper names its
  // kind (Voxtral's Whisper encoder), refused elsewhere (not counted).
  const Family* wrapper = find_wrapper(opt_str(root, "model_type", file).value_or(""));
  if (const YAML::Node v = root["vision_config"]; v.IsDefined() && v.IsMap())
    m.tower_params = tower_params(root, v, file, m.hidden_size, wrapper ? wrapper->projector : VisionProjector::linear,
                                  m.tower_note);
  if (fam && fam->plan == LayerPlan::mllama) {
    // The cross-attention layers cache one image's vision states per request: max_num_tiles
    // tiles of (image_size / patch_size)^2 patches and a class token each.
    const YAML::Node v = root["vision_config"];
    if (!wrapper || wrapper->projector != VisionProjector::mllama || !v.IsDefined() || !v.IsMap())
      throw InputError(file, "vision_config", "Mllama's vision tower (its cross-attention layers cache its image tokens)",
                       "nothing");
    const int64_t img = req_int(v, "image_size", file), patch = req_int(v, "patch_size", file);
    m.cross_attention_tokens = req_int(v, "max_num_tiles", file) * ((img / patch) * (img / patch) + 1);
  }
  if (const YAML::Node a = root["audio_config"]; a.IsDefined() && !a.IsNull()) {
    if (!wrapper || wrapper->audio != AudioTower::whisper || !a.IsMap())
      throw InputError(file, "audio_config", "a model without an audio tower (kvplan counts Voxtral's Whisper encoder only)",
                       "an audio tower");
    if (m.tower_params > 0) throw InputError(file, "audio_config", "one tower (vision or audio)", "both");
    m.tower_params = whisper_tower_params(a, file, m.hidden_size, m.tower_note);
  }

  m.published_params = opt_int(root, "params", file);
  m.source = opt_str(root, "source", file).value_or(file);
  // Sizes too large to count in 64 bits are this file's fault: say so naming it, rather
  // than later as an anonymous overflow (tests/bad_inputs/models/*overflow*.yaml).
  try {
    (void)count_params(m);
  } catch (const InputError&) {
    throw InputError(file, "", "a model whose parameter count fits in 64 bits (below 9.2e18)", "an overflow");
  }
  return m;
}
}  // namespace

ModelConfig parse_model(const std::string& text, const std::string& file) {
  // yaml-cpp throws its own exceptions for a key read as a list that is absent and for a
  // value of the wrong type deep inside a family's keys: bad input, named by yaml-cpp.
  try {
    return parse_model_unguarded(text, file);
  } catch (const YAML::Exception& e) {
    throw InputError(file, "", "keys of the types the model's family uses", e.what());
  }
}

ModelConfig load_model(const std::string& name_or_path) {
  // A checkpoint folder or a Hub id (org/name) in the local Hugging Face cache, named
  // as the user named it: every snapshot's file is called config.json.
  if (const auto files = find_checkpoint(name_or_path)) {
    ModelConfig m = parse_model(checkpoint_config_text(*files), files->config.string());
    m.name = name_or_path;
    return m;
  }
  const fs::path p = resolve("models", name_or_path);
  return parse_model(read_file(p), p.string());
}

namespace {

//! The `kv_links` block of a GPU file (docs/formats.md "GPU file"): every key known,
//! each link a {bytes_per_s, latency_s} pair, at least one link.
KvLinks parse_kv_links(const YAML::Node& n, const std::string& file) {
  if (!n.IsMap()) throw InputError(file, "kv_links", "a mapping of links (nvlink, pcie, rdma, ethernet) and gpus_per_node", "not a mapping");
  static const char* const kLinks[] = {"nvlink", "pcie", "rdma", "ethernet"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (k != "gpus_per_node" && std::find(std::begin(kLinks), std::end(kLinks), k) == std::end(kLinks))
      throw InputError(file, "kv_links." + k, "one of the keys gpus_per_node, nvlink, pcie, rdma, ethernet", "an unknown key");
  }
  KvLinks links;
  try {
    links.gpus_per_node = req_int(n, "gpus_per_node", file);
  } catch (const InputError&) {
    const YAML::Node v = n["gpus_per_node"];
    throw InputError(file, "kv_links.gpus_per_node", "an integer >= 1 (the key is required)",
                     !v.IsDefined() ? "nothing" : v.IsScalar() ? "'" + v.Scalar() + "'" : "not an integer");
  }
  for (const char* name : kLinks) {
    const YAML::Node l = n[name];
    if (!l.IsDefined()) continue;
    const std::string key = std::string("kv_links.") + name;
    if (!l.IsMap()) throw InputError(file, key, "a mapping {bytes_per_s, latency_s}", "not a mapping");
    for (const auto& kv : l) {
      const std::string k = kv.first.as<std::string>();
      if (k != "bytes_per_s" && k != "latency_s")
        throw InputError(file, key + "." + k, "one of the keys bytes_per_s, latency_s", "an unknown key");
    }
    const auto number = [&](const char* k, double min_value) {
      const YAML::Node v = l[k];
      try {
        return req_num(l, k, file, min_value);
      } catch (const InputError&) {
        throw InputError(file, key + "." + k,
                         min_value > 0 ? "a positive finite number (the key is required)"
                                       : "a finite number >= 0 (the key is required)",
                         !v.IsDefined() ? "nothing" : v.IsScalar() ? "'" + v.Scalar() + "'" : "not a number");
      }
    };
    const KvLink link{number("bytes_per_s", 1), number("latency_s", 0)};
    if (std::string_view(name) == "nvlink") links.nvlink = link;
    else if (std::string_view(name) == "pcie") links.pcie = link;
    else if (std::string_view(name) == "rdma") links.rdma = link;
    else links.ethernet = link;
  }
  if (!links.nvlink && !links.pcie && !links.rdma && !links.ethernet)
    throw InputError(file, "kv_links", "at least one link (nvlink, pcie, rdma or ethernet)", "none");
  return links;
}

// `measured:` published microbenchmarks' achievable ceilings, each with its source:
// `hbm_bandwidth_bytes_per_s` (+ `source`), at most the datasheet bandwidth, and
// `gemm_flops_per_s` at `gemm_dtype` (+ `gemm_source`), at most that dtype's datasheet peak.
// At least one is given; a figure without its source is refused.
void parse_measured(const YAML::Node& n, const std::string& file, GpuSpec& g) {
  const std::string keys = "hbm_bandwidth_bytes_per_s, source, gemm_flops_per_s, gemm_dtype, gemm_source";
  if (!n.IsMap()) throw InputError(file, "measured", "a mapping {" + keys + "}", "not a mapping");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (k != "hbm_bandwidth_bytes_per_s" && k != "source" && k != "gemm_flops_per_s" && k != "gemm_dtype" && k != "gemm_source")
      throw InputError(file, "measured." + k, "one of the keys " + keys, "an unknown key");
  }
  const auto figure = [&](const char* key, double bound, const std::string& expected) {
    const YAML::Node v = n[key];
    const double d = v.IsDefined() && v.IsScalar() ? v.as<double>(-1.0) : -1.0;
    if (!(std::isfinite(d) && d > 0 && d <= bound))
      throw InputError(file, std::string("measured.") + key, expected,
                       !v.IsDefined() ? "nothing" : v.IsScalar() ? "'" + v.Scalar() + "'" : "not a number");
    return d;
  };
  const auto source = [&](const char* key) {
    const YAML::Node src = n[key];
    if (!src.IsDefined() || !src.IsScalar() || src.Scalar().empty())
      throw InputError(file, std::string("measured.") + key, "the measurement's source (who measured it, how, where published)",
                       "nothing");
    return src.Scalar();
  };
  if (!n["hbm_bandwidth_bytes_per_s"].IsDefined() && !n["gemm_flops_per_s"].IsDefined())
    throw InputError(file, "measured.hbm_bandwidth_bytes_per_s", "a measured figure (hbm_bandwidth_bytes_per_s or gemm_flops_per_s)",
                     "neither");
  if (n["hbm_bandwidth_bytes_per_s"].IsDefined()) {
    g.measured_memory_bandwidth_bytes_per_s =
        figure("hbm_bandwidth_bytes_per_s", g.memory_bandwidth_bytes_per_s,
               "a positive number of bytes/s at most the datasheet memory_bandwidth_bytes_per_s (" +
                   YAML::Node(g.memory_bandwidth_bytes_per_s).Scalar() + ")");
    g.measured_source = source("source");
  }
  if (n["gemm_flops_per_s"].IsDefined()) {
    const YAML::Node dt = n["gemm_dtype"];
    const std::optional<DType> d = dt.IsDefined() && dt.IsScalar() ? parse_dtype(dt.Scalar()) : std::nullopt;
    if (!d || g.peak_flops.for_dtype(*d) <= 0)
      throw InputError(file, "measured.gemm_dtype", "the dtype the GEMMs were timed at, one with a peak_flops rate (fp16, bf16, fp8, int8)",
                       !dt.IsDefined() ? "nothing" : dt.IsScalar() ? "'" + dt.Scalar() + "'" : "not a dtype");
    const double peak = g.peak_flops.for_dtype(*d);
    g.measured_gemm_flops_per_s = figure(
        "gemm_flops_per_s", peak, "a positive number of FLOP/s at most the datasheet peak_flops at gemm_dtype (" + YAML::Node(peak).Scalar() + ")");
    g.measured_gemm_dtype = *d;
    g.measured_gemm_source = source("gemm_source");
  } else if (n["gemm_dtype"].IsDefined() || n["gemm_source"].IsDefined()) {
    throw InputError(file, "measured.gemm_flops_per_s", "the measured GEMM FLOP/s that gemm_dtype / gemm_source describe", "nothing");
  }
}

}  // namespace

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
  if (const YAML::Node l = n["kv_links"]; l.IsDefined() && !l.IsNull()) g.kv_links = parse_kv_links(l, file);
  if (const YAML::Node m = n["measured"]; m.IsDefined()) parse_measured(m, file, g);
  parse_gpu_platform(n, file, g);
  return g;
}

GpuSpec load_gpu(const std::string& name_or_path) {
  const fs::path p = resolve("gpus", name_or_path);
  return parse_gpu(read_file(p), p.string());
}

Calibration load_calibration(const std::string& name_or_path) {
  const fs::path resolved = resolve("calibration", name_or_path);
  // A catalog profile is named relative to the data folder, so reports read the same
  // wherever kvplan is installed.
  const std::string path =
      resolved == fs::path(name_or_path) ? name_or_path : (fs::path("configs") / "calibration" / resolved.filename()).string();
  const std::string text = read_file(resolved);
  // /2 files are JSON and may carry thousands of measurement rows: parsed as JSON.
  if (text.find("\"kvplan.calibration/2\"") != std::string::npos) {
    CalibrationFile f = parse_calibration_v2(text, path);
    fit_missing(f, path);
    return to_calibration(f, path);
  }
  const YAML::Node n = parse_yaml_mapping(text, path);
  const auto schema = opt_str(n, "schema", path);
  if (schema && *schema != "kvplan.calibration/1")
    throw InputError(path, "schema", "kvplan.calibration/1 or kvplan.calibration/2", "'" + *schema + "'");
  Calibration c;
  c.bandwidth_efficiency = req_num(n, "bandwidth_efficiency", path, 1e-3, 1);
  c.prefill_flops_efficiency = req_num(n, "prefill_flops_efficiency", path, 1e-3, 1);
  c.decode_flops_efficiency = opt_num(n, "decode_flops_efficiency", path, 1e-3, 1).value_or(c.prefill_flops_efficiency);
  c.runtime_reserve_bytes = opt_int(n, "runtime_reserve_bytes", path, 0);
  c.device = opt_str(n, "device", path).value_or("unknown");
  c.file = path;
  c.measured = true;
  return c;
}

}  // namespace kvplan::io
