#include <algorithm>
#include <string>

#include "planner/checked.h"
#include "planner/engine_common.h"
#include "planner/planner.h"
#include "planner/lora.h"
#include "planner/speculative.h"
#include "planner/units.h"

namespace kvplan {

namespace {
void require(bool ok, const std::string& where, const std::string& key, const std::string& expected,
             const std::string& got) {
  if (!ok) throw InputError(where, key, expected, got);
}
std::string str(int64_t v) { return std::to_string(v); }
// --ep / --dp (docs/parallelism.md). vLLM's FusedMoEParallelConfig.make
// (vllm/model_executor/layers/fused_moe/config.py at commit
// 002d6073aa034d4f5545d45021b0e56d1f3c3593) has ep_size = tp x dp with
// --enable-expert-parallel and 1 without; SGLang also splits experts over a divisor of
// its world (moe_tp_size = tp_size // moe_ep_size // moe_dp_size,
// python/sglang/srt/distributed/parallel_state.py).
// The host KV tiers (host_kv_tier). vLLM's OffloadingConnector, sized in bytes by
// --kv-offloading-size from 0.14 (PR #24498), and SGLang's HiCache both find host blocks
// by prefix, so prefix caching must be on; a recurrent state is not paged in blocks, so
// hybrid models are left out. TensorRT-LLM's host cache is not modelled.
void validate_kv_offloading(const ModelConfig& m, const ServingOptions& o, const std::string& where) {
  require(o.kv_disk_bytes >= 0, where, "--kv-disk-size", "a size in GiB >= 0", str(o.kv_disk_bytes));
  // The disk tier takes what the host tier evicts (vLLM's secondary tiers, LMCache's
  // local disk beside local_cpu, HiCache's storage below its host pool).
  require(o.kv_disk_bytes == 0 || o.kv_offloading_bytes > 0 || o.hicache, where, "--kv-disk-size",
          "a host tier above it (--kv-offloading-size or --enable-hierarchical-cache)", "a disk tier alone");
  require(o.kv_remote_bytes >= 0, where, "--kv-remote-size", "a size in GiB >= 0", str(o.kv_remote_bytes));
  // LMCache's remote backends and HiCache's storage backends fetch into host memory and
  // copy to the GPU from there: the store sits below a host tier.
  require(o.kv_remote_bytes == 0 || o.kv_offloading_bytes > 0 || o.hicache, where, "--kv-remote-size",
          "a host tier above it (--kv-offloading-size or --enable-hierarchical-cache)", "a remote tier alone");
  if (o.kv_offloading_bytes == 0 && !o.hicache) return;
  const std::string flag = o.hicache ? "--enable-hierarchical-cache" : "--kv-offloading-size";
  require(!(o.hicache && o.kv_offloading_bytes != 0), where, "--kv-offloading-size",
          "one host tier: vLLM's --kv-offloading-size or SGLang's --enable-hierarchical-cache", "both");
  if (o.hicache) {
    require(o.engine == Engine::sglang, where, flag, "--engine sglang (HiCache is SGLang's; vLLM's is --kv-offloading-size)",
            std::string(to_string(o.engine)));
    require(o.hicache->ratio > 1 || o.hicache->size_bytes_per_gpu > 0, where, "--hicache-ratio",
            "a ratio > 1 (SGLang asserts the host pool exceeds the GPU pool)", shortest(o.hicache->ratio));
    require(o.hicache->size_bytes_per_gpu >= 0, where, "--hicache-size", "a size in GB >= 0",
            str(o.hicache->size_bytes_per_gpu));
  } else {
    require(o.kv_offloading_bytes > 0, where, flag, "a size in GiB > 0", str(o.kv_offloading_bytes));
    require(o.engine == Engine::vllm || o.engine == Engine::ideal, where, flag,
            "--engine vllm or ideal (vLLM's OffloadingConnector; SGLang's tier is --enable-hierarchical-cache, "
            "TensorRT-LLM's host cache is not modelled)",
            std::string(to_string(o.engine)));
  }
  if (o.engine == Engine::vllm) {
    const std::string v = detail::vllm_release(o).version;
    const auto minor = std::stoi(v.substr(v.find('.') + 1));
    require(minor >= 14, where, flag,
            "vLLM 0.14 or later (its --kv-offloading-size, vllm-project/vllm PR #24498; 0.11-0.13 sized the "
            "connector in CPU blocks per worker through --kv-transfer-config, which is not modelled)",
            "vllm@" + v);
  }
  require(o.kv_cache, where, flag, "a KV cache (--no-kv-cache keeps none to offload)", "");
  require(o.enable_prefix_caching.value_or(true), where, flag,
          "prefix caching on (the tier is found by prefix)", "--enable-prefix-caching off");
  require(!m.has_state_layers(), where, flag,
          "a model without Mamba / linear-attention layers (" + m.name + "'s recurrent state is not offloaded in blocks)",
          "");
  if (o.hicache) return;  // sized against the pool: host_kv_tier checks it where the pool is known
  const HostKvTier t = *host_kv_tier(m, o, 0);
  require(t.blocks >= 1, where, flag,
          "at least one KV block per GPU (" + str(t.block_bytes_per_gpu) +
              " bytes; the size is split over tp x pp = " + str(o.tp * o.pp) + ")",
          str(t.bytes_per_gpu) + " bytes per GPU");
}

void validate_expert_parallel(const ModelConfig& m, const ServingOptions& o, const std::string& where) {
  require(o.ep >= 1, where, "--expert-parallel-size", "an integer >= 1", str(o.ep));
  require(o.dp >= 1, where, "--data-parallel-size", "an integer >= 1", str(o.dp));
  require(o.redundant_experts >= 0, where, "--num-redundant-experts", "an integer >= 0", str(o.redundant_experts));
  require(o.redundant_experts == 0 || o.ep > 1, where, "--num-redundant-experts",
          "0 without expert parallelism (EPLB places redundant experts on --ep > 1 GPUs)", str(o.redundant_experts));
  if (o.ep == 1 && o.dp == 1) return;
  const std::string what = o.ep > 1 ? "--expert-parallel-size" : "--data-parallel-size";
  require(m.is_moe(), where, what,
          "1 for " + m.name + ", a dense model (expert and data-parallel attention split MoE models; "
          "independent copies of a dense model are replicas)",
          str(o.ep > 1 ? o.ep : o.dp));
  if (o.ep == 1) return;
  const int64_t gpus = o.tp * o.dp;
  require(o.ep <= gpus, where, "--expert-parallel-size",
          "at most the GPUs of a pipeline stage, --tp x --dp = " + str(gpus), str(o.ep));
  require(gpus % o.ep == 0, where, "--expert-parallel-size", "a divisor of --tp x --dp = " + str(gpus), str(o.ep));
  // vLLM's EPLB: num_physical_experts = num_experts + num_redundant_experts, split evenly
  // over the EP ranks (vllm/model_executor/layers/fused_moe/layer.py).
  const int64_t physical = m.num_experts + o.redundant_experts;
  require(physical % o.ep == 0, where, "--expert-parallel-size",
          o.redundant_experts == 0
              ? "a divisor of the routed experts (" + str(m.num_experts) + " for " + m.name + ")"
              : "a divisor of the routed + redundant experts (" + str(m.num_experts) + " + " +
                    str(o.redundant_experts) + " = " + str(physical) + ")",
          str(o.ep));
  require(o.engine != Engine::vllm || o.ep == gpus, where, "--expert-parallel-size",
          "--tp x --dp = " + str(gpus) + " with --engine vllm (--enable-expert-parallel sets EP = TP x DP)", str(o.ep));
}

// --decode-context-parallel-size (docs/long-context.md). vLLM: ParallelConfig requires
// tp_size % dcp_size == 0 (DCP reuses the TP ranks; vllm/config/parallel.py); the DCP
// guide (docs/serving/context_parallel_deployment.md) bounds dcp by tp / num_kv_heads,
// the copies TP would make of each KV head, which the GQA backends need (a DCP group
// must hold one head's KV; for MLA the latent is one head). Released for MLA in 0.10.2
// (PR #23734), for GQA after 0.11.0 (PR #24864, FlashAttention, and #25438, FlashInfer;
// kvplan's 0.11 row cannot tell 0.11.0 from 0.11.1, so GQA needs its 0.12). SGLang's
// DCP (--dcp-size, 2026) is newer than its modelled releases; TensorRT-LLM's Helix is not
// modelled. Windowed and state layers, speculative drafts and host tiers under DCP are
// engine paths kvplan does not model (vLLM added DCP for hybrid models later, PR #40996).
void validate_dcp(const ModelConfig& m, const ServingOptions& o, const std::string& where) {
  constexpr const char* kFlag = "--decode-context-parallel-size";
  require(o.dcp >= 1, where, kFlag, "an integer >= 1", str(o.dcp));
  if (o.dcp == 1) return;
  require(o.tp % o.dcp == 0, where, kFlag,
          "a divisor of --tensor-parallel-size (" + str(o.tp) + "): DCP splits the TP group, it adds no GPU", str(o.dcp));
  if (!m.is_mla()) {
    const int64_t copies = o.tp >= m.num_kv_heads ? o.tp / m.num_kv_heads : 1;
    require(copies % o.dcp == 0, where, kFlag,
            "a divisor of --tp / num_key_value_heads = " + str(o.tp) + " / " + str(m.num_kv_heads) + " = " + str(copies) +
                " (the copies TP makes of each KV head, which DCP shards instead)",
            str(o.dcp));
  }
  require(o.engine == Engine::vllm || o.engine == Engine::ideal, where, kFlag,
          "--engine vllm or ideal (SGLang's --dcp-size came after its modelled releases; TensorRT-LLM's Helix "
          "parallelism is not modelled)",
          std::string(to_string(o.engine)));
  if (o.engine == Engine::vllm) {
    const std::string v = detail::vllm_release(o).version;
    const auto minor = std::stoi(v.substr(v.find('.') + 1));
    const int64_t first = m.is_mla() ? 10 : 12;
    require(minor >= first, where, kFlag,
            m.is_mla() ? std::string("vLLM 0.10 or later (DCP for MLA: vllm-project/vllm PR #23734, in 0.10.2)")
                       : std::string("vLLM 0.12 or later for a GQA model (vllm-project/vllm PR #24864 and #25438, "
                                     "after 0.11.0)"),
            "vllm@" + v);
  }
  require(o.kv_cache, where, kFlag, "a KV cache (DCP shards it)", "--no-kv-cache");
  const bool windowed = std::any_of(m.layer_window.begin(), m.layer_window.end(), [](int64_t w) { return w > 0; });
  require(!windowed && !m.has_state_layers(), where, kFlag,
          "1 for " + m.name + " (its sliding-window or Mamba / linear-attention layers under DCP are not modelled)",
          str(o.dcp));
  require(o.spec == nullptr, where, kFlag, "1 with speculative decoding (a drafter's KV under DCP is not modelled)",
          str(o.dcp));
  require(o.kv_offloading_bytes == 0 && !o.hicache, where, kFlag,
          "1 with a host KV tier (offloading DCP-sharded blocks is not modelled)", str(o.dcp));
}

}  // namespace

std::vector<int64_t> dcp_sizes(const ModelConfig& m, const ServingOptions& o) {
  std::vector<int64_t> out{1};
  for (int64_t d = 2; d <= o.tp; ++d) {
    if (o.tp % d != 0) continue;
    ServingOptions c = o;
    c.dcp = d;
    try {
      validate(m, c, "dcp_sizes");
      out.push_back(d);
    } catch (const InputError&) {
      // A size the engine refuses for this model and layout is not one it runs.
    }
  }
  return out;
}

void validate(const ModelConfig& m, const ServingOptions& o, const std::string& where) {
  require(o.tp >= 1, where, "--tensor-parallel-size", "an integer >= 1", str(o.tp));
  require(o.pp >= 1, where, "--pipeline-parallel-size", "an integer >= 1", str(o.pp));
  require(m.num_heads % o.tp == 0, where, "--tensor-parallel-size",
          "a divisor of num_attention_heads (" + str(m.num_heads) + " for " + m.name + ")", str(o.tp));
  if (!m.is_mla()) {
    const bool kv_ok = m.num_kv_heads % o.tp == 0 || o.tp % m.num_kv_heads == 0;
    require(kv_ok, where, "--tensor-parallel-size",
            "a divisor or multiple of num_key_value_heads (" + str(m.num_kv_heads) + " for " + m.name + ")",
            str(o.tp));
  }
  if (m.has_state_layers()) {
    // vLLM shards Mamba heads and gated-delta value/key heads over TP (divide() asserts).
    const int64_t heads = m.mamba_heads > 0 ? m.mamba_heads : m.linear_value_heads;
    if (heads > 0)
      require(heads % o.tp == 0, where, "--tensor-parallel-size",
              "a divisor of the Mamba / linear-attention heads (" + str(heads) + " for " + m.name + ")", str(o.tp));
    if (m.linear_key_heads > 0)
      require(m.linear_key_heads % o.tp == 0, where, "--tensor-parallel-size",
              "a divisor of linear_num_key_heads (" + str(m.linear_key_heads) + " for " + m.name + ")", str(o.tp));
    // LFM2's short-conv state is conv_dim / tp channels (short_conv_state_shape's divide()).
    if (m.short_conv_dim > 0)
      require(m.short_conv_dim % o.tp == 0, where, "--tensor-parallel-size",
              "a divisor of the short convolution's conv_dim (" + str(m.short_conv_dim) + " for " + m.name + ")", str(o.tp));
  }
  // The engine models (engine_*.cpp) follow each engine's code for uniform attention
  // stacks; hybrid layers, per-layer geometry and indexer caches are modelled by the
  // ideal engine only, rather than counted wrong.
  // Dense layers whose attention or MLP block may be a no-op, with widths per layer
  // (Nemotron-NAS), are counted layer by layer there (layer_weight_bytes, kv_layers).
  const bool dense_blocks = !m.is_moe() && std::none_of(m.layer_ffn.begin(), m.layer_ffn.end(),
                                                         [](Ffn f) { return f == Ffn::moe; });
  const bool per_layer = m.has_state_layers() || m.swa_num_kv_heads > 0 || !m.layer_kv_shared.empty() ||
                         m.index_head_dim > 0 || m.attn_v_head_dim > 0 || m.attn_output_gate ||
                         (!m.layer_ffn.empty() && !dense_blocks) || m.shared_expert_intermediate_size > 0;
  require(o.engine == Engine::ideal || !per_layer, where, "--engine",
          "ideal for " + m.name + " (its hybrid / per-layer attention is not modelled for " +
              std::string(to_string(o.engine)) + " yet)",
          std::string(to_string(o.engine)));
  // DeepSeek-V4's attention is priced for a step of equal sequences (KvTraffic): not for a
  // recomputed context, nor split over a DCP group (its window is not a prefix of tokens).
  require(!m.is_csa() || o.kv_cache, where, "--no-kv-cache",
          "a model without compressed sparse attention (" + m.name + ": DeepSeek-V4's steps are priced with its cache)",
          "set");
  require(!m.is_csa() || o.dcp == 1, where, "--decode-context-parallel-size",
          "1 for " + m.name + " (DeepSeek-V4's window and compressed entries split over a DCP group are not modelled)",
          str(o.dcp));
  require(o.pp <= m.num_layers, where, "--pipeline-parallel-size",
          "at most num_hidden_layers (" + str(m.num_layers) + " for " + m.name + ")", str(o.pp));
  validate_expert_parallel(m, o, where);
  validate_dcp(m, o, where);
  require(o.block_size >= 1, where, "--block-size", "an integer >= 1", str(o.block_size));
  require(o.engine != Engine::vllm || detail::vllm_accepts_block_size(o.block_size), where, "--block-size",
          "one of vLLM's block sizes, " + detail::vllm_block_sizes_text() + " (--engine vllm)", str(o.block_size));
  // TensorRT-LLM's KV blocks hold a power of two tokens, more than one (docs/source/features/
  // kvcache.md, NVIDIA/TensorRT-LLM@fbbc05dd1445); SGLang's --page-size takes any positive size.
  require(o.engine != Engine::trtllm || (o.block_size > 1 && (o.block_size & (o.block_size - 1)) == 0), where,
          "--block-size", "a power of two greater than 1 (--engine trtllm: TensorRT-LLM's tokens per block)",
          str(o.block_size));
  require(o.gpu_memory_utilization > 0 && o.gpu_memory_utilization <= 1, where,
          "--gpu-memory-utilization", "a fraction in (0, 1]", std::to_string(o.gpu_memory_utilization));
  require(o.max_num_seqs >= 1, where, "--max-num-seqs", "an integer >= 1", str(o.max_num_seqs));
  if (o.dtype) {
    const DType d = *o.dtype;
    require(d == DType::fp32 || d == DType::fp16 || d == DType::bf16, where, "--dtype",
            "fp32, fp16 or bf16 (weight quantization is --quantization)", std::string(to_string(d)));
  }
  if (const auto refused = quantization_refusal(m, o))
    throw InputError(where, "--quantization", *refused, "'" + std::string(to_string(o.quantization)) + "'");
  if (o.kv_heads) {
    require(*o.kv_heads >= 1 && m.num_heads % *o.kv_heads == 0, where, "--kv-heads",
            "a divisor of num_attention_heads (" + str(m.num_heads) + ")", str(*o.kv_heads));
    require(!m.is_mla(), where, "--kv-heads", "a model with K/V heads (" + m.name + " uses MLA)", "");
  }
  if (o.max_model_len) {
    require(*o.max_model_len >= 1, where, "--max-model-len", "an integer >= 1", str(*o.max_model_len));
    check_context(m, o, *o.max_model_len, where);
  }
  validate_spec(m, o, where);
  validate_lora(m, o, where);
  validate_kv_offloading(m, o, where);
  const int64_t group = o.kv_group;
  require(group >= 0, where, "--kv-group", "an integer >= 1", str(group));
  if (o.kv_quant == KvQuant::kivi && dtype_bits(o.kv_dtype(m)) < 16) {
    const int64_t g = group > 0 ? group : 32;
    const int64_t r = o.kv_residual.value_or(128);
    require(r % g == 0, where, "--kv-residual",
            "a multiple of --kv-group (" + str(g) + "), as KIVI requires", str(r));
  }
}

int64_t derived_max_model_len(const ModelConfig& m) {
  if (m.max_position_embeddings <= 0) return 0;
  double len = static_cast<double>(m.max_position_embeddings);
  const std::string& t = m.rope_type;
  const bool scales = !t.empty() && t != "su" && t != "longrope" && t != "llama3" &&
                      m.model_type.find("gemma3") == std::string::npos;
  if (scales) {
    if (t == "yarn" && m.rope_original_max_position_embeddings > 0)
      len = static_cast<double>(m.rope_original_max_position_embeddings);
    len *= m.rope_factor;
  }
  return static_cast<int64_t>(len);  // vLLM's int(): truncation
}

void check_context(const ModelConfig& m, const ServingOptions& o, int64_t context, const std::string& where) {
  const int64_t derived = derived_max_model_len(m);
  const std::string why =
      m.rope_type.empty() || derived == m.max_position_embeddings
          ? "max_position_embeddings " + str(m.max_position_embeddings)
          : "rope_scaling " + m.rope_type + " x " + std::to_string(m.rope_factor).substr(0, 5) + " of " +
                str(m.rope_type == "yarn" ? m.rope_original_max_position_embeddings : m.max_position_embeddings);
  if (o.max_model_len && derived > 0 && *o.max_model_len > derived && o.engine != Engine::ideal)
    throw InputError(where, "--max-model-len",
                     "at most " + m.name + "'s derived maximum length " + str(derived) + " (" + why + "); " +
                         std::string(to_string(o.engine)) +
                         " refuses longer (vLLM: VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides it)",
                     str(*o.max_model_len));
  if (o.max_model_len) {
    if (context > *o.max_model_len)
      throw InputError(where, "--context", "at most --max-model-len (" + str(*o.max_model_len) + ")", str(context));
    return;
  }
  if (derived > 0 && context > derived)
    throw InputError(where, "--context",
                     "at most " + m.name + "'s maximum length " + str(derived) + " (" + why +
                         "; a longer what-if needs an explicit --max-model-len)",
                     str(context));
}

ModelConfig apply_what_if(const ModelConfig& m, const ServingOptions& o) {
  ModelConfig out = m;
  if (o.kv_heads) out.num_kv_heads = *o.kv_heads;
  return out;
}

Plan make_plan(const ModelConfig& model, const GpuSpec& g, const ServingOptions& given,
               int64_t context_tokens, int64_t batch) {
  const ServingOptions o = with_engine_defaults(g, given);
  const ModelConfig m = o.kv_heads ? apply_what_if(model, o) : model;
  Plan p;
  p.context_tokens = context_tokens;
  p.batch = batch;
  p.params = count_params(m).total();
  p.weight_dtype = o.activation_dtype(m);
  const QuantSpec wq = weight_quant_of(m, o);
  p.weight_format = wq.active() ? wq.method : std::string(to_string(p.weight_dtype));
  p.kv_dtype = o.kv_dtype(m);
  p.memory = memory_budget(m, g, o);
  p.kv_bytes_per_token = kv_bytes_per_token(m, o);
  p.kv_bytes_per_token_per_gpu = kv_bytes_per_token_per_gpu(m, o);
  p.kv_bytes_per_request = kv_bytes_per_request(m, o, context_tokens);
  p.state_bytes_per_request = state_bytes_per_request(m, o);
  p.capacity = capacity(m, o, p.memory, context_tokens);
  p.prefill = prefill_flops(m, context_tokens);
  p.decode_step = o.kv_cache ? decode_step_flops(m, context_tokens) : prefill_flops(m, context_tokens);
  p.generate_cached = generate_cached_flops(m, context_tokens);
  p.generate_naive = generate_naive_flops(m, context_tokens);
  p.seed_naive_projection_flops = seed_naive_projection_flops(m, context_tokens);
  // One decode step touches batch x context tokens (of KV, or recomputed): a count the
  // step-time model keeps in 64 bits.
  int64_t batch_tokens = 0;
  if (__builtin_mul_overflow(batch, context_tokens, &batch_tokens))
    throw InputError("command line", "--batch", "at most 2^63 - 1 tokens in a batch (--batch x --context)",
                     str(batch) + " x " + str(context_tokens));
  const StepTimeModel st(m, g, o);
  p.scale_out_note = scale_out_note(g, o);
  p.bandwidth_transfer = memory_bandwidth_transfer(o.calibration, g);
  p.gemm_transfer = gemm_flops_transfer(o.calibration, g);
  p.prefill_time = st.prefill(context_tokens);
  p.decode_time = o.kv_cache ? st.decode(batch, context_tokens)
                             : st.step(batch_tokens,
                                       static_cast<double>(batch) * st.kv_traffic().prefill_pairs(0, context_tokens),
                                       0, 0);
  p.fits = p.capacity.max_concurrent_requests >= batch;
  const int64_t derived = derived_max_model_len(m);
  p.max_model_len = o.max_model_len.value_or(derived > 0 ? derived : context_tokens);
  if (o.kv_cache) p.contiguous_max_requests = capacity(m, o, p.memory, p.max_model_len).max_concurrent_requests;
  p.host_tier = host_kv_tier(m, o, p.capacity.num_blocks);
  if (o.dcp > 1 && o.kv_cache) {
    p.dcp_bytes_per_layer = st.dcp_bytes_per_layer(static_cast<double>(batch));
    ServingOptions one = given;
    one.dcp = 1;
    const Plan base = make_plan(model, g, one, context_tokens, batch);
    p.without_dcp = Plan::WithoutDcp{base.capacity, base.kv_bytes_per_token_per_gpu, base.decode_time, base.fits};
  }
  return p;
}

}  // namespace kvplan
