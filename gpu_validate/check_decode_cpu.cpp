// Check 1 on the CPU reference: FLOPs executed against the planner (exact; also used
// by the CUDA backend) and the naive/cached time ratio against the FLOP ratio.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "gpu_validate/checks_internal.h"
#include "gpu_validate/decoder_ref.h"
#include "gpu_validate/host_ceilings.h"

namespace kvplan::gv::detail {

namespace {
std::string tname(const char* base, int64_t T) { return std::string(base) + "_T" + std::to_string(T); }
}  // namespace

// ------------------------------------------------------------------ check 1: FLOPs
void add_decode_flop_checks(std::vector<Check>& out, bool quick) {
  // Hand-checkable: h 64, 2 layers, 4 query heads of 16, 2 KV heads, MLP 160, vocab 128.
  const ModelConfig m = tiny_decoder_config(64, 2, 4, 2, 160, 128);
  DecoderRef ref(m, 1);
  for (int64_t T : quick ? std::vector<int64_t>{5} : std::vector<int64_t>{5, 24}) {
    std::vector<std::vector<float>> lc, ln;
    ref.counts = {};
    const auto tok_c = ref.generate_cached(3, T, &lc);
    const FlopBreakdown fc = ref.counts.flops();
    ref.counts = {};
    const auto tok_n = ref.generate_naive(3, T, &ln);
    const FlopBreakdown fn = ref.counts.flops();
    const FlopBreakdown pc = generate_cached_flops(m, T), pn = generate_naive_flops(m, T);
    auto mismatches = [](const FlopBreakdown& a, const FlopBreakdown& b) {
      return (a.qkv != b.qkv) + (a.attn_scores != b.attn_scores) + (a.attn_values != b.attn_values) +
             (a.out_proj != b.out_proj) + (a.mlp != b.mlp) + (a.lm_head != b.lm_head);
    };
    const std::string note = "multiply-adds the reference executed x 2, against planner "
                             "generate_*_flops (" + m.name + "); categories differing: ";
    out.push_back(make_check("decode", tname("flops_cached", T), "FLOPs of T cached steps", "FLOP",
                             pc.total(), fc.total(), Compare::exact, 0,
                             note + std::to_string(mismatches(pc, fc))));
    out.push_back(make_check("decode", tname("flops_naive", T), "FLOPs of T naive steps", "FLOP",
                             pn.total(), fn.total(), Compare::exact, 0,
                             note + std::to_string(mismatches(pn, fn))));
    out.push_back(make_check("decode", tname("flop_categories_differing", T),
                             "FlopBreakdown fields differing (both modes)", "count", 0,
                             mismatches(pc, fc) + mismatches(pn, fn), Compare::exact, 0,
                             "qkv, attn_scores, attn_values, out_proj, mlp, lm_head"));
    double max_diff = 0;
    for (size_t s = 0; s < lc.size(); ++s)
      for (size_t i = 0; i < lc[s].size(); ++i)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(lc[s][i] - ln[s][i])));
    out.push_back(make_check("decode", tname("naive_cached_logit_diff", T),
                             "max |logit naive - logit cached| over all steps", "logit", 1e-3,
                             max_diff, Compare::at_most, 0,
                             std::string("greedy tokens identical: ") + (tok_c == tok_n ? "yes" : "no")));
  }
}


// ------------------------------------------------------------------ check 1: times
void add_decode_time_checks(std::vector<Check>& out, bool quick) {
  // Big enough that matrix work dominates per-step overheads; same dot-product routine
  // for one token and for many, so time per multiply-add is shape-independent.
  const ModelConfig m = tiny_decoder_config(128, 2, 4, 2, 256, 512);
  DecoderRef ref(m, 2);
  const std::vector<int64_t> Ts = quick ? std::vector<int64_t>{8, 32} : std::vector<int64_t>{8, 32, 64};
  const int reps = quick ? 3 : 4;
  // Tolerance: the measured time ratio may differ from the FLOP ratio by 35 %: softmax,
  // norms and the cache append are not counted as FLOPs, and a shared CI core can be
  // preempted (each step is timed alone, fastest of `reps`, naive and cached steps
  // alternating, and the steps summed).
  constexpr double kTol = 0.35;
  double prev = 0;
  for (int64_t T : Ts) {
    const auto [tn, tc] = ref.time_naive_and_cached_s(T, reps);
    const double pred = generate_naive_flops(m, T).total() / generate_cached_flops(m, T).total();
    const double meas = tn / tc;
    out.push_back(make_check("decode", tname("naive_over_cached_time", T),
                             "time(naive) / time(cached) vs FLOP ratio", "x", pred, meas,
                             Compare::relative, kTol,
                             "predicted: planner generate_naive_flops / generate_cached_flops; "
                             "measured: sum over steps of the fastest of " + std::to_string(reps) + " runs, " + m.name +
                             " (naive " + num(tn) + " s, cached " + num(tc) + " s)"));
    if (prev > 0)
      out.push_back(make_check("decode", tname("ratio_grows_with_T", T),
                               "measured ratio at T / ratio at the previous T", "x", 1.0, meas / prev,
                               Compare::at_least, 0, "the speed-up of the cache grows with T (~(T+1)/2)"));
    if (T == Ts.front())
      out.push_back(make_check("decode", tname("seed_about_4x", T), "the seed's 'about 4x' speed-up",
                               "x", 4.0, meas, Compare::info, 0,
                               "the ratio is ~(T+1)/2 for small models: 4x is one length (T ~ 7), "
                               "not a constant"));
    prev = meas;
  }
  // The seed's LLaMA-7B at T = 2048, for scale (planner only).
  ModelConfig l7 = tiny_decoder_config(4096, 32, 32, 32, 11008, 32000);
  l7.name = "llama-7b";
  const double r7 = generate_naive_flops(l7, 2048).total() / generate_cached_flops(l7, 2048).total();
  out.push_back(make_check("decode", "planner_llama7b_naive_over_cached_T2048",
                           "planner FLOP ratio for LLaMA-7B at T = 2048", "x", r7, r7, Compare::info, 0,
                           "what 'about 4x' becomes at the seed's own example length"));
}

}  // namespace kvplan::gv::detail
