// kvplan planner: LoRA adapters served beside their base model (docs/lora.md).
//  - memory: vLLM pre-allocates --max-loras slots of --max-lora-rank for every module it
//    wraps (lora_memory); the slots are created when the model loads, before the memory
//    profile, so they leave the KV budget like weights (memory_budget's lora_bytes);
//  - time: the batched LoRA kernels (punica shrink and expand, one pass per distinct
//    adapter in the batch) run beside each wrapped GEMM (lora_step_cost, added to the step
//    by StepTimeModel).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/types.h"

namespace kvplan {

//! One wrapped module kind, for one adapter slot on one GPU (elements, not bytes).
struct LoraModule {
  std::string name;        //!< vLLM's module: qkv_proj, o_proj, gate_up_proj, down_proj, embed_tokens, lm_head
  int64_t instances = 1;   //!< decoder layers holding it (1 for embed_tokens, lm_head)
  int64_t slices = 1;      //!< packed sub-projections, each with its own lora_a and lora_b (q, k, v: 3)
  int64_t a_elems = 0;     //!< lora_a of one slot in one instance, all slices: slices x rank x input
  int64_t b_elems = 0;     //!< lora_b of one slot in one instance, all slices: output x rank
  bool gathered_a = false; //!< embed_tokens: lora_a rows are looked up per token, not multiplied
};

//! The LoRA slots of one GPU.
struct LoraMemory {
  int64_t rank = 0;                 //!< --max-lora-rank
  int64_t slots = 0;                //!< --max-loras
  int64_t cpu_slots = 0;            //!< --max-cpu-loras (max_loras when not given)
  DType dtype = DType::bf16;        //!< lora_dtype "auto": the model's dtype
  std::vector<LoraModule> modules;
  int64_t slot_bytes_per_gpu = 0;   //!< one slot: every module, every instance, lora_a and lora_b
  int64_t bytes_per_gpu = 0;        //!< slots x slot_bytes_per_gpu
};

//! vLLM's max_lora_rank choices (vllm/config/lora.py MaxLoRARanks).
inline constexpr int64_t kVllmLoraRanks[] = {1, 8, 16, 32, 64, 128, 256, 320, 512};

//! Throws InputError naming the flag (--max-loras, --max-lora-rank, --max-cpu-loras,
//! --lora-target-modules, --enable-lora) when o.lora cannot run on `m` as given.
void validate_lora(const ModelConfig& m, const ServingOptions& o, const std::string& where);
//! The slots' buffers as vLLM allocates them. o.lora must be set and valid.
LoraMemory lora_memory(const ModelConfig& m, const ServingOptions& o);
//! lora_memory's bytes_per_gpu, 0 when LoRA is off.
int64_t lora_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o);

//! The batched LoRA kernels of one step on one GPU.
struct LoraStepCost {
  double flops = 0;    //!< per GPU, 2 per multiply-add: shrink (x A) and expand (. B)
  double bytes = 0;    //!< per GPU: the adapters' A and B read once each, activations re-read
  double kernels = 0;  //!< launches: a shrink and an expand per wrapped module instance
};
//! `tokens` tokens through the wrapped layers, `logit_rows` of them through lm_head, the
//! batch holding `adapters` distinct adapters (at most the slots). No adapter in the batch:
//! nothing (vLLM's LoRA kernels return at once when no token needs LoRA, no_lora_flag_cpu
//! in vllm/lora/ops/triton_ops).
LoraStepCost lora_step_cost(const LoraMemory& mem, double tokens, double logit_rows, double adapters);

//! What the simulator knows of a step's LoRA work (StepTimeModel::step): the tokens and
//! logit rows of requests on an adapter and the distinct adapters among them. Without it
//! the step is charged the worst case (every sequence on its own adapter, up to the slots).
struct LoraStepLoad {
  double tokens = 0;
  double logit_rows = 0;
  double adapters = 0;
};

//! What `plan` shows of the LoRA slots of one row: the slots, the KV they cost (the same
//! plan without --enable-lora beside it) and the LoRA kernels' share of the step times.
struct LoraPlan {
  LoraMemory memory;
  int64_t kv_tokens_without = 0, kv_tokens_lost = 0;  //!< max KV tokens without LoRA, and the difference
  int64_t requests_without = 0, requests_lost = 0;    //!< requests of the row's context, likewise
  double prefill_lora_s = 0, decode_lora_s = 0;       //!< StepTime::lora_s of the row's prefill and decode step
  int64_t decode_adapters = 0;                        //!< distinct adapters in the decode step: min(batch, slots)
};
struct Plan;
//! `p` is make_plan(m, g, o, ...) with o.lora set.
LoraPlan make_lora_plan(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, const Plan& p);

}  // namespace kvplan
