// Roofline step times. A step's time on each GPU is max(compute, memory) plus TP
// communication:
//   compute = FLOPs per GPU / (peak FLOP/s of the compute dtype x efficiency)
//   memory  = bytes per GPU / (memory bandwidth x bandwidth efficiency), where the bytes
//             are the stage's weights (MoE: only the experts the step's tokens touch),
//             the KV cache the decoders read, and the KV the prefill writes, each
//             layer capped at its window (KvTraffic, kv_traffic.cpp)
//   comm    = 2 all-reduces per layer of tokens x hidden activations, ring algorithm:
//             2 (tp-1)/tp x bytes / link bandwidth + 5 us latency each; a TP group larger
//             than the GPU's scale-up domain (8 on HGX, 72 on NVL72) adds the hop between
//             domains over the scale-out NIC (hierarchical all-reduce, step()), and PP
//             sends between stages in different domains cross the NIC too.
// PP stages run one after another for one step (latency = sum of stages); micro-batch
// pipelining is not modelled. Default efficiencies (types.h, Calibration): 80 % of
// bandwidth (an H200 copies at 4.3 of 4.8 TB/s, docs/gpus.md), 70 % of peak for prefill
// GEMMs (8192^3 bf16 reaches 78-81 % on H200, docs/gpus.md; real layers are smaller), 50 %
// for decode, whose skinny GEMMs are memory-bound anyway. A calibration file replaces them.
//
// Expert parallelism and data-parallel attention (--ep, --dp; docs/parallelism.md): a
// GPU reads its own experts, its rank's KV and does its rank's attention (the busiest
// rank's share of the step's sequences) and a (tp x dp)-th of the routed-expert FLOPs;
// with DP every MoE layer adds a token dispatch and combine (all-to-all with EP,
// all-gather / reduce-scatter without), latency + bytes / link each.
//
// Decode context parallelism (--dcp; docs/long-context.md): a GPU holds, reads and
// writes one token in dcp of each request's KV (KvTraffic), and every attention layer
// merges the partial results over the DCP group as vLLM does (vllm/attention/ops/
// common.py cp_lse_ag_out_rs; the MLA decode path all-gathers the query first,
// vllm/v1/attention/backends/mla/common.py): three collectives per layer, each latency +
// (dcp-1)/dcp x bytes / bus bandwidth, of the step's decode tokens x (heads / tp x dcp) heads x
//   all-gather of Q:      query width (MLA absorbed: kv_lora_rank + qk_rope_head_dim)
//   all-gather of LSE:    4 bytes (fp32)
//   reduce-scatter of O:  value width (MLA absorbed: kv_lora_rank)
// in activation bytes. Prefill chunks' context merge is not counted (docs/long-context.md).
//
// The calibrated model (a kvplan.calibration/2 file with gemm_* parameters; every term is
// named in docs/calibration.md with its fit) replaces max(compute, memory) by the sum of
// per-kernel costs, each the additive form t = floor + bytes / bandwidth + FLOPs / rate
// that fits measured GEMM and elementwise kernel times (Vidur's H100 profiles) across
// token counts, so small-M GEMMs pay their weight reads and large ones their FLOPs. On a
// GPU other than the fitted one every BW x efficiency below is also x the ratio of the two
// GPUs' measured memory-bandwidth fractions (memory_bandwidth_transfer; 1 where either is
// unmeasured), and peak x gemm_flops_efficiency x the ratio of their measured GEMM FLOP/s
// fractions at one dtype (gemm_flops_transfer):
//   GEMMs       = weights read (MoE: experts touched; the input embedding only for the
//                 step's token rows, a gather, not the whole table)
//                 / (BW x gemm_bandwidth_efficiency)
//                 + linear FLOPs / (peak x gemm_flops_efficiency) (MoE: each touched
//                 expert's tokens padded to the fused-MoE kernel's BLOCK_SIZE_M rows;
//                 MLA prefill: the cached context decompressed again)
//   attention   = decode KV bytes / (BW x bandwidth_efficiency)
//                 + prefill attention FLOPs (MLA decompressed) / (peak x prefill_flops_efficiency)
//   elementwise = norms, residual adds, activation, RoPE, moe_sum bytes
//                 / (BW x elementwise_bandwidth_efficiency)
//   kernels     = kernel_floor_s x kernels per step (10 per layer + 3; an MoE layer adds
//                 its router, top-k, moe_sum and moe_align_block_size launches and its
//                 shared expert, a fixed number however many experts the step touches:
//                 fused_moe runs one grouped GEMM launch over all experts; W8A8 adds a
//                 per-token activation-quantization kernel per GEMM input)
//   comm        = 2 all-reduces per layer; messages under vLLM's custom all-reduce cap
//                 (TP 2/4: 8 MiB, TP 6: 512 KiB, TP 8: 256 KiB on H100) at that kernel's
//                 measured H100 cost (custom_ar_cost),
//                 larger ones at NCCL's: allreduce_latency_s + 2 (tp-1)/tp x bytes / bus bandwidth
//   serial      = step_overhead_s: fitted per-step time on the step's path that none of
//                 the terms above counts (on the runs it was fitted on, async scheduling
//                 would hide host time: docs/calibration.md), part of the GPU's side
//   host (CPU)  = step_overhead_per_seq_s x sequences in the step
// and the step takes GPU + host, or max(GPU, host) under vLLM V1's async scheduling.
// EngineCore's thread does a step's host work: Scheduler.schedule, then
// GPUModelRunner.execute_model (_update_states, _prepare_inputs, attention metadata, the
// forward's launch), sample_tokens (the sampler's launch, bookkeeping), then
// Scheduler.update_from_output. Without async scheduling (EngineCore.step,
// vllm/v1/engine/core.py) each step's host work waits for the previous step's sampled
// tokens and the GPU for it: they add. With it (EngineCore.step_with_batch_queue, a batch
// queue of 2; UniProcExecutor runs execute_model and sample_tokens in EngineCore's
// thread and waits for the sampled tokens' copy (AsyncGPUModelRunnerOutput, its own CUDA
// stream) in a thread of its own, vllm/v1/executor/uniproc_executor.py), step k + 1 is
// scheduled, prepared and launched while step k runs on the GPU, and step k's
// update_from_output runs while step k + 1 does: back-to-back steps take the longer of
// the two (sim/compose.cpp: a step after idle, whose host work nothing hides, adds).
// Read at vllm-project/vllm@00080ee1 (core.py) and @01e4fce0 (uniproc_executor.py).
// Fused MoE: vllm-project/vllm@13cb3e44373beb1c8b9d2c017f565af6f7a1b601
// vllm/model_executor/layers/fused_moe/fused_moe.py (fused_experts_impl, get_default_config)
// and @00e6fb6d7193804fd96d84c850fd6505574e8e0d csrc/moe/moe_align_sum_kernels.cu
// (moe_align_block_size, moe_sum); docs/calibration.md "The model".
#include <algorithm>
#include <cmath>

#include "planner/checked.h"
#include "planner/engine_detail.h"
#include "planner/moe_configs.h"
#include "planner/planner.h"
#include "planner/units.h"

namespace kvplan {

namespace {
constexpr double kCollectiveLatencyS = 5e-6;
// The LSE DCP gathers per query head: fp32 (softmax_lse of the attention kernels).
constexpr double kLseBytes = 4;

// vLLM's custom all-reduce (vllm/distributed/device_communicators/custom_all_reduce.py,
// CustomAllreduce: _SUPPORTED_WORLD_SIZES [2, 4, 6, 8], max_size = 8192 * 1024 bytes;
// cuda_communicator.py tries it before pynccl) takes TP all-reduces of decode-sized
// messages: one-shot (every GPU reads all peers' buffers) at TP 2 and for small
// messages at TP 4/8, two-shot above (csrc/custom_all_reduce.cuh). Its H100 cost,
// t = latency + bytes x seconds per byte, from the table of vLLM's kernel on H100 in
// sgl-project/sglang PR #2904 (tests/test_trt_reduce.py, no CUDA graph; the test's
// performance case times torch.float32 tensors, so bytes = 4 x the data size):
// latency = the 32,768-element time, slope between the 262,144- and 1,048,576-element
// rows (3,145,728 B apart). TP 2: 8.7 us, (26.6 - 12.9) us / 3,145,728 B; TP 4: 9.2 us,
// (40.2 - 20.6) us / 3,145,728 B; TP 8 (also used for TP 6): 11.8 us,
// (45.0 - 24.1) us / 3,145,728 B.
// Its size cap: max_size 8 MiB, lowered on Hopper (sm 9.0) with symmetric memory (vLLM's
// default there) to CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"] = {6: 512 KiB, 8: 256 KiB}
// (vllm/distributed/device_communicators/all_reduce_utils.py; custom_all_reduce.py
// takes the min); larger messages go to symmetric-memory or NCCL all-reduce, charged here
// at the NCCL fit.
double custom_ar_max_bytes(int64_t tp) {
  if (tp == 6) return 512.0 * 1024;
  if (tp == 8) return 256.0 * 1024;
  return 8192.0 * 1024;
}
struct CustomArCost {
  double latency_s, s_per_byte;
};
CustomArCost custom_ar_cost(int64_t tp) {
  constexpr double kSpan = 3145728;
  if (tp == 2) return {8.7e-6, 13.7e-6 / kSpan};
  if (tp == 4) return {9.2e-6, 19.6e-6 / kSpan};
  return {11.8e-6, 20.9e-6 / kSpan};
}
bool custom_ar_applies(int64_t tp) { return tp == 2 || tp == 4 || tp == 6 || tp == 8; }

// A GPU file without `scale_up` (the format before the key) is taken as the 8-GPU board
// every such catalog file described (HGX/DGX H100, H200, B200; 8-GPU PCIe servers); a
// group beyond 8 GPUs needs the key (scale_out_note refuses).
constexpr int64_t kLegacyDomainGpus = 8;

int64_t domain_gpus(const GpuSpec& g) {
  return g.scale_up_domain_gpus > 0 ? g.scale_up_domain_gpus : kLegacyDomainGpus;
}

// FP8 tensor cores arrived with compute capability 8.9 (Ada, Hopper). Below it vLLM runs
// an FP8 checkpoint weight-only: Fp8LinearMethod sets use_marlin = not
// has_device_capability(89) (vllm/model_executor/layers/quantization/fp8.py), and the
// FP8 docs say "Ampere GPUs are supported for W8A16 (weight-only FP8) utilizing Marlin
// kernels" (docs/features/quantization/fp8.md). The weights stay 1 byte; the GEMMs run
// in 16-bit with no per-token activation quantization. A file without
// compute_capability keeps the datasheet's verdict: no fp8 rate, the 16-bit rate.
constexpr int kFp8TensorCoreCapabilityX10 = 89;

DType gemm_dtype(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  const DType d = compute_dtype(m, o);
  if (d == DType::fp8 && g.compute_capability_x10 > 0 && g.compute_capability_x10 < kFp8TensorCoreCapabilityX10)
    return o.activation_dtype(m);
  return d;
}

// NVFP4 W4A4 GEMMs run on FP4 tensor cores only where vLLM has the kernel:
// cutlass_scaled_mm_supports_fp4 is compute capability >= 10.0 (vllm-project/vllm
// csrc/quantization/fp4/nvfp4_scaled_mm_entry.cu: the sm100a kernel for 10.x-11.x, the
// sm120a one for 12.x). Below it the NVFP4 linear and MoE methods repack the weights for
// Marlin (marlin_utils_fp4.py prepare_fp4_layer_for_marlin: "Weight-only FP4 compression
// will be used leveraging the Marlin kernel"): 4-bit reads, 16-bit math. A file without
// compute_capability (AMD parts) takes that path too: vLLM's FP4 GEMM is a CUDA kernel.
// MXFP4 (gpt-oss) is weight-only everywhere by default (docs/gpus.md "FP4").
constexpr int kFp4TensorCoreCapabilityX10 = 100;

bool fp4_math(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  return weight_quant_of(m, o).fp4_activations && g.compute_capability_x10 >= kFp4TensorCoreCapabilityX10;
}

}  // namespace

CeilingTransfer memory_bandwidth_transfer(const Calibration& c, const GpuSpec& g) {
  if (c.gpu.empty() || c.gpu_measured_memory_bandwidth_bytes_per_s <= 0 || c.gpu_memory_bandwidth_bytes_per_s <= 0 ||
      !g.measured_memory_bandwidth_bytes_per_s)
    return {};
  const double fitted = c.gpu_measured_memory_bandwidth_bytes_per_s / c.gpu_memory_bandwidth_bytes_per_s;
  const double target = *g.measured_memory_bandwidth_bytes_per_s / g.memory_bandwidth_bytes_per_s;
  return {target / fitted, true};
}

CeilingTransfer gemm_flops_transfer(const Calibration& c, const GpuSpec& g) {
  if (c.gpu.empty() || c.gpu_measured_gemm_flops_fraction <= 0 || !g.measured_gemm_flops_per_s ||
      g.measured_gemm_dtype != c.gpu_measured_gemm_dtype)
    return {};
  const double peak = g.peak_flops.for_dtype(g.measured_gemm_dtype);  // > 0: parse_measured
  return {*g.measured_gemm_flops_per_s / peak / c.gpu_measured_gemm_flops_fraction, true};
}

std::string scale_out_note(const GpuSpec& g, const ServingOptions& o) {
  const int64_t gpus = o.tp * o.pp * o.dp;
  const int64_t domain = domain_gpus(g);
  if (gpus <= domain) return {};
  const std::string where = "GPU '" + g.name + "'";
  const std::string plan = "TP " + std::to_string(o.tp) + " x PP " + std::to_string(o.pp) + " x DP " + std::to_string(o.dp) +
                           " = " + std::to_string(gpus) + " GPUs";
  if (g.scale_up_domain_gpus == 0)
    throw InputError(where, "scale_up.domain_gpus",
                     "the GPUs one NVLink / xGMI domain joins (needed: " + plan + " may cross domains)", "nothing");
  if (!g.scale_out())
    throw InputError(where, "kv_links.rdma",
                     "the scale-out link between domains (needed: " + plan + " span more than one " +
                         std::to_string(domain) + "-GPU domain)",
                     "nothing");
  std::string crossing;
  const auto add = [&](const std::string& what) { crossing += (crossing.empty() ? "" : ", ") + what; };
  if (o.tp > domain) add("TP all-reduces (hierarchical: within " + std::to_string(domain) + " GPUs at the GPU link, then across " +
                         std::to_string((o.tp + domain - 1) / domain) + " domains)");
  if (o.pp > 1 && o.tp * o.pp > domain) add("pipeline sends between stages in different domains");
  if (o.dp > 1 && o.tp * o.dp > domain) add("MoE token exchange between data-parallel ranks");
  if (crossing.empty()) crossing = "only traffic between replicas' data-parallel ranks";
  return plan + " span " + std::to_string((gpus + domain - 1) / domain) + " scale-up domains of " + std::to_string(domain) +
         " GPUs: " + crossing + " cross the scale-out link (" + std::to_string(static_cast<int64_t>(to_gb(g.scale_out()->bytes_per_s))) +
         " GB/s per GPU)";
}

std::string_view to_string(Bound b) { return b == Bound::memory ? "memory" : "compute"; }

StepTimeModel::StepTimeModel(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o)
    : layers_(m.num_layers), hidden_size_(m.hidden_size), kv_(m, o), tp_(o.tp), pp_(o.pp), dp_(o.dp) {
  if (m.is_csa()) csa_ = std::make_shared<const ModelConfig>(m);
  const int64_t domain = domain_gpus(g);
  (void)scale_out_note(g, o);  // refuses when a needed figure is missing
  if (const auto nic = g.scale_out(); nic && o.tp * o.pp * o.dp > domain) {
    scale_out_bytes_per_s_ = nic->bytes_per_s;
    scale_out_latency_s_ = nic->latency_s;
  }
  domain_tp_ = std::min(o.tp, domain);
  // Stages are laid out one after another; a domain holds domain / tp whole stages (one
  // when TP fills it), so every domain_stages-th boundary leaves the domain.
  const int64_t domain_stages = std::max<int64_t>(1, domain / o.tp);
  pp_crossings_ = o.tp * o.pp > domain ? (o.pp - 1) / domain_stages : 0;
  if (o.lora) lora_ = lora_memory(m, o);
  const DType gemm = gemm_dtype(m, g, o);
  const bool fp4 = fp4_math(m, g, o);
  peak_flops_per_gpu_ = g.peak_flops.for_dtype(gemm);
  if (peak_flops_per_gpu_ <= 0) peak_flops_per_gpu_ = g.peak_flops.for_dtype(DType::fp16);
  if (fp4) {
    if (g.peak_flops.fp4 <= 0)
      throw InputError("GPU '" + g.name + "'", "peak_flops.fp4",
                       "the dense FP4 tensor rate (compute capability " + std::to_string(g.compute_capability_x10 / 10) + "." +
                           std::to_string(g.compute_capability_x10 % 10) + " runs " + m.name + "'s NVFP4 GEMMs as W4A4)",
                       "nothing");
    peak_flops_per_gpu_ = g.peak_flops.fp4;
  }
  // The calibration's bandwidth efficiencies are fractions of the fitted GPU's datasheet;
  // on another GPU they scale by the measured fractions' ratio (memory_bandwidth_transfer).
  const double bw_transfer = memory_bandwidth_transfer(o.calibration, g).factor;
  bw_bytes_per_s_ = g.memory_bandwidth_bytes_per_s * o.calibration.bandwidth_efficiency * bw_transfer;
  link_bytes_per_s_ = g.interconnect_bytes_per_s;
  prefill_eff_ = o.calibration.prefill_flops_efficiency;
  decode_eff_ = o.calibration.decode_flops_efficiency;
  weight_bytes_ = static_cast<double>(weight_bytes_per_gpu(m, o));
  act_bytes_per_elem_ = dtype_bits(o.activation_dtype(m)) / 8.0;

  const FlopBreakdown one = forward_flops(m, 1, 0);
  linear_flops_per_token_ = one.qkv + one.out_proj + one.mlp;
  lm_head_flops_ = one.lm_head;
  const PairFlops pair = pair_flops(m);  // one pair, all layers
  attn_flops_per_pair_ = pair.decode;
  prefill_attn_flops_per_pair_ = pair.prefill;
  context_flops_per_token_ = pair.prefill_context_per_token;

  experts_ = m.num_experts;
  top_k_ = m.experts_per_token;
  const int64_t layers_per_stage = (m.num_layers + o.pp - 1) / o.pp;
  moe_layers_per_gpu_ = m.is_moe() ? std::max<int64_t>(0, layers_per_stage - m.first_dense_layers / o.pp) : 0;
  if (m.is_moe() && !m.layer_ffn.empty()) {  // hybrid / interleaved MoE: count them
    int64_t moe = 0;
    for (int64_t l = 0; l < m.num_layers; ++l) moe += m.is_moe_layer(l) ? 1 : 0;
    moe_layers_per_gpu_ = (moe + o.pp - 1) / o.pp;
  }
  moe_expert_bytes_ = 0;
  moe_dense_bytes_ = weight_bytes_;
  if (m.is_moe() && moe_layers_per_gpu_ > 0) {
    // Bytes of one routed expert on one GPU: its share of the per-GPU weights, at the
    // bytes per parameter of the plain TP layout; an expert is split over tp x dp / ep GPUs
    // and each GPU holds experts / ep of them.
    const ParamCount pc = count_params(m);
    const int64_t width = m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
    const double expert_params = (m.gated_mlp ? 3.0 : 2.0) * static_cast<double>(m.hidden_size * width);
    ServingOptions flat = o;
    flat.ep = flat.dp = 1;
    const double flat_bytes = o.ep == 1 && o.dp == 1 ? weight_bytes_ : static_cast<double>(weight_bytes_per_gpu(m, flat));
    const double bytes_per_param = flat_bytes / (static_cast<double>(pc.total()) / static_cast<double>(o.tp * o.pp));
    const double gpus_per_expert = static_cast<double>(o.tp * o.dp) / static_cast<double>(o.ep);  // exact: validate()
    moe_expert_bytes_ = expert_params / gpus_per_expert * bytes_per_param;
    moe_row_flops_ = 2 * expert_params / gpus_per_expert;
    moe_slots_ = static_cast<double>(experts_ + o.redundant_experts);
    const double local_experts = moe_slots_ / static_cast<double>(o.ep);
    moe_local_slots_ = local_experts;
    // fp8 W8A8 with block scales runs the fused-MoE kernel at BLOCK_SIZE_M 64 (fused_moe_rows).
    const QuantSpec q = weight_quant_of(m, o);
    moe_block_quant_ = gemm == DType::fp8 && q.block_rows > 0 && !q.skip_experts;
    // vLLM's tuned config file for w2's shape (local experts, width / gpus_per_expert),
    // this GPU and 16-bit experts, when it ships one (moe_configs.cpp; fused_moe_rows).
    const int64_t slots = experts_ + o.redundant_experts, split = o.tp * o.dp;
    if ((q.method.empty() || q.skip_experts) && slots % o.ep == 0 && (width * o.ep) % split == 0)
      moe_tuned_ = detail::find_tuned_moe_config(slots / o.ep, width * o.ep / split, detail::vllm_moe_device_name(g), "");
    moe_dense_bytes_ = weight_bytes_ - moe_expert_bytes_ * (local_experts * static_cast<double>(moe_layers_per_gpu_));
  }
  if (m.is_moe()) {
    for (int64_t l = 0; l < m.num_layers; ++l) moe_layers_ += m.is_moe_layer(l) ? 1 : 0;
    // Per MoE layer and direction, bytes one GPU moves, under uniform routing:
    //  - EP with DP (vLLM's all2all kernels, use_all2all_kernels = use_ep and dp > 1): a
    //    GPU dispatches its 1/tp of its rank's tokens to their top_k experts, each copy to
    //    the tp x dp / ep GPUs sharing that expert, the (ep - 1) / ep on other GPUs (per
    //    token of the busiest rank);
    //  - DP without EP (experts split over tp x dp; the naive dispatch all-gathers the
    //    other DP ranks' tokens and reduce-scatters the outputs): (dp - 1) / dp of the
    //    replica's tokens (per token of the replica).
    // Combine returns the same bytes. With dp = 1 the MoE output joins the TP all-reduce.
    const auto h_bytes = static_cast<double>(m.hidden_size) * act_bytes_per_elem_;
    const auto gpus = static_cast<double>(o.tp * o.dp), ep = static_cast<double>(o.ep), dp = static_cast<double>(o.dp);
    if (o.dp > 1 && o.ep > 1)
      moe_exchange_bytes_per_rank_token_ =
          static_cast<double>(top_k_) * (gpus / ep) * (ep - 1) / ep * h_bytes / static_cast<double>(o.tp);
    else if (o.dp > 1)
      moe_exchange_bytes_per_token_ = (dp - 1) / dp * h_bytes;
    const int64_t width = m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
    routed_flops_per_token_ = 2 * static_cast<double>(top_k_) * (m.gated_mlp ? 3.0 : 2.0) *
                              static_cast<double>(m.hidden_size * width) * static_cast<double>(moe_layers_);
    // A replica whose tp x dp GPUs fit in one scale-up domain exchanges over the GPU's
    // link; a larger one is limited by the NIC (DeepEP's internode dispatch and combine
    // reach 43-58 GB/s on a 50 GB/s ConnectX-7, deepseek-ai/DeepEP README, Performance).
    moe_exchange_bytes_per_s_ = o.tp * o.dp <= domain ? link_bytes_per_s_ : scale_out_bytes_per_s_;
  }
  allreduce_bytes_per_token_ = static_cast<double>(m.hidden_size) * act_bytes_per_elem_;
  if (o.dcp > 1) {
    const int64_t gathered = m.num_heads / o.tp * o.dcp;  // query heads after the all-gather (validate: tp divides)
    const auto group = static_cast<double>(gathered);
    const auto q_width = static_cast<double>(m.is_mla() ? m.kv_lora_rank + m.qk_rope_head_dim : m.head_dim);
    const auto v_width =
        static_cast<double>(m.is_mla() ? m.kv_lora_rank : (m.attn_v_head_dim > 0 ? m.attn_v_head_dim : m.head_dim));
    dcp_bytes_per_token_ = group * ((q_width + v_width) * act_bytes_per_elem_ + kLseBytes);
    dcp_ = o.dcp;
    dcp_in_domain_ = o.dcp <= domain;
  }

  const Calibration& c = o.calibration;
  step_overhead_s_ = c.step_overhead_s;
  step_overhead_per_seq_s_ = c.step_overhead_per_seq_s;
  // Async scheduling (vLLM V1's; the release's default unless --async-scheduling says,
  // EngineBatchDefaults) runs the host's part of a step beside the GPU's.
  host_overlaps_ = o.async_scheduling.value_or(engine_batch_defaults(m, g, o).async_scheduling);
  allreduce_latency_s_ = c.allreduce_latency_s > 0 ? c.allreduce_latency_s : kCollectiveLatencyS;
  dcp_latency_s_ = allreduce_latency_s_ + (o.dcp > domain ? scale_out_latency_s_ : 0);
  // A calibration fitted on another GPU: its all-reduce bus bandwidth is a figure of that
  // GPU's link (H100 NVLink), so it scales with the datasheet link; vLLM's custom
  // all-reduce, measured over H100 NVLink 4, is kept only where the link is the same.
  const bool same_link = c.gpu.empty() || c.gpu == g.name || c.gpu_interconnect_bytes_per_s == g.interconnect_bytes_per_s;
  const double link_scale =
      same_link || c.gpu_interconnect_bytes_per_s <= 0 ? 1.0 : g.interconnect_bytes_per_s / c.gpu_interconnect_bytes_per_s;
  // nccl-tests' bus bandwidth: a ring all-reduce moves 2 (n-1)/n of the message per GPU.
  allreduce_bus_bytes_per_s_ = c.allreduce_bus_bytes_per_s > 0 ? c.allreduce_bus_bytes_per_s * link_scale : link_bytes_per_s_;
  // The DCP merge's all-gathers and reduce-scatter run on NCCL as the all-reduce does, at
  // its bus bandwidth (nccl-tests define busBw so that one figure serves all three); a
  // group wider than the scale-up domain is taken at the NIC's rate throughout.
  dcp_link_bytes_per_s_ = dcp_in_domain_ ? allreduce_bus_bytes_per_s_ : scale_out_bytes_per_s_;
  refined_ = c.gemm_flops_efficiency > 0 && c.gemm_bandwidth_efficiency > 0;
  custom_allreduce_ = refined_ && same_link;
  if (refined_) {
    gemm_flops_per_s_ = peak_flops_per_gpu_ * c.gemm_flops_efficiency * gemm_flops_transfer(c, g).factor;
    gemm_bytes_per_s_ = g.memory_bandwidth_bytes_per_s * c.gemm_bandwidth_efficiency * bw_transfer;
    attn_flops_per_s_ = peak_flops_per_gpu_ * prefill_eff_;
    elementwise_bytes_per_s_ = g.memory_bandwidth_bytes_per_s * c.elementwise_bandwidth_efficiency * bw_transfer;
    kernel_floor_s_ = c.kernel_floor_s;
    // weight_bytes_per_gpu counts a separate input-embedding table (untied, or tied split
    // over PP stages) in full; a step reads only its tokens' rows of it (vLLM's
    // VocabParallelEmbedding is a lookup, F.embedding).
    if (!m.tie_word_embeddings || o.pp > 1)
      embedding_table_bytes_ = static_cast<double>(detail::ceil_div(m.vocab_size, o.tp)) * static_cast<double>(m.hidden_size) *
                               act_bytes_per_elem_;
    const auto layers = static_cast<double>(layers_per_stage);
    // A layer's token mixer and its FFN are blocks of their own; a no-op block (Nemotron-
    // NAS, Nemotron-H's single-block layers) runs no kernel. Per stage: the model's share.
    double mixers = 0, ffns = 0;
    for (int64_t l = 0; l < m.num_layers; ++l) {
      mixers += m.mixer(l) != Mixer::none ? 1 : 0;
      ffns += m.ffn(l) != Ffn::none ? 1 : 0;
    }
    mixers = mixers * layers / static_cast<double>(m.num_layers);
    ffns = ffns * layers / static_cast<double>(m.num_layers);
    // vLLM's decoder layer: fused QKV, attention, O, RoPE, KV-cache write and a fused
    // add+RMSNorm in the attention block; fused gate-up, activation, down and the second
    // add+RMSNorm in the MLP block = 10 kernels; plus embedding, final norm and sampling.
    kernels_per_step_ = 6 * mixers + 4 * ffns + 3;
    // An MoE layer runs the routed experts as vLLM's fused_moe does (fused_experts_impl):
    // one grouped GEMM launch for gate-up over all experts, the activation, one for down,
    // in the dense MLP's three places; around them the router GEMM, the top-k kernel
    // (topk_softmax / fused_grouped_topk) and moe_sum, which adds each token's top-k
    // outputs: 3 more, and moe_align_block_size's 1 or 2 per step (moe_align_kernels).
    // Shared experts (DeepSeek, Qwen-MoE shared_expert) are a dense MLP of their own:
    // gate-up, activation, down; Qwen's shared_expert_gate adds its GEMM and the sigmoid
    // scale (vllm/model_executor/models/qwen2_moe.py Qwen2MoeSparseMoeBlock.forward).
    if (moe_layers_per_gpu_ > 0) {
      const bool shared = m.num_shared_experts > 0 || m.shared_expert_intermediate_size > 0;
      const double moe_layer_kernels = 3 + (shared ? 3 : 0) + (m.shared_expert_gate ? 2 : 0);
      kernels_per_step_ += moe_layer_kernels * static_cast<double>(moe_layers_per_gpu_);
    }
    // Activation bytes per token per layer: two add+RMSNorm (read x and residual, write
    // both: 4 h each), SiLU-and-mul (read 2 i/tp, write i/tp), RoPE on local q and k heads
    // (read and write).
    const auto h = static_cast<double>(m.hidden_size);
    auto inter = static_cast<double>(m.is_moe() && m.moe_intermediate_size > 0 ? m.moe_intermediate_size * m.experts_per_token
                                                                               : m.intermediate_size);
    if (!m.layer_intermediate.empty()) {
      // Dense widths that differ by layer (Nemotron-NAS, no-op FFNs at 0): their mean.
      double sum = 0;
      for (int64_t l = 0; l < m.num_layers; ++l) sum += m.ffn(l) == Ffn::dense ? static_cast<double>(m.intermediate(l)) : 0;
      inter = sum / static_cast<double>(m.num_layers);
    }
    const auto tp = static_cast<double>(o.tp);
    const auto qk = static_cast<double>((m.num_heads + m.num_kv_heads) * m.head_dim);
    elementwise_bytes_per_token_ = act_bytes_per_elem_ * (4 * h * (mixers + ffns) + layers * 3 * inter / tp + mixers * 2 * qk / tp);
    // moe_sum reads a token's top-k expert outputs and writes their sum (h each).
    elementwise_bytes_per_token_ += static_cast<double>(moe_layers_per_gpu_) * act_bytes_per_elem_ *
                                    static_cast<double>(top_k_ + 1) * h;
    if (gemm == DType::fp8 || gemm == DType::int8 || fp4) {
      // W8A8 with dynamic activation scales: each GEMM input is quantized per token by its
      // own kernel first (vLLM Fp8LinearOp.apply -> ops.scaled_fp8_quant; fused_moe
      // quantizes the expert input and the intermediate: vllm/model_executor/layers/
      // quantization/utils/w8a8_utils.py, fused_moe/fused_moe.py). Dense layer: QKV, O,
      // gate-up, down = 4 kernels; an MoE layer adds the routed experts' 2. Each reads the
      // 16-bit input and writes 1 byte per element; W4A4 (scaled_fp4_quant) half a byte
      // and an e4m3 scale per 16.
      const double quantized_bytes_per_elem = fp4 ? 0.5 + 1.0 / 16 : 1;
      const auto moe_layers = static_cast<double>(moe_layers_per_gpu_);
      kernels_per_step_ += 2 * mixers + 2 * ffns + 2 * moe_layers;
      const auto q = static_cast<double>(m.q_dim());
      elementwise_bytes_per_token_ += (act_bytes_per_elem_ + quantized_bytes_per_elem) *
                                      (mixers * (h + q / tp) + ffns * h + layers * inter / tp + moe_layers * (h + inter / tp));
    }
  }
}

StepTime StepTimeModel::step(int64_t prefill_tokens, double prefill_attn_pairs, int64_t decode_seqs,
                             double decode_keys, int64_t prefill_seqs, double prefill_context_tokens,
                             const LoraStepLoad* lora_load) const {
  // Prefill chunks' attention in the prefill form (MLA decompressed); decode keys in the
  // decode form (MLA absorbed).
  const AttentionWork a{.prefill_flops = prefill_attn_flops_per_pair_ * prefill_attn_pairs,
                        .decode_flops = attn_flops_per_pair_ * decode_keys,
                        .read_bytes = kv_.read_bytes_for_keys(decode_keys)};
  return step(prefill_tokens, a, decode_seqs, prefill_seqs, prefill_context_tokens, lora_load);
}

StepTime StepTimeModel::step(int64_t prefill_tokens, const AttentionWork& a, int64_t decode_seqs,
                             int64_t prefill_seqs, double prefill_context_tokens,
                             const LoraStepLoad* lora_load) const {
  StepTime t;
  const auto tokens = static_cast<double>(prefill_tokens + decode_seqs);
  if (tokens <= 0) return t;
  const double logits = static_cast<double>(decode_seqs + (prefill_tokens > 0 ? 1 : 0));
  // The attention and the decompression of the context the prefill chunks follow.
  const double prefill_attn_flops = a.prefill_flops;
  const double context_flops = prefill_tokens > 0 ? context_flops_per_token_ * prefill_context_tokens : 0;
  t.flops = linear_flops_per_token_ * tokens + prefill_attn_flops + a.decode_flops + a.replicated_flops +
            context_flops + lm_head_flops_ * logits;

  double weights = weight_bytes_;
  double align_kernels = 0;  // per GPU per stage
  const auto gpus = static_cast<double>(tp_ * dp_);
  const double routed_flops = routed_flops_per_token_ * tokens;
  double routed_gpu_flops = routed_flops / gpus;  // what one GPU computes of the routed experts
  if (experts_ > 0 && moe_layers_per_gpu_ > 0) {
    // Uniform routing: each token picks top_k of the physical expert slots (EPLB's
    // redundant copies share their expert's traffic), so a slot receives n ~ Binomial(tokens,
    // p) tokens, p = top_k / slots, and is touched with probability 1 - (1 - p)^tokens.
    // The GPU reads the weights of its touched slots and runs each slot's tokens padded
    // to the kernel's BLOCK_SIZE_M rows (fused_moe_rows).
    const double p = static_cast<double>(top_k_) / moe_slots_;
    const double touched = moe_local_slots_ * (1 - std::pow(1 - p, tokens));
    weights = moe_dense_bytes_ + moe_expert_bytes_ * touched * static_cast<double>(moe_layers_per_gpu_);
    const double rows = moe_local_slots_ * fused_moe_rows(tokens, p);
    routed_gpu_flops = rows * moe_row_flops_ * static_cast<double>(moe_layers_);
    align_kernels = moe_align_kernels(tokens) * static_cast<double>(moe_layers_per_gpu_);
  }
  // Per GPU, all PP stages in sequence: pp x (stage weights + stage KV).
  const double stages = static_cast<double>(pp_);
  // Data-parallel attention: the step's sequences are dealt to the dp ranks, each rank
  // running attention, dense layers and its KV for its own; the step waits for the
  // busiest, which holds ceil(seqs / dp) of them (share: its part of the tokens and keys;
  // 1 with one rank). The routed experts serve every rank's tokens: (tp x dp)-th each.
  const auto ranked = static_cast<double>(decode_seqs + (prefill_tokens > 0 ? std::max<int64_t>(prefill_seqs, 1) : 0));
  const double share = dp_ == 1 ? 1.0 : std::ceil(ranked / static_cast<double>(dp_)) / ranked;
  const double kv_read = a.read_bytes * share;
  const double kv_write = kv_.prefill_write_bytes(prefill_tokens) * share;
  t.bytes = weights + kv_read + kv_write;
  const double eff = prefill_tokens > 0 ? prefill_eff_ : decode_eff_;
  const double gpu_flops =
      (t.flops - routed_flops - a.replicated_flops) * share / static_cast<double>(tp_) + a.replicated_flops * share + routed_gpu_flops;
  t.compute_s = gpu_flops / (peak_flops_per_gpu_ * eff);
  t.memory_s = stages * t.bytes / bw_bytes_per_s_;
  if (tp_ > 1) {
    const auto tp = static_cast<double>(tp_);
    const double message_bytes = tokens * share * allreduce_bytes_per_token_;
    double per_allreduce = 2 * (tp - 1) / tp * message_bytes / allreduce_bus_bytes_per_s_ + allreduce_latency_s_;
    if (domain_tp_ < tp_) {
      // Hierarchical (NCCL's tree / NVLS-over-IB shape): reduce-scatter and all-gather
      // within the domain at the link, and between domains each GPU all-reduces its
      // 1/d shard over its own NIC: 2 (d-1)/d x B / link + 2 (n-1)/n x B/d / NIC.
      const auto d = static_cast<double>(domain_tp_);
      const double n = std::ceil(tp / d);
      per_allreduce = 2 * (d - 1) / d * message_bytes / allreduce_bus_bytes_per_s_ + allreduce_latency_s_ +
                      2 * (n - 1) / n * message_bytes / d / scale_out_bytes_per_s_ + scale_out_latency_s_;
    }
    // The custom all-reduce is vLLM's; only the calibrated (engine-measured) model has it.
    if (custom_allreduce_ && domain_tp_ == tp_ && custom_ar_applies(tp_) && message_bytes < custom_ar_max_bytes(tp_)) {
      const CustomArCost c = custom_ar_cost(tp_);
      per_allreduce = c.latency_s + message_bytes * c.s_per_byte;
    }
    t.communication_s = 2 * static_cast<double>(layers_) * per_allreduce;
  }
  if (pp_ > 1 && link_bytes_per_s_ > 0) {
    const double send_bytes = tokens * share * allreduce_bytes_per_token_;
    const auto crossings = static_cast<double>(pp_crossings_);
    t.communication_s += (stages - 1 - crossings) * (send_bytes / link_bytes_per_s_ + kCollectiveLatencyS);
    if (crossings > 0) t.communication_s += crossings * (send_bytes / scale_out_bytes_per_s_ + scale_out_latency_s_);
  }
  t.dcp_communication_s = dcp_communication_s(static_cast<double>(decode_seqs) * share);
  t.communication_s += t.dcp_communication_s;
  const double exchange_bytes =
      tokens * share * moe_exchange_bytes_per_rank_token_ + tokens * moe_exchange_bytes_per_token_;
  if (exchange_bytes > 0 && moe_exchange_bytes_per_s_ > 0)  // dispatch + combine per MoE layer
    t.communication_s +=
        static_cast<double>(moe_layers_) * 2 * (kCollectiveLatencyS + exchange_bytes / moe_exchange_bytes_per_s_);
  const auto seqs = static_cast<double>(decode_seqs) + (prefill_tokens > 0 ? 1.0 : 0.0);
  t.host_s = step_overhead_per_seq_s_ * seqs;
  // LoRA: the worst case the slots allow, every sequence of the step on its own adapter
  // until the slots are full (vLLM's scheduler keeps at most max_loras distinct adapters
  // in a batch, vllm/v1/core/sched/scheduler.py).
  LoraStepCost lora;
  if (lora_ && lora_load) {
    lora = lora_step_cost(*lora_, lora_load->tokens, lora_load->logit_rows, lora_load->adapters);
  } else if (lora_) {
    const double adapters = static_cast<double>(decode_seqs + (prefill_tokens > 0 ? std::max<int64_t>(prefill_seqs, 1) : 0));
    lora = lora_step_cost(*lora_, tokens, logits, adapters);
  }
  if (refined_) {
    const double linear_flops = linear_flops_per_token_ * tokens + context_flops + lm_head_flops_ * logits;
    const double attn_flops = prefill_attn_flops + a.replicated_flops * static_cast<double>(tp_);  // whole on each rank
    const double gathered = static_cast<double>(hidden_size_) * act_bytes_per_elem_ * tokens;
    weights += std::min(gathered, embedding_table_bytes_) - embedding_table_bytes_;
    const auto tp = static_cast<double>(tp_);
    const double gpu_linear = (linear_flops - routed_flops) * share / tp + routed_gpu_flops;
    const double gemm_s = weights / gemm_bytes_per_s_ + gpu_linear / gemm_flops_per_s_;
    const double attn_s = (kv_read + kv_write) / bw_bytes_per_s_ + attn_flops * share / tp / attn_flops_per_s_;
    const double elementwise_s =
        elementwise_bytes_per_s_ > 0 ? elementwise_bytes_per_token_ * tokens * share / elementwise_bytes_per_s_ : 0;
    t.compute_s = stages * (gpu_linear / gemm_flops_per_s_ + attn_flops * share / tp / attn_flops_per_s_);
    t.memory_s = stages * (weights / gemm_bytes_per_s_ + (kv_read + kv_write) / bw_bytes_per_s_ + elementwise_s);
    t.overhead_s = stages * kernel_floor_s_ * (kernels_per_step_ + align_kernels) + step_overhead_s_;
    t.bound = t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
    // The LoRA kernels are GEMMs of their own: at the fitted GEMM rates, each launch at
    // the kernel floor.
    t.lora_s = lora.flops / gemm_flops_per_s_ + lora.bytes / gemm_bytes_per_s_ + kernel_floor_s_ * lora.kernels;
    t.gpu_s = stages * (gemm_s + attn_s + elementwise_s + t.lora_s) + t.communication_s + t.overhead_s;
  } else {
    t.bound = t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
    // The LoRA kernels run after the GEMMs they adapt, each bound on its own.
    t.lora_s = std::max(lora.flops / (peak_flops_per_gpu_ * eff), lora.bytes / bw_bytes_per_s_);
    t.overhead_s = step_overhead_s_;
    t.gpu_s = std::max(t.compute_s, t.memory_s) + stages * t.lora_s + t.communication_s + t.overhead_s;
  }
  // The host's share of the step is what it adds beyond the GPU's (all of it without
  // async scheduling): overhead_s keeps the breakdown summing to time_s.
  t.time_s = compose(t.gpu_s, t.host_s);
  t.overhead_s += t.time_s - t.gpu_s;
  return t;
}

double StepTimeModel::compose(double gpu_s, double host_s) const {
  return host_overlaps_ ? std::max(gpu_s, host_s) : gpu_s + host_s;
}

// E[ceil(n / bm)] x bm for n ~ Binomial(tokens, p): the rows moe_align_block_size gives
// one expert slot (it rounds each expert's token count up to a multiple of BLOCK_SIZE_M,
// an expert without tokens gets none; the kernel computes every row of its blocks).
// E[ceil(n / bm)] = sum over j >= 0 of P(n > j bm): exact for j = 0 (the slot is touched),
// the normal approximation with continuity correction beyond, summed over the blocks
// within 8 standard deviations of the mean (those below count 1, those above 0).
// BLOCK_SIZE_M at M tokens as vLLM chooses it: from its tuned config file for the shape
// and GPU where it ships one (the entry whose batch key is nearest M, moe_configs.cpp),
// else get_default_config's (vllm/model_executor/layers/fused_moe/fused_moe.py): 64 for
// fp8 W8A8 with block scales, else 16 while M <= E (the GPU's experts, w2's first
// dimension), 64 above.
double StepTimeModel::fused_moe_rows(double tokens, double p) const {
  const double bm = moe_tuned_ != nullptr                          ? static_cast<double>(detail::tuned_block_size_m(*moe_tuned_, tokens))
                    : moe_block_quant_ || tokens > moe_local_slots_ ? 64
                                                                     : 16;
  const double touched = 1 - std::pow(1 - p, tokens);
  const double mean = tokens * p, sd = std::sqrt(tokens * p * (1 - p));
  if (!(sd > 0)) return bm * std::ceil(mean / bm);  // p = 1: every slot gets every token
  const double last = std::ceil(tokens / bm) - 1;      // n <= tokens: no blocks beyond
  const double lo = std::max(1.0, std::floor((mean - 8 * sd) / bm));
  const double hi = std::min(last, std::ceil((mean + 8 * sd) / bm));
  double blocks = touched + std::min(lo - 1, last);
  for (double j = lo; j <= hi; ++j) blocks += 0.5 * std::erfc((j * bm + 0.5 - mean) / (sd * std::sqrt(2.0)));
  return bm * blocks;
}

// moe_align_block_size (csrc/moe/moe_align_sum_kernels.cu) runs one kernel for fewer than
// 1,024 token-expert ids with at most 64 experts (small_batch_expert_mode), else two
// (align, then count_and_sort_expert_tokens).
double StepTimeModel::moe_align_kernels(double tokens) const {
  return tokens * static_cast<double>(top_k_) < 1024 && moe_slots_ <= 64 ? 1 : 2;
}

double StepTimeModel::dcp_bytes_per_layer(double decode_tokens) const {
  if (dcp_ <= 1) return 0;
  const auto c = static_cast<double>(dcp_);
  return (c - 1) / c * decode_tokens * dcp_bytes_per_token_;
}

double StepTimeModel::dcp_communication_s(double decode_tokens) const {
  if (dcp_ <= 1 || decode_tokens <= 0 || dcp_link_bytes_per_s_ <= 0) return 0;
  constexpr double kCollectivesPerLayer = 3;  // all-gather Q, all-gather LSE, reduce-scatter O
  return static_cast<double>(layers_) *
         (kCollectivesPerLayer * dcp_latency_s_ + dcp_bytes_per_layer(decode_tokens) / dcp_link_bytes_per_s_);
}

StepTime StepTimeModel::prefill(int64_t tokens) const {
  if (csa_) {
    const CsaAttentionFlops f = csa_attention_flops(*csa_, tokens, 0);
    return step(tokens, AttentionWork{.prefill_flops = f.sharded, .replicated_flops = f.replicated}, 0, 1, 0, nullptr);
  }
  return step(tokens, kv_.prefill_pairs(0, tokens), 0, 0);
}

StepTime StepTimeModel::decode(int64_t batch, int64_t context) const {
  if (csa_) {
    // One token at position `context` per sequence: the new token is among its keys.
    const CsaAttentionFlops f = csa_attention_flops(*csa_, 1, std::max<int64_t>(0, context - 1));
    const auto b = static_cast<double>(batch);
    return step(0,
                AttentionWork{.decode_flops = b * f.sharded, .replicated_flops = b * f.replicated,
                              .read_bytes = b * kv_.decode_read_bytes(context)},
                batch, 1, 0, nullptr);
  }
  return step(0, 0, batch, static_cast<double>(batch) * kv_.decode_keys(context));
}

}  // namespace kvplan
