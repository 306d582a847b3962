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
#include "planner/planner.h"

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
    CHECK_MESSAGE(g.memory_bytes > (20LL << 30), name);
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
