// Speculative decoding (planner/speculative.h) and what paging bought (Plan's contiguous
// reservation capacity). Every expected value is worked by hand in the comment beside it.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "io/config_io.h"
#include "planner/speculative.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {
std::shared_ptr<const SpecDecode> spec(SpecMethod m, int64_t k, std::vector<double> rates) {
  auto s = std::make_shared<SpecDecode>();
  s->method = m;
  s->num_speculative_tokens = k;
  s->acceptance_rates = std::move(rates);
  return s;
}
}  // namespace

TEST_CASE("expected tokens per step: 1 + a1 + a1 a2 + ... (closed forms)") {
  // k = 3, a = 0.8: 1 + 0.8 + 0.64 + 0.512 = 2.952.
  CHECK(expected_tokens_per_step({0.8, 0.8, 0.8}) == doctest::Approx(2.952).epsilon(1e-12));
  // Per position 0.9, 0.5: 1 + 0.9 + 0.9 x 0.5 = 2.35.
  CHECK(expected_tokens_per_step({0.9, 0.5}) == doctest::Approx(2.35).epsilon(1e-12));
  // Nothing accepted: the target's own token only; everything: k + 1.
  CHECK(expected_tokens_per_step({0, 0, 0}) == 1);
  CHECK(expected_tokens_per_step({1, 1, 1, 1}) == 5);
  // The constant rate whose 1 + a + a^2 + a^3 is 2.952 is 0.8 (the same sum backwards).
  CHECK(constant_rate_for_length(2.952, 3) == doctest::Approx(0.8).epsilon(1e-9));
  // One draft token, mean length 1.85: a = 0.85.
  CHECK(constant_rate_for_length(1.85, 1) == doctest::Approx(0.85).epsilon(1e-9));
}

TEST_CASE("acceptance: one rate for every position, a mean length, the cited MTP default, else refused") {
  const ModelConfig llama = test::llama3_8b();
  const auto one = spec(SpecMethod::ngram, 3, {0.8});
  CHECK(resolve_acceptance(*one, llama).rates == std::vector<double>{0.8, 0.8, 0.8});
  SpecDecode by_length = *one;
  by_length.acceptance_rates.clear();
  by_length.acceptance_length = 2.952;
  CHECK(resolve_acceptance(by_length, llama).rates[2] == doctest::Approx(0.8).epsilon(1e-9));
  // DeepSeek-V3 technical report 5.4.3: 85-90 % for the second token; kvplan takes 0.85,
  // for one draft token only.
  ModelConfig ds = llama;
  ds.model_type = "deepseek_v3";
  SpecDecode mtp;
  mtp.method = SpecMethod::mtp;
  mtp.num_speculative_tokens = 1;
  CHECK(resolve_acceptance(mtp, ds).rates == std::vector<double>{0.85});
  mtp.num_speculative_tokens = 2;
  CHECK_THROWS_AS(resolve_acceptance(mtp, ds), InputError);
  SpecDecode none = *one;
  none.acceptance_rates.clear();
  CHECK_THROWS_AS(resolve_acceptance(none, llama), InputError);
}

TEST_CASE("validate_spec refuses k < 1, rates outside [0, 1], a wrong count, mtp without MTP layers, trtllm") {
  const ModelConfig m = test::llama3_8b();
  ServingOptions o;
  o.spec = spec(SpecMethod::ngram, 0, {0.5});
  CHECK_THROWS_AS(validate_spec(m, o, "t"), InputError);
  o.spec = spec(SpecMethod::ngram, 2, {1.5});
  CHECK_THROWS_AS(validate_spec(m, o, "t"), InputError);
  o.spec = spec(SpecMethod::ngram, 3, {0.5, 0.4});  // 2 rates for 3 positions
  CHECK_THROWS_AS(validate_spec(m, o, "t"), InputError);
  o.spec = spec(SpecMethod::mtp, 1, {0.5});  // Llama ships no num_nextn_predict_layers
  CHECK_THROWS_AS(validate_spec(m, o, "t"), InputError);
  o.spec = spec(SpecMethod::eagle3, 1, {0.5});  // no head config
  CHECK_THROWS_AS(validate_spec(m, o, "t"), InputError);
  o.spec = spec(SpecMethod::ngram, 3, {0.5});
  o.engine = Engine::trtllm;
  CHECK_THROWS_AS(validate_spec(m, o, "t"), InputError);
  o.engine = Engine::vllm;
  CHECK_NOTHROW(validate_spec(m, o, "t"));
}

TEST_CASE("an idle single request: TPOT with speculation = step time / expected tokens") {
  // Llama-3-8B on H100, the bare roofline (no calibration), n-gram drafts (no GPU pass),
  // k = 3 at a = 0.8, 16 tokens of context. Batch 1 is memory-bound both ways: the step
  // reads the weights once, 8,030,261,248 params x 2 B = 16,060,522,496 B, at
  // 3.35e12 x 0.80 B/s = 5.993 ms (the 16 tokens' KV, 16 x 128 KiB = 2 MiB, adds 0.8 us;
  // 4 tokens x 16 GFLOP at 989.4e12 x 0.5 is 0.13 ms of compute). So the verify step is
  // the plain decode step, and TPOT = 5.993 ms / 2.952 = 2.030 ms.
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  ServingOptions o;
  o.spec = spec(SpecMethod::ngram, 3, {0.8});
  const SpecTimeModel t(m, g, o);
  const SpecStep s = t.at(1, 16);
  CHECK(s.draft_s == 0);
  CHECK(s.verify_s == doctest::Approx(5.993e-3).epsilon(0.003));
  CHECK(s.tokens_per_step == doctest::Approx(2.952));
  CHECK(1 / s.tokens_per_s == doctest::Approx(5.993e-3 / 2.952).epsilon(0.003));
  CHECK(s.speedup() == doctest::Approx(2.952).epsilon(0.003));
}

TEST_CASE("the trade-off turns: helps at batch 1, hurts when the step is compute-bound") {
  // With equal prefill and decode efficiencies, a compute-bound step costs FLOPs in
  // proportion to its tokens: plain decoding runs batch tokens, verification batch x 4 for
  // k = 3, so the speed-up tends to 2.952 / 4 = 0.738 (the n-gram draft costs no GPU
  // time). Llama-3-8B at batch 1,024 and 128 tokens of context: 1,024 x 16 GFLOP = 16.4
  // TFLOP at 989.4e12 x 0.5 = 33 ms of compute against 6 ms of weights: compute-bound.
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  ServingOptions o;
  o.calibration.prefill_flops_efficiency = 0.5;
  o.calibration.decode_flops_efficiency = 0.5;
  o.spec = spec(SpecMethod::ngram, 3, {0.8});
  const SpecTimeModel t(m, g, o);
  CHECK(t.at(1024, 128).speedup() == doctest::Approx(0.738).epsilon(0.02));
  const SpecSweep w = spec_sweep(t, 128, 1024);
  CHECK(w.rows.front().speedup() > 2.9);
  CHECK(w.turns_at_batch > 1);
  CHECK(w.turns_at_batch <= 1024);
  CHECK(t.at(w.turns_at_batch, 128).speedup() < 1);
  CHECK(t.at(w.turns_at_batch - 1, 128).speedup() >= 1);
}

TEST_CASE("DeepSeek-V3's MTP module from its config, by hand") {
  // One MTP layer (num_nextn_predict_layers: 1), a MoE decoder layer as layer 61 of the
  // checkpoint, plus eh_proj and three norms (vllm deepseek_mtp.py); embedding and LM head
  // are the target's (vllm/v1/spec_decode/eagle.py load_model: "Detected MTP model.
  // Sharing target model ... weights").
  //   MLA: q_a 7168 x 1536 = 11,010,048; q_a norm 1,536; q_b 1536 x 128 x 192 = 37,748,736;
  //        kv_a 7168 x 576 = 4,128,768; kv_a norm 512; kv_b 512 x 128 x 256 = 16,777,216;
  //        o 128 x 128 x 7168 = 117,440,512                                 -> 187,107,328
  //   experts 256 x 3 x 7168 x 2048 = 11,274,289,152; shared 3 x 7168 x 2048 = 44,040,192;
  //   router 256 x 7168 = 1,835,008; two layer norms 14,336                 -> 11,320,178,688
  //   eh_proj 2 x 7168 x 7168 = 102,760,448; enorm, hnorm, shared_head.norm 21,504
  //   total 187,107,328 + 11,320,178,688 + 102,760,448 + 21,504 = 11,610,067,968
  // (the checkpoint's 14B MTP module also stores its own copies of the embedding and
  // head, 2 x 129,280 x 7168 = 1.85B, which vLLM does not load as separate weights).
  const ModelConfig m = io::load_model("deepseek-v3");
  REQUIRE(m.num_nextn_predict_layers == 1);
  ServingOptions o;
  o.tp = 8;
  o.engine = Engine::vllm;
  o.spec = spec(SpecMethod::mtp, 1, {0.85});
  const SpecMemory mem = spec_memory(m, o);
  CHECK(mem.params == 11610067968);
  // Its KV: one MLA layer of (512 + 64) x 2 B = 1,152 B per token on every GPU (MLA's
  // latent is replicated over TP).
  CHECK(mem.kv_bytes_per_token_per_gpu == 1152);
  // Bytes per GPU, fp8 with 128 x 128 block scales (4 B per 16,384 weights): the layer's
  // matrices 187,105,280 + 11,318,329,344 weights / 8 GPUs x (1 + 4 / 16384) =
  // 1,438,530,446; router and norms at 2 B on every GPU, (1,835,008 + 14,336 + 2,048) x 2
  // = 3,702,784; eh_proj (replicated, bf16) 205,520,896 and the three norms 43,008:
  // about 1,647,797,134 B.
  CHECK(static_cast<double>(mem.weight_bytes_per_gpu) == doctest::Approx(1.6478e9).epsilon(0.01));
  // The pool: the target's 61 layers of 1,152 B and the MTP layer's share each block, so
  // the target gets 61 / 62 of the KV budget.
  CHECK(detail::target_kv_budget(m, o, 62000000) == 61000000);
}

TEST_CASE("vLLM: the draft's weights leave the KV budget: SGLang: its default fraction reserves 2 GiB more") {
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  ServingOptions o;
  o.engine = Engine::vllm;
  const MemoryBudget plain = memory_budget(m, g, o);
  // A draft model of Llama-3-8B's own shape: 16,060,522,496 B more weights, KV pool that much smaller.
  auto s = std::make_shared<SpecDecode>(*spec(SpecMethod::draft_model, 3, {0.8}));
  s->draft = m;
  o.spec = s;
  const MemoryBudget with = memory_budget(m, g, o);
  CHECK(with.weights_bytes - plain.weights_bytes == 16060522496);
  CHECK(plain.kv_budget_bytes - with.kv_budget_bytes == 16060522496);
  // sglang_default_mem_fraction (server_args.py): reserved_mem += 2 * 1024 MiB for EAGLE,
  // 6 * 1024 for STANDALONE (a draft model), none for NGRAM.
  o.spec = spec(SpecMethod::eagle3, 3, {0.8});
  CHECK(detail::sglang_spec_reserved_mib(o) == 2048);
  o.spec = s;
  CHECK(detail::sglang_spec_reserved_mib(o) == 6144);
  o.spec = spec(SpecMethod::ngram, 3, {0.8});
  CHECK(detail::sglang_spec_reserved_mib(o) == 0);
}

TEST_CASE("lookahead: a sequence holds 1 + k verified slots and k lookahead ones while a step runs") {
  // vLLM Scheduler: num_lookahead_tokens = k for EAGLE / MTP / draft models, 0 for n-gram.
  CHECK(spec_slots_per_step(*spec(SpecMethod::eagle3, 3, {0.8})) == 7);
  CHECK(spec_slots_per_step(*spec(SpecMethod::ngram, 3, {0.8})) == 4);
}

TEST_CASE("what paging bought: the pool's requests when each reserves max_model_len contiguously") {
  // Llama-3-8B (max_position_embeddings 8192), blocks of 16 tokens: a contiguous
  // reservation of 8,192 tokens is 512 blocks; a paged 1,024-token request holds 64. So
  // the same N blocks hold floor(N / 512) reservations against floor(N / 64) requests.
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  ServingOptions o;
  const Plan p = make_plan(m, g, o, 1024, 1);
  const int64_t n = p.capacity.num_blocks;
  REQUIRE(n > 512);
  CHECK(p.max_model_len == 8192);
  CHECK(p.capacity.max_concurrent_requests == n / 64);
  CHECK(p.contiguous_max_requests == n / 512);
  // --max-model-len 4096: 256 blocks each.
  o.max_model_len = 4096;
  const Plan q = make_plan(m, g, o, 1024, 1);
  CHECK(q.contiguous_max_requests == q.capacity.num_blocks / 256);
}
