// Context limits derived as vLLM derives max_model_len (planner.h
// derived_max_model_len, check_context) and the engine support table (support.h).
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"
#include "planner/support.h"

using namespace kvplan;

namespace {
ModelConfig with_rope(const std::string& type, double factor, int64_t max_pos, int64_t original = 0) {
  ModelConfig m = io::load_model("llama-3-8b");
  m.max_position_embeddings = max_pos;
  m.rope_type = type;
  m.rope_factor = factor;
  m.rope_original_max_position_embeddings = original;
  return m;
}
}  // namespace

TEST_CASE("the derived maximum length follows vLLM's _get_and_verify_max_len for each rope_scaling type") {
  // vllm/config.py (v0.10.0): linear and dynamic multiply max_position_embeddings by the
  // factor; YaRN multiplies original_max_position_embeddings; llama3/longrope/su keep it.
  CHECK(derived_max_model_len(with_rope("", 1, 4096)) == 4096);
  CHECK(derived_max_model_len(with_rope("linear", 4, 4096)) == 16384);
  CHECK(derived_max_model_len(with_rope("dynamic", 2, 4096)) == 8192);
  CHECK(derived_max_model_len(with_rope("yarn", 4, 131072, 32768)) == 131072);  // Qwen2.5's recipe: 32k x 4
  CHECK(derived_max_model_len(with_rope("yarn", 40, 163840, 4096)) == 163840);  // DeepSeek-V2: 4k x 40
  CHECK(derived_max_model_len(with_rope("llama3", 8, 131072, 8192)) == 131072);
  CHECK(derived_max_model_len(with_rope("longrope", 32, 131072, 4096)) == 131072);
  // The catalog's DeepSeek-V2-Lite is YaRN 40 x 4,096, Llama-3.1-70B llama3.
  CHECK(derived_max_model_len(io::load_model("deepseek-v2-lite")) == 163840);
  CHECK(derived_max_model_len(io::load_model("llama-3.1-70b")) == 131072);
}

TEST_CASE("contexts beyond the model's length are refused: real engines refuse a longer --max-model-len") {
  const ModelConfig m = io::load_model("llama-2-7b");  // max_position_embeddings 4096
  ServingOptions o;
  CHECK_NOTHROW(check_context(m, o, 4096, "test"));
  CHECK_THROWS_AS(check_context(m, o, 100000, "test"), InputError);
  // An explicit --max-model-len on the engine-neutral model is a what-if the user asked for.
  o.max_model_len = 100000;
  CHECK_NOTHROW(check_context(m, o, 100000, "test"));
  CHECK_THROWS_AS(check_context(m, o, 100001, "test"), InputError);
  o.engine = Engine::vllm;
  CHECK_THROWS_AS(validate(m, o, "test"), InputError);
  o.max_model_len = 4096;
  CHECK_NOTHROW(validate(m, o, "test"));
  // Linear rope x 4 lifts the limit to 16,384, as vLLM derives it.
  ModelConfig scaled = with_rope("linear", 4, 4096);
  o.max_model_len = 16384;
  CHECK_NOTHROW(validate(scaled, o, "test"));
  o.max_model_len = 16385;
  CHECK_THROWS_AS(validate(scaled, o, "test"), InputError);
}

TEST_CASE("the support table: fp8 KV runs everywhere, int8 KV only on TensorRT-LLM, int2/int4 and KIVI nowhere") {
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  CHECK_FALSE(what_if_reason(m, o).has_value());  // 16-bit on the engine-neutral model
  o.kv_cache_dtype = DType::fp8;
  for (Engine e : {Engine::ideal, Engine::vllm, Engine::sglang, Engine::trtllm}) {
    o.engine = e;
    CHECK_FALSE(what_if_reason(m, o).has_value());
  }
  o.kv_cache_dtype = DType::int8;
  o.engine = Engine::vllm;
  CHECK(what_if_reason(m, o).has_value());
  o.engine = Engine::trtllm;
  CHECK_FALSE(what_if_reason(m, o).has_value());
  o.engine = Engine::ideal;  // some engine runs it
  CHECK_FALSE(what_if_reason(m, o).has_value());
  o.kv_cache_dtype = DType::int2;
  o.kv_quant = KvQuant::kivi;
  o.engine = Engine::vllm;
  const auto why = what_if_reason(m, o);
  REQUIRE(why.has_value());
  CHECK(why->find("vLLM v0.10.0 cannot run KV cache dtype int2") != std::string::npos);
  o.engine = Engine::ideal;
  CHECK(what_if_reason(m, o).has_value());
  // fp8 with KIVI's metadata layout: the dtype is there, the layout is not.
  o.kv_cache_dtype = DType::fp8;
  o.engine = Engine::sglang;
  CHECK(what_if_reason(m, o).has_value());
}
