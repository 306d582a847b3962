// DeepSeek-V4 compressed sparse attention (planner/flops.cpp, kv_traffic.cpp): one layer of
// each compress ratio in DeepSeek-V4-Flash's geometry (64 heads of head_dim 512 over one
// K=V latent of 584 B; window 128; indexer 64 heads x 128, keys of 132 B, top 512),
// worked by hand. Per attention key one layer costs 2·64·512 = 65,536 FLOPs of scores and
// as many of values: 131,072; per indexer key 2·64·(128 + 1) = 16,512 (the heads' dot
// products and their weighted sum). A compressor pools coff·r states per entry:
// 2·2·4·(512 + 128) = 10,240 FLOPs at r = 4 (the indexer's compressor with it),
// 2·1·128·512 = 131,072 at r = 128.
#include <doctest/doctest.h>

#include <filesystem>

#include "io/config_io.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {
ModelConfig v4_layer(int64_t ratio) {
  ModelConfig m;
  m.name = "v4-layer";
  m.hidden_size = 4096;
  m.num_layers = 1;
  m.num_heads = 64;
  m.num_kv_heads = 1;
  m.head_dim = 512;
  m.qk_rope_head_dim = 64;
  m.q_lora_rank = 1024;
  m.o_groups = 8;
  m.o_lora_rank = 1024;
  m.index_heads = 64;
  m.index_head_dim = 128;
  m.index_topk = 512;
  m.csa_window = 128;
  m.layer_compress_ratio = {ratio};
  m.intermediate_size = 16;
  m.vocab_size = 10;
  return m;
}
}  // namespace

TEST_CASE("DeepSeek-V4 decode at context 10,000: window, compressed entries, indexer, bytes read") {
  const ServingOptions o;
  // Ratio 1: the window alone, min(10,000, 128) = 128 keys: 128 x 131,072 = 16,777,216
  // FLOPs; 128 x 584 = 74,752 B.
  {
    const ModelConfig m = v4_layer(1);
    const CsaAttentionFlops f = csa_attention_flops(m, 1, 9999);
    CHECK(f.sharded == 16777216.0);
    CHECK(f.replicated == 0.0);
    CHECK(kv_decode_read_bytes_per_gpu(m, o, 10000) == 74752.0);
  }
  // Ratio 128: 128 + floor(10,000 / 128) = 128 + 78 = 206 keys: 27,000,832 FLOPs; no group
  // completes at 10,000 (78 x 128 = 9,984), so no pooling; 206 x 584 = 120,304 B.
  {
    const ModelConfig m = v4_layer(128);
    const CsaAttentionFlops f = csa_attention_flops(m, 1, 9999);
    CHECK(f.sharded == 206 * 131072.0);
    CHECK(f.replicated == 0.0);
    CHECK(kv_decode_read_bytes_per_gpu(m, o, 10000) == 120304.0);
  }
  // Ratio 4: 2,500 entries, the top 512 attended: 640 keys = 83,886,080 FLOPs; the indexer
  // scores all 2,500: 41,280,000, and position 10,000 completes group 2,500: + 10,240 =
  // 41,290,240. Bytes: 640 x 584 + 2,500 x 132 = 373,760 + 330,000 = 703,760.
  {
    const ModelConfig m = v4_layer(4);
    const CsaAttentionFlops f = csa_attention_flops(m, 1, 9999);
    CHECK(f.sharded == 83886080.0);
    CHECK(f.replicated == 41290240.0);
    CHECK(kv_decode_read_bytes_per_gpu(m, o, 10000) == 703760.0);
    // forward_flops: the heads' scores and the indexer's in attn_scores, the pooling in qkv.
    const FlopBreakdown d = decode_step_flops(m, 10000);
    CHECK(d.attn_values == 41943040.0);
    CHECK(d.attn_scores == 41943040.0 + 41280000.0);
    CHECK(d.qkv - decode_step_flops(m, 9999).qkv == 10240.0);
  }
}

TEST_CASE("DeepSeek-V4 prefill of 4,096 tokens: one layer of each ratio") {
  // Window pairs: sum over p of min(p, 128) = 128·129/2 + (4,096 - 128)·128 = 8,256 +
  // 507,904 = 516,160.
  CHECK(csa_attention_flops(v4_layer(1), 4096, 0).sharded == 516160 * 131072.0);
  // Ratio 128: sum of floor(p / 128) = 128·(1 + ... + 31) + 32 = 63,488 + 32 = 63,520;
  // 579,680 keys = 75,979,816,960 FLOPs; 32 entries pooled: 32 x 131,072 = 4,194,304.
  const CsaAttentionFlops c128 = csa_attention_flops(v4_layer(128), 4096, 0);
  CHECK(c128.sharded == 75979816960.0);
  CHECK(c128.replicated == 4194304.0);
  // Ratio 4: sum of min(512, floor(p / 4)): p < 2,048 gives 4·(1 + ... + 511) = 523,264,
  // p = 2,048..4,096 gives 2,049 x 512 = 1,049,088: 1,572,352 + 516,160 = 2,088,512 keys =
  // 273,745,444,864 FLOPs. The indexer: sum of floor(p / 4) = 4·(1 + ... + 1,023) + 1,024 =
  // 2,096,128 keys x 16,512 = 34,611,265,536, and 1,024 entries x 10,240 = 10,485,760:
  // 34,621,751,296.
  const CsaAttentionFlops c4 = csa_attention_flops(v4_layer(4), 4096, 0);
  CHECK(c4.sharded == 273745444864.0);
  CHECK(c4.replicated == 34621751296.0);
}

TEST_CASE("DeepSeek-V4 generation: the closed forms equal the sums of their steps") {
  // A top-20 indexer so that the cap binds within 300 tokens (floor(300 / 4) = 75).
  for (const int64_t r : {1, 4, 128}) {
    ModelConfig m = v4_layer(r);
    m.index_topk = 20;
    const int64_t T = 300;
    double cached = 0, naive = 0;
    for (int64_t t = 1; t <= T; ++t) {
      cached += decode_step_flops(m, t).total();
      naive += prefill_flops(m, t).total();
    }
    CAPTURE(r);
    CHECK(generate_cached_flops(m, T).total() == doctest::Approx(cached).epsilon(1e-12));
    CHECK(generate_naive_flops(m, T).total() == doctest::Approx(naive).epsilon(1e-12));
  }
}

TEST_CASE("DeepSeek-V4-Flash: a decode step's KV reads over its 43 layers, and the step time's") {
  const ModelConfig m = io::load_model(
      (std::filesystem::path(KVPLAN_TEST_DATA_DIR) / "hf_configs/deepseek-ai--DeepSeek-V4-Flash.json").string());
  ServingOptions o;
  o.tp = 8;
  // 2 window-only layers, 21 of ratio 4, 20 of ratio 128 (compress_ratios), each read
  // whole on every TP rank: 2 x 74,752 + 21 x 703,760 + 20 x 120,304 = 149,504 +
  // 14,778,960 + 2,406,080 = 17,334,544 B at context 10,000.
  CHECK(kv_decode_read_bytes_per_gpu(m, o, 10000) == 17334544.0);
  // The step time reads them once per sequence. At context 100 every layer reads 100
  // window latents, 43 x 58,400 = 2,511,200 B, and the ratio-4 layers 25 entries and keys,
  // 21 x 25 x (584 + 132) = 375,900 B: 2,887,100 B. 3 sequences at 10,000 against 3 at 100
  // differ by 3 x (17,334,544 - 2,887,100) = 43,342,332 B, the weights being the same.
  const StepTimeModel st(m, test::h100(), o);
  CHECK(kv_decode_read_bytes_per_gpu(m, o, 100) == 2887100.0);
  CHECK(st.decode(3, 10000).bytes - st.decode(3, 100).bytes == doctest::Approx(43342332.0));
  // Its keys are of three kinds: a count of layer-mean keys per sequence is refused.
  CHECK_THROWS_AS((void)st.kv_traffic().decode_keys(10000), InputError);
}

TEST_CASE("DeepSeek-V4 step time: the heads' attention split over TP, the indexer whole on every rank") {
  // The ratio-4 layer from context 100 to 10,000. At 100: 100 window + 25 entries = 125
  // keys, 16,384,000 FLOPs; the indexer 25 x 16,512 = 412,800 and position 100 completes
  // group 25: + 10,240 = 423,040. At 10,000 (above): 83,886,080 and 41,290,240. The step's
  // compute grows by 67,502,080 / tp + 40,867,200 FLOPs a GPU: 49,304,960 at TP 8 against
  // 108,369,280 at TP 1, the rest of the step being the same at both contexts.
  const ModelConfig m = v4_layer(4);
  const CsaAttentionFlops near = csa_attention_flops(m, 1, 99);
  CHECK(near.sharded == 16384000.0);
  CHECK(near.replicated == 423040.0);
  const auto grows = [&](int64_t tp) {
    ServingOptions o;
    o.tp = tp;
    const StepTimeModel st(m, test::h100(), o);
    return st.decode(1, 10000).compute_s - st.decode(1, 100).compute_s;
  };
  CHECK(grows(8) / grows(1) == doctest::Approx(49304960.0 / 108369280.0).epsilon(1e-9));
}
