// The config corpus (tests/data/hf_configs): real Hugging Face config.json files, copied
// verbatim (SOURCES names each one's repository, path and commit). expected.yaml holds,
// per file, the KV bytes per token and state bytes per request derived by hand (the
// derivation is written beside each number), the published parameter count with its
// source, or the error an unsupported architecture must give.
#include <doctest/doctest.h>

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {
const std::filesystem::path kDir = std::filesystem::path(KVPLAN_TEST_DATA_DIR) / "hf_configs";
}  // namespace

TEST_CASE("every config in the corpus is read exactly, or refused naming what it could not place") {
  const YAML::Node expected = YAML::LoadFile((kDir / "expected.yaml").string());
  REQUIRE(expected.IsMap());
  int64_t supported = 0, refused = 0;
  for (const auto& entry : expected) {
    const std::string file = entry.first.as<std::string>();
    const YAML::Node e = entry.second;
    CAPTURE(file);
    const std::string path = (kDir / file).string();
    if (e["error"]) {
      std::string what;
      try {
        io::load_model(path);
      } catch (const InputError& err) {
        what = err.what();
      }
      for (const auto& part : e["error"]) {
        CAPTURE(what);
        CHECK(what.find(part.as<std::string>()) != std::string::npos);
      }
      ++refused;
      continue;
    }
    ModelConfig m;
    try {
      m = io::load_model(path);
    } catch (const InputError& err) {
      FAIL_CHECK(err.what());
      continue;
    }
    ServingOptions o;
    o.dtype = DType::bf16;  // the derivations count 2-byte elements
    CHECK(kv_bytes_per_token(m, o) == e["kv_bytes_per_token"].as<int64_t>());
    CHECK(state_bytes_per_request(m, o) == e["state_bytes_per_request"].as<int64_t>());
    if (e["params"]) {
      const auto published = e["params"].as<double>();
      const auto counted = static_cast<double>(count_params(m).total());
      CAPTURE(counted);
      CHECK(std::abs(counted - published) / published < 0.01);
    }
    if (e["weight_bytes"]) {
      // Published checkpoint size (safetensors total): the quantized weights, scales and
      // zero points included, within 5 %.
      ServingOptions q;
      const auto published = e["weight_bytes"].as<double>();
      const auto counted = static_cast<double>(weight_bytes_per_gpu(m, q) + tower_bytes_per_gpu(m, q));
      CAPTURE(counted);
      CHECK(std::abs(counted - published) / published < 0.05);
    }
    ++supported;
  }
  CHECK(supported + refused >= 60);
}
