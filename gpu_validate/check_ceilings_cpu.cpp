// Check 5 on the host: copy bandwidth and the reference's FLOP/s, reported, and the
// host's measurements for the calibration file (the same tables and writer as a GPU run;
// a CPU has no datasheet, so no efficiencies are derived).
#include <string>

#include "gpu_validate/checks_internal.h"
#include "gpu_validate/decoder_ref.h"
#include "gpu_validate/host_ceilings.h"

namespace kvplan::gv::detail {

void add_host_ceiling_checks(std::vector<Check>& out, CalibrationOut& calib, bool quick) {
  // 64 MiB and more: beyond the last-level cache of the CI hosts, so DRAM is measured.
  const std::vector<int64_t> sizes = quick ? std::vector<int64_t>{int64_t{64} << 20}
                                           : std::vector<int64_t>{int64_t{64} << 20, int64_t{128} << 20};
  double best_copy = 0;
  for (int64_t bytes : sizes) {
    const double t = host_copy_time_s(bytes, quick ? 2 : 4);
    calib.hbm_copy.push_back({2 * bytes, t});  // read + written
    best_copy = std::max(best_copy, 2.0 * static_cast<double>(bytes) / t);
  }
  out.push_back(make_check("ceilings", "host_copy_bandwidth", "memcpy bytes read + written per second",
                           "B/s", 0, best_copy, Compare::info, 0,
                           "host only; the calibration file gets the raw copies (no datasheet, so no "
                           "bandwidth efficiency)"));
  // The reference's GEMM at decode (m = 1, 8) and prefill-like (m = 64) row counts.
  constexpr int64_t kN = 256, kK = 256;
  for (int64_t m : quick ? std::vector<int64_t>{1, 64} : std::vector<int64_t>{1, 8, 64}) {
    const double t = host_gemm_time_s(m, kN, kK, quick ? 2 : 3);
    calib.gemm.push_back({m, kN, kK, "fp32", t});
  }
  const ModelConfig m = tiny_decoder_config(256, 1, 4, 4, 512, 256);
  DecoderRef ref(m, 3);
  std::vector<int32_t> toks(64, 1);
  std::vector<float> logits;
  const double t = min_time_s(quick ? 2 : 3, [&] { ref.reset_cache(); ref.forward(toks, logits); });
  const double flops = forward_flops(m, 64, 0).total();
  out.push_back(make_check("ceilings", "host_reference_flops", "reference forward FLOP/s (one core)",
                           "FLOP/s", 0, flops / t, Compare::info, 0, m.name + ", 64 tokens"));
}

}  // namespace kvplan::gv::detail
