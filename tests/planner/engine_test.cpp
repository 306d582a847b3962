// Engine memory accounting (planner/engine_*.cpp) against what the engines log at start-up.
//
// Every data point below is one engine start-up whose log we found, with its source.
// The model is one formula for all of them (docs/engines.md); nothing is fitted per row.
// Each row prints its error; each must be within 2 %. The logged start-ups kept as data
// files (tests/data/engine_logs) are checked by engine_logs_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/config_io.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {

constexpr double kGiB = 1073741824.0;

// H100 SXM 80GB as CUDA reports it (vLLM 0.19 logs total_memory=79.19GiB) and
// Llama-3.1-8B: the shared fixtures (tests/fixtures.h).
using kvplan::test::h100;
using kvplan::test::llama31_8b;

ModelConfig qwen25_7b() {
  ModelConfig m;
  m.name = "Qwen2.5-7B-Instruct";
  m.model_type = "qwen2";
  m.hidden_size = 3584;
  m.num_layers = 28;
  m.num_heads = 28;
  m.num_kv_heads = 4;
  m.head_dim = 128;
  m.intermediate_size = 18944;
  m.vocab_size = 152064;
  m.qkv_bias = true;
  m.max_position_embeddings = 32768;
  return m;
}

// Qwen1.5-MoE-A2.7B: 60 routed experts (top 4) of width 1408 and one shared expert of
// width 5632 = 4 x 1408 (modelled as four shared experts), MHA with 16 KV heads.
ModelConfig qwen15_moe() {
  ModelConfig m;
  m.name = "Qwen1.5-MoE-A2.7B";
  m.model_type = "qwen2_moe";
  m.hidden_size = 2048;
  m.num_layers = 24;
  m.num_heads = 16;
  m.num_kv_heads = 16;
  m.head_dim = 128;
  m.intermediate_size = 5632;
  m.vocab_size = 151936;
  m.qkv_bias = true;
  m.max_position_embeddings = 8192;
  m.num_experts = 60;
  m.experts_per_token = 4;
  m.moe_intermediate_size = 1408;
  m.num_shared_experts = 4;
  return m;
}

// DeepSeek-V2-Lite: MLA (kv_lora_rank 512, rope 64), 64 routed experts (top 6) + 2 shared,
// first layer dense.
ModelConfig deepseek_v2_lite() {
  ModelConfig m;
  m.name = "DeepSeek-V2-Lite";
  m.model_type = "deepseek_v2";
  m.hidden_size = 2048;
  m.num_layers = 27;
  m.num_heads = 16;
  m.num_kv_heads = 16;
  m.head_dim = 128;
  m.intermediate_size = 10944;
  m.vocab_size = 102400;
  m.max_position_embeddings = 163840;
  m.kv_lora_rank = 512;
  m.qk_rope_head_dim = 64;
  m.qk_nope_head_dim = 128;
  m.v_head_dim = 128;
  m.num_experts = 64;
  m.experts_per_token = 6;
  m.moe_intermediate_size = 1408;
  m.num_shared_experts = 2;
  m.first_dense_layers = 1;
  return m;
}

// Qwen3-235B-A22B: 128 experts (top 8) of width 1536, GQA with 4 KV heads.
ModelConfig qwen3_235b() {
  ModelConfig m;
  m.name = "Qwen3-235B-A22B";
  m.model_type = "qwen3_moe";
  m.hidden_size = 4096;
  m.num_layers = 94;
  m.num_heads = 64;
  m.num_kv_heads = 4;
  m.head_dim = 128;
  m.intermediate_size = 12288;
  m.vocab_size = 151936;
  m.max_position_embeddings = 40960;
  m.num_experts = 128;
  m.experts_per_token = 8;
  m.moe_intermediate_size = 1536;
  return m;
}

// vLLM 0.19 `vllm serve` on an H100: max_num_seqs defaults to 1024 and
// max_num_batched_tokens to 8192 there (arg_utils.get_batch_defaults).
ServingOptions vllm_h100(int64_t tp, int64_t max_model_len, double util) {
  ServingOptions o;
  o.engine = Engine::vllm;
  o.tp = tp;
  o.max_model_len = max_model_len;
  o.gpu_memory_utilization = util;
  o.max_num_seqs = 1024;
  return o;
}

struct LogPoint {
  const char* what;     // model, options
  const char* source;   // where the log is
  ModelConfig model;
  GpuSpec gpu;
  ServingOptions options;
  int64_t logged_tokens;
  double logged_weights_gib = -1;     // "weights memory" / "Model loading took", if logged
  double logged_activation_gib = -1;  // "torch peak memory increase", if logged
  double logged_non_torch_gib = -1;   // "non-torch forward increase memory", if logged
};

constexpr const char* kLlmd =
    "llm-d-incubation/llm-d-planner accuracy/results/v0.19.0 (vLLM 0.19.0, H100 80GB)";

std::vector<LogPoint> vllm_points() {
  std::vector<LogPoint> p;
  {
    // Log: accuracy/results/v0.19.0/logs/meta-llama-llama-3-1-8b--h100-80gb--tp1pp1dp1--16384.log
    // "Total non KV cache memory: 17.12GiB; torch peak memory increase: 1.89GiB;
    //  non-torch forward increase memory: 0.25GiB; weights memory: 14.99GiB."
    // "Available KV cache memory: 58.11 GiB", "GPU KV cache size: 476,016 tokens",
    // "Maximum concurrency for 16,384 tokens per request: 29.05x"
    LogPoint d{"Llama-3.1-8B TP1 bf16, len 16384, util 0.95 (dense GQA)", kLlmd, llama31_8b(), h100(),
               vllm_h100(1, 16384, 0.95), 476016, 14.99, 1.89, 0.25};
    p.push_back(d);
  }
  {
    // accuracy/results/v0.19.0/accuracy_report.md, "--kv-cache-dtype fp8" table:
    // Llama-3.1-8B-Instruct fp8: actual KV 58.11 GiB, 952,032 tokens.
    LogPoint d{"Llama-3.1-8B TP1 fp8 KV, len 8192, util 0.95", kLlmd, llama31_8b(), h100(),
               vllm_h100(1, 8192, 0.95), 952032};
    d.options.kv_cache_dtype = DType::fp8;
    p.push_back(d);
  }
  {
    // Log: accuracy/results/v0.19.0/logs/meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log
    // (weights 7.51, activation 1.89, non-torch 2.07 GiB): "GPU KV cache size: 1,044,688 tokens"
    LogPoint d{"Llama-3.1-8B TP2 bf16, len 8192, util 0.95", kLlmd, llama31_8b(), h100(),
               vllm_h100(2, 8192, 0.95), 1044688, 7.51, 1.89, 2.07};
    p.push_back(d);
  }
  {
    // Log ...--tp4pp1dp1--8192.log (weights 3.77, activation 1.89, non-torch 2.13 GiB):
    // "GPU KV cache size: 2,209,792 tokens"
    LogPoint d{"Llama-3.1-8B TP4 bf16, len 8192, util 0.95", kLlmd, llama31_8b(), h100(),
               vllm_h100(4, 8192, 0.95), 2209792, 3.77, 1.89, 2.13};
    p.push_back(d);
  }
  {
    // accuracy_report.md, context-length table: Qwen2.5-7B-Instruct 1,096,000 tokens,
    // actual KV 58.53 GiB; TP table: weights 14.25, activation 2.21, non-torch 0.24 GiB.
    LogPoint d{"Qwen2.5-7B TP1 bf16, len 8192, util 0.95 (GQA-7, qkv bias)", kLlmd, qwen25_7b(), h100(),
               vllm_h100(1, 8192, 0.95), 1096000, 14.25, 2.21, 0.24};
    p.push_back(d);
  }
  {
    // accuracy_report.md, "--kv-cache-dtype fp8" table: Qwen2.5-7B fp8 2,192,000 tokens.
    LogPoint d{"Qwen2.5-7B TP1 fp8 KV, len 8192, util 0.95", kLlmd, qwen25_7b(), h100(),
               vllm_h100(1, 8192, 0.95), 2192000};
    d.options.kv_cache_dtype = DType::fp8;
    p.push_back(d);
  }
  {
    // Log qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log (weights 7.12,
    // activation 2.21, non-torch 2.06 GiB): "GPU KV cache size: 2,390,592 tokens"
    LogPoint d{"Qwen2.5-7B TP2 bf16, len 8192, util 0.95", kLlmd, qwen25_7b(), h100(),
               vllm_h100(2, 8192, 0.95), 2390592, 7.12, 2.21, 2.06};
    p.push_back(d);
  }
  {
    // Log ...--tp4pp1dp1--8192.log (weights 3.55, activation 2.21, non-torch 2.13 GiB):
    // "GPU KV cache size: 5,043,280 tokens"
    LogPoint d{"Qwen2.5-7B TP4 bf16, len 8192, util 0.95", kLlmd, qwen25_7b(), h100(),
               vllm_h100(4, 8192, 0.95), 5043280, 3.55, 2.21, 2.13};
    p.push_back(d);
  }
  {
    // Log: accuracy/results/v0.19.0/logs/qwen-qwen1-5-moe-a2-7b--h100-80gb--tp1pp1dp1--8192.log
    // "Total non KV cache memory: 29.4GiB; torch peak memory increase: 2.47GiB;
    //  non-torch forward increase memory: 0.25GiB; weights memory: 26.67GiB."
    // "Available KV cache memory: 45.83 GiB", "GPU KV cache size: 250,304 tokens"
    LogPoint d{"Qwen1.5-MoE-A2.7B TP1 bf16, len 8192, util 0.95 (MoE, MHA)", kLlmd, qwen15_moe(), h100(),
               vllm_h100(1, 8192, 0.95), 250304, 26.67, 2.47, 0.25};
    p.push_back(d);
  }
  {
    // Log meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8.log: weights 8.49 GiB,
    // "GPU KV cache size: 529,248 tokens".
    LogPoint d{"Llama-3.1-8B TP1 --quantization fp8, len 8192, util 0.95", kLlmd,
               llama31_8b(), h100(), vllm_h100(1, 8192, 0.95), 529248, 8.49};
    d.options.quantization = WeightQuant::fp8;
    p.push_back(d);
  }
  return p;
}

double rel_error(double predicted, double logged) { return (predicted - logged) / logged; }

}  // namespace

TEST_SUITE("engine") {

TEST_CASE("engine vllm: max_kv_tokens matches vLLM start-up logs within 2 %") {
  for (const LogPoint& d : vllm_points()) {
    const std::string what = d.what;
    CAPTURE(what);
    const MemoryBudget b = memory_budget(d.model, d.gpu, d.options);
    const Capacity c = capacity(d.model, d.options, b, d.options.max_model_len.value_or(8192));
    const double err = rel_error(static_cast<double>(c.max_kv_tokens), static_cast<double>(d.logged_tokens));
    std::string detail = std::string(d.what) + ": predicted " + std::to_string(c.max_kv_tokens) +
                         " tokens, logged " + std::to_string(d.logged_tokens) + ", error " +
                         std::to_string(err * 100) + " %";
    detail += " | weights " + std::to_string(static_cast<double>(b.weights_bytes) / kGiB) + " GiB";
    if (d.logged_weights_gib > 0) detail += " (log " + std::to_string(d.logged_weights_gib) + ")";
    detail += ", activation " + std::to_string(static_cast<double>(b.activation_bytes) / kGiB) + " GiB";
    if (d.logged_activation_gib > 0) detail += " (log " + std::to_string(d.logged_activation_gib) + ")";
    detail += ", non-torch " + std::to_string(static_cast<double>(b.reserve_bytes) / kGiB) + " GiB";
    if (d.logged_non_torch_gib > 0) detail += " (log " + std::to_string(d.logged_non_torch_gib) + ")";
    detail += " [" + std::string(d.source) + "]";
    MESSAGE(detail);
    CHECK(std::fabs(err) <= 0.02);
    if (d.logged_weights_gib > 0)
      CHECK(std::fabs(static_cast<double>(b.weights_bytes) / kGiB - d.logged_weights_gib) <= 0.02 * d.logged_weights_gib);
  }
}

TEST_CASE("engine vllm: catalog models give the same answer as the test's inline configs") {
  // `kvplan plan --engine vllm --model qwen2.5-7b --gpu h100-sxm ...` reads the catalog;
  // it must describe the same models the table above checks.
  struct Pair {
    const char* model;
    ModelConfig inline_model;
    int64_t tp;
  };
  const std::vector<Pair> pairs = {{"qwen2.5-7b", qwen25_7b(), 1}, {"deepseek-v2-lite", deepseek_v2_lite(), 1},
                                   {"qwen2.5-7b", qwen25_7b(), 2}};
  for (const Pair& p : pairs) {
    // A missing catalog entry is a failure (InputError), not a skip.
    const ModelConfig cat = io::load_model(p.model);
    const GpuSpec gpu = io::load_gpu("h100-sxm");
    // The catalog's qwen2.5-7b is the base model (max_position_embeddings 131072); the
    // logs ran the Instruct model (32768), whose rotary cache is 24 MiB smaller.
    ModelConfig same = p.inline_model;
    same.max_position_embeddings = cat.max_position_embeddings;
    const ServingOptions o = vllm_h100(p.tp, 8192, 0.95);
    const MemoryBudget a = memory_budget(cat, gpu, o);
    const MemoryBudget b = memory_budget(same, h100(), o);
    CAPTURE(std::string(p.model));
    CHECK(detail::engine_max_kv_tokens(cat, o, a) == detail::engine_max_kv_tokens(same, o, b));
  }
}

TEST_CASE("engine vllm: the two start-up lines read like vLLM's") {
  const ModelConfig m = llama31_8b();
  const ServingOptions o = vllm_h100(1, 16384, 0.95);
  CHECK(detail::vllm_startup_lines(m, h100(), o, 476016) ==
        "GPU KV cache size: 476,016 tokens\n"
        "Maximum concurrency for 16,384 tokens per request: 29.05x");
  // Qwen1.5-MoE log: 250,304 tokens, "Maximum concurrency for 8,192 tokens per request: 30.55x"
  ServingOptions q = vllm_h100(1, 8192, 0.95);
  CHECK(detail::vllm_startup_lines(qwen15_moe(), h100(), q, 250304) ==
        "GPU KV cache size: 250,304 tokens\n"
        "Maximum concurrency for 8,192 tokens per request: 30.55x");
}

TEST_CASE("engine vllm: Maximum concurrency sums the blocks a request takes from every KV cache group") {
  // get_max_concurrency_for_kv_cache_config (vllm/v1/core/kv_cache_utils.py): num_blocks /
  // sum over groups of cdiv(max_memory_usage_bytes, page_size_bytes), a full group taking
  // cdiv(max_model_len, 16) blocks (FullAttentionSpec), a sliding one
  // cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), 16) + 1 (SlidingWindowSpec);
  // num_blocks = the logged tokens / 16 x the number of groups.
  // Gemma-2-27B log (vLLM 0.19, H100, max_model_len 8192; tests/data/engine_logs/vllm.yaml,
  // llm-d-planner google-gemma-2-27b-it--h100-80gb--tp1pp1dp1--8192.log): "GPU KV cache size:
  // 58,672 tokens", "Maximum concurrency for 8,192 tokens per request: 7.16x". 23 sliding
  // (4096) + 23 full layers = 2 groups of 23: 3,667 x 2 = 7,334 blocks over 512 + (512 + 1).
  CHECK(detail::vllm_startup_lines(io::load_model("gemma-2-27b"), h100(), vllm_h100(1, 8192, 0.95), 58672) ==
        "GPU KV cache size: 58,672 tokens\n"
        "Maximum concurrency for 8,192 tokens per request: 7.16x");
  // Gemma-3-27B on an L40S at 32,768 (max_num_batched_tokens 2048, vllm serve's default below
  // 70 GiB): 52 sliding (1024) + 10 global layers = 6 + 1 groups of 10; 21,632 tokens =
  // 1,352 x 7 = 9,464 blocks; a request 2,048 + 6 x (cdiv(1,023 + 2,048, 16) + 1) = 2,048 +
  // 6 x 193 = 3,206 blocks: 9,464 / 3,206 = 2.95x (blocks over one group's 2,048 gave 0.66x).
  CHECK(detail::vllm_startup_lines(io::load_model("gemma-3-27b"), io::load_gpu("l40s"), vllm_h100(1, 32768, 0.9),
                                   21632) ==
        "GPU KV cache size: 21,632 tokens\n"
        "Maximum concurrency for 32,768 tokens per request: 2.95x");
  // gpt-oss-120b on one H100 at 131,072 (max_num_batched_tokens 8192): 18 sliding (128) + 18
  // full = 2 groups; 99,952 tokens = 6,247 x 2 = 12,494 blocks; a request 8,192 +
  // (cdiv(127 + 8,192, 16) + 1) = 8,192 + 521 = 8,713: 1.43x (0.76x before).
  CHECK(detail::vllm_startup_lines(io::load_model("gpt-oss-120b"), h100(), vllm_h100(1, 131072, 0.9), 99952) ==
        "GPU KV cache size: 99,952 tokens\n"
        "Maximum concurrency for 131,072 tokens per request: 1.43x");
}

TEST_CASE("engine vllm: MLA page size and PP stages against a logged pool") {
  // vllm-project/vllm PR #20665 (DeepSeek-V2-Lite, PP 2 x TP 2 on L4s, vLLM 0.9.2):
  // "Available KV cache memory: 12.13 GiB" (ranks 0-1), "11.33 GiB" (ranks 2-3),
  // "GPU KV cache size: 807,792 tokens". The pool comes from the log; this checks the
  // MLA page (block x (512 + 64) x 2 B, not split by TP) and the 14/13 layer split.
  const ModelConfig m = deepseek_v2_lite();
  ServingOptions o;
  o.engine = Engine::vllm;
  o.tp = 2;
  o.pp = 2;
  const std::vector<detail::StageSpan> stages = detail::pp_stages(m, o.pp);
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].layers() == 14);
  CHECK(stages[1].layers() == 13);
  CHECK(detail::vllm_page_bytes_per_layer(m, o) == 16 * 576 * 2);
  const auto gib = [](double v) { return static_cast<int64_t>(v * kGiB); };
  const int64_t t0 = detail::vllm_tokens_for_budget(m, o, stages[0], gib(12.13));
  const int64_t t1 = detail::vllm_tokens_for_budget(m, o, stages[1], gib(11.33));
  const int64_t tokens = std::min(t0, t1);
  const double err = rel_error(static_cast<double>(tokens), 807792.0);
  MESSAGE("DeepSeek-V2-Lite MLA PP2xTP2 pool: predicted " << tokens << " tokens, logged 807,792, error "
                                                         << err * 100 << " % [vllm-project/vllm PR #20665]");
  CHECK(std::fabs(err) <= 0.02);
}

TEST_CASE("engine vllm: activation of MLA and MoE models against logged peaks") {
  // accuracy_report.md (llm-d-planner, vLLM 0.19, H100, TP1): DeepSeek-V2-Lite-Chat's
  // torch peak increase is 1.93 GiB. Only the activation is logged there (no tokens).
  const ModelConfig m = deepseek_v2_lite();
  const ServingOptions o = vllm_h100(1, 8192, 0.95);
  const MemoryBudget b = memory_budget(m, h100(), o);
  const double act = static_cast<double>(b.activation_bytes) / kGiB;
  MESSAGE("DeepSeek-V2-Lite activation: predicted " << act << " GiB, logged 1.93 GiB");
  CHECK(std::fabs(act - 1.93) <= 0.2);
  // The whole MLA + MoE budget at TP 1: log deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log
  // (llm-d-planner commit d3121e0): "Model loading took 29.43 GiB", "GPU KV cache size:
  // 1,505,552 tokens" (27 layers x 1,152 B per token).
  const Capacity c = capacity(m, o, b, 8192);
  const double err = rel_error(static_cast<double>(c.max_kv_tokens), 1505552.0);
  MESSAGE("DeepSeek-V2-Lite TP1 (MLA+MoE): predicted " << c.max_kv_tokens
          << " tokens, logged 1,505,552, error " << err * 100 << " %; weights "
          << static_cast<double>(b.weights_bytes) / kGiB << " GiB (logged 29.43)");
  CHECK(std::fabs(err) <= 0.02);
}

TEST_CASE("engine vllm: memory breakdown adds up and responds to options") {
  const ModelConfig m = llama31_8b();
  const ServingOptions o = vllm_h100(1, 8192, 0.95);
  const MemoryBudget b = memory_budget(m, h100(), o);
  CHECK(b.kv_budget_bytes == b.usable_bytes - b.weights_bytes - b.activation_bytes - b.reserve_bytes);
  // More sequences: bigger sampler peak, smaller pool.
  ServingOptions more = o;
  more.max_num_seqs = 2048;
  CHECK(memory_budget(m, h100(), more).activation_bytes > b.activation_bytes);
  // fp8 KV halves the page, doubles the tokens (same pool).
  ServingOptions fp8 = o;
  fp8.kv_cache_dtype = DType::fp8;
  const MemoryBudget bf = memory_budget(m, h100(), fp8);
  CHECK(detail::engine_max_kv_tokens(m, fp8, bf) == 2 * detail::engine_max_kv_tokens(m, o, b));
  // Weights that do not fit leave no pool.
  GpuSpec small = h100();
  small.memory_bytes = 8 * (int64_t{1} << 30);
  const MemoryBudget bs = memory_budget(m, small, o);
  CHECK(bs.kv_budget_bytes == 0);
  CHECK(detail::engine_max_kv_tokens(m, o, bs) == 0);
  // Default batch: 8192 on an H100, 2048 on an A100 or a 24 GiB card.
  CHECK(detail::vllm_default_batched_tokens(h100(), o, 8192) == 8192);
  GpuSpec a100 = h100();
  a100.name = "a100-sxm-80gb";
  CHECK(detail::vllm_default_batched_tokens(a100, o, 8192) == 2048);
  // ... and never more than max_num_seqs x max_model_len.
  ServingOptions few = o;
  few.max_num_seqs = 2;
  CHECK(detail::vllm_default_batched_tokens(h100(), few, 1024) == 2048);
}

TEST_CASE("engine vllm: hybrid sliding/full layers use the grouped allocator") {
  // Gemma-3-like 5:1 sliding:full pattern over 6 layers: groups of 1 layer, 6 groups;
  // blocks = pool // page, logged tokens = blocks // 6 x block_size.
  ModelConfig m = llama31_8b();
  m.num_layers = 6;
  m.layer_window = {1024, 1024, 1024, 1024, 1024, 0};
  ServingOptions o = vllm_h100(1, 8192, 0.9);
  const detail::StageSpan s = detail::pp_stages(m, 1).front();
  const int64_t page = detail::vllm_page_bytes_per_layer(m, o);
  CHECK(detail::vllm_tokens_for_budget(m, o, s, page * 600) == 600 / 6 * 16);
  // All layers sliding (Mistral-7B v0.1): uniform, like full attention.
  m.layer_window.assign(6, 4096);
  CHECK(detail::vllm_tokens_for_budget(m, o, s, page * 600) == 600 / 6 * 16);
}

TEST_CASE("engine vllm: weights as vLLM loads them") {
  // Llama-3.1-8B: 8,030,261,248 parameters x 2 B + the 131072 x 128 rotary cache.
  const ModelConfig m = llama31_8b();
  ServingOptions o = vllm_h100(1, 8192, 0.95);
  const detail::StageSpan s = detail::pp_stages(m, 1).front();
  CHECK(detail::engine_weight_bytes(m, o, s) == 8030261248LL * 2 + 131072LL * 128 * 2);
  // fp8 keeps embedding and LM head in 16-bit: 8.49 GiB logged.
  o.quantization = WeightQuant::fp8;
  const double fp8 = static_cast<double>(detail::engine_weight_bytes(m, o, s)) / kGiB;
  CHECK(fp8 == doctest::Approx(8.49).epsilon(0.005));
  // GPTQ int4: ~0.52 B per linear weight plus 16-bit embeddings.
  o.quantization = WeightQuant::gptq;
  const double gptq = static_cast<double>(detail::engine_weight_bytes(m, o, s)) / kGiB;
  CHECK(gptq > 5.2);
  CHECK(gptq < 5.5);
  // Tied embeddings are stored once.
  ModelConfig tied = m;
  tied.tie_word_embeddings = true;
  o.quantization = WeightQuant::none;
  CHECK(detail::engine_weight_bytes(m, o, s) - detail::engine_weight_bytes(tied, o, s) == 128256LL * 4096 * 2);
}

TEST_CASE("engine vllm: Nemotron-NAS no-op blocks hold no weights and no KV pages") {
  // nas_small(), by hand: layers 0 and 2 attend (q, o 1024 x 1024, k, v 1024 x 256 =
  // 2,621,440 each, + a norm of 1024); MLPs 3 x 1024 x (1792 + 768 + 512) = 9,437,184 + 3
  // norms; embedding and LM head 1000 x 1024 each; final norm 1024: 16,734,208 parameters.
  const ModelConfig m = kvplan::test::nas_small();
  CHECK(count_params(m).total() == 16734208);
  // vLLM at TP 1: the vocabulary padded to 1024 rows for both tables (2 x 1024 x 1024 x 2 B
  // = 4,194,304), the layers' 14,685,184 parameters x 2 B = 29,370,368, the final norm
  // 2,048 and the rotary cache 4096 x 128 x 2 B = 1,048,576: 34,615,296 B.
  ServingOptions o = vllm_h100(1, 4096, 0.9);
  const detail::StageSpan s = detail::pp_stages(m, 1).front();
  CHECK(detail::engine_weight_bytes(m, o, s) == 34615296);
  // Two layers hold K/V: a 16-token page is 2 x 2 heads x 128 x 16 x 2 B = 16,384 B per
  // layer, a block 32,768 B; 100 blocks' bytes give 1,600 tokens (not the 800 of four layers).
  CHECK(detail::kv_layers(m, s) == 2);
  CHECK(detail::vllm_tokens_for_budget(m, o, s, 100 * 32768) == 1600);
  CHECK(kv_bytes_per_token(m, o) == 2 * 2 * 128 * 2 * 2);
}

TEST_CASE("engine sglang: max_total_num_tokens matches SGLang's log within 2 %") {
  // vllm-project/vllm issue #21348: SGLang on 4 x H100, Qwen3-235B-A22B-FP8,
  // --tp 4 --mem-fraction-static 0.93:
  // "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"
  const ModelConfig m = qwen3_235b();
  ServingOptions o;
  o.engine = Engine::sglang;
  o.tp = 4;
  o.quantization = WeightQuant::fp8;
  o.gpu_memory_utilization = 0.93;
  o.block_size = 1;  // SGLang's default page size
  const MemoryBudget b = memory_budget(m, h100(), o);
  const Capacity c = capacity(m, o, b, 8192);
  const double err = rel_error(static_cast<double>(c.max_kv_tokens), 367404.0);
  MESSAGE("SGLang Qwen3-235B-A22B-FP8 TP4 mfs 0.93: predicted " << c.max_kv_tokens
          << " tokens, logged 367,404, error " << err * 100 << " %; weights "
          << static_cast<double>(b.weights_bytes) / kGiB << " GiB [vllm-project/vllm issue #21348]");
  CHECK(std::fabs(err) <= 0.02);
  // Cell size: 94 layers x 2 x 1 KV head per rank x 128 x 2 B.
  CHECK(detail::kv_cell_bytes(m, o, detail::pp_stages(m, 1).front()) == 94 * 2 * 128 * 2);
}

TEST_CASE("engine sglang: default mem_fraction_static and page rounding") {
  const ModelConfig m = llama31_8b();
  ServingOptions o;
  o.engine = Engine::sglang;
  const MemoryBudget b = memory_budget(m, h100(), o);
  // H100 (79.19 GiB = 81,090 MiB): reserved max(512 + 8192 x 1.5 + 256 x 2 + 128, 10240)
  // = 13,440 MiB -> mem_fraction_static = 0.834.
  CHECK(b.note.find("0.834") != std::string::npos);
  CHECK(b.activation_bytes == 0);
  o.block_size = 64;
  const int64_t paged = detail::engine_max_kv_tokens(m, o, b);
  CHECK(paged % 64 == 0);
  o.block_size = 1;
  CHECK(detail::engine_max_kv_tokens(m, o, b) - paged < 64);
}

TEST_CASE("engine sglang: PCIe-only GPUs keep NCCL's 0.13 GiB at TP > 1, NVLink ones the H100 buffers") {
  // SGLang 0.4.3.post4 on 4 x L4 logs "Init torch distributed ends. mem usage=0.13 GB"
  // and disables custom all-reduce on more than two PCIe-only GPUs; vLLM 0.19 on H100
  // NVLink adds 1.85 GiB at TP > 1 (engine_common.h kTpCommBytes). The static pool is
  // mem_fraction_static x (total - context - those buffers) - weights, so at one fraction
  // the two GPU files differ by fraction x (1,894 - 133) MiB, worked by hand below.
  const ModelConfig m = llama31_8b();
  ServingOptions o;
  o.engine = Engine::sglang;
  o.tp = 4;
  o.gpu_memory_utilization = 0.85;
  GpuSpec nvlink = h100();
  nvlink.kv_links = KvLinks{};
  nvlink.kv_links->nvlink = KvLink{};
  GpuSpec pcie = nvlink;
  pcie.kv_links->nvlink.reset();
  pcie.kv_links->pcie = KvLink{};
  const int64_t with_nvlink = memory_budget(m, nvlink, o).kv_budget_bytes;
  const int64_t pcie_only = memory_budget(m, pcie, o).kv_budget_bytes;
  const double expected = 0.85 * static_cast<double>((1894 - 133) * int64_t{1048576});
  CHECK(std::fabs(static_cast<double>(pcie_only - with_nvlink) - expected) <= 1.0);
  // A GPU file without kv_links says nothing about the links: the NVLink figure stays.
  GpuSpec unknown = h100();
  unknown.kv_links.reset();
  CHECK(memory_budget(m, unknown, o).kv_budget_bytes == with_nvlink);
  // TP 1 holds no communicator.
  o.tp = 1;
  CHECK(memory_budget(m, pcie, o).kv_budget_bytes == memory_budget(m, nvlink, o).kv_budget_bytes);
  // vLLM takes the same buffers out of its budget after the profile run: over PCIe only
  // its KV budget is (1,894 - 133) MiB larger at TP 2, nothing scaled by a fraction.
  ServingOptions v;
  v.engine = Engine::vllm;
  v.tp = 2;
  v.max_model_len = 4096;
  const int64_t vllm_gain = memory_budget(m, pcie, with_engine_defaults(pcie, v)).kv_budget_bytes -
                            memory_budget(m, nvlink, with_engine_defaults(nvlink, v)).kv_budget_bytes;
  CHECK(vllm_gain == (1894 - 133) * int64_t{1048576});
}

TEST_CASE("engine sglang: 0.4 takes mem_fraction_static from its table by TP size") {
  // SGLang 0.4 ServerArgs: 0.88 at TP 1, 0.87 from 2, 0.85 from 4, 0.81 from 8, 0.79
  // from 16 (the 0.4.3.post4 L4 log prints mem_fraction_static=0.85 at TP 4).
  const ModelConfig m = llama31_8b();
  ServingOptions o;
  o.engine = Engine::sglang;
  o.engine_version = "0.4";
  const std::vector<std::pair<int64_t, const char*>> table = {
      {1, "0.880"}, {2, "0.870"}, {4, "0.850"}, {8, "0.810"}, {16, "0.790"}};
  for (const auto& row : table) {
    o.tp = row.first;
    const std::string fraction = row.second;
    const int64_t tp = row.first;
    CHECK_MESSAGE(memory_budget(m, h100(), o).note.find(fraction) != std::string::npos, "tp " << tp);
  }
  CHECK(engine_versions(Engine::sglang) == std::vector<std::string>{"0.4", "0.5"});
}

TEST_CASE("engine trtllm: the 0.x TensorRT engine backend is refused, naming its build-time buffers") {
  ServingOptions o;
  o.engine = Engine::trtllm;
  CHECK(match_engine_version(Engine::trtllm, "0.21.0") == "0");
  CHECK(match_engine_version(Engine::trtllm, "1.0.0") == "1.0");
  o.engine_version = "0";
  CHECK_THROWS_WITH_AS(memory_budget(llama31_8b(), h100(), o), doctest::Contains("build-time activation buffers"),
                       InputError);
}

TEST_CASE("engine vllm: V0's profile run samples max_num_seqs rows with the sorting top-k/top-p") {
  // vLLM V0 profile_run (0.4 to 0.7): SamplingParams(top_p=0.99, top_k=vocab-1) for
  // max_num_seqs dummy sequences. Llama-3.1-8B at max_model_len 8192 profiles 8,192
  // tokens; the sampler's 256 rows x 128,256 logits x 38 B (bf16 logits and the sort's
  // buffers) plus the 8,192 x 4,096 x 2 B hidden states profile_run keeps =
  // 1,247,739,904 + 67,108,864 B exceed the forward pass, in 0.4 as in 0.6 (0.6.4's
  // MI300X log: 4,096 rows, 19.09 GiB of peak, tests/data/engine_logs/vllm.yaml).
  const ModelConfig m = llama31_8b();
  ServingOptions o;
  o.engine = Engine::vllm;
  o.max_model_len = 8192;
  o.engine_version = "0.4";
  const ServingOptions v04 = with_engine_defaults(h100(), o);
  CHECK(v04.max_num_seqs == 256);
  const MemoryBudget b04 = memory_budget(m, h100(), v04);
  CHECK(b04.activation_bytes == int64_t{256} * 128256 * 38 + int64_t{8192} * 4096 * 2);
  o.engine_version = "0.6";
  const MemoryBudget b06 = memory_budget(m, h100(), with_engine_defaults(h100(), o));
  CHECK(b06.activation_bytes == int64_t{256} * 128256 * 38 + int64_t{8192} * 4096 * 2);
}

TEST_CASE("engine trtllm: the pool is free_gpu_memory_fraction of what weights, activation and context leave") {
  // TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction (default 0.9) applies to the
  // memory free after the model is loaded and a warm-up step ran. Worked by hand:
  // weights as loaded are 8,030,261,248 parameters x 2 B plus the 131,072 x 128 rotary
  // cos/sin cache x 2 B = 16,094,076,928 B; the CUDA context is 522 MiB (0.51 GiB:
  // "cuda_memory=0.51GiB" in vLLM 0.19's worker init snapshot on H100, docs/gpus.md), and
  // the backend's own runtime 1 GiB (fitted on a logged start-up, docs/engines.md).
  const ModelConfig m = llama31_8b();
  ServingOptions o;
  o.engine = Engine::trtllm;
  const MemoryBudget b = memory_budget(m, h100(), o);
  CHECK(b.weights_bytes == 16094076928LL);
  ServingOptions all = o;
  all.gpu_memory_utilization = 1.0;
  const int64_t free_bytes = memory_budget(m, h100(), all).kv_budget_bytes;
  CHECK(free_bytes == 85029158912LL - 16094076928LL - b.activation_bytes - 522LL * 1048576 - 1073741824LL);
  CHECK(b.kv_budget_bytes == static_cast<int64_t>(std::floor(0.9 * static_cast<double>(free_bytes))));
  ServingOptions half = o;
  half.gpu_memory_utilization = 0.45;
  CHECK(memory_budget(m, h100(), half).kv_budget_bytes ==
        static_cast<int64_t>(std::floor(0.45 * static_cast<double>(free_bytes))));
  // Every byte of the GPU is accounted for once.
  CHECK(b.kv_budget_bytes + b.reserve_bytes + b.weights_bytes + b.activation_bytes == 85029158912LL);
  // Tokens round UP to whole blocks (NVIDIA/TensorRT-LLM#224): 131,072 B per token
  // (32 layers x 8 heads x 128 x 2 x 2 B), then the next multiple of 16.
  const int64_t fit = b.kv_budget_bytes / (int64_t{32} * 8 * 128 * 2 * 2);
  CHECK(detail::engine_max_kv_tokens(m, o, b) == (fit + 15) / 16 * 16);
}

TEST_CASE("engine ideal: Llama-3.1-8B on an H100 holds 28,096 whole blocks = 449,536 tokens") {
  // usable floor(0.9 x 85,029,158,912) = 76,526,243,020 B; weights 8,030,261,248 x 2 B =
  // 16,060,522,496 B; activation 8,192 tokens x 122,880 B (tests/planner/memory_test.cpp)
  // = 1,006,632,960 B; reserve 512 MiB = 536,870,912 B; pool 58,922,216,652 B; a block is
  // 16 tokens x 131,072 B = 2,097,152 B: 28,096 whole blocks (28,096.3), 449,536 tokens.
  const ModelConfig m = llama31_8b();
  ServingOptions o;
  const MemoryBudget b = memory_budget(m, h100(), o);
  CHECK(b.kv_budget_bytes == 58922216652LL);
  CHECK(detail::engine_max_kv_tokens(m, o, b) == 449536);
}

}  // TEST_SUITE

TEST_CASE("each engine sends a streamed request's tokens as its code does") {
  // The chunks of a 13-token output at stream interval 4, as the engines' own rules give
  // them (docs/engines.md "Streaming"): SGLang 0.5 len(output_ids) % 4 == 1 and vLLM's
  // "first token, or 4 waiting since the last send" both send tokens 1, 5, 9 and 13 (the
  // last, as the request finishes); TensorRT-LLM's py_decoding_iter == 1 or % 4 == 0 sends
  // 1, 4, 8, 12 and 13: the chunk sizes [1, 3, 4, 4, 1] of NVIDIA/TensorRT-LLM PR #5836's test.
  const auto sent = [](kvplan::Engine e, const std::string& version) {
    ServingOptions o;
    o.engine = e;
    o.engine_version = version;
    o.stream_interval = 4;
    const StreamDelivery d = stream_delivery(o);
    std::vector<int64_t> tokens;
    for (int64_t g = 1; g <= 13; ++g)
      if (d.sends(g, 13)) tokens.push_back(g);
    return tokens;
  };
  CHECK(sent(kvplan::Engine::sglang, "0.5") == std::vector<int64_t>{1, 5, 9, 13});
  CHECK(sent(kvplan::Engine::vllm, "0.12") == std::vector<int64_t>{1, 5, 9, 13});
  CHECK(sent(kvplan::Engine::trtllm, "1.2") == std::vector<int64_t>{1, 4, 8, 12, 13});
  // The default (no flag) and 1 send every token, for every engine, ideal included.
  ServingOptions every;
  CHECK(stream_delivery(every).interval == 1);
  every.stream_interval = 1;
  for (int64_t g = 1; g <= 5; ++g) CHECK(stream_delivery(every).sends(g, 5));
}

TEST_CASE("a stream interval the engine release does not have is refused, naming the flag") {
  ServingOptions o;
  o.stream_interval = 0;
  CHECK_THROWS_WITH_AS(stream_delivery(o), doctest::Contains("--stream-interval"), InputError);
  o.stream_interval = 4;
  CHECK_THROWS_WITH_AS(stream_delivery(o), doctest::Contains("--engine ideal"), InputError);
  o.engine = kvplan::Engine::vllm;
  o.engine_version = "0.11";
  CHECK_THROWS_WITH_AS(stream_delivery(o), doctest::Contains("before vLLM 0.12"), InputError);
  o.engine_version = "0.12";
  CHECK(stream_delivery(o).interval == 4);
  o.engine = kvplan::Engine::sglang;
  o.engine_version = "0.4";
  CHECK_THROWS_WITH_AS(stream_delivery(o), doctest::Contains("N-th token"), InputError);
  o.engine = kvplan::Engine::trtllm;
  o.engine_version = "0";
  CHECK_THROWS_WITH_AS(stream_delivery(o), doctest::Contains("PyTorch backend"), InputError);
}
