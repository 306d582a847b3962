// LoRA adapters (planner/lora.h): the slots vLLM allocates, what they take from the KV
// pool, and the cost of the batched LoRA kernels. Every expected value is worked by hand
// in the comment beside it from Llama-3-8B's config (tests/fixtures.h) and vLLM's
// create_lora_weights shapes (docs/lora.md).
#include <doctest/doctest.h>

#include <cmath>

#include "io/config_io.h"
#include "planner/lora.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {
ServingOptions lora_options(int64_t tp, int64_t slots, int64_t rank, std::vector<std::string> targets = {}) {
  ServingOptions o;
  o.tp = tp;
  o.engine = Engine::vllm;
  o.lora = LoraOptions{};
  o.lora->max_loras = slots;
  o.lora->max_lora_rank = rank;
  o.lora->target_modules = std::move(targets);
  return o;
}
ServingOptions without_lora(ServingOptions o) {
  o.lora.reset();
  return o;
}
}  // namespace

TEST_CASE("Llama-3-8B, rank 16, one slot, every module: 46,178,304 elements, 92,356,608 B in bf16") {
  // Per layer, TP 1 (hidden 4096, q 32 x 128 = 4096, k and v 8 x 128 = 1024, MLP 14336):
  //   qkv_proj:     lora_a 3 x 16 x 4096 = 196,608;  lora_b (4096 + 2 x 1024) x 16 = 98,304
  //   o_proj:       lora_a 16 x 4096 = 65,536;       lora_b 4096 x 16 = 65,536
  //   gate_up_proj: lora_a 2 x 16 x 4096 = 131,072;  lora_b 2 x 14336 x 16 = 458,752
  //   down_proj:    lora_a 16 x 14336 = 229,376;     lora_b 4096 x 16 = 65,536
  //   = 1,310,720 per layer, x 32 layers = 41,943,040
  // embed_tokens: 128256 x 16 + 4096 x 16 = 2,117,632; lm_head the same: 4,235,264 in all.
  // 46,178,304 elements x 2 B = 92,356,608 B.
  const ModelConfig m = test::llama3_8b();
  const LoraMemory mem = lora_memory(m, lora_options(1, 1, 16));
  REQUIRE(mem.modules.size() == 6);
  CHECK(mem.modules[0].name == "qkv_proj");
  CHECK(mem.modules[0].a_elems == 196608);
  CHECK(mem.modules[0].b_elems == 98304);
  CHECK(mem.modules[2].b_elems == 458752);
  CHECK(mem.modules[3].a_elems == 229376);
  CHECK(mem.dtype == DType::bf16);
  CHECK(mem.slot_bytes_per_gpu == 92356608);
  CHECK(mem.bytes_per_gpu == 92356608);
  // Four slots: four times the buffers (max_loras x ... x max_lora_rank).
  CHECK(lora_memory(m, lora_options(1, 4, 16)).bytes_per_gpu == 4 * 92356608);
}

TEST_CASE("TP 2 shards lora_b of column-parallel and lora_a of row-parallel modules: 65,093,632 B") {
  // Per layer, TP 2: qkv lora_a whole 196,608, lora_b (2048 + 2 x 512) x 16 = 49,152;
  // o lora_a 16 x 2048 = 32,768, lora_b 65,536; gate_up lora_a 131,072, lora_b 2 x 7168 x
  // 16 = 229,376; down lora_a 16 x 7168 = 114,688, lora_b 65,536: 884,736 per layer,
  // x 32 = 28,311,552; embeddings whole on every GPU 4,235,264: 32,546,816 x 2 B.
  CHECK(lora_memory(test::llama3_8b(), lora_options(2, 1, 16)).bytes_per_gpu == 65093632);
}

TEST_CASE("--lora-target-modules: q_proj and v_proj wrap the packed qkv_proj only") {
  // qkv_proj whole (vLLM wraps a packed module when any part is targeted): 294,912 per
  // layer x 32 = 9,437,184 elements, x 2 B = 18,874,368 B per slot; rank 64 is 4 times.
  const ModelConfig m = test::llama3_8b();
  const LoraMemory mem = lora_memory(m, lora_options(1, 1, 16, {"q_proj", "v_proj"}));
  REQUIRE(mem.modules.size() == 1);
  CHECK(mem.modules[0].name == "qkv_proj");
  CHECK(mem.bytes_per_gpu == 18874368);
  CHECK(lora_memory(m, lora_options(1, 1, 64, {"q_proj", "v_proj"})).bytes_per_gpu == 4 * 18874368);
}

TEST_CASE("Qwen-family classes wrap no embedding modules") {
  // Qwen3ForCausalLM has no embedding_modules: the linear modules only,
  // 1,310,720 x 32 x 2 B = 83,886,080 B for Llama-3-8B's shapes under model_type qwen3.
  ModelConfig m = test::llama3_8b();
  m.model_type = "qwen3";
  CHECK(lora_memory(m, lora_options(1, 1, 16)).bytes_per_gpu == 83886080);
  // Naming lm_head for it is refused, as is an unknown family without explicit modules.
  CHECK_THROWS_AS(validate_lora(m, lora_options(1, 1, 16, {"lm_head"}), "t"), InputError);
  // A family whose vLLM class kvplan's table does not describe is refused, whatever the
  // modules: its packing decides the slices (next case).
  m.model_type = "somefamily";
  CHECK_THROWS_AS(validate_lora(m, lora_options(1, 1, 16), "t"), InputError);
  CHECK_THROWS_AS(validate_lora(m, lora_options(1, 1, 16, {"qkv_proj", "o_proj"}), "t"), InputError);
}

TEST_CASE("Phi-4: the checkpoint's own fused qkv_proj and gate_up_proj hold one slice each") {
  // Phi3ForCausalLM packs qkv_proj: [qkv_proj] and gate_up_proj: [gate_up_proj], so vLLM
  // wraps them with the one-slice layers (QKVParallelLinearWithLoRA,
  // ColumnParallelLinearWithLoRA). Phi-4 (configs/models/phi-4.yaml): hidden 5120, 40
  // layers, 40 heads and 10 KV heads of 128, MLP 17920, vocabulary 100352. Rank 16, TP 1:
  //   qkv_proj:     lora_a 16 x 5120 = 81,920;    lora_b (5120 + 2 x 1280) x 16 = 122,880
  //   o_proj:       lora_a 16 x 5120 = 81,920;    lora_b 5120 x 16 = 81,920
  //   gate_up_proj: lora_a 16 x 5120 = 81,920;    lora_b 2 x 17920 x 16 = 573,440
  //   down_proj:    lora_a 16 x 17920 = 286,720;  lora_b 5120 x 16 = 81,920
  //   = 1,392,640 per layer, x 40 = 55,705,600; embed_tokens and lm_head
  //   (100352 + 5120) x 16 = 1,687,552 each: 59,080,704 elements x 2 B = 118,161,408 B.
  const ModelConfig m = io::load_model("phi-4");
  CHECK_NOTHROW(validate_lora(m, lora_options(1, 1, 16), "t"));
  const LoraMemory mem = lora_memory(m, lora_options(1, 1, 16));
  REQUIRE(mem.modules.size() == 6);
  CHECK(mem.modules[0].slices == 1);
  CHECK(mem.modules[0].a_elems == 81920);
  CHECK(mem.modules[2].a_elems == 81920);
  CHECK(mem.bytes_per_gpu == 118161408);
  // q_proj names no module of Phi-3 (its qkv_proj packs no q_proj): nothing is wrapped
  // but what qkv_proj names.
  CHECK(lora_memory(m, lora_options(1, 1, 16, {"q_proj", "qkv_proj"})).bytes_per_gpu == 40 * 204800 * 2);
  CHECK(lora_memory(m, lora_options(1, 1, 16, {"q_proj", "down_proj"})).bytes_per_gpu == 40 * 368640 * 2);
}

TEST_CASE("the slots leave the vLLM KV budget byte for byte, and cost whole requests") {
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  const ServingOptions with = lora_options(1, 8, 64), without = without_lora(with);
  const MemoryBudget a = memory_budget(m, g, without), b = memory_budget(m, g, with);
  // 8 slots of rank 64: 8 x 4 x 92,356,608 = 2,955,411,456 B.
  CHECK(b.lora_bytes == 2955411456);
  CHECK(a.kv_budget_bytes - b.kv_budget_bytes == 2955411456);
  CHECK(b.weights_bytes == a.weights_bytes);
  // KV per token: 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B, so the pool loses
  // 2,955,411,456 / 131,072 = 22,548.0 tokens, whole 16-token blocks: 1,409 blocks.
  const Capacity ca = capacity(m, without, a, 4096), cb = capacity(m, with, b, 4096);
  CHECK(ca.max_kv_tokens - cb.max_kv_tokens >= 1409 * 16);
  CHECK(ca.max_kv_tokens - cb.max_kv_tokens <= 1410 * 16);
}

TEST_CASE("the LoRA kernels of one decode token through qkv_proj, worked by hand") {
  // One qkv_proj slot (lora_a 196,608, lora_b 98,304 elements per layer, bf16), 1 token,
  // 1 adapter, 32 layers:
  //   FLOPs  2 x (196,608 + 98,304) = 589,824 per layer, x 32 = 18,874,368;
  //   bytes  A 393,216 + B 196,608 + x 4096 x 2 = 8,192 + fp32 buffer 2 x 3 x 16 x 4 = 384
  //          + output read and written 2 x 6144 x 2 = 24,576: 622,976 per layer,
  //          x 32 = 19,935,232;
  //   launches: a shrink and an expand per layer, 64.
  const LoraMemory mem = lora_memory(test::llama3_8b(), lora_options(1, 1, 16, {"qkv_proj"}));
  const LoraStepCost c = lora_step_cost(mem, 1, 1, 1);
  CHECK(c.flops == doctest::Approx(18874368));
  CHECK(c.bytes == doctest::Approx(19935232));
  CHECK(c.kernels == 64);
  // Two slots, two adapters: two A and B read; more adapters than slots cannot be in one
  // batch, so five count as two, and on one slot as one.
  const LoraMemory two_slots = lora_memory(test::llama3_8b(), lora_options(1, 2, 16, {"qkv_proj"}));
  // 32 x (2 x (393,216 + 196,608) + 2 tokens x 33,152) = 39,870,464.
  CHECK(lora_step_cost(two_slots, 2, 2, 2).bytes == doctest::Approx(39870464));
  CHECK(lora_step_cost(two_slots, 2, 2, 5).bytes == doctest::Approx(39870464));
  // 32 x (393,216 + 196,608 + 2 x 33,152) = 20,996,096.
  CHECK(lora_step_cost(mem, 2, 2, 5).bytes == doctest::Approx(20996096));
}

TEST_CASE("the decode step grows by the LoRA kernels' time, and by nothing else") {
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  const ServingOptions with = lora_options(1, 4, 16), without = without_lora(with);
  const StepTime a = StepTimeModel(m, g, without).decode(8, 2048);
  const StepTime b = StepTimeModel(m, g, with).decode(8, 2048);
  CHECK(a.lora_s == 0);
  CHECK(b.lora_s > 0);
  CHECK(b.time_s - a.time_s == doctest::Approx(b.lora_s).epsilon(1e-9));
  // At 8 sequences on 4 slots the kernels read at least the 4 adapters once: 4 x 92.4 MB
  // at 3.35 TB/s is 110 us, a floor on the LoRA time.
  CHECK(b.lora_s >= 4 * 92356608 / 3.35e12);
}

TEST_CASE("LoRA options vLLM refuses, or kvplan cannot model, are refused by name") {
  const ModelConfig m = test::llama3_8b();
  CHECK_NOTHROW(validate_lora(m, lora_options(1, 1, 16), "t"));
  CHECK_THROWS_AS(validate_lora(m, lora_options(1, 1, 24), "t"), InputError);  // not in MaxLoRARanks
  CHECK_THROWS_AS(validate_lora(m, lora_options(1, 0, 16), "t"), InputError);
  ServingOptions cpu = lora_options(1, 4, 16);
  cpu.lora->max_cpu_loras = 2;  // vLLM: max_cpu_loras must be >= max_loras
  CHECK_THROWS_AS(validate_lora(m, cpu, "t"), InputError);
  CHECK_THROWS_AS(validate_lora(m, lora_options(1, 1, 16, {"w_pack"}), "t"), InputError);
  ServingOptions sglang = lora_options(1, 1, 16);
  sglang.engine = Engine::sglang;
  CHECK_THROWS_AS(validate_lora(m, sglang, "t"), InputError);
  // lm_head over 258,048 rows is refused by vLLM's LogitsProcessorWithLoRA; without it, fine.
  ModelConfig big_vocab = m;
  big_vocab.vocab_size = 262144;
  CHECK_THROWS_AS(validate_lora(big_vocab, lora_options(1, 1, 16), "t"), InputError);
  CHECK_NOTHROW(validate_lora(big_vocab, lora_options(1, 1, 16, {"qkv_proj", "down_proj"}), "t"));
  ModelConfig moe = m;
  moe.num_experts = 8;
  moe.experts_per_token = 2;
  moe.moe_intermediate_size = 1024;
  CHECK_THROWS_AS(validate_lora(moe, lora_options(1, 1, 16), "t"), InputError);
}

TEST_CASE("a logged vLLM 0.14 start-up with one rank-16 slot: 'Model loading took 13.58 GiB'") {
  // Mistral-7B-Instruct-v0.2 served by vLLM 0.14.0 with ENABLE_LORA, MAX_LORAS 1,
  // MAX_LORA_RANK 16, MAX_MODEL_LEN 4096 (a RunPod worker's log, 2026-01-22,
  // jamesjordanmarketing/v4-show@64bbb930 pmc/product/_mapping/pipeline/workfiles/
  // worker-log-39.txt: "Model loading took 13.58 GiB memory"; vLLM measures the load, LoRA
  // wrapping included).
  // v0.2 has v0.1's shapes (configs/models/mistral-7b.yaml; it differs in rope_theta and
  // the window, neither a weight). Weights as vLLM loads them: 7,241,732,096 bf16
  // parameters = 14,483,464,192 B plus the rotary cache 32768 x 128 x 2 B = 8,388,608 B;
  // one slot of Llama's modules at Mistral's shapes: 41,943,040 elements in the layers
  // (as Llama-3-8B's) + (32000 + 4096) x 16 x 2 for embed_tokens and lm_head = 43,098,112
  // elements, 86,196,224 B. In all 14,578,049,024 B = 13.5768 GiB, printed 13.58; without
  // the slot 13.4965 GiB would print 13.50.
  const ModelConfig m = io::load_model("mistral-7b");
  ServingOptions o = lora_options(1, 1, 16);
  o.max_model_len = 4096;
  const MemoryBudget b = memory_budget(m, test::h100(), o);
  CHECK(b.lora_bytes == 86196224);
  const double loaded_gib = static_cast<double>(b.weights_bytes + b.lora_bytes) / (1024.0 * 1024 * 1024);
  CHECK(std::round(loaded_gib * 100) / 100 == doctest::Approx(13.58).epsilon(1e-12));
}
