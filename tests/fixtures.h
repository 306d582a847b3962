// Hand-written models and GPUs shared by the tests (and the fuzz targets), so that a test
// depends on neither the catalog files nor the loaders, and every test uses the same
// figures. Each value is copied from the source named beside it; docs/gpus.md has the
// GPU figures' sources in full.
#pragma once

#include <cstdint>

#include "planner/types.h"

namespace kvplan::test {

//! Llama-3-8B, from its config.json (Hugging Face meta-llama/Meta-Llama-3-8B): 32 layers,
//! hidden 4096, 32 heads, 8 KV heads of 128, MLP 14336, vocabulary 128256, bf16.
inline ModelConfig llama3_8b() {
  ModelConfig m;
  m.name = "llama-3-8b";
  m.model_type = "llama";
  m.hidden_size = 4096;
  m.num_layers = 32;
  m.num_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 14336;
  m.vocab_size = 128256;
  m.max_position_embeddings = 8192;
  m.torch_dtype = DType::bf16;
  return m;
}

//! Llama-3.1-8B(-Instruct): Llama-3-8B's shapes with a 131,072-token context
//! (config.json of meta-llama/Llama-3.1-8B-Instruct).
inline ModelConfig llama31_8b() {
  ModelConfig m = llama3_8b();
  m.name = "llama-3.1-8b";
  m.max_position_embeddings = 131072;
  return m;
}

//! Llama-3.1-8B's shapes with one KV head (multi-query attention), a constructed model:
//! TP 8 copies the head on all 8 GPUs, so decode context parallelism may shard it over 2,
//! 4 or 8 of them (divisors of tp / num_kv_heads). Per token and GPU: 32 layers x 2 (K, V)
//! x 128 x 2 B = 16,384 B.
inline ModelConfig llama31_8b_mqa() {
  ModelConfig m = llama31_8b();
  m.name = "llama-3.1-8b-mqa";
  m.num_kv_heads = 1;
  return m;
}

//! H100 SXM5 80 GB (configs/gpus/h100-sxm.yaml): memory as CUDA reports it (vLLM 0.19
//! logs total_memory 79.19 GiB), NVIDIA H100 datasheet dense peaks and bandwidth, NVLink 4
//! at 450 GB/s per direction (docs/gpus.md), on an 8-GPU HGX board whose GPUs each have a
//! 400 Gb/s ConnectX-7 (50 GB/s, NCCL's 15 us network latency) beyond it.
inline GpuSpec h100() {
  GpuSpec g;
  g.name = "h100-sxm";
  g.memory_bytes = 85029158912;
  g.memory_bandwidth_bytes_per_s = 3.35e12;
  g.peak_flops.fp32 = 67e12;
  g.peak_flops.tf32 = 494.7e12;
  g.peak_flops.bf16 = 989.4e12;
  g.peak_flops.fp16 = 989.4e12;
  g.peak_flops.fp8 = 1978.9e12;
  g.peak_flops.int8 = 1978.9e12;
  g.interconnect_bytes_per_s = 450e9;
  g.compute_capability_x10 = 90;
  g.scale_up_domain_gpus = 8;
  KvLinks links;
  links.gpus_per_node = 8;
  links.nvlink = KvLink{450e9, 14.1e-6};
  links.rdma = KvLink{50e9, 15.0e-6};
  g.kv_links = links;
  return g;
}

//! A replica's parallel shape: TP x PP x DP (data-parallel attention ranks).
inline ServingOptions parallel_shape(int64_t tp, int64_t pp, int64_t dp = 1) {
  ServingOptions o;
  o.tp = tp;
  o.pp = pp;
  o.dp = dp;
  return o;
}

//! A dense model small enough to work by hand: h 1024, 2 layers, 8 heads of 128, MLP 4096,
//! vocabulary 32000, bf16.
inline ModelConfig tiny_model() {
  ModelConfig m;
  m.name = "tiny";
  m.model_type = "llama";
  m.hidden_size = 1024;
  m.num_layers = 2;
  m.num_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 4096;
  m.vocab_size = 32000;
  m.torch_dtype = DType::bf16;
  return m;
}

//! tiny_model() with every layer MoE: `experts` experts of width `expert_width`, top-`top_k`.
inline ModelConfig tiny_moe(int64_t experts, int64_t top_k, int64_t expert_width) {
  ModelConfig m = tiny_model();
  m.num_experts = experts;
  m.experts_per_token = top_k;
  m.moe_intermediate_size = expert_width;
  return m;
}

//! A four-layer Nemotron-NAS (DeciLM) model as its block_configs describe it: hidden 1024,
//! 8 heads of 128, vocabulary 1000 (untied), 4,096 positions. Layer 0: GQA with 2 K/V
//! heads (n_heads_in_group 4) and an MLP of ffn_mult 2.625 (int(2 x 2.625 x 1024 / 3) =
//! 1792); layer 1: no-op attention, ffn_mult 1.0 (682 rounded up to 768); layer 2: GQA,
//! no-op FFN; layer 3: no-op attention, ffn_mult 0.5 (341 -> 512). A no-op block has no
//! norm (modeling_decilm.py DeciLMDecoderLayer).
inline ModelConfig nas_small() {
  ModelConfig m = tiny_model();
  m.name = "nas-small";
  m.model_type = "nemotron-nas";
  m.num_layers = 4;
  m.num_kv_heads = 2;
  m.vocab_size = 1000;
  m.max_position_embeddings = 4096;
  m.layer_mixer = {Mixer::attention, Mixer::none, Mixer::attention, Mixer::none};
  m.layer_ffn = {Ffn::dense, Ffn::dense, Ffn::none, Ffn::dense};
  m.layer_intermediate = {1792, 768, 0, 512};
  m.intermediate_size = 1792;
  m.block_norms = true;
  return m;
}

//! A round-figure GPU for hand-worked step times: 80 GB, 2 TB/s, 1 PFLOP/s bf16, 100 GB/s link.
inline GpuSpec tiny_gpu() {
  GpuSpec g;
  g.name = "g";
  g.memory_bytes = 80'000'000'000;
  g.memory_bandwidth_bytes_per_s = 2e12;
  g.peak_flops.bf16 = g.peak_flops.fp16 = 1e15;
  g.interconnect_bytes_per_s = 1e11;
  return g;
}

}  // namespace kvplan::test
