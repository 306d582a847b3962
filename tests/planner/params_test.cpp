// Parameter counts and weight bytes (planner.h: count_params, weight_bytes_per_gpu).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

TEST_CASE("Llama-2-7B's parameter count, worked by hand, equals the published 6,738,415,616") {
  // embeddings 32000·4096 twice (untied); per layer 4·4096² attention + 3·4096·11008 MLP
  // + 2·4096 norms; one final norm.
  const int64_t per_layer = 4LL * 4096 * 4096 + 3LL * 4096 * 11008 + 2 * 4096;
  const int64_t expected = 2LL * 32000 * 4096 + 32 * per_layer + 4096;
  CHECK(expected == 6738415616LL);
  CHECK(count_params(io::load_model("llama-2-7b")).total() == expected);
}

TEST_CASE("Llama-2-70B (GQA-8) counts 68,976,648,192 parameters as its checkpoint does") {
  // per layer: q and o 8192², k and v 8192·1024, MLP 3·8192·28672, two norms.
  const int64_t per_layer = 2LL * 8192 * 8192 + 2LL * 8192 * 1024 + 3LL * 8192 * 28672 + 2 * 8192;
  CHECK(count_params(io::load_model("llama-2-70b")).total() == 2LL * 32000 * 8192 + 80 * per_layer + 8192);
  CHECK(count_params(io::load_model("llama-2-70b")).total() == 68976648192LL);
}

TEST_CASE("every catalog model is within 1.5 % of its published parameter count") {
  // io::catalog throws on a missing or empty catalog; the known names guard against a
  // catalog that shrank to something else.
  const std::vector<std::string> names = io::catalog("models");
  for (const char* known : {"llama-2-7b", "llama-3-8b", "mixtral-8x7b", "deepseek-v3"})
    REQUIRE_MESSAGE(std::find(names.begin(), names.end(), known) != names.end(), known << " missing from the catalog");
  for (const auto& name : names) {
    const ModelConfig m = io::load_model(name);
    REQUIRE_MESSAGE(m.published_params.has_value(), name << " records no published count");
    const double err = std::fabs(static_cast<double>(count_params(m).total()) / static_cast<double>(*m.published_params) - 1);
    CHECK_MESSAGE(err < 0.015, name << ": computed " << count_params(m).total() << " vs published " << *m.published_params);
  }
}

TEST_CASE("Mixtral-8x7B activates about 12.9 B of its 46.7 B parameters per token") {
  // Mistral AI's announcement: 46.7B total, 12.9B used per token (2 of 8 experts).
  const ParamCount p = count_params(io::load_model("mixtral-8x7b"));
  CHECK(static_cast<double>(p.total()) == doctest::Approx(46.7e9).epsilon(0.005));
  CHECK(static_cast<double>(p.active()) == doctest::Approx(12.9e9).epsilon(0.01));
}

TEST_CASE("DeepSeek-V3 activates about 37 B of its 671 B parameters per token") {
  // DeepSeek-V3 technical report (arXiv 2412.19437), abstract: 671B total, 37B activated.
  const ParamCount p = count_params(io::load_model("deepseek-v3"));
  CHECK(static_cast<double>(p.total()) == doctest::Approx(671e9).epsilon(0.005));
  CHECK(static_cast<double>(p.active()) == doctest::Approx(37e9).epsilon(0.03));
}

TEST_CASE("Llama-2-70B bf16 weights split over TP 2 are half the matrices plus replicated norms") {
  ServingOptions o;
  o.tp = 2;
  // matrices 80 · (2·8192² + 2·8192·1024 + 3·8192·28672) / 2 ranks · 2 B; norms (161 · 8192)
  // · 2 B on every rank; embedding and LM head 16000 rows · 8192 · 2 B each.
  const int64_t matrices = 80LL * (2LL * 8192 * 8192 + 2LL * 8192 * 1024 + 3LL * 8192 * 28672);
  const int64_t expected = matrices / 2 * 2 + 161LL * 8192 * 2 + 2LL * 16000 * 8192 * 2;
  CHECK(weight_bytes_per_gpu(io::load_model("llama-2-70b"), o) == expected);
}

TEST_CASE("GPTQ int4 weights cost 4 bits plus an fp16 scale and a 4-bit zero per 128 weights") {
  ModelConfig m = io::load_model("llama-2-7b");
  ServingOptions o;
  o.quantization = WeightQuant::gptq;
  const int64_t layer_matrix = 4LL * 4096 * 4096 + 3LL * 4096 * 11008;  // per layer
  const int64_t attn = 4LL * 4096 * 4096, mlp = 3LL * 4096 * 11008;
  const auto q = [](int64_t params) { return params / 2 + (params / 128) * 20 / 8; };
  const int64_t expected = 32 * (q(attn) + q(mlp)) + 32 * 2 * 4096 * 2 + 4096 * 2 + 2LL * 32000 * 4096 * 2;
  CHECK(layer_matrix == attn + mlp);
  CHECK(weight_bytes_per_gpu(m, o) == expected);
  // About 3.9 GB: a 7B model in 4 bits, embeddings in 16 bits.
  CHECK(static_cast<double>(expected) == doctest::Approx(3.89e9).epsilon(0.01));
}

TEST_CASE("PP 2 puts half the layers on each GPU and the embedding on the first, LM head on the last") {
  ServingOptions o;
  o.pp = 2;
  const int64_t per_layer_bytes = (4LL * 4096 * 4096 + 3LL * 4096 * 11008 + 2 * 4096) * 2;
  // Stage 1 holds 16 layers, the final norm and the LM head: the heavier one by 8 KiB.
  const int64_t expected = 16 * per_layer_bytes + 32000LL * 4096 * 2 + 4096 * 2;
  CHECK(weight_bytes_per_gpu(io::load_model("llama-2-7b"), o) == expected);
}
