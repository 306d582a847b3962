// The CUDA backend: every check on the GPU, at real models' shapes, and the measurements
// of the kvplan.calibration/2 file. Timing predictions come from the planner's
// StepTimeModel with this device's datasheet (configs/gpus, exact device name) and the
// efficiencies measured here: the ceilings run first and calibrate the others. Each group
// runs on its own: an error becomes a failed "<group>_ran" check with the message, and
// the groups after it still run (a lent GPU's minutes are not spent on one bad launch).
// Every figure and tolerance: docs/validate.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include "gpu_validate/checks_internal.h"
#include "gpu_validate/cuda_backend.h"
#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"
#include "gpu_validate/datasheets.h"

namespace kvplan::gv {

namespace {

using detail::num;

void guarded(Report& r, const Options& o, const std::chrono::steady_clock::time_point& t0, const std::string& group,
             const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    r.checks.push_back(make_check(group, group + "_ran", "the group ran to its end", "bool", 1, 0,
                                  Compare::exact, 0, e.what()));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.on_progress) o.on_progress(r);
}

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// What the ceilings group measured, for the groups after it.
struct Measured {
  double copy_bytes_per_s = 0;
  double gemm_flops_per_s = 0;         // bf16 8192 x 8192 x 8192
  double decode_gemm_flops_per_s = 0;  // bf16 512 rows x 8192 x 8192
  double eager_launch_s = 0;           // per empty kernel, host-bound
  double graph_launch_s = 0;           // per empty kernel in a graph
};

}  // namespace

Report run_cuda_validation(const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw std::runtime_error(why);
  Report r;
  r.backend = Backend::cuda;

  // The context alone (total - free right after it exists), then cuBLAS with a workspace
  // of cuBLAS's recommended size, set explicitly so that it is known and graph capture
  // allocates nothing: 32 MiB on Hopper, 4 MiB elsewhere (cuBLAS docs, cublasSetWorkspace).
  GV_CUDA(cudaFree(nullptr));
  cuda::DeviceInfo dev = cuda::device_info();
  const int64_t context_bytes = int64_t(dev.total_bytes - dev.free_bytes);
  cuda::CublasHandle blas;
  cuda::CublasLtHandle lt;
  cuda::Stream stream;
  const int64_t workspace_bytes = dev.sm >= 90 ? int64_t{32} << 20 : int64_t{4} << 20;
  cuda::DeviceBuffer<char> workspace{static_cast<size_t>(workspace_bytes)};
  GV_CUBLAS(cublasSetWorkspace(blas.get(), workspace.get(), size_t(workspace_bytes)));
  GV_CUBLAS(cublasSetStream(blas.get(), stream.get()));
  r.device = dev.name + " (sm_" + std::to_string(dev.sm) + ", " + std::to_string(dev.sm_count) + " SMs, " +
             num(double(dev.total_bytes) / double(1 << 30)) + " GiB, L2 " + num(double(dev.l2_bytes) / double(1 << 20)) +
             " MiB)";

  Datasheet ds = datasheet_for_device(dev.name).value_or(Datasheet{});
  if (o.datasheet_bandwidth_bytes_per_s > 0) ds.bandwidth_bytes_per_s = o.datasheet_bandwidth_bytes_per_s;
  if (o.datasheet_peak_flops_per_s > 0) ds.bf16_flops_per_s = o.datasheet_peak_flops_per_s;
  const bool known = ds.bandwidth_bytes_per_s > 0 && ds.bf16_flops_per_s > 0;
  const std::string ds_note = known ? "datasheet (configs/gpus/" + (ds.gpu.empty() ? std::string("options") : ds.gpu) +
                                          "): " + num(ds.bandwidth_bytes_per_s) + " B/s, " +
                                          num(ds.bf16_flops_per_s) + " FLOP/s bf16"
                                    : "'" + dev.name + "' has no cuda_device_names entry in configs/gpus: pass "
                                      "--datasheet-bandwidth/--datasheet-flops";
  CalibrationOut& cal = r.calibration;
  cal.device = dev.name;
  cal.gpu = ds.gpu;
  cal.created = utc_date();
  cal.source = "kvplan_harness --backend cuda on " + r.device + ": cudaMemcpy D2D, cuBLAS/cuBLASLt GEMMs, "
               "gpu_validate's paged decode attention, empty-kernel launches; CUDA events on one stream; " + ds_note;
  // Working sets that stream from HBM: at least 8 x the L2 the device reports.
  const int64_t l2 = std::max<int64_t>(dev.l2_bytes, int64_t{1} << 20);
  const int64_t min_stream_bytes = round_up(8 * l2, int64_t{2} << 20);

  Measured meas;
  const Calibration defaults;
  // ------------------------------------------------------------------ check 5: ceilings
  guarded(r, o, t0, "ceilings", [&] {
    std::vector<int64_t> sizes = {min_stream_bytes};
    if (!o.quick) sizes.insert(sizes.end(), {4 * min_stream_bytes, int64_t{2} << 30});
    const auto budget = int64_t(dev.free_bytes / 4);  // src + dst well inside free memory
    sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](int64_t b) { return 2 * b > budget; }), sizes.end());
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (const cuda::CopyRun& c : cuda::measure_copies(sizes, stream.get())) {
      cal.hbm_copy.push_back({c.bytes_moved, c.time_s});
      meas.copy_bytes_per_s = std::max(meas.copy_bytes_per_s, double(c.bytes_moved) / c.time_s);
    }
    r.checks.push_back(make_check("ceilings", "copy_bandwidth_efficiency", "D2D copy / datasheet bandwidth", "",
                                  defaults.bandwidth_efficiency,
                                  known ? meas.copy_bytes_per_s / ds.bandwidth_bytes_per_s : 0, Compare::info, 0,
                                  "predicted: planner default; measured " + num(meas.copy_bytes_per_s) +
                                      " B/s (read + written) over " + std::to_string(sizes.size()) +
                                      " sizes >= 8 x L2; " + ds_note));
    const cuda::LaunchCost lc = cuda::measure_launch(1000, stream.get());
    cal.launch.push_back({"eager", lc.kernels, lc.eager_s});
    cal.launch.push_back({"graph", lc.kernels, lc.graph_s});
    meas.eager_launch_s = lc.eager_s / double(lc.kernels);
    meas.graph_launch_s = lc.graph_s / double(lc.kernels);
    r.checks.push_back(make_check("ceilings", "launch_eager_s", "empty kernel, launched from the host", "s", 0,
                                  meas.eager_launch_s, Compare::info, 0, "1000 launches, host wall time, best of 5"));
    r.checks.push_back(make_check("ceilings", "launch_graph_s", "empty kernel, replayed in a CUDA graph", "s", 0,
                                  meas.graph_launch_s, Compare::info, 0, "1000 kernels in one graph, events"));
  });

  // ------------------------------------------------------------------ GEMMs (calibration + check 5)
  guarded(r, o, t0, "gemm", [&] {
    std::vector<GemmShape> shapes = catalog_gemm_shapes();
    shapes.push_back({"ceiling", "square", 8192, 8192});
    const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{1, 512, 8192}
                                            : std::vector<int64_t>{1, 8, 64, 512, 2048, 8192};
    int64_t max_w = 0, max_n = 0, max_k = 0;
    for (const GemmShape& s : shapes) {
      max_w = std::max(max_w, s.n * s.k);
      max_n = std::max(max_n, s.n);
      max_k = std::max(max_k, s.k);
    }
    const int64_t max_m = *std::max_element(ms.begin(), ms.end());
    const bool fp8 = dev.sm >= 89 && (ds.fp8_flops_per_s > 0 || !known);
    // W's buffer: the largest layer, or 8 x L2 of copies of a smaller one (GemmBench).
    const int64_t w_elems = std::max(max_w, 8 * l2 / int64_t(sizeof(uint16_t)) + max_w);
    cuda::GemmBench bench(w_elems, max_m * max_k, max_m * max_n, l2, fp8, blas.get(), lt.get(), stream.get());
    int fp8_missing = 0;
    for (const GemmShape& s : shapes)
      for (int64_t m : ms) {
        cal.gemm.push_back({m, s.n, s.k, "bf16", bench.bf16_s(m, s.n, s.k)});
        if (!fp8) continue;
        if (const auto t = bench.fp8_s(m, s.n, s.k)) cal.gemm.push_back({m, s.n, s.k, "fp8", *t});
        else ++fp8_missing;
      }
    const double t_big = bench.bf16_s(8192, 8192, 8192), t_dec = bench.bf16_s(512, 8192, 8192);
    meas.gemm_flops_per_s = 2.0 * 8192.0 * 8192.0 * 8192.0 / t_big;
    meas.decode_gemm_flops_per_s = 2.0 * 512.0 * 8192.0 * 8192.0 / t_dec;
    r.checks.push_back(make_check("ceilings", "gemm_8192_flops_efficiency", "bf16 GEMM 8192^3 / datasheet peak", "",
                                  defaults.prefill_flops_efficiency,
                                  known ? meas.gemm_flops_per_s / ds.bf16_flops_per_s : 0, Compare::info, 0,
                                  "predicted: planner default prefill efficiency; measured " +
                                      num(meas.gemm_flops_per_s) + " FLOP/s"));
    r.checks.push_back(make_check("ceilings", "gemm_decode512_flops_efficiency", "bf16 GEMM 512 rows x 8192 x 8192 / peak",
                                  "", defaults.decode_flops_efficiency,
                                  known ? meas.decode_gemm_flops_per_s / ds.bf16_flops_per_s : 0, Compare::info, 0,
                                  "predicted: planner default decode efficiency; measured " +
                                      num(meas.decode_gemm_flops_per_s) + " FLOP/s"));
    r.checks.push_back(make_check("ceilings", "gemm_shapes_timed", "GEMMs timed for the calibration file", "count", 0,
                                  double(cal.gemm.size()), Compare::info, 0,
                                  std::to_string(shapes.size()) + " (n, k) from configs/models x " +
                                      std::to_string(ms.size()) + " row counts, bf16" +
                                      (fp8 ? " and fp8 (" + std::to_string(fp8_missing) + " without an fp8 algorithm)"
                                           : "; no fp8 on this device")));
  });

  if (known && meas.copy_bytes_per_s > 0 && meas.gemm_flops_per_s > 0) {
    // io::load_calibration accepts efficiencies in [0.001, 1].
    auto eff = [](double x) { return std::clamp(x, 1e-3, 1.0); };
    cal.parameters.push_back({"bandwidth_efficiency", eff(meas.copy_bytes_per_s / ds.bandwidth_bytes_per_s), "fraction",
                              "largest D2D copy rate (bytes read + written / s) / datasheet bandwidth"});
    cal.parameters.push_back({"prefill_flops_efficiency", eff(meas.gemm_flops_per_s / ds.bf16_flops_per_s), "fraction",
                              "bf16 GEMM 8192^3 / datasheet dense bf16"});
    cal.parameters.push_back({"decode_flops_efficiency", eff(meas.decode_gemm_flops_per_s / ds.bf16_flops_per_s),
                              "fraction", "bf16 GEMM 512 x 8192 x 8192 / datasheet dense bf16"});
  }

  // The planner as the later checks see it: the datasheet with the measured efficiencies
  // (or, without a datasheet, the measured ceilings at efficiency 1).
  GpuSpec g;
  g.name = dev.name;
  g.memory_bytes = int64_t(dev.total_bytes);
  g.memory_bandwidth_bytes_per_s = known ? ds.bandwidth_bytes_per_s : meas.copy_bytes_per_s;
  g.peak_flops.bf16 = g.peak_flops.fp16 = known ? ds.bf16_flops_per_s : meas.gemm_flops_per_s;
  g.peak_flops.fp32 = ds.fp32_flops_per_s;
  ServingOptions so;
  so.dtype = DType::bf16;
  so.calibration.bandwidth_efficiency = cal.parameter("bandwidth_efficiency").value_or(1.0);
  so.calibration.prefill_flops_efficiency = cal.parameter("prefill_flops_efficiency").value_or(1.0);
  so.calibration.decode_flops_efficiency = cal.parameter("decode_flops_efficiency").value_or(1.0);
  so.calibration.measured = true;
  so.calibration.device = dev.name;
  const double achieved_bw = g.memory_bandwidth_bytes_per_s * so.calibration.bandwidth_efficiency;

  // ------------------------------------------------------------------ check 1: decode
  guarded(r, o, t0, "decode", [&] {
    if (g.memory_bandwidth_bytes_per_s <= 0 || g.peak_flops.bf16 <= 0)
      throw std::runtime_error("no bandwidth or FLOP/s to predict from (the ceilings group failed)");
    ModelConfig m = llama_1b_like_config();
    m.tie_word_embeddings = false;
    const std::vector<int64_t> Ts = o.quick ? std::vector<int64_t>{16, 64} : std::vector<int64_t>{16, 64, 256, 512};
    const auto runs = cuda::run_decoder(m, Ts, blas.get(), stream.get());
    const StepTimeModel stm(m, g, so);
    for (const cuda::DecodeRun& d : runs) {
      const std::string T = "_T" + std::to_string(d.T);
      const FlopBreakdown pn = generate_naive_flops(m, d.T), pc = generate_cached_flops(m, d.T);
      r.checks.push_back(make_check("decode", "flops_naive" + T, "FLOPs issued, naive generation", "FLOP",
                                    pn.total(), d.naive_macs.flops().total(), Compare::exact, 0,
                                    "GEMM m*n*k and attention pairs of every launch, x 2; " + m.name));
      r.checks.push_back(make_check("decode", "flops_cached" + T, "FLOPs issued, cached generation", "FLOP",
                                    pc.total(), d.cached_macs.flops().total(), Compare::exact, 0, m.name));
      double pred_naive_s = 0, pred_cached_s = 0;
      for (int64_t t = 1; t <= d.T; ++t) {
        pred_naive_s += stm.prefill(t).time_s;
        pred_cached_s += stm.decode(1, t).time_s;
      }
      r.checks.push_back(make_check("decode", "time_naive_graph" + T, "naive generation time (CUDA graph)", "s",
                                    pred_naive_s, d.naive_graph_s, Compare::relative, 0.5,
                                    "planner StepTimeModel::prefill(t) summed over t (calibrated); " +
                                        std::to_string(d.naive_kernels) + " kernels replayed as one graph"));
      r.checks.push_back(make_check("decode", "time_cached_graph" + T, "cached generation time (CUDA graph)", "s",
                                    pred_cached_s, d.cached_graph_s, Compare::relative, 0.5,
                                    "planner StepTimeModel::decode(1, t) summed over t (calibrated); " +
                                        std::to_string(d.cached_kernels / d.T) + " kernels per token in one graph"));
      // Launches per token: embedding; per layer norm, QKV GEMM, cache append, attention,
      // output GEMM, add, norm, gate+up GEMM, SiLU*up, down GEMM, add (11); final norm and
      // LM-head GEMM: 11 L + 3 (179 for 16 layers). cuBLAS may add nodes of its own.
      r.checks.push_back(make_check("decode", "graph_nodes_per_token" + T, "graph nodes / T vs kernels launched",
                                    "count", double(11 * m.num_layers + 3), double(d.cached_kernels) / double(d.T),
                                    Compare::at_least, 0, "11 per layer + 3; more if cuBLAS splits a GEMM"));
      if (meas.eager_launch_s > 0) {
        // Eager: the host launches one kernel at a time, so the GPU waits whenever the
        // kernels are shorter than the launches: time ~ max(work, kernels x launch cost).
        const double launch_bound_s = double(d.cached_kernels) * meas.eager_launch_s;
        r.checks.push_back(make_check("decode", "launch_bound_cached" + T, "kernels x eager launch cost", "s", 0,
                                      launch_bound_s, Compare::info, 0,
                                      std::to_string(d.cached_kernels) + " kernels x " + num(meas.eager_launch_s) +
                                          " s: what an engine without CUDA graphs pays"));
        r.checks.push_back(make_check("decode", "time_cached_eager" + T, "cached generation time, eager launches",
                                      "s", std::max(pred_cached_s, launch_bound_s), d.cached_eager_s,
                                      Compare::relative, 0.5,
                                      "max(planner decode sum, launch-bound figure); graph time " +
                                          num(d.cached_graph_s) + " s"));
      }
      r.checks.push_back(make_check("decode", "naive_over_cached_time" + T, "time ratio vs planner time ratio", "x",
                                    pred_naive_s / pred_cached_s, d.naive_graph_s / d.cached_graph_s,
                                    Compare::relative, 0.5,
                                    "both as graphs; FLOP ratio " + num(pn.total() / pc.total()) +
                                        ": cached decode is memory-bound, so the time ratio is far below it"));
      r.checks.push_back(make_check("decode", "naive_cached_logit_diff" + T, "max |logit diff| / max |logit|", "",
                                    0.05, d.last_logit_max_abs_diff / std::max(1e-30, d.last_logit_max_abs),
                                    Compare::at_most, 0, "bf16 activations; different GEMM shapes"));
    }
  });

  // ------------------------------------------------------------------ check 2: attention
  guarded(r, o, t0, "attention", [&] {
    if (achieved_bw <= 0) throw std::runtime_error("no measured bandwidth to predict from (the ceilings group failed)");
    const int64_t H = 32, D = kAttentionHeadDim, B = o.quick ? 8 : 32;
    // Long enough that even the smallest cache (MQA: one KV head) is >= 8 x L2.
    const int64_t mqa_bytes_per_token = D * int64_t(sizeof(uint16_t)) * 2;
    const int64_t ctx = std::max<int64_t>(o.quick ? 4096 : 16384,
                                          round_up((min_stream_bytes / mqa_bytes_per_token + B - 1) / B, 256));
    // A shape is called memory-bound when its FLOP per byte is below a quarter of the
    // CUDA-core ridge (fp32 peak / achieved bandwidth): it stays memory-bound even if this
    // kernel reaches only 1/4 of fp32 peak. Otherwise only the roofline bound is checked.
    const double ridge = g.peak_flops.fp32 > 0 ? g.peak_flops.fp32 / achieved_bw : 0;
    std::vector<cuda::AttentionRun> runs;
    std::vector<bool> memory_bound;
    for (int64_t n_kv : {int64_t{32}, int64_t{16}, int64_t{8}, int64_t{1}}) {
      const std::string n = n_kv == H ? "mha" : n_kv == 1 ? "mqa" : "gqa" + std::to_string(H / n_kv);
      r.checks.push_back(make_check("attention", "kernel_vs_reference_" + n, "max |GPU - CPU reference|", "", 0,
                                    cuda::paged_attention_error_vs_ref(H, n_kv, stream.get()), Compare::exact, 2e-3,
                                    "bf16 cache, fp32 math; lengths 300/171/1, shuffled blocks"));
      const cuda::AttentionRun a = cuda::time_paged_attention(AttentionShape{B, ctx, H, n_kv}, stream.get());
      cal.decode_attention.push_back({n_kv == H ? "mha" : n_kv == 1 ? "mqa" : "gqa", B, ctx, H, n_kv, D, "bf16",
                                      int64_t(a.traffic.total_bytes), a.time_s});
      ServingOptions ko = so;
      ko.kv_cache_dtype = DType::bf16;
      const double pred_kv = double(kv_bytes_per_token(detail::one_layer(H, n_kv, D), ko)) * double(B * ctx);
      r.checks.push_back(make_check("attention", "kv_bytes_read_" + n, "K+V bytes read vs planner", "B", pred_kv,
                                    double(a.traffic.kv_bytes), Compare::exact, 0, "each row once per KV head"));
      const double memory_s = double(a.traffic.total_bytes) / achieved_bw;
      const double compute_s = g.peak_flops.fp32 > 0 ? 2.0 * double(a.traffic.macs) / g.peak_flops.fp32 : 0;
      const double intensity = 2.0 * double(a.traffic.macs) / double(a.traffic.total_bytes);
      const bool mb = ridge > 0 && intensity <= ridge / 4;
      const std::string traffic = "bytes " + num(double(a.traffic.total_bytes)) + " (KV " + num(double(a.traffic.kv_bytes)) +
                                  ", queries, block table, split partials x 2, outputs " +
                                  num(double(a.traffic.total_bytes - a.traffic.kv_bytes)) + "), " + num(intensity) +
                                  " FLOP/B vs ridge/4 " + num(ridge / 4) + "; achieved " +
                                  num(double(a.traffic.total_bytes) / a.time_s) + " B/s; " + std::to_string(B) + " x " +
                                  std::to_string(ctx) + " tokens";
      if (mb)
        r.checks.push_back(make_check("attention", "time_" + n, "decode attention time vs bytes / measured bandwidth",
                                      "s", memory_s, a.time_s, Compare::relative, 0.3, "memory-bound: " + traffic));
      else
        r.checks.push_back(make_check("attention", "time_" + n, "decode attention time vs roofline bound", "s",
                                      std::max(memory_s, compute_s), a.time_s, Compare::at_least, 0,
                                      "compute-leaning on CUDA cores: max(bytes / bandwidth, FLOPs / fp32 peak) is "
                                      "a lower bound only; " + traffic));
      runs.push_back(a);
      memory_bound.push_back(mb);
    }
    for (size_t i = 1; i < runs.size(); ++i) {
      const double bytes_ratio = double(runs[0].traffic.total_bytes) / double(runs[i].traffic.total_bytes);
      const double speedup = runs[0].time_s / runs[i].time_s;
      const std::string name = "speedup_mha_over_nkv" + std::to_string(runs[i].shape.n_kv);
      if (memory_bound[0] && memory_bound[i])
        r.checks.push_back(make_check("attention", name, "time(MHA) / time(n_kv heads) vs bytes ratio", "x",
                                      bytes_ratio, speedup, Compare::relative, 0.3, "both memory-bound"));
      else
        r.checks.push_back(make_check("attention", name, "time(MHA) / time(n_kv heads) at most the bytes ratio", "x",
                                      bytes_ratio, speedup, Compare::at_most, 0,
                                      "n_h / n_kv = " + num(double(H) / double(runs[i].shape.n_kv)) +
                                          " before split partials; the smaller cache is compute-leaning"));
    }
  });

  // ------------------------------------------------------------------ decode attention sweep (calibration)
  guarded(r, o, t0, "attention_sweep", [&] {
    const std::vector<int64_t> batches = o.quick ? std::vector<int64_t>{1, 32} : std::vector<int64_t>{1, 8, 32, 128};
    const std::vector<int64_t> contexts = o.quick ? std::vector<int64_t>{4096}
                                                  : std::vector<int64_t>{1024, 4096, 16384};
    const double cap = std::min(double(int64_t{8} << 30), double(dev.free_bytes) / 4);
    int skipped = 0, timed = 0;
    for (int64_t n_kv : {int64_t{32}, int64_t{8}, int64_t{1}})
      for (int64_t b : batches)
        for (int64_t c : contexts) {
          const AttentionShape s{b, c, 32, n_kv};
          if (double(attention_traffic(s).kv_bytes) > cap) {
            ++skipped;
            continue;
          }
          const cuda::AttentionRun a = cuda::time_paged_attention(s, stream.get());
          cal.decode_attention.push_back({n_kv == 32 ? "mha" : n_kv == 1 ? "mqa" : "gqa", b, c, 32, n_kv,
                                          kAttentionHeadDim, "bf16", int64_t(a.traffic.total_bytes), a.time_s});
          ++timed;
        }
    r.checks.push_back(make_check("attention", "sweep_shapes_timed", "decode attention shapes timed for calibration",
                                  "count", 0, timed, Compare::info, 0,
                                  "MHA 32/32, GQA 32/8, MQA 32/1, head_dim 128, bf16; " + std::to_string(skipped) +
                                      " skipped (KV over min(8 GiB, free / 4)); no MLA kernel"));
  });

  // ------------------------------------------------------------------ check 3: quantization
  guarded(r, o, t0, "kv_quant", [&] {
    const cuda::QuantKernelRun q = cuda::run_quant_kernel();
    r.checks.push_back(make_check("kv_quant", "gpu_kernel_vs_reference_per_token", "max |GPU - CPU| dequantized",
                                  "", 0, q.max_abs_diff_per_token, Compare::exact, 1e-6, "int4 g32, int2 g128"));
    r.checks.push_back(make_check("kv_quant", "gpu_kernel_vs_reference_per_channel", "max |GPU - CPU| dequantized",
                                  "", 0, q.max_abs_diff_per_channel, Compare::exact, 1e-6, "int4 g32, int8 g32"));
    detail::add_kv_quant_checks(r.checks, o);
  });

  // ------------------------------------------------------------------ check 4: memory
  guarded(r, o, t0, "memory", [&] {
    // Last, so that every module this run uses has been loaded (lazy loading takes device
    // memory at first launch). What is held now: the context, loaded modules, cuBLAS's
    // handles and our explicit workspace; every other buffer has been freed.
    GV_CUDA(cudaDeviceSynchronize());
    const cuda::DeviceInfo now = cuda::device_info();
    const int64_t reserve = int64_t(now.total_bytes - now.free_bytes);
    cal.parameters.push_back({"runtime_reserve_bytes", double(reserve), "B",
                              "total - free after every check (context, modules, cuBLAS, its workspace)"});
    // The prediction: the CUDA context as vLLM 0.19 logs it on an H100 (planner
    // kCudaContextBytes) plus the cuBLAS workspace set above. Logged on sm_90 only: a
    // check there, a figure elsewhere (the context's size varies with chip and driver).
    const double pred = double(kvplan::kCudaContextBytes + workspace_bytes);
    const bool logged_arch = dev.sm / 10 == 9;
    r.checks.push_back(make_check("memory", "cuda_context_bytes", "total - free once the context exists", "B",
                                  double(kvplan::kCudaContextBytes), double(context_bytes),
                                  logged_arch ? Compare::relative : Compare::info, 0.3,
                                  "predicted: planner kCudaContextBytes (vLLM 0.19 on H100)"));
    r.checks.push_back(make_check("memory", "runtime_reserve_bytes", "context + modules + cuBLAS (total - free)", "B",
                                  pred, double(reserve), logged_arch ? Compare::relative : Compare::info, 0.3,
                                  "predicted: kCudaContextBytes + " + std::to_string(workspace_bytes >> 20) +
                                      " MiB cuBLAS workspace; includes any other process on the GPU"));
    const ModelConfig m = llama_1b_like_config();
    ServingOptions mo = so;
    // Utilization 1.0 so that the pool fills the device: one more block must fail.
    mo.gpu_memory_utilization = 1.0;
    mo.block_size = 128;  // 4 MiB blocks: larger than cudaMalloc's 2 MiB rounding
    // cudaMalloc rounds each allocation up to 2 MiB: three allocations (weights,
    // activations, pool) may take up to 6 MiB more than the planner's bytes, so that
    // much is added to the reserve, and the "one block more" probe asks for it too.
    constexpr int64_t kAllowance = int64_t{6} << 20;
    mo.calibration.runtime_reserve_bytes = reserve + kAllowance;
    cuda::CudaArena arena;
    const MemoryCheck mc = run_memory_check(m, g, mo, 4096, arena, kAllowance);
    detail::add_memory_checks(r.checks, mc,
                              "real cudaMalloc on " + dev.name + ", " + m.name +
                                  ", bf16 KV, 4096-token requests, 128-token blocks, utilization 1.0",
                              "cuda_bf16");
  });

  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace kvplan::gv
