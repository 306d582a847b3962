// LoRA adapters: the slots vLLM allocates and the cost of its batched LoRA kernels. Every
// rule cites the vLLM source it follows; docs/lora.md collects them.
#include "planner/lora.h"

#include <algorithm>
#include <string>
#include <vector>

#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan {

namespace {

using detail::checked_add;
using detail::checked_mul;

// A module a --lora-target-modules name selects: a packed module is wrapped whole when
// any of its parts is targeted (vllm/lora/utils.py is_in_target_modules with the model's
// packed_modules_mapping: qkv_proj = q_proj, k_proj, v_proj; gate_up_proj = gate_proj,
// up_proj), vllm-project/vllm@01533aa8f9c0:vllm/lora/model_manager.py _create_lora_modules.
// A part's name selects only where the class packs the parts (LoraFamily::split_packing).
struct TargetName {
  std::string_view given;
  std::string_view module;
  bool part;  // q_proj, k_proj, v_proj, gate_proj, up_proj
};
constexpr TargetName kTargets[] = {
    {"q_proj", "qkv_proj", true},        {"k_proj", "qkv_proj", true},   {"v_proj", "qkv_proj", true},
    {"qkv_proj", "qkv_proj", false},     {"o_proj", "o_proj", false},    {"gate_proj", "gate_up_proj", true},
    {"up_proj", "gate_up_proj", true},   {"gate_up_proj", "gate_up_proj", false},
    {"down_proj", "down_proj", false},   {"embed_tokens", "embed_tokens", false},
    {"lm_head", "lm_head", false},
};
constexpr std::string_view kTargetList =
    "q_proj, k_proj, v_proj, qkv_proj, o_proj, gate_proj, up_proj, gate_up_proj, down_proj, embed_tokens or lm_head";
// vllm/lora/layers/logits_processor.py LogitsProcessorWithLoRA.create_lora_weights.
constexpr int64_t kVllmLoraMaxVocab = 258048;

// What a model's vLLM class tells its LoRA manager (docs/lora.md lists the sources):
//  - embeddings: embed_tokens and lm_head are in its embedding_modules, which makes them
//    LoRA modules (vllm/lora/utils.py get_supported_lora_modules);
//  - split_packing: packed_modules_mapping packs q, k, v into qkv_proj and gate, up into
//    gate_up_proj, so the merged LoRA layers hold a slice per part
//    (MergedQKVParallelLinearWithLoRA, MergedColumnParallelLinearWithLoRA); false: the
//    checkpoint's own fused qkv_proj and gate_up_proj, one slice each
//    (QKVParallelLinearWithLoRA, ColumnParallelLinearWithLoRA).
// LlamaForCausalLM: both (vllm-project/vllm@e06c9ba2a6ea:vllm/model_executor/models/llama.py;
// MistralForCausalLM inherits it); Phi3ForCausalLM inherits Llama's embeddings with
// qkv_proj: [qkv_proj], gate_up_proj: [gate_up_proj] (phi3.py); Qwen2ForCausalLM
// (@013a27925170 qwen2.py), Qwen3ForCausalLM (@002456df36fc qwen3.py, SupportsLoRA's empty
// default) and the Gemma classes ("Gemma does not apply LoRA to the embedding layer")
// have no embedding modules.
struct LoraFamily {
  std::string_view model_type;
  bool embeddings;
  bool split_packing;
};
constexpr LoraFamily kLoraFamilies[] = {
    {"llama", true, true},   {"mistral", true, true}, {"phi3", true, false},   {"qwen2", false, true},
    {"qwen3", false, true},  {"gemma", false, true},  {"gemma2", false, true}, {"gemma3_text", false, true},
};
const LoraFamily* lora_family(const ModelConfig& m) {
  const auto* it = std::find_if(std::begin(kLoraFamilies), std::end(kLoraFamilies),
                                [&](const LoraFamily& f) { return f.model_type == m.model_type; });
  return it == std::end(kLoraFamilies) ? nullptr : it;
}
std::string lora_family_list() {
  std::string out;
  for (const LoraFamily& f : kLoraFamilies) out += (out.empty() ? "" : ", ") + std::string(f.model_type);
  return out;
}
bool is_embedding(std::string_view module) { return module == "embed_tokens" || module == "lm_head"; }

// Named by --lora-target-modules, or every module when it is not given (target_modules
// None: every supported module).
bool named(const LoraFamily& f, const ServingOptions& o, std::string_view module) {
  const auto& t = o.lora->target_modules;
  if (t.empty()) return true;
  return std::any_of(t.begin(), t.end(), [&](const std::string& g) {
    return std::any_of(std::begin(kTargets), std::end(kTargets), [&](const TargetName& n) {
      return n.given == g && n.module == module && (f.split_packing || !n.part);
    });
  });
}

// Wrapped: named, and an embedding module only where the model's class supports it.
bool targeted(const LoraFamily& f, const ServingOptions& o, std::string_view module) {
  return named(f, o, module) && (!is_embedding(module) || f.embeddings);
}

// Why vLLM's LoRA layers, as kvplan models them, do not cover `m`; empty when they do.
std::string unsupported(const ModelConfig& m) {
  if (m.is_moe()) return "LoRA on mixture-of-experts layers (vLLM's FusedMoEWithLoRA) is not modelled yet";
  if (m.is_mla()) return "LoRA on multi-head latent attention is not modelled yet";
  if (m.has_state_layers()) return "LoRA on Mamba or linear-attention layers is not modelled yet";
  if (!m.gated_mlp) return "LoRA on a non-gated MLP (fc1/fc2) is not modelled yet";
  if (m.attn_output_gate || m.swa_num_heads > 0 || m.attn_v_head_dim > 0)
    return "LoRA on attention with its own head geometry is not modelled yet";
  return {};
}

}  // namespace

void validate_lora(const ModelConfig& m, const ServingOptions& o, const std::string& where) {
  if (!o.lora) return;
  const LoraOptions& l = *o.lora;
  if (o.engine == Engine::sglang || o.engine == Engine::trtllm)
    throw InputError(where, "--enable-lora",
                     "--engine vllm or ideal (SGLang's and TensorRT-LLM's LoRA memory is not modelled yet)",
                     std::string(to_string(o.engine)));
  if (l.max_loras < 1) throw InputError(where, "--max-loras", "an integer >= 1", std::to_string(l.max_loras));
  if (std::find(std::begin(kVllmLoraRanks), std::end(kVllmLoraRanks), l.max_lora_rank) == std::end(kVllmLoraRanks))
    throw InputError(where, "--max-lora-rank", "one of vLLM's ranks 1, 8, 16, 32, 64, 128, 256, 320 or 512",
                     std::to_string(l.max_lora_rank));
  if (l.max_cpu_loras != 0 && l.max_cpu_loras < l.max_loras)
    throw InputError(where, "--max-cpu-loras", ">= --max-loras (" + std::to_string(l.max_loras) + ")",
                     std::to_string(l.max_cpu_loras));
  for (const std::string& t : l.target_modules)
    if (std::none_of(std::begin(kTargets), std::end(kTargets), [&](const TargetName& n) { return n.given == t; }))
      throw InputError(where, "--lora-target-modules", std::string(kTargetList), t);
  if (const std::string why = unsupported(m); !why.empty())
    throw InputError(where, "--enable-lora", "a dense attention model (" + why + ")", m.name);
  if (o.pp > 1)
    throw InputError(where, "--enable-lora", "--pipeline-parallel-size 1 (LoRA slots split over pipeline stages are not modelled yet)",
                     std::to_string(o.pp));
  const LoraFamily* f = lora_family(m);
  if (f == nullptr)
    throw InputError(where, "--enable-lora",
                     "a model_type whose vLLM LoRA layers kvplan's table lists (" + lora_family_list() + "; docs/lora.md)",
                     "'" + m.model_type + "'");
  for (const std::string_view e : {"embed_tokens", "lm_head"})
    if (!f->embeddings && !l.target_modules.empty() && named(*f, o, e))
      throw InputError(where, "--lora-target-modules",
                       "modules vLLM wraps for model_type '" + m.model_type + "' (its class has no LoRA embedding modules)",
                       std::string(e));
  if (targeted(*f, o, "lm_head") && m.vocab_size > kVllmLoraMaxVocab)
    throw InputError(where, "--enable-lora", "a vocabulary of at most 258,048 tokens (vLLM's limit for LoRA on lm_head)",
                     std::to_string(m.vocab_size));
}

// The buffers of vllm/lora/layers at vllm-project/vllm@0163de2b7c0f (create_lora_weights),
// per slot, without --fully-sharded-loras:
//  - column-parallel (qkv_proj: MergedQKVParallelLinearWithLoRA, 3 slices; gate_up_proj:
//    MergedColumnParallelLinearWithLoRA, 2 slices): lora_a rank x input, whole on every
//    GPU; lora_b of each slice its output shard x rank (q: heads / tp x head_dim; k, v:
//    max(1, kv_heads / tp) x head_dim, the KV heads replicated below tp; gate, up:
//    intermediate / tp);
//  - row-parallel (o_proj, down_proj: RowParallelLinearWithLoRA, base_linear.py): lora_a
//    rank x the input shard (q width / tp, intermediate / tp), lora_b whole output x rank;
//  - embed_tokens (VocabParallelEmbeddingWithLoRA): lora_a org_vocab x rank and lora_b
//    hidden x rank, whole on every GPU (vocal_parallel_embedding.py);
//  - lm_head (LogitsProcessorWithLoRA): lora_a rank x hidden, lora_b vocab x rank, whole:
//    the delta is added to the gathered logits (logits_processor.py).
// embed_tokens and lm_head only where the model's class lists them, and one slice for a
// checkpoint's own fused qkv_proj and gate_up_proj (kLoraFamilies).
// Every buffer is max_loras x ... x max_lora_rank in lora_dtype ("auto": the model dtype,
// vllm/config/lora.py verify_with_model_config).
LoraMemory lora_memory(const ModelConfig& m, const ServingOptions& o) {
  const LoraOptions& l = *o.lora;
  LoraMemory mem;
  mem.rank = l.max_lora_rank;
  mem.slots = l.max_loras;
  mem.cpu_slots = l.max_cpu_loras > 0 ? l.max_cpu_loras : l.max_loras;
  mem.dtype = o.activation_dtype(m);
  const int64_t r = l.max_lora_rank, tp = o.tp, h = m.hidden_size, layers = m.num_layers;
  const int64_t q = m.q_dim(), kv = std::max<int64_t>(1, m.num_kv_heads / tp) * m.head_dim;
  const int64_t inter = m.intermediate_size;
  const LoraFamily* fp = lora_family(m);
  if (fp == nullptr)
    throw InputError("serving options", "--enable-lora", "a model_type kvplan's LoRA table lists (" + lora_family_list() + ")",
                     "'" + m.model_type + "'");
  const LoraFamily& f = *fp;
  const int64_t qkv_slices = f.split_packing ? 3 : 1, gate_up_slices = f.split_packing ? 2 : 1;
  const auto add = [&](std::string name, int64_t instances, int64_t slices, int64_t a, int64_t b, bool gathered) {
    if (targeted(f, o, name)) mem.modules.push_back({std::move(name), instances, slices, a, b, gathered});
  };
  add("qkv_proj", layers, qkv_slices, checked_mul(qkv_slices * r, h, "LoRA qkv_proj"),
      checked_mul(q / tp + 2 * kv, r, "LoRA qkv_proj"), false);
  add("o_proj", layers, 1, checked_mul(r, q / tp, "LoRA o_proj"), checked_mul(h, r, "LoRA o_proj"), false);
  add("gate_up_proj", layers, gate_up_slices, checked_mul(gate_up_slices * r, h, "LoRA gate_up_proj"),
      checked_mul(2 * (inter / tp), r, "LoRA gate_up_proj"), false);
  add("down_proj", layers, 1, checked_mul(r, inter / tp, "LoRA down_proj"), checked_mul(h, r, "LoRA down_proj"), false);
  add("embed_tokens", 1, 1, checked_mul(m.vocab_size, r, "LoRA embed_tokens"), checked_mul(h, r, "LoRA embed_tokens"), true);
  add("lm_head", 1, 1, checked_mul(r, h, "LoRA lm_head"), checked_mul(m.vocab_size, r, "LoRA lm_head"), false);
  int64_t elems = 0;
  for (const LoraModule& x : mem.modules)
    elems = checked_add(elems, checked_mul(x.instances, checked_add(x.a_elems, x.b_elems, "LoRA slot"), "LoRA slot"), "LoRA slot");
  mem.slot_bytes_per_gpu = checked_mul(elems, dtype_bits(mem.dtype) / 8, "LoRA slot bytes");
  mem.bytes_per_gpu = checked_mul(mem.slot_bytes_per_gpu, mem.slots, "LoRA slots' bytes");
  return mem;
}

int64_t lora_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  return o.lora ? lora_memory(m, o).bytes_per_gpu : 0;
}

// Punica's kernels (vllm/lora/ops/triton_ops lora_shrink and lora_expand, called by
// punica_wrapper add_lora_linear): shrink y = x A^T into an fp32 buffer of rank columns
// per slice, expand out += y B^T; tokens are grouped by adapter, so each distinct adapter
// of the batch has its A and B read once. Per token and instance: shrink 2 x slices x
// rank x input FLOPs (= 2 x a_elems), expand 2 x output x rank (= 2 x b_elems); x re-read
// (input), the buffer written and read (slices x rank fp32, twice), the output read and
// written (output, twice). embed_tokens' lora_a is a row lookup (F.embedding): no FLOPs,
// and only the tokens' rows are read. lm_head runs on the logit rows only.
LoraStepCost lora_step_cost(const LoraMemory& mem, double tokens, double logit_rows, double adapters) {
  LoraStepCost c;
  const double elem = static_cast<double>(dtype_bits(mem.dtype)) / 8, r = static_cast<double>(mem.rank);
  adapters = std::clamp(adapters, 0.0, static_cast<double>(mem.slots));
  if (adapters == 0 || tokens <= 0) return c;
  for (const LoraModule& x : mem.modules) {
    const double n = static_cast<double>(x.instances);
    const double rows = x.name == "lm_head" ? logit_rows : tokens;
    const auto slices = static_cast<double>(x.slices);
    const double a = static_cast<double>(x.a_elems), b = static_cast<double>(x.b_elems);
    const double input = a / (slices * r), output = b / r;
    const double shrink_flops = x.gathered_a ? 0 : 2 * a;
    c.flops += n * rows * (shrink_flops + 2 * b);
    const double a_read = x.gathered_a ? std::min(rows, input) * r * elem : adapters * a * elem;
    c.bytes += n * (a_read + adapters * b * elem +
                    rows * ((x.gathered_a ? 0 : input * elem) + 2 * slices * r * 4 + 2 * output * elem));
    c.kernels += 2 * n;
  }
  return c;
}

LoraPlan make_lora_plan(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, const Plan& p) {
  LoraPlan lp;
  lp.memory = lora_memory(m, o);
  ServingOptions without = o;
  without.lora.reset();
  const Plan base = make_plan(m, g, without, p.context_tokens, p.batch);
  lp.kv_tokens_without = base.capacity.max_kv_tokens;
  lp.kv_tokens_lost = base.capacity.max_kv_tokens - p.capacity.max_kv_tokens;
  lp.requests_without = base.capacity.max_concurrent_requests;
  lp.requests_lost = base.capacity.max_concurrent_requests - p.capacity.max_concurrent_requests;
  lp.prefill_lora_s = p.prefill_time.lora_s;
  lp.decode_lora_s = p.decode_time.lora_s;
  lp.decode_adapters = std::min(p.batch, lp.memory.slots);
  return lp;
}

}  // namespace kvplan
