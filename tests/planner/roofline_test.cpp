// Roofline step times (planner.h: StepTimeModel).
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

TEST_CASE("a batch-1 decode of Llama-3-8B on H100 is memory-bound: weights / (80 % of 3.35 TB/s)") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const GpuSpec g = io::load_gpu("h100-sxm");
  const StepTimeModel st(m, g, ServingOptions{});
  const StepTime t = st.decode(1, 1);
  CHECK(t.bound == Bound::memory);
  // 16,060,522,496 B of weights + 131,072 B of KV at 2.68e12 B/s = 5.99 ms.
  CHECK(t.time_s == doctest::Approx((16060522496.0 + 131072.0) / (3.35e12 * 0.8)).epsilon(1e-9));
}

TEST_CASE("an 8,192-token prefill of Llama-3-8B on H100 is compute-bound at 70 % of 989.4 TFLOP/s") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const StepTimeModel st(m, io::load_gpu("h100-sxm"), ServingOptions{});
  const StepTime t = st.prefill(8192);
  CHECK(t.bound == Bound::compute);
  CHECK(t.time_s == doctest::Approx(prefill_flops(m, 8192).total() / (989.4e12 * 0.7)).epsilon(1e-9));
  // Rule of thumb 2 · params · tokens ≈ 1.3e14 FLOP plus attention: about 0.2 s.
  CHECK(t.time_s > 0.18);
  CHECK(t.time_s < 0.25);
}

TEST_CASE("decode time grows with the KV the batch reads") {
  const StepTimeModel st(io::load_model("llama-3-8b"), io::load_gpu("h100-sxm"), ServingOptions{});
  const double extra = st.decode(64, 4096).time_s - st.decode(64, 1).time_s;
  // 64 · 4,095 more tokens · 131,072 B at 2.68e12 B/s.
  CHECK(extra == doctest::Approx(64.0 * 4095 * 131072 / (3.35e12 * 0.8)).epsilon(1e-6));
}

TEST_CASE("TP 2 halves the weight bytes per GPU and adds two all-reduces per layer") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const GpuSpec g = io::load_gpu("h100-sxm");
  ServingOptions o;
  o.tp = 2;
  const StepTime t = StepTimeModel(m, g, o).decode(1, 1);
  // One token: 2 · 32 all-reduces of 4,096 · 2 B; ring: 2·(2-1)/2 · 8,192 B / 450 GB/s + 5 us each.
  CHECK(t.communication_s == doctest::Approx(64 * (8192.0 / 450e9 + 5e-6)).epsilon(1e-9));
  CHECK(t.memory_s < StepTimeModel(m, g, ServingOptions{}).decode(1, 1).memory_s * 0.55);
}

TEST_CASE("a calibration file's efficiencies replace the defaults") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const GpuSpec g = io::load_gpu("h100-sxm");
  ServingOptions o;
  o.calibration.bandwidth_efficiency = 0.4;
  const double slow = StepTimeModel(m, g, o).decode(1, 1).time_s;
  CHECK(slow == doctest::Approx(2 * StepTimeModel(m, g, ServingOptions{}).decode(1, 1).time_s).epsilon(1e-9));
}

TEST_CASE("MoE decode of one token reads only the experts it uses") {
  const ModelConfig m = io::load_model("mixtral-8x7b");
  const StepTimeModel st(m, io::load_gpu("h200"), ServingOptions{});
  const double one = st.decode(1, 1).memory_s, many = st.decode(256, 1).memory_s;
  // One token touches 2 of 8 experts (≈ 12.9 B of 46.7 B parameters); 256 tokens touch all.
  CHECK(one / many == doctest::Approx(12.9 / 46.7).epsilon(0.03));
}

// Sliding-window layers read at most their window.
TEST_CASE("Mistral-7B decode reads at most its 4,096-token window of KV per layer") {
  const ModelConfig m = io::load_model("mistral-7b");
  const StepTimeModel st(m, io::load_gpu("h100-sxm"), ServingOptions{});
  // 32 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes = 131,072 B per token;
  // capped at 4,096 tokens: 536,870,912 B per sequence, at 4k and at 32k alike.
  CHECK(kv_decode_read_bytes_per_gpu(m, ServingOptions{}, 32768) == 536870912.0);
  CHECK(kv_decode_read_bytes_per_gpu(m, ServingOptions{}, 2048) == 2048.0 * 131072);
  CHECK(st.decode(16, 32768).bytes == st.decode(16, 4096).bytes);
  CHECK(st.decode(16, 32768).time_s == st.decode(16, 4096).time_s);
  // Below the window it grows like a full-attention model: 16 x 2,048 tokens more.
  CHECK(st.decode(16, 4096).bytes - st.decode(16, 2048).bytes == doctest::Approx(16.0 * 2048 * 131072));
}

TEST_CASE("KvTraffic caps each layer at its own window (Gemma-2-style alternation)") {
  ModelConfig m = io::load_model("llama-3-8b");
  m.layer_window.assign(32, 0);
  for (size_t l = 0; l < 32; l += 2) m.layer_window[l] = 4;  // half the layers see 4 tokens
  const KvTraffic kv(m, ServingOptions{});
  CHECK(kv.windowed());
  // Context 10: full layers 10 keys, windowed 4: mean 7.
  CHECK(kv.decode_keys(10) == 7.0);
  CHECK(kv.decode_keys(3) == 3.0);
  // Chunk of 5 after 2 cached: queries 3..7; full layers 3+4+5+6+7 = 25 pairs,
  // windowed min(p, 4) = 3+4+4+4+4 = 19; mean 22.
  CHECK(kv.prefill_pairs(2, 5) == 22.0);
  CHECK(kv.prefill_write_bytes(5) == 5.0 * 131072);
}
