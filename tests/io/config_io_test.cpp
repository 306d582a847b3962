// Loading model and GPU files (io/config_io.h): a Hugging Face config.json loads as is;
// every bad input names the file, the key and what was expected.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/config_io.h"
#include "io/yaml_util.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {
// Meta's Llama-3-8B config.json, verbatim (Hugging Face meta-llama/Meta-Llama-3-8B).
const char* kLlama3Json = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size": 128256
})";

const char* kMinimal = "hidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 4\nvocab_size: 100\nintermediate_size: 128\n";

std::string error_of(const std::string& text, const std::string& file = "m.yaml") {
  try {
    io::parse_model(text, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("a Hugging Face config.json loads unchanged") {
  const ModelConfig m = io::parse_model(kLlama3Json, "config.json");
  CHECK(m.name == "config");
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.torch_dtype == DType::bf16);
  CHECK(count_params(m).total() == 8030261248LL);  // Meta's published 8.03 B, exactly
}

namespace {
// facebook/opt-125m's config.json as the Hub serves it (transformers 4.21 era keys).
const char* kOpt125mJson = R"({
  "_name_or_path": "facebook/opt-125m", "_remove_final_layer_norm": false, "activation_dropout": 0.0,
  "activation_function": "relu", "architectures": ["OPTForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 2, "do_layer_norm_before": true, "dropout": 0.1, "eos_token_id": 2, "ffn_dim": 3072,
  "hidden_size": 768, "init_std": 0.02, "layerdrop": 0.0, "max_position_embeddings": 2048,
  "model_type": "opt", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1,
  "prefix": "</s>", "torch_dtype": "float16", "transformers_version": "4.21.0.dev0", "use_cache": true,
  "vocab_size": 50272, "word_embed_proj_dim": 768
})";
}  // namespace

TEST_CASE("OPT, vLLM's quickstart model: learned positions, a ReLU MLP and biases everywhere") {
  // modeling_opt.py, by hand for opt-125m (h = 768, 12 layers, ffn 3072, vocab 50272):
  //   per layer: q/k/v/out 4 x (768 x 768 + 768) = 2,362,368; fc1 768 x 3072 + 3072 =
  //   2,362,368; fc2 3072 x 768 + 768 = 2,360,064; two LayerNorms 2 x 2 x 768 = 3,072;
  //   = 7,087,872, x 12 = 85,054,464;
  //   embeddings 50272 x 768 = 38,608,896, learned positions (2048 + 2) x 768 = 1,574,400,
  //   final LayerNorm 1,536, LM head tied: 0.
  //   total 125,239,296: the parameter count of facebook/opt-125m (OPTForCausalLM).
  const ModelConfig m = io::parse_model(kOpt125mJson, "config.json");
  CHECK(m.learned_positions == 2050);
  CHECK(m.intermediate_size == 3072);
  CHECK_FALSE(m.gated_mlp);
  CHECK(m.tie_word_embeddings);
  CHECK(count_params(m).total() == 125239296);
  // MHA: 2 (K, V) x 12 layers x 12 heads x 64 x 2 B = 36,864 B per token in fp16.
  CHECK(kv_bytes_per_token(m, ServingOptions{}) == 36864);
  // opt-350m's narrower embeddings (project_in/out) and post-norm layers are refused by name.
  std::string narrow = kOpt125mJson;
  narrow.replace(narrow.find("\"word_embed_proj_dim\": 768"), 26, "\"word_embed_proj_dim\": 512");
  CHECK(error_of(narrow, "config.json").find("key 'word_embed_proj_dim': expected hidden_size (768") !=
        std::string::npos);
  std::string post = kOpt125mJson;
  post.replace(post.find("\"do_layer_norm_before\": true"), 28, "\"do_layer_norm_before\": false");
  CHECK(error_of(post, "config.json").find("key 'do_layer_norm_before': expected true") != std::string::npos);
}

namespace {
// tests/fixtures.h nas_small() as a DeciLM config.json writes it (the keys of
// nvidia/Llama-3_3-Nemotron-Super-49B-v1's block_configs; intermediate_size and
// num_key_value_heads null, as there).
const char* kNasJson = R"({
  "architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas", "hidden_size": 1024,
  "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": null, "intermediate_size": null,
  "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "block_configs": [
    {"attention": {"n_heads_in_group": 4, "no_op": false, "num_sink_tokens": null, "replace_with_linear": false,
                   "sparsify": null, "unshifted_sink": false, "use_prefill_window_in_sink_attention": false,
                   "window_length": null},
     "ffn": {"ffn_mult": 2.625, "no_op": false, "replace_with_linear": false, "sparsify": null}},
    {"attention": {"n_heads_in_group": null, "no_op": true}, "ffn": {"ffn_mult": 1.0, "no_op": false}},
    {"attention": {"n_heads_in_group": 4, "no_op": false}, "ffn": {"ffn_mult": null, "no_op": true}},
    {"attention": {"n_heads_in_group": null, "no_op": true}, "ffn": {"ffn_mult": 0.5, "no_op": false}}
  ]
})";

std::string nas_with(const std::string& from, const std::string& to) {
  std::string s = kNasJson;
  s.replace(s.find(from), from.size(), to);
  return s;
}
}  // namespace

TEST_CASE("Nemotron-NAS: block_configs give each layer its attention, its MLP width or a no-op") {
  const ModelConfig m = io::parse_model(kNasJson, "config.json");
  const ModelConfig want = kvplan::test::nas_small();
  CHECK(m.num_kv_heads == 2);  // 8 heads / n_heads_in_group 4
  CHECK(m.layer_mixer == want.layer_mixer);
  CHECK(m.layer_ffn == want.layer_ffn);
  // int(2 x ffn_mult x 1024 / 3) rounded up to 256: 1792, 682 -> 768, 341 -> 512.
  CHECK(m.layer_intermediate == std::vector<int64_t>{1792, 768, 0, 512});
  CHECK(m.intermediate_size == 1792);
  CHECK(m.block_norms);
  CHECK(count_params(m).total() == 16734208);  // by hand in tests/planner/engine_test.cpp
  CHECK(kv_bytes_per_token(m, ServingOptions{}) == 2048);  // 2 x 2 heads x 128 x 2 B x 2 layers
  // Every variant kvplan does not count is refused by its path.
  CHECK(error_of(nas_with("\"replace_with_linear\": false", "\"replace_with_linear\": true"), "config.json") ==
        "config.json: key 'block_configs[0].attention.replace_with_linear': expected false (kvplan does not model "
        "this block variant), got true");
  CHECK(error_of(nas_with("{\"n_heads_in_group\": 4, \"no_op\": false}, \"ffn\": {\"ffn_mult\": null",
                          "{\"n_heads_in_group\": 2, \"no_op\": false}, \"ffn\": {\"ffn_mult\": null"),
                 "config.json") ==
        "config.json: key 'block_configs[2].attention.n_heads_in_group': expected 4 as in block_configs[0] (one K/V "
        "head count in every attention layer; per-layer counts are not modelled), got 2");
  CHECK(error_of(nas_with("\"window_length\": null", "\"window_length\": 4096"), "config.json") ==
        "config.json: key 'block_configs[0].attention.window_length': expected null (kvplan does not model this "
        "block variant), got '4096'");
  CHECK(error_of(nas_with("\"ffn\": {\"ffn_mult\": 0.5", "\"parallel_blocks\": [], \"ffn\": {\"ffn_mult\": 0.5"),
                 "config.json") ==
        "config.json: key 'block_configs[3].parallel_blocks': expected only attention and ffn (kvplan cannot place a "
        "'parallel_blocks' block), got the key");
  CHECK(error_of(nas_with("\"num_hidden_layers\": 4", "\"num_hidden_layers\": 5"), "config.json") ==
        "config.json: key 'block_configs': expected a list of 5 blocks (num_hidden_layers), got 4 blocks");
  CHECK(error_of(nas_with("{\"ffn_mult\": 1.0, \"no_op\": false}", "{\"no_op\": false}"), "config.json") ==
        "config.json: key 'block_configs[1].ffn.ffn_mult': expected a positive number, got nothing");
  // Another family with block_configs would be read without them: refused.
  std::string llama = nas_with("\"model_type\": \"nemotron-nas\"", "\"model_type\": \"llama\"");
  const std::string null_width = "\"intermediate_size\": null";
  llama.replace(llama.find(null_width), null_width.size(), "\"intermediate_size\": 1792");
  CHECK(error_of(llama, "config.json")
            .find("key 'block_configs': expected only keys kvplan can place") != std::string::npos);
}

TEST_CASE("num_key_value_heads defaults to the attention heads (MHA)") {
  const ModelConfig m = io::parse_model(kMinimal, "m.yaml");
  CHECK(m.num_kv_heads == 4);
  CHECK(m.head_dim == 16);
}

TEST_CASE("a missing required key is named with the file") {
  CHECK(error_of("hidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 4\nvocab_size: 100\n") ==
        "m.yaml: key 'intermediate_size': expected an integer >= 1 (the key is required), got nothing");
}

TEST_CASE("a negative, fractional or mistyped size is refused with what was expected") {
  CHECK(error_of(std::string(kMinimal) + "num_key_value_heads: -2\n") ==
        "m.yaml: key 'num_key_value_heads': expected an integer >= 1, got '-2'");
  CHECK(error_of(std::string(kMinimal) + "head_dim: 12.5\n") == "m.yaml: key 'head_dim': expected an integer >= 1, got '12.5'");
  CHECK(error_of(std::string(kMinimal) + "max_position_embeddings: [1, 2]\n") ==
        "m.yaml: key 'max_position_embeddings': expected an integer >= 1, got a list");
  CHECK(error_of(std::string(kMinimal) + "tie_word_embeddings: maybe\n") ==
        "m.yaml: key 'tie_word_embeddings': expected true or false, got 'maybe'");
}

TEST_CASE("KV heads that do not divide the attention heads are refused") {
  CHECK(error_of(std::string(kMinimal) + "num_key_value_heads: 3\n") ==
        "m.yaml: key 'num_key_value_heads': expected a divisor of num_attention_heads (4), got 3");
}

TEST_CASE("malformed YAML, an empty file and a scalar document are refused") {
  CHECK(error_of("hidden_size: [1, 2\n").find("m.yaml: expected valid YAML or JSON, got a syntax error at line") == 0);
  CHECK(error_of("") == "m.yaml: expected a mapping of keys to values, got an empty file");
  CHECK(error_of("42") == "m.yaml: expected a mapping of keys to values, got '42'");
}

TEST_CASE("JSON read through nlohmann gives the tree yaml-cpp gives the same text") {
  // Each document is read twice: as written (a JSON object, nlohmann's path) and with a
  // leading "# c\n" comment, which only YAML allows, so yaml-cpp reads that copy.
  const char* docs[] = {
      R"({"b": 1e-06, "a": [1, 2.5, -3], "n": null, "t": true, "s": "x y", "m": {"k": {"q": "FP8"}}})",
      R"({"big": 18446744073709551615, "f": 4096.0, "e": 1.5E3, "empty": {}, "list": []})",
  };
  for (const char* d : docs) {
    const YAML::Node j = io::parse_yaml_mapping(d, "m.json");
    const YAML::Node y = io::parse_yaml_mapping(std::string("# c\n") + d, "m.json");
    // Scalars the same text, or the same number (nlohmann writes 1.5E3 back as 1500.0).
    for (const auto& kv : y) {
      const std::string k = kv.first.as<std::string>();
      CAPTURE(k);
      CHECK(j[k].Type() == kv.second.Type());
      if (kv.second.IsScalar() && j[k].Scalar() != kv.second.Scalar())
        CHECK(io::opt_num(j, k, "m.json", -1e300).value_or(-7) == io::opt_num(y, k, "m.json", -1e300).value_or(-7));
    }
    CHECK(j.size() == y.size());
  }
  const YAML::Node j = io::parse_yaml_mapping(docs[0], "m.json");
  // File order kept (the reader iterates some maps, e.g. config_groups, in order).
  CHECK(j.begin()->first.as<std::string>() == "b");
  CHECK(j["a"].size() == 3);
  CHECK(j["a"][2].as<std::string>() == "-3");
  CHECK(j["m"]["k"]["q"].as<std::string>() == "FP8");
  CHECK(io::opt_bool(j, "t", "m.json") == true);
  CHECK(!io::opt_str(j, "n", "m.json"));
  // Python's json.dump writes NaN, which strict JSON lacks: yaml-cpp still reads the file.
  CHECK(io::parse_yaml_mapping(R"({"x": NaN, "y": 2})", "m.json")["y"].as<std::string>() == "2");
  // A JSON syntax error is still reported by yaml-cpp with its line and column.
  CHECK(error_of("{\"a\": 1,\n\"b\": [}").find("m.yaml: expected valid YAML or JSON, got a syntax error at line 2") == 0);
}

TEST_CASE("quantized_layers of a JSON file read aside: the entries, values and formats of the YAML tree") {
  const std::string doc = R"({"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 3072,
    "vocab_size": 1000, "quantization_config": {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
      "quantized_layers": {
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
        "model.layers.0.mlp.gate_proj": {"quant_algo": "NVFP4", "group_size": 16, "x": [1, {"y": null}]},
        "model.layers.1.self_attn.q_proj": {"quant_algo": "FP8"},
        "lm_head": {"quant_algo": "W4A16_NVFP4", "group_size": 16}}}})";
  io::ModelDocument d = io::parse_model_document(doc, "m.json");
  const YAML::Node layers = d.root["quantization_config"]["quantized_layers"];
  CHECK(layers.IsMap());
  CHECK(layers.size() == 0);  // the entries are read aside
  const io::ModuleTable t = d.take_table(layers);
  REQUIRE(t.entries.size() == 4);
  CHECK(t.entries[1].first == "model.layers.0.mlp.gate_proj");
  CHECK(t.values.size() == 3);  // the two FP8 entries share one value
  CHECK(t.entries[0].second == t.entries[2].second);
  // A value replayed from its events is the tree yaml-cpp reads from the same text.
  const YAML::Node y = io::parse_yaml_mapping("# c\n" + doc, "m.json")["quantization_config"]["quantized_layers"];
  const YAML::Node gate = t.values[t.entries[1].second];
  CHECK(gate["group_size"].Scalar() == y["model.layers.0.mlp.gate_proj"]["group_size"].Scalar());
  CHECK(gate["x"][1]["y"].IsNull());
  CHECK(gate["x"][0].Scalar() == "1");
  // A YAML document has nothing aside: its table is the mapping's own entries.
  io::ModelDocument yd = io::parse_model_document("# c\n" + doc, "m.yaml");
  CHECK(yd.aside.empty());
  CHECK(yd.take_table(yd.root["quantization_config"]["quantized_layers"]).entries.size() == 4);

  // The formats, by hand: attention FP8 (8 bits, fp8 compute) in both layers; the dense
  // MLP NVFP4 (4 bits per 16, fp4 activations) in layer 0, 16-bit in layer 1 (not named);
  // no experts; the LM head W4A16 (weight-only); the model's label the densest part's.
  for (const std::string& text : {doc, "# c\n" + doc}) {
    const ModelConfig m = io::parse_model(text, "m.json");
    const QuantSpec& q = m.weight_quant;
    CHECK(q.for_part(WeightPart::attention, 0).bits == 8);
    CHECK(q.for_part(WeightPart::attention, 1).compute == DType::fp8);
    CHECK(q.for_part(WeightPart::dense_mlp, 0).bits == 4);
    CHECK(q.for_part(WeightPart::dense_mlp, 0).fp4_activations);
    CHECK_FALSE(q.for_part(WeightPart::dense_mlp, 1).active());
    CHECK(q.bits == 4);
    REQUIRE(q.lm_head != nullptr);
    CHECK_FALSE(q.lm_head->fp4_activations);
  }
  // Errors name the first module with a bad value, though later ones share it.
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = doc;
    REQUIRE(s.find(from) != std::string::npos);
    return s.replace(s.find(from), from.size(), to);
  };
  const std::string bad_group = with(R"("lm_head": {"quant_algo": "W4A16_NVFP4", "group_size": 16})",
                                     R"("model.layers.1.mlp.up_proj": {"quant_algo": "NVFP4", "group_size": 32},
      "model.layers.1.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 32})");
  CHECK(error_of(bad_group, "m.json") ==
        "m.json: key 'quantization_config.quantized_layers.model.layers.1.mlp.up_proj.group_size': expected 16 "
        "(NVFP4's block), got 32");
  CHECK(error_of("# c\n" + bad_group, "m.json") == error_of(bad_group, "m.json"));
  CHECK(error_of(with(R"("model.layers.1.self_attn.q_proj": {"quant_algo": "FP8"})",
                      R"("model.layers.1.self_attn.q_proj": "FP8")"),
                 "m.json") ==
        "m.json: key 'quantization_config.quantized_layers.model.layers.1.self_attn.q_proj': expected a mapping with "
        "quant_algo");
  const std::string empty = doc.substr(0, doc.find(R"("quantized_layers": {)")) + R"("quantized_layers": {}}})";
  CHECK(error_of(empty, "m.json") == "m.json: key 'quantization_config.quantized_layers': expected a mapping of module "
                                     "names to formats");
  CHECK(error_of("# c\n" + empty, "m.json") == error_of(empty, "m.json"));
}

TEST_CASE("Gemma-2's layer_types make alternate layers slide") {
  const ModelConfig m = io::load_model("gemma-2-27b");
  REQUIRE(m.layer_window.size() == 46);
  CHECK(m.layer_window[0] == 4096);
  CHECK(m.layer_window[1] == 0);
}

TEST_CASE("Qwen2.5's sliding_window is ignored when use_sliding_window is false") {
  CHECK(io::load_model("qwen2.5-7b").layer_window.empty());
}

TEST_CASE("an unknown catalog name lists the catalog") {
  try {
    io::load_gpu("h300");
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("--gpu: expected a file or a catalog GPU name (a10, a100-40gb") == 0);
    CHECK(what.find("got 'h300'") != std::string::npos);
  }
}

TEST_CASE("a directory given as a file is refused") {
  CHECK_THROWS_WITH_AS(io::read_file(std::filesystem::temp_directory_path()),
                       (std::filesystem::temp_directory_path().string() + ": expected a file, got a directory").c_str(),
                       InputError);
}

TEST_CASE("a GPU file needs its bandwidth, FLOP/s and interconnect") {
  const std::string base = "memory_bytes: 85029158912\nmemory_bandwidth_bytes_per_s: 3.35e12\n";
  CHECK_THROWS_WITH_AS(io::parse_gpu(base + "interconnect_bytes_per_s: 450e9\n", "g.yaml"),
                       "g.yaml: key 'peak_flops': expected a mapping of dtype to FLOP/s (the key is required), got nothing",
                       InputError);
  CHECK_THROWS_WITH_AS(io::parse_gpu(base + "peak_flops: {bf16: .nan}\ninterconnect_bytes_per_s: 450e9\n", "g.yaml"),
                       "g.yaml: key 'peak_flops.bf16': expected a finite number >= 0, got '.nan'", InputError);
  const GpuSpec g = io::parse_gpu(base + "peak_flops: {bf16: 989.4e12}\ninterconnect_bytes_per_s: 450e9\n", "g.yaml");
  CHECK(g.peak_flops.fp16 == 989.4e12);  // fp16 runs at the bf16 rate when only one is given
}

TEST_CASE("every catalog GPU reports CUDA memory below its marketing size, with a price") {
  // io::catalog throws on a missing or empty catalog; the known names guard against a
  // catalog that shrank to something else.
  const std::vector<std::string> names = io::catalog("gpus");
  for (const char* known : {"a100-80gb", "h100-sxm", "h200", "l40s"})
    REQUIRE_MESSAGE(std::find(names.begin(), names.end(), known) != names.end(), known << " missing from the catalog");
  for (const auto& name : names) {
    const GpuSpec g = io::load_gpu(name);
    CHECK_MESSAGE(g.memory_bytes > (12LL << 30), name);  // the smallest part, the T4: 14.74 GiB
    CHECK_MESSAGE(g.price_per_hour_usd.has_value(), name);
    CHECK_MESSAGE(!g.source.empty(), name);
  }
}

TEST_CASE("a calibration file sets efficiencies and the measured reserve") {
  const auto path = std::filesystem::temp_directory_path() / "kvplan_cal_test.json";
  std::ofstream(path) << R"({"schema": "kvplan.calibration/1", "device": "NVIDIA H200", "bandwidth_efficiency": 0.9,
    "prefill_flops_efficiency": 0.78, "decode_flops_efficiency": 0.5, "runtime_reserve_bytes": 1073741824, "measured": true})";
  const Calibration c = io::load_calibration(path.string());
  CHECK(c.bandwidth_efficiency == 0.9);
  CHECK(c.runtime_reserve_bytes == 1073741824LL);
  CHECK(c.device == "NVIDIA H200");
  CHECK(c.measured);
  std::filesystem::remove(path);
}

namespace {
//! Sets KVPLAN_DATA_DIR for one scope (ctest runs each test case in its own process).
struct DataDirEnv {
  explicit DataDirEnv(const std::string& dir) { setenv("KVPLAN_DATA_DIR", dir.c_str(), 1); }
  ~DataDirEnv() { unsetenv("KVPLAN_DATA_DIR"); }
  DataDirEnv(const DataDirEnv&) = delete;
  DataDirEnv& operator=(const DataDirEnv&) = delete;
};
}  // namespace

TEST_CASE("a test binary inside the build tree finds the catalog in the source tree") {
  // KVPLAN_TEST_DATA_DIR is <source>/tests/data.
  const auto source = std::filesystem::path(KVPLAN_TEST_DATA_DIR).parent_path().parent_path();
  REQUIRE(io::find_data_root().has_value());
  CHECK(std::filesystem::equivalent(*io::find_data_root(), source));
}

TEST_CASE("KVPLAN_DATA_DIR without configs/, or with an empty catalog, is an error naming it") {
  const auto dir = std::filesystem::temp_directory_path() / ("kvplan_data_test." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    const DataDirEnv env(dir.string());
    CHECK_FALSE(io::find_data_root().has_value());
    CHECK_THROWS_WITH_AS(io::catalog("models"),
                         ("KVPLAN_DATA_DIR: expected a kvplan data folder holding configs/models and configs/gpus, got '" +
                          dir.string() + "', which has no configs/ folder").c_str(),
                         InputError);
    std::filesystem::create_directories(dir / "configs" / "models");
    CHECK_THROWS_WITH_AS(io::catalog("models"),
                         ((dir / "configs" / "models").string() +
                          ": expected at least one .yaml, .yml or .json file, got an empty catalog").c_str(),
                         InputError);
    CHECK_THROWS_AS(io::load_model("llama-3-8b"), InputError);
    std::ofstream(dir / "configs" / "models" / "tiny.yaml")
        << "hidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 4\nvocab_size: 128\nintermediate_size: 256\n";
    CHECK(io::catalog("models") == std::vector<std::string>{"tiny"});
    CHECK(io::load_model("tiny").hidden_size == 64);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("an unregistered family with a standard decoder's keys only is read as one, saying so") {
  // kMinimal as Llama lays it out: per layer attention 4 x 64 x 64 = 16,384, gated MLP
  // 3 x 64 x 128 = 24,576, two RMSNorms 128 -> 41,088; 2 layers 82,176 + embedding and
  // LM head 2 x 100 x 64 = 12,800 + final norm 64 = 95,040.
  const ModelConfig m =
      io::parse_model(std::string(kMinimal) + "model_type: newfam\narchitectures: [NewFamForCausalLM]\nrope_theta: 10000\n", "n.yaml");
  CHECK(count_params(m).total() == 95040);
  CHECK(m.reading_note.find("standard decoder") != std::string::npos);
  CHECK(m.reading_note.find("keys used: hidden_size, num_hidden_layers, num_attention_heads, vocab_size, intermediate_size") !=
        std::string::npos);
  // A registered family says nothing.
  CHECK(io::parse_model(kLlama3Json, "config.json").reading_note.empty());
}

TEST_CASE("an unregistered family with a key outside the vocabulary exits 2 naming it, never a number") {
  const std::string e = error_of(std::string(kMinimal) +
                                 "model_type: seed_oss\narchitectures: [SeedOssForCausalLM]\nattention_out_bias: false\n");
  CHECK(e.find("key 'attention_out_bias'") != std::string::npos);
  CHECK(e.find("'SeedOssForCausalLM' (model_type 'seed_oss'), with keys kvplan cannot place: attention_out_bias") !=
        std::string::npos);
  CHECK(e.find("a supported architecture") != std::string::npos);
  // A sliding window without layer_types: which layers slide is the family's code.
  CHECK(error_of(std::string(kMinimal) + "model_type: newfam\nsliding_window: 4096\n").find("key 'sliding_window'") !=
        std::string::npos);
}

TEST_CASE("a geometry key the family does not place is refused, naming the keys") {
  const std::string e = error_of(std::string(kMinimal) + "model_type: llama\nhybrid_override_pattern: M*\nssm_state_size: 128\n");
  CHECK(e.find("keys it cannot place: hybrid_override_pattern, ssm_state_size") != std::string::npos);
}

TEST_CASE("Falcon's multi_query means one K/V head: Gemma ties embeddings when the key is absent") {
  // HF FalconConfig: multi_query defaults to true (one shared K/V head).
  const ModelConfig f = io::parse_model(std::string(kMinimal) + "model_type: falcon\nmulti_query: true\n", "f.yaml");
  CHECK(f.num_kv_heads == 1);
  // HF GemmaConfig / Gemma2Config: tie_word_embeddings=True by default.
  const ModelConfig g = io::parse_model(std::string(kMinimal) + "model_type: gemma2\n", "g.yaml");
  CHECK(g.tie_word_embeddings);
}

TEST_CASE("a checkpoint's quantization_config sizes its weights: MXFP4 costs 4.25 bits per weight") {
  // 2 layers, h 64, 4 heads of 16 (MHA): attention 4 x 64 x 64 = 16,384 per layer;
  // MLP 3 x 64 x 128 = 24,576. MXFP4 on the MLP only (attention left 16-bit):
  //   MLP 24,576 x 4 bits / 8 = 12,288 B + 24,576 / 32 scales x 1 B = 768 B -> 13,056 B
  //   attention 16,384 x 2 B = 32,768 B; norms 2 x 64 x 2 B = 256 B per layer
  //   embedding + LM head 2 x 100 x 64 x 2 B = 25,600 B; final norm 128 B
  // = 2 x (13,056 + 32,768 + 256) + 25,600 + 128 = 117,888 B
  const ModelConfig m = io::parse_model(
      std::string(kMinimal) + "model_type: llama\ntorch_dtype: bfloat16\nquantization_config:\n  quant_method: mxfp4\n"
                              "  modules_to_not_convert: [model.layers.*.self_attn, lm_head]\n",
      "q.yaml");
  CHECK(m.weight_quant.bits == 4);
  CHECK(m.weight_quant.skip_attention);
  CHECK(weight_bytes_per_gpu(m, ServingOptions{}) == 117888);
  // --quantization none is vLLM's absent flag: a quantized checkpoint loads as stored
  // (vllm/config/model.py _verify_quantization takes the checkpoint's quant_method).
  ServingOptions o;
  o.quantization_given = true;
  CHECK(weight_bytes_per_gpu(m, o) == 117888);
  // Its own method is accepted; another one is refused, as vLLM refuses it.
  o.quantization = WeightQuant::mxfp4;
  CHECK(weight_bytes_per_gpu(m, o) == 117888);
  o.quantization = WeightQuant::fp8;
  CHECK_THROWS_AS(weight_bytes_per_gpu(m, o), InputError);
}

TEST_CASE("an unknown quantization method is refused naming it") {
  CHECK(error_of(std::string(kMinimal) + "quantization_config:\n  quant_method: hqq\n").find("got 'hqq'") != std::string::npos);
}

TEST_CASE("a Mamba-2 hybrid holds conv + SSM state per request, KV only in its attention layers") {
  // Nemotron-H style: "M*" = one Mamba-2 layer then one attention layer.
  // Mamba-2: 4 heads x 16 head_dim = d_inner 64; n_groups 1, d_state 8, conv 4:
  //   conv (4 - 1) x (64 + 2 x 1 x 8) = 240, SSM 4 x 16 x 8 = 512 -> 752 x 2 B = 1,504 B
  // KV: one layer x 2 x 4 heads x 16 x 2 B = 256 B per token.
  const ModelConfig m = io::parse_model(
      std::string(kMinimal) + "model_type: nemotron_h\nhybrid_override_pattern: M*\nmamba_num_heads: 4\n"
                              "mamba_head_dim: 16\nssm_state_size: 8\nn_groups: 1\nconv_kernel: 4\n",
      "h.yaml");
  const ServingOptions o;
  CHECK(kv_bytes_per_token(m, o) == 256);
  CHECK(state_bytes_per_request(m, o) == 1504);
}

TEST_CASE("Jamba-1.5-Mini: 4 attention layers of 32 hold the KV, 28 Mamba layers a fixed state") {
  // Keys and values of ai21labs/AI21-Jamba-1.5-Mini config.json
  // (https://huggingface.co/ai21labs/AI21-Jamba-1.5-Mini/blob/main/config.json).
  const char* jamba = R"({"architectures": ["JambaForCausalLM"], "attention_dropout": 0.0,
    "attn_layer_offset": 4, "attn_layer_period": 8, "bos_token_id": 1, "eos_token_id": [2, 518],
    "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "mamba_conv_bias": true, "mamba_d_conv": 4,
    "mamba_d_state": 16, "mamba_dt_rank": 256, "mamba_expand": 2, "mamba_proj_bias": false,
    "max_position_embeddings": 262144, "model_type": "jamba", "num_attention_heads": 32,
    "num_experts": 16, "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_logits_to_keep": 1, "output_router_logits": false, "pad_token_id": 0, "rms_norm_eps": 1e-06,
    "router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.2", "use_cache": true,
    "use_mamba_kernels": true, "vocab_size": 65536})";
  const ModelConfig m = io::parse_model(jamba, "jamba.json");
  const ServingOptions o;
  // Attention where layer % 8 == 4: layers 4, 12, 20, 28.
  // KV: 4 layers x 2 (K, V) x 8 heads x 128 x 2 B = 16,384 B per token.
  CHECK(kv_bytes_per_token(m, o) == 16384);
  // Mamba: 28 layers x (conv (4 - 1) x 8,192 + SSM 8,192 x 16) x 2 B = 28 x 155,648 x 2 = 8,716,288 B.
  CHECK(state_bytes_per_request(m, o) == 8716288);
  // AI21's model card: 52B total parameters (12B active).
  CHECK(static_cast<double>(count_params(m).total()) == doctest::Approx(52e9).epsilon(0.01));
}

TEST_CASE("a hybrid's FLOPs count each layer's own mixer, and attention pairs only where it attends") {
  // "M*" with h 64: Mamba-2 (4 heads x 16 = d_inner 64, 1 group, d_state 8, conv 4):
  //   in_proj 64 x (2 x 64 + 2 x 8 + 4) = 9,472; conv1d 80 x 4 + 80 bias = 400;
  //   dt_bias, A_log, D 3 x 4 = 12; gated norm 64; out_proj 64 x 64 = 4,096 -> 14,044
  // attention (MHA, 4 x 16): 4 x 64 x 64 = 16,384. Neither layer has an MLP ('-' absent).
  // One token: linear FLOPs 2 x (14,044 + 16,384) = 60,856; pairs: one layer x 1 pair,
  // scores 2 x 4 x 16 = 128 FLOPs.
  const ModelConfig m = io::parse_model(
      std::string(kMinimal) + "model_type: nemotron_h\nhybrid_override_pattern: M*\nmamba_num_heads: 4\n"
                              "mamba_head_dim: 16\nssm_state_size: 8\nn_groups: 1\nconv_kernel: 4\n",
      "h.yaml");
  const FlopBreakdown f = forward_flops(m, 1, 0);
  CHECK(f.qkv + f.out_proj == 60856);
  CHECK(f.mlp == 0);
  CHECK(f.attn_scores == 128);
}

TEST_CASE("block-FP8 checkpoints run W8A8 GEMMs: GPTQ 8-bit with groups of 64 is weight-only") {
  // fp8 with 128x128 blocks: 8 bits per weight + one fp32 scale per 16,384 weights.
  // The MLP of kMinimal (3 x 64 x 128 = 24,576 weights, whole layer quantized):
  //   24,576 B + ceil(24,576 / 16,384) = 2 scales x 4 B = 24,584 B.
  const ModelConfig f = io::parse_model(
      std::string(kMinimal) + "quantization_config:\n  quant_method: fp8\n  weight_block_size: [128, 128]\n", "f.yaml");
  const ServingOptions o;
  CHECK(compute_dtype(f, o) == DType::fp8);
  CHECK(quantized_bytes(weight_quant_of(f, o), 24576, 0, 2) == 24584);
  // GPTQ bits 8, group_size 64: 24,576 B + 384 groups x (16-bit scale + 8-bit zero) / 8
  //   = 24,576 + 1,152 = 25,728 B; the GEMMs dequantize to bf16.
  const ModelConfig g = io::parse_model(
      std::string(kMinimal) + "torch_dtype: bfloat16\nquantization_config:\n  quant_method: gptq\n  bits: 8\n  group_size: 64\n",
      "g.yaml");
  CHECK(compute_dtype(g, o) == DType::bf16);
  CHECK(quantized_bytes(weight_quant_of(g, o), 24576, 0, 2) == 25728);
  // A GPTQ checkpoint takes gptq or its Marlin kernel (GPTQMarlinConfig overrides it) and
  // loads as stored; awq does not match its quant_method and is refused (vLLM
  // ModelConfig._verify_quantization: "does not match the quantization method").
  ServingOptions marlin;
  marlin.quantization = WeightQuant::gptq_marlin;
  CHECK(weight_quant_of(g, marlin).bits == 8);
  ServingOptions awq;
  awq.quantization = WeightQuant::awq;
  const std::string why = quantization_refusal(g, awq).value_or("accepted");
  CHECK(why.find("gptq, gptq_marlin, marlin, moe_wna16, auto or none") != std::string::npos);
  CHECK_THROWS_AS(weight_quant_of(g, awq), InputError);
  // On an unquantized checkpoint --quantization quantizes in flight (fp8), or sizes a
  // what-if (awq); a checkpoint format (awq_marlin) has nothing to read.
  CHECK(weight_quant_of(io::parse_model(kMinimal, "u.yaml"), awq).bits == 4);
  CHECK(quantization_refusal(io::parse_model(kMinimal, "u.yaml"), marlin).has_value());
  // A ModelOpt NVFP4 export whose config.json has no quantization_config (it is in
  // hf_quant_config.json): --quantization modelopt_fp4 sizes the MLP of kMinimal at
  // 24,576 x 4 bits / 8 = 12,288 B + 24,576 / 16 e4m3 scales = 1,536 B + the two fp32
  // per-tensor scales (weight_scale_2, input_scale) = 8 B -> 13,832 B.
  ServingOptions fp4;
  fp4.quantization = WeightQuant::modelopt_fp4;
  CHECK(quantized_bytes(weight_quant_of(io::parse_model(kMinimal, "u.yaml"), fp4), 24576, 0, 2) == 13832);
}

TEST_CASE("an ignore list naming each layer's projections keeps those parts 16-bit, not the layers") {
  // Llama-4-Scout FP8-dynamic as llm-compressor writes it (compressed-tensors, FP8_DYNAMIC:
  // fp8 weights with an fp32 scale per output channel, fp8 activations per token), the
  // ignore list expanded to module names: every layer's q/k/v/o_proj and router, the
  // vision tower, the LM head. Geometry from the corpus' meta-llama Scout config.json:
  // h 5120, 48 layers, 40 heads / 8 KV heads of 128, 16 experts + 1 shared of width 8192,
  // vocab 202,048, untied. Per layer (kvplan's ideal engine, TP 1):
  //   attention 2 x 5120 x 5120 + 2 x 5120 x 1024 = 62,914,560 params, bf16 = 125,829,120 B
  //   experts 16 x 3 x 5120 x 8192 = 2,013,265,920 B fp8 + 26,624 fp32 scale rows (kvplan
  //     counts q 5120 + h 5120 + the dense width 16,384 rows a part) x 4 B = 2,013,372,416 B
  //   shared expert 3 x 5120 x 8192 = 125,829,120 + 106,496 = 125,935,616 B
  //   router 5120 x 16 + 2 norms x 5120 = 92,160 params, bf16 = 184,320 B
  //   = 2,265,321,472 B; x 48 = 108,735,430,656 B
  // + embedding and LM head 2 x 202,048 x 5120 x 2 B = 4,137,943,040 B + final norm 10,240 B
  // = 112,873,383,936 B (112.9 GB). Read as whole layers left unquantized it was
  // 48 x (2 x (62,914,560 + 2,013,265,920 + 125,829,120) + 184,320) + 4,137,953,280
  // = 215,539,722,240 B (215.5 GB).
  std::string text = io::read_file(std::filesystem::path(KVPLAN_TEST_DATA_DIR) / "hf_configs" /
                                   "meta-llama--Llama-4-Scout-17B-16E-Instruct.json");
  std::string ignore = R"("language_model.lm_head", "vision_model.model.layers.0.self_attn.q_proj")";
  for (int l = 0; l < 48; ++l) {
    const std::string layer = "\"language_model.model.layers." + std::to_string(l);
    for (const char* p : {".self_attn.q_proj\"", ".self_attn.k_proj\"", ".self_attn.v_proj\"", ".self_attn.o_proj\"",
                          ".feed_forward.router\""})
      ignore += ", " + layer + p;
  }
  const std::string qc = R"("quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"],
      "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true, "dynamic": false},
      "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": true, "dynamic": true}}},
    "ignore": [)" + ignore + "]},";
  text.insert(text.find('{') + 1, qc);
  const ModelConfig m = io::parse_model(text, "scout-fp8-dynamic.json");
  CHECK(m.weight_quant.skip_layers.empty());
  CHECK(weight_bytes_per_gpu(m, ServingOptions{}) == 112873383936LL);
  CHECK(compute_dtype(m, ServingOptions{}) == DType::fp8);
  // vLLM refuses --quantization fp8 for it (the checkpoint's method is compressed-tensors).
  ServingOptions fp8;
  fp8.quantization = WeightQuant::fp8;
  CHECK(quantization_refusal(m, fp8).has_value());
  // Its own method, in either spelling vLLM takes (it normalizes compressed_tensors).
  ServingOptions ct;
  ct.quantization = parse_weight_quant("compressed_tensors").value_or(WeightQuant::none);
  CHECK(ct.quantization == WeightQuant::compressed_tensors);
  CHECK(weight_bytes_per_gpu(m, ct) == 112873383936LL);
}

TEST_CASE("the engine paths keep modules_to_not_convert 16-bit, as the ideal engine does") {
  // gpt-oss-20b (mxfp4, modules_to_not_convert: model.layers.*.self_attn): per layer the
  // attention matrices are q 2880 x 4096 + k, v 2 x 2880 x 512 + o 4096 x 2880 =
  // 26,542,080 weights: bf16 53,084,160 B, mxfp4 26,542,080 / 2 + 26,542,080 / 32 scales
  // = 14,100,480 B. Kept 16-bit they weigh 24 x 38,983,680 = 935,608,320 B (0.87 GiB) more
  // than quantized, on every engine path (vLLM's loader: biases stay 16-bit apart).
  const ModelConfig m = io::load_model("gpt-oss-20b");
  REQUIRE(m.weight_quant.skip_attention);
  ModelConfig all = m;
  all.weight_quant.skip_attention = false;
  const GpuSpec g = io::load_gpu("h100-sxm");
  for (const Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm}) {
    CAPTURE(to_string(e));
    ServingOptions o;
    o.engine = e;
    CHECK(memory_budget(m, g, o).weights_bytes - memory_budget(all, g, o).weights_bytes == 935608320LL);
  }
  // The ideal engine counts the q/k/v (5,120) and o (2,880) biases with the matrices:
  // 26,550,080 weights, bf16 53,100,160 B, mxfp4 13,275,040 + 829,690 = 14,104,730 B;
  // 24 x 38,995,430 = 935,890,320 B.
  CHECK(weight_bytes_per_gpu(m, ServingOptions{}) - weight_bytes_per_gpu(all, ServingOptions{}) == 935890320LL);
}

TEST_CASE("Qwen2-VL in the Hub's layout: language keys at the top level beside vision_config") {
  // Qwen/Qwen2-VL-7B-Instruct's geometry (its config.json keeps the language model at the
  // top level; vision_config: depth 32, embed_dim 1280, hidden_size 3584 = the merger's
  // output, mlp_ratio 4, patch 14, temporal patch 2, spatial merge 2, quick_gelu).
  // Language model (Qwen2: q/k/v biases, untied): per layer attention 2 x 3584^2 +
  // 2 x 3584 x 512 + 4,608 biases = 29,364,736, MLP 3 x 3584 x 18,944 = 203,685,888, norms
  // 7,168 -> 233,057,792; x 28 = 6,525,618,176 + 2 x 152,064 x 3584 = 1,089,994,752 + 3,584
  // = 7,615,616,512. Vision: 32 x (4 x 1280^2 + 4 x 1280 + 2 x 1280 x 5120 + 5120 + 1280 +
  // 4 x 1280) = 629,678,080; patch 3 x 14 x 14 x 2 x 1280 + 1280 = 1,506,560; merger
  // (5120 in) 5120^2 + 5120 + 5120 x 3584 + 3584 + 2 x 1280 = 44,575,744 -> 675,760,384.
  // Total 8,291,376,896; the Qwen2-VL-7B-Instruct model card gives 8.29 B.
  const ModelConfig m = io::parse_model(R"({
    "architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
    "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "use_sliding_window": false, "max_window_layers": 28,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3,
                      "hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14,
                      "temporal_patch_size": 2}
  })", "qwen2-vl.json");
  CHECK(m.model_type == "qwen2_vl_text");
  CHECK(m.qkv_bias);
  CHECK(count_params(m).total() - m.tower_params == 7615616512LL);
  CHECK(m.tower_params == 675760384LL);
  CHECK(kv_bytes_per_token(m, ServingOptions{}) == 2 * 4 * 128 * 2 * 28);  // 57,344 B
}

TEST_CASE("measured HBM ceilings: the shipped profile transfers to A100 by the BabelStream fractions") {
  // Azure AI-benchmarking-guide BabelStream Triad (configs/gpus `measured`): ND H100 v5
  // 2.97 TB/s of the H100 SXM datasheet's 3.35 (0.8866), ND A100 v4 1.70 of the A100
  // 80GB's 2.039 (0.8337). The H100-fitted profile's memory-bound efficiencies carry to
  // A100 x 0.8337 / 0.8866 = 0.9404; to H100 itself x 1.
  const GpuSpec a100 = io::load_gpu("a100-80gb"), h100 = io::load_gpu("h100-sxm");
  REQUIRE(a100.measured_memory_bandwidth_bytes_per_s);
  CHECK(*a100.measured_memory_bandwidth_bytes_per_s == 1.70e12);
  CHECK(a100.measured_source.find("ND A100 v4") != std::string::npos);
  const Calibration c = io::load_calibration("h100-sxm-vllm");
  CHECK(c.gpu_measured_memory_bandwidth_bytes_per_s == 2.97e12);
  CHECK(c.gpu_memory_bandwidth_bytes_per_s == 3.35e12);
  CHECK(memory_bandwidth_transfer(c, a100).factor == doctest::Approx((1.70 / 2.039) / (2.97 / 3.35)).epsilon(1e-12));
  CHECK(memory_bandwidth_transfer(c, a100).factor == doctest::Approx(0.9404).epsilon(1e-4));
  CHECK(memory_bandwidth_transfer(c, h100).factor == 1.0);
  // L40S has no measured ceiling (none found, docs/calibration.md): the datasheet fraction.
  CHECK_FALSE(memory_bandwidth_transfer(c, io::load_gpu("l40s")).measured);
}

TEST_CASE("measured GEMM ceilings: the shipped profile's GEMM FLOP efficiency transfers by the FP8 GEMM fractions") {
  // Azure AI-benchmarking-guide FP8 GEMM, the best of each suite's shapes (configs/gpus
  // `measured`): ND H100 v5 cuBLASLt 1,382.2 TFLOPS of the H100 SXM's 1,978.9 (0.6985),
  // ND MI300X v5 hipBLASLt 1,159.54 of the MI300X's 2,614.9 (0.4434), ND H200 v5 1,333.2
  // of 1,978.9 (0.6737). Factors 0.4434 / 0.6985 = 0.6349 and 0.6737 / 0.6985 = 0.9646;
  // H100 itself 1; A100 and MI325X have no FP8 GEMM figure: not transferred.
  const GpuSpec mi300x = io::load_gpu("mi300x"), h100 = io::load_gpu("h100-sxm"), h200 = io::load_gpu("h200");
  REQUIRE(mi300x.measured_gemm_flops_per_s);
  CHECK(*mi300x.measured_gemm_flops_per_s == 1159.54e12);
  CHECK(mi300x.measured_gemm_dtype == DType::fp8);
  CHECK(mi300x.measured_gemm_source.find("ND MI300X v5") != std::string::npos);
  const Calibration c = io::load_calibration("h100-sxm-vllm");
  CHECK(c.gpu_measured_gemm_flops_fraction == doctest::Approx(1382.2 / 1978.9).epsilon(1e-12));
  CHECK(c.gpu_measured_gemm_dtype == DType::fp8);
  CHECK(gemm_flops_transfer(c, mi300x).factor == doctest::Approx((1159.54 / 2614.9) / (1382.2 / 1978.9)).epsilon(1e-12));
  CHECK(gemm_flops_transfer(c, mi300x).factor == doctest::Approx(0.6349).epsilon(1e-4));
  CHECK(gemm_flops_transfer(c, h200).factor == doctest::Approx(0.9646).epsilon(1e-4));
  CHECK(gemm_flops_transfer(c, h100).factor == 1.0);
  CHECK_FALSE(gemm_flops_transfer(c, io::load_gpu("a100-80gb")).measured);
  CHECK_FALSE(gemm_flops_transfer(c, io::load_gpu("mi325x")).measured);
}

TEST_CASE("ERNIE-4.5 MoE: its MoE keys under their own names, MoE from the start index to the end index") {
  // vLLM Ernie4_5_MoeDecoderLayer: layer l is MoE when (l + 1) % moe_layer_interval == 0 and
  // moe_layer_start_index <= l <= moe_layer_end_index; a dense MLP of intermediate_size else.
  const std::string base = R"({"model_type": "ernie4_5_moe", "hidden_size": 64, "num_hidden_layers": 6,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 100,
    "moe_num_experts": 8, "moe_k": 2, "moe_num_shared_experts": 2, "moe_intermediate_size": 32,
    "moe_layer_start_index": 1, "moe_layer_end_index": 4)";
  const ModelConfig m = io::parse_model(base + "}", "config.json");
  CHECK(m.num_experts == 8);
  CHECK(m.experts_per_token == 2);
  CHECK(m.num_shared_experts == 2);
  CHECK(m.tie_word_embeddings);  // Ernie4_5_MoeConfig's default
  const std::vector<Ffn> want = {Ffn::dense, Ffn::moe, Ffn::moe, Ffn::moe, Ffn::moe, Ffn::dense};
  for (int64_t l = 0; l < 6; ++l) CHECK(m.ffn(l) == want[static_cast<size_t>(l)]);
  // Every second layer from the start index: layers 1 and 3 (l + 1 even), layer 5 past the end.
  const ModelConfig every2 = io::parse_model(base + R"(, "moe_layer_interval": 2})", "config.json");
  const std::vector<Ffn> want2 = {Ffn::dense, Ffn::moe, Ffn::dense, Ffn::moe, Ffn::dense, Ffn::dense};
  for (int64_t l = 0; l < 6; ++l) CHECK(every2.ffn(l) == want2[static_cast<size_t>(l)]);
}

TEST_CASE("BailingMoE: shared experts of moe_shared_expert_intermediate_size, no shared-expert gate") {
  // vLLM BailingMoE: num_shared_experts x moe_shared_expert_intermediate_size in one MLP.
  const ModelConfig m = io::parse_model(R"({"model_type": "bailing_moe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 100,
    "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 2, "moe_intermediate_size": 32,
    "moe_shared_expert_intermediate_size": 48, "first_k_dense_replace": 1, "use_qk_norm": true})",
                                        "config.json");
  CHECK(m.shared_expert_intermediate_size == 96);  // 2 x 48
  CHECK(m.num_shared_experts == 0);
  CHECK_FALSE(m.shared_expert_gate);
  CHECK(m.qk_norm);
  CHECK(m.ffn(0) == Ffn::dense);
  CHECK(m.ffn(1) == Ffn::moe);
  CHECK_THROWS_AS(io::parse_model(R"({"model_type": "bailing_moe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 100, "use_qkv_bias": true})",
                                  "config.json"),
                  InputError);
}
