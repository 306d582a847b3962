#include <doctest/doctest.h>

#include "gpu_validate/decoder_ref.h"
#include "gpu_validate/kv_quant.h"
#include "planner/planner.h"

using namespace kvplan;
using namespace kvplan::gv;

TEST_CASE("a 4-element 2-bit quantization worked by hand") {
  // z = 0, s = 3.5 / 3 = 1.16667 -> fp16 1.1669921875; codes 0, 1, 2, 3.
  const QuantResult r = quantize_dequantize({0.0f, 1.0f, 2.0f, 3.5f}, 1, 4, 2, QuantAxis::token, 4);
  CHECK(r.deq[0] == 0.0f);
  CHECK(r.deq[1] == doctest::Approx(1.1669921875).epsilon(1e-7));
  CHECK(r.deq[2] == doctest::Approx(2.333984375).epsilon(1e-7));
  CHECK(r.deq[3] == doctest::Approx(3.5009765625).epsilon(1e-7));
  CHECK(r.code_bits == 8);
  CHECK(r.meta_bits == 32);          // one fp16 scale + one fp16 zero
  CHECK(r.bits_per_elem() == 10.0);  // (8 + 32) / 4
  CHECK(mse({0.0f, 1.0f, 2.0f, 3.5f}, r.deq) == doctest::Approx(0.0348583).epsilon(1e-4));
}

TEST_CASE("per-channel quantization beats per-tensor on keys with outlier channels") {
  const auto k = synthetic_keys(128, 64, 2, 8.0f, 4.0f, 1);
  const QuantResult t = quantize_dequantize(k, 128, 64, 4, QuantAxis::tensor, 0);
  const QuantResult c = quantize_dequantize(k, 128, 64, 4, QuantAxis::channel, 0);
  CHECK(mse(k, t.deq) > 5 * mse(k, c.deq));
  CHECK(c.const_bits == 64 * 32);  // whole-context scales are per-request constants
  CHECK(c.meta_bits == 0);
}

namespace {
double planner_bits(const ModelConfig& m, DType d, KvQuant q, int64_t group) {
  ServingOptions o;
  o.kv_cache_dtype = d;
  o.kv_quant = q;
  o.kv_group = group;
  return kv_layout(m, o).bits_per_elem;
}
}  // namespace

TEST_CASE("bytes per element of each scheme equal the planner's kv_layout") {
  // One layer, 2 KV heads x 64 = 128 channels.
  ModelConfig m = tiny_decoder_config(512, 1, 8, 2, 1024, 256);
  m.head_dim = 64;
  const int64_t C = 128;
  const auto k = synthetic_keys(401, C, 4, 8.0f, 4.0f, 2);
  const auto v = synthetic_values(401, C, 3);
  // per-token, G = 64: b + 32/64
  const QuantResult pk = quantize_dequantize(k, 401, C, 4, QuantAxis::token, 64);
  CHECK(pk.bits_per_elem() == planner_bits(m, DType::int4, KvQuant::per_token, 64));
  CHECK(pk.bits_per_elem() == 4.5);
  // kivi, G = 32, R = 128: 401 - 128 = 273 -> 256 quantized tokens; b + 32/32
  const KvQuantResult kivi = quantize_kivi(k, v, 401, C, 2, 32, 128);
  CHECK(kivi.k.quantized_elems == 256 * C);
  CHECK(kivi.k.fp16_elems == 145 * C);
  CHECK(kivi.bits_per_elem() == planner_bits(m, DType::int2, KvQuant::kivi, 32));
  CHECK(kivi.bits_per_elem() == 3.0);
  // kvquant: 400 quantized tokens x 128 = 51,200 elements -> 512 outliers each of K and V
  const KvQuantResult kq = quantize_kvquant(k, v, 401, C, 4);
  CHECK(kq.k.meta_bits == 512 * 32 + 400 * 32);
  CHECK(kq.v.meta_bits == 512 * 32 + 400 * 32 + 400 * 32);  // + V's per-token scale and zero
  CHECK(kq.bits_per_elem() == doctest::Approx(planner_bits(m, DType::int4, KvQuant::kvquant, 0)).epsilon(1e-12));
  CHECK(kq.bits_per_elem() == doctest::Approx(4 + 0.32 + 96.0 / 256).epsilon(1e-12));
}

TEST_CASE("round-to-nearest error stays within half a quantization step") {
  const auto k = synthetic_keys(64, 32, 2, 8.0f, 4.0f, 4);
  for (int bits : {8, 4, 2}) {
    const QuantResult r = quantize_dequantize(k, 64, 32, bits, QuantAxis::token, 32);
    CHECK(r.max_err_over_half_step <= 1.01);
  }
}
