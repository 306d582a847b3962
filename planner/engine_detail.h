// Per-engine memory accounting behind memory_budget() and capacity(). Internal.
#pragma once

#include <string>
#include <vector>

#include "planner/planner.h"

namespace kvplan::detail {

//! --engine ideal: documented defaults, no engine's quirks (engine.cpp).
MemoryBudget ideal_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
//! vLLM V1's profile-run accounting (engine_vllm.cpp).
MemoryBudget vllm_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
//! SGLang's mem_fraction_static accounting (engine_sglang.cpp).
MemoryBudget sglang_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
//! The SGLang releases kvplan models, oldest first.
std::vector<std::string> sglang_versions();
//! Whether o's vLLM release takes --stream-interval (engine_vllm.cpp).
bool vllm_takes_stream_interval(const ServingOptions& o);
//! SGLang's default chunked_prefill_size for GPU `g` (server_args.py; engine_sglang.cpp).
int64_t sglang_default_chunked_prefill_size(const GpuSpec& g, const ServingOptions& o);
//! TensorRT-LLM's default max_num_tokens (engine_trtllm.cpp).
int64_t trtllm_default_max_num_tokens();
//! TensorRT-LLM's free_gpu_memory_fraction accounting (engine_trtllm.cpp); the 0.x
//! TensorRT engine backend is refused (InputError naming the build-time buffers).
MemoryBudget trtllm_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
//! The TensorRT-LLM releases kvplan knows, oldest first ("0" stands for every 0.x).
std::vector<std::string> trtllm_versions();

//! Tokens the pool of `b` holds as the engine counts them (vLLM: blocks of page size ×
//! layers; SGLang: cells of one token). Default (ideal): whole blocks of block_size.
int64_t engine_max_kv_tokens(const ModelConfig& m, const ServingOptions& o, const MemoryBudget& b);

//! Start-up lines (engine_startup_lines): vLLM's per-rank memory lines (one per TP x PP
//! rank, as each worker prints its own), SGLang's and TensorRT-LLM's KV lines.
std::string vllm_rank_lines(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, const MemoryBudget& b);
std::string sglang_startup_lines(const ModelConfig& m, const ServingOptions& o, int64_t kv_tokens);
std::string trtllm_startup_lines(const ModelConfig& m, const ServingOptions& o, int64_t kv_tokens);

}  // namespace kvplan::detail
