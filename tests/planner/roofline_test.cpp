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
