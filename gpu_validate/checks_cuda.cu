// The CUDA backend: every check on the GPU, at real models' shapes. Timing predictions
// come from the planner's StepTimeModel with this device's datasheet and the efficiencies
// measured here (check 5 runs first and calibrates the others).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpu_validate/checks_internal.h"
#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"

namespace kvplan::gv::detail {

namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
}  // namespace

Report run_cuda(const Options& o) {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw std::runtime_error(why);
  Report r;
  r.backend = Backend::cuda;

  // Runtime reserve: what the context and cuBLAS (handle + workspace, touched by a GEMM)
  // take, as total - free on an otherwise idle device.
  GV_CUDA(cudaFree(nullptr));  // creates the context
  cublasHandle_t handle;
  GV_CUBLAS(cublasCreate(&handle));
  cuda::DeviceInfo dev = cuda::device_info();
  r.device = dev.name + " (sm_" + std::to_string(dev.sm) + ", " + num(double(dev.total_bytes) / (1 << 30)) + " GiB)";

  // ---------------------------------------------------------------- check 5: ceilings
  cuda::Ceilings ceil = cuda::measure_ceilings(handle, dev.free_bytes);
  dev = cuda::device_info();  // after cuBLAS has run GEMMs: its workspace exists
  ceil.runtime_reserve_bytes = int64_t(dev.total_bytes - dev.free_bytes);
  cuda::Datasheet ds = cuda::datasheet_for(dev.name);
  if (o.datasheet_bandwidth_bytes_per_s > 0) ds.bandwidth_bytes_per_s = o.datasheet_bandwidth_bytes_per_s;
  if (o.datasheet_peak_flops_per_s > 0) ds.bf16_flops_per_s = o.datasheet_peak_flops_per_s;
  const bool known = ds.bandwidth_bytes_per_s > 0 && ds.bf16_flops_per_s > 0;
  if (known) {
    // io::load_calibration accepts efficiencies in [0.001, 1].
    auto eff = [](double x) { return std::clamp(x, 1e-3, 1.0); };
    CalibrationOut c;
    c.device = dev.name;
    c.bandwidth_efficiency = eff(ceil.copy_bytes_per_s / ds.bandwidth_bytes_per_s);
    c.prefill_flops_efficiency = eff(ceil.gemm_flops_per_s / ds.bf16_flops_per_s);
    c.decode_flops_efficiency = eff(ceil.decode_gemm_flops_per_s / ds.bf16_flops_per_s);
    c.runtime_reserve_bytes = ceil.runtime_reserve_bytes;
    c.measured_bandwidth_bytes_per_s = ceil.copy_bytes_per_s;
    c.measured_prefill_flops_per_s = ceil.gemm_flops_per_s;
    c.measured_decode_flops_per_s = ceil.decode_gemm_flops_per_s;
    c.datasheet_bandwidth_bytes_per_s = ds.bandwidth_bytes_per_s;
    c.datasheet_peak_flops_per_s = ds.bf16_flops_per_s;
    r.calibration = c;
  }
  const std::string ds_note = known ? "datasheet " + num(ds.bandwidth_bytes_per_s) + " B/s, " +
                                          num(ds.bf16_flops_per_s) + " FLOP/s bf16"
                                    : "device not in the datasheet table: pass --datasheet-bandwidth/--datasheet-flops";
  const Calibration defaults;
  r.checks.push_back(make_check("ceilings", "copy_bandwidth_efficiency", "D2D copy / datasheet bandwidth", "",
                                defaults.bandwidth_efficiency,
                                known ? ceil.copy_bytes_per_s / ds.bandwidth_bytes_per_s : 0, Compare::info, 0,
                                "predicted: planner default; measured " + num(ceil.copy_bytes_per_s) + " B/s; " + ds_note));
  r.checks.push_back(make_check("ceilings", "gemm_8192_flops_efficiency", "bf16 GEMM 8192^3 / datasheet peak", "",
                                defaults.prefill_flops_efficiency,
                                known ? ceil.gemm_flops_per_s / ds.bf16_flops_per_s : 0, Compare::info, 0,
                                "predicted: planner default prefill efficiency; measured " + num(ceil.gemm_flops_per_s) + " FLOP/s"));
  r.checks.push_back(make_check("ceilings", "gemm_decode512_flops_efficiency", "bf16 GEMM 8192x8192 x 512 rows / peak", "",
                                defaults.decode_flops_efficiency,
                                known ? ceil.decode_gemm_flops_per_s / ds.bf16_flops_per_s : 0, Compare::info, 0,
                                "predicted: planner default decode efficiency; measured " + num(ceil.decode_gemm_flops_per_s) + " FLOP/s"));

  GpuSpec g;
  g.name = dev.name;
  g.memory_bytes = int64_t(dev.total_bytes);
  g.memory_bandwidth_bytes_per_s = known ? ds.bandwidth_bytes_per_s : ceil.copy_bytes_per_s;
  g.peak_flops.bf16 = g.peak_flops.fp16 = known ? ds.bf16_flops_per_s : ceil.gemm_flops_per_s;
  ServingOptions so;
  so.dtype = DType::bf16;
  if (r.calibration) {
    so.calibration.bandwidth_efficiency = r.calibration->bandwidth_efficiency;
    so.calibration.prefill_flops_efficiency = r.calibration->prefill_flops_efficiency;
    so.calibration.decode_flops_efficiency = r.calibration->decode_flops_efficiency;
    so.calibration.runtime_reserve_bytes = r.calibration->runtime_reserve_bytes;
    so.calibration.measured = true;
    so.calibration.device = dev.name;
  } else {
    so.calibration.bandwidth_efficiency = so.calibration.prefill_flops_efficiency =
        so.calibration.decode_flops_efficiency = 1.0;  // peaks above are measured ones
  }

  // ---------------------------------------------------------------- check 1: decode
  {
    ModelConfig m = llama_1b_like_config();
    m.tie_word_embeddings = false;
    const std::vector<int64_t> Ts = o.quick ? std::vector<int64_t>{16, 64} : std::vector<int64_t>{16, 64, 256, 512};
    const auto runs = cuda::run_decoder(m, Ts, handle);
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
      r.checks.push_back(make_check("decode", "time_naive" + T, "naive generation time", "s", pred_naive_s,
                                    d.naive_s, Compare::relative, 0.5,
                                    "planner StepTimeModel::prefill(t) summed over t (calibrated)"));
      r.checks.push_back(make_check("decode", "time_cached" + T, "cached generation time", "s", pred_cached_s,
                                    d.cached_s, Compare::relative, 0.5,
                                    "planner StepTimeModel::decode(1, t) summed over t (calibrated); "
                                    "no CUDA graphs: per-step launch overhead is measured, not modelled"));
      r.checks.push_back(make_check("decode", "naive_over_cached_time" + T, "time ratio vs planner time ratio", "x",
                                    pred_naive_s / pred_cached_s, d.naive_s / d.cached_s, Compare::relative, 0.5,
                                    "FLOP ratio " + num(pn.total() / pc.total()) +
                                        ": cached decode is memory-bound, so the time ratio is far below it"));
      r.checks.push_back(make_check("decode", "naive_cached_logit_diff" + T, "max |logit diff| / max |logit|", "",
                                    0.05, d.last_logit_max_abs_diff / std::max(1e-30, d.last_logit_max_abs),
                                    Compare::at_most, 0, "bf16 activations; different GEMM shapes"));
    }
  }

  // ---------------------------------------------------------------- check 2: attention
  {
    const int64_t H = 32, D = 128, B = o.quick ? 8 : 32, ctx = o.quick ? 4096 : 16384;
    const std::vector<int64_t> kvs = {32, 8, 4, 1};
    const auto runs = cuda::run_paged_attention(B, ctx, H, kvs, D);
    for (const cuda::AttentionRun& a : runs) {
      const std::string n = a.n_kv == H ? "mha" : a.n_kv == 1 ? "mqa" : "gqa" + std::to_string(H / a.n_kv);
      ModelConfig m1 = llama_1b_like_config();
      m1.num_layers = 1;
      m1.layer_window.assign(1, 0);
      m1.num_heads = H;
      m1.num_kv_heads = a.n_kv;
      m1.head_dim = D;
      m1.hidden_size = H * D;
      const double pred_bytes = double(kv_bytes_per_token(m1, so)) * double(B * ctx);
      r.checks.push_back(make_check("attention", "kernel_vs_reference_" + n, "max |GPU - CPU reference|", "",
                                    0, a.max_abs_err_vs_ref, Compare::exact, 2e-3, "bf16 cache, fp32 math"));
      r.checks.push_back(make_check("attention", "kv_bytes_read_" + n, "K+V bytes read vs planner", "B", pred_bytes,
                                    double(a.kv_bytes_read), Compare::exact, 0, "each row once per KV head"));
      const double pred_s = pred_bytes / (g.memory_bandwidth_bytes_per_s * so.calibration.bandwidth_efficiency);
      r.checks.push_back(make_check("attention", "time_" + n, "decode attention time vs memory-bound prediction",
                                    "s", pred_s, a.time_s, Compare::relative, 0.3,
                                    "achieved " + num(double(a.kv_bytes_read) / a.time_s) + " B/s; " +
                                        std::to_string(B) + " x " + std::to_string(ctx) + " tokens"));
    }
    for (size_t i = 1; i < runs.size(); ++i)
      r.checks.push_back(make_check("attention", "speedup_mha_over_nkv" + std::to_string(runs[i].n_kv),
                                    "time(MHA) / time(n_kv heads) vs n_h / n_kv", "x",
                                    double(H) / double(runs[i].n_kv), runs[0].time_s / runs[i].time_s,
                                    Compare::relative, 0.3,
                                    "large groups on CUDA cores (no tensor cores) may turn compute-bound"));
  }

  // ---------------------------------------------------------------- check 3: quantization
  {
    const cuda::QuantKernelRun q = cuda::run_quant_kernel();
    r.checks.push_back(make_check("kv_quant", "gpu_kernel_vs_reference_per_token", "max |GPU - CPU| dequantized",
                                  "", 0, q.max_abs_diff_per_token, Compare::exact, 1e-6, "int4 g32, int2 g128"));
    r.checks.push_back(make_check("kv_quant", "gpu_kernel_vs_reference_per_channel", "max |GPU - CPU| dequantized",
                                  "", 0, q.max_abs_diff_per_channel, Compare::exact, 1e-6, "int4 g32, int8 g32"));
    add_kv_quant_checks(r.checks, o);
  }

  // ---------------------------------------------------------------- check 4: memory
  {
    // The reserve, measured again now that every kernel of this run has been loaded
    // (lazy module loading takes device memory on first launch) and cuBLAS has run.
    const cuda::DeviceInfo now = cuda::device_info();
    const int64_t reserve = std::max(ceil.runtime_reserve_bytes, int64_t(now.total_bytes - now.free_bytes));
    if (r.calibration) r.calibration->runtime_reserve_bytes = reserve;
    r.checks.push_back(make_check("memory", "runtime_reserve_bytes", "CUDA context + modules + cuBLAS (total - free)",
                                  "B", 512.0 * (1 << 20), double(reserve), Compare::at_most, 0,
                                  "predicted: the planner's default reserve (512 MiB); includes any other process on the GPU"));
    const ModelConfig m = llama_1b_like_config();
    ServingOptions mo = so;
    // The arena is what is free now: memory as CUDA reports it less the measured reserve.
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
    add_memory_checks(r.checks, mc, "real cudaMalloc on " + dev.name + ", " + m.name +
                                        ", bf16 KV, 4096-token requests, 128-token blocks, utilization 1.0",
                      "cuda_bf16");
  }
  cublasDestroy(handle);
  return r;
}

}  // namespace kvplan::gv::detail
