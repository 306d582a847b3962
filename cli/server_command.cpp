#include "cli/server_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "io/config_io.h"
#include "io/yaml_util.h"

namespace kvplan::cli {

namespace {

const std::string kWhere = "server command";

//! What kvplan does with one engine flag.
enum class Kind {
  map,          //!< --flag V: kvplan's option `target` V
  map_on_off,   //!< boolean (vLLM: also --no-flag): kvplan's `target` on / off
  map_off,      //!< boolean whose presence turns kvplan's `target` off (SGLang --disable-*)
  map_switch,   //!< boolean: kvplan's switch `target`
  map_list,     //!< --flag V1 V2 ... (argparse nargs="+"): kvplan's option `target` "V1 V2 ..."
  special,      //!< read by the engine's translation below (its value, if any, in `target`)
  special_flag, //!< the same, a boolean
  special_list, //!< the same, --flag V1 V2 ...
  note,         //!< --flag V accepted: `why` it does not change the plan
  note_flag,    //!< a boolean accepted: `why`
  note_list,    //!< --flag V1 V2 ... accepted: `why`
  note_optional,  //!< --flag [V] (argparse nargs="?": the value may be left out) accepted: `why`
  refuse,       //!< --flag V changes the plan in a way kvplan does not model yet: `why`
  refuse_flag,  //!< the same, a boolean
  refuse_list,  //!< the same, --flag [V1 V2 ...] (argparse nargs="*": no value, one or more)
  refuse_optional,  //!< the same, --flag [V] (nargs="?")
  default_only, //!< --flag V: V == `target` (the engine's default, which kvplan models) is
                //!< noted, another value refused: `why`
};

struct Flag {
  std::string_view name;    //!< as the engine spells it, without the dashes
  std::string_view alias;   //!< other spellings, separated by spaces ("" for none): -tp, --tp, --tp_size
  Kind kind;
  std::string_view target;  //!< kvplan's option (map kinds)
  std::string_view why;     //!< note or refusal
};

bool takes_list(Kind k) {
  return k == Kind::map_list || k == Kind::note_list || k == Kind::special_list || k == Kind::refuse_list;
}
bool takes_value(Kind k) {
  return k == Kind::map || k == Kind::special || k == Kind::note || k == Kind::refuse || k == Kind::default_only ||
         takes_list(k);
}
//! argparse nargs="?": the value may be left out.
bool takes_optional(Kind k) { return k == Kind::note_optional || k == Kind::refuse_optional; }

// Reasons shared by many flags.
constexpr std::string_view kServer = "the API server's address, names, logging or security";
constexpr std::string_view kLoading = "where and how the weights and tokenizer are loaded, not their size";
constexpr std::string_view kOutput = "how outputs are parsed or formatted (tools, reasoning, templates)";
constexpr std::string_view kTrust = "whether custom model code may run";
constexpr std::string_view kLora = "SGLang's LoRA memory and kernels are not modelled yet (vLLM's are: docs/lora.md)";
constexpr std::string_view kLoraNames = "the adapters' names and paths: kvplan plans their slots (--max-loras, --max-lora-rank), not which adapters";
constexpr std::string_view kMm = "multimodal inputs are not modelled yet (kvplan plans text requests)";
constexpr std::string_view kDisagg = "KV transfer between engines: use `kvplan simulate --disagg`";
constexpr std::string_view kSpeed = "kernel or backend choice changes step times; kvplan times the engine's default";
constexpr std::string_view kPooling = "pooling (embedding, classification, scoring) models are not modelled: kvplan plans text generation";
constexpr std::string_view kMmInput = "how multimodal inputs are accepted and preprocessed; kvplan plans text requests";
//! Eager steps (vLLM --enforce-eager, SGLang --disable-cuda-graph): docs/server-command.md
//! says why no per-kernel host cost is modelled.
constexpr std::string_view kEagerTime =
    "the per-kernel launch time of eager steps is not modelled (step times are those of graph runs: a lower bound; "
    "docs/server-command.md)";
constexpr std::string_view kGrammar = "structured output grammars run on the CPU beside the steps";
constexpr std::string_view kRanks = "how the ranks are spread over nodes and GPUs";
constexpr std::string_view kEplb = "EPLB moves experts between GPUs; kvplan plans balanced routing, and the memory of --num-redundant-experts";
constexpr std::string_view kDebug = "recording, profiling or debugging output";
constexpr std::string_view kHost = "tokenizer work on the host beside the GPU steps";
constexpr std::string_view kSpec = "a speculative-decoding setting kvplan does not model yet (docs/speculative.md)";
constexpr std::string_view kHybrid = "SGLang's split of the pool between sliding-window and full-attention layers is not modelled yet";
constexpr std::string_view kMamba = "SGLang's Mamba state pool is not modelled yet";
constexpr std::string_view kOffloadW = "weights offloaded to host memory are not modelled yet";
constexpr std::string_view kKt = "MoE experts run on the CPU (KTransformers) are not modelled yet";
constexpr std::string_view kIdle = "freeing memory while idle";
constexpr std::string_view kCkpt = "quantizing the weights at load time is not modelled: give the quantized checkpoint (--quantization reads it)";

// vLLM: EngineArgs.add_cli_args (vllm/engine/arg_utils.py) plus the OpenAI server's
// make_arg_parser (vllm/entrypoints/openai/cli_args.py), vllm-project/vllm@99d7eb5d6a51.
// FlexibleArgumentParser reads --max_model_len as --max-model-len; booleans also take
// --no-FLAG (argparse.BooleanOptionalAction).
constexpr std::array kVllmFlags{
    Flag{"model", "", Kind::special, "", ""},
    Flag{"tensor-parallel-size", "tp", Kind::map, "tensor-parallel-size", ""},
    Flag{"pipeline-parallel-size", "pp", Kind::map, "pipeline-parallel-size", ""},
    Flag{"data-parallel-size", "dp", Kind::special, "", ""},
    Flag{"enable-expert-parallel", "", Kind::map_switch, "enable-expert-parallel", ""},
    Flag{"num-redundant-experts", "", Kind::map, "num-redundant-experts", ""},
    Flag{"decode-context-parallel-size", "dcp", Kind::map, "decode-context-parallel-size", ""},
    Flag{"prefill-context-parallel-size", "pcp", Kind::map, "prefill-context-parallel-size", ""},
    Flag{"cp-kv-cache-interleave-size", "dcp-kv-cache-interleave-size", Kind::note, "", "which GPU of the DCP group holds a token, not how many blocks a request takes (the scheduler's block is block_size x dcp tokens either way; docs/long-context.md)"},
    Flag{"enable-eplb", "", Kind::note_flag, "", "EPLB moves experts between GPUs; kvplan plans balanced routing, and the memory of --num-redundant-experts"},
    Flag{"dtype", "", Kind::map, "dtype", ""},
    Flag{"quantization", "q", Kind::map, "quantization", ""},
    Flag{"kv-cache-dtype", "", Kind::special, "", ""},
    Flag{"calculate-kv-scales", "", Kind::note_flag, "", "scales are computed, not stored per token: the cache's size is the dtype's"},
    Flag{"block-size", "", Kind::map, "block-size", ""},
    Flag{"gpu-memory-utilization", "", Kind::map, "gpu-memory-utilization", ""},
    Flag{"max-model-len", "", Kind::special, "", ""},
    Flag{"max-num-seqs", "", Kind::map, "max-num-seqs", ""},
    Flag{"max-num-batched-tokens", "", Kind::map, "max-num-batched-tokens", ""},
    Flag{"enable-prefix-caching", "", Kind::map_on_off, "enable-prefix-caching", ""},
    Flag{"prefix-caching-hash-algo", "", Kind::note, "", "the hash of cached blocks, not what is cached"},
    Flag{"enable-chunked-prefill", "", Kind::special_flag, "", ""},
    Flag{"async-scheduling", "", Kind::map_on_off, "async-scheduling", ""},
    Flag{"stream-interval", "", Kind::map, "stream-interval", ""},
    Flag{"enforce-eager", "", Kind::special_flag, "", ""},
    Flag{"swap-space", "", Kind::note, "", "host memory for swapped blocks: vLLM V1 preempts by recomputation (and V0 swaps only multi-sequence groups), as kvplan simulates"},
    Flag{"num-gpu-blocks-override", "", Kind::special, "", ""},
    Flag{"max-seq-len-to-capture", "", Kind::note, "", "CUDA graph capture sizes: kvplan's vLLM accounting deducts no graph memory (docs/engines.md)"},
    Flag{"cuda-graph-sizes", "", Kind::note_list, "", "CUDA graph capture sizes: kvplan's vLLM accounting deducts no graph memory (docs/engines.md)"},
    Flag{"compilation-config", "O", Kind::note, "", "torch.compile and CUDA graph settings: kvplan's vLLM accounting deducts no graph memory (docs/engines.md)"},
    Flag{"seed", "", Kind::note, "", "the sampling seed"},
    Flag{"revision", "", Kind::special, "", ""},
    Flag{"host", "", Kind::note, "", kServer},
    Flag{"port", "", Kind::note, "", kServer},
    Flag{"uds", "", Kind::note, "", kServer},
    Flag{"served-model-name", "", Kind::note_list, "", kServer},
    Flag{"api-key", "", Kind::note_list, "", kServer},
    Flag{"allowed-origins", "", Kind::note, "", kServer},
    Flag{"allowed-methods", "", Kind::note, "", kServer},
    Flag{"allowed-headers", "", Kind::note, "", kServer},
    Flag{"allow-credentials", "", Kind::note_flag, "", kServer},
    Flag{"root-path", "", Kind::note, "", kServer},
    Flag{"ssl-keyfile", "", Kind::note, "", kServer},
    Flag{"ssl-certfile", "", Kind::note, "", kServer},
    Flag{"ssl-ca-certs", "", Kind::note, "", kServer},
    Flag{"uvicorn-log-level", "", Kind::note, "", kServer},
    Flag{"disable-uvicorn-access-log", "", Kind::note_flag, "", kServer},
    Flag{"disable-log-requests", "", Kind::note_flag, "", kServer},
    Flag{"enable-log-requests", "", Kind::note_flag, "", kServer},
    Flag{"disable-log-stats", "", Kind::note_flag, "", kServer},
    Flag{"max-log-len", "", Kind::note, "", kServer},
    Flag{"disable-fastapi-docs", "", Kind::note_flag, "", kServer},
    Flag{"middleware", "", Kind::note, "", kServer},
    Flag{"enable-server-load-tracking", "", Kind::note_flag, "", kServer},
    Flag{"trust-remote-code", "", Kind::note_flag, "", kTrust},
    Flag{"tokenizer", "", Kind::note, "", kLoading},
    Flag{"tokenizer-mode", "", Kind::note, "", kLoading},
    Flag{"tokenizer-revision", "", Kind::note, "", kLoading},
    Flag{"code-revision", "", Kind::note, "", kLoading},
    Flag{"load-format", "", Kind::note, "", kLoading},
    Flag{"download-dir", "", Kind::note, "", kLoading},
    Flag{"hf-token", "", Kind::note_optional, "", kLoading},
    Flag{"config-format", "", Kind::note, "", kLoading},
    Flag{"max-parallel-loading-workers", "", Kind::note, "", kLoading},
    Flag{"distributed-executor-backend", "", Kind::note, "", "how worker processes are launched (ray or multiprocessing)"},
    Flag{"chat-template", "", Kind::note, "", kOutput},
    Flag{"response-role", "", Kind::note, "", kOutput},
    Flag{"enable-auto-tool-choice", "", Kind::note_flag, "", kOutput},
    Flag{"tool-call-parser", "", Kind::note, "", kOutput},
    Flag{"reasoning-parser", "", Kind::note, "", kOutput},
    Flag{"generation-config", "", Kind::note, "", "default sampling parameters"},
    Flag{"max-logprobs", "", Kind::note, "", kOutput},
    Flag{"return-tokens-as-token-ids", "", Kind::note_flag, "", kOutput},
    Flag{"enable-prompt-tokens-details", "", Kind::note_flag, "", kOutput},
    Flag{"guided-decoding-backend", "", Kind::note, "", "structured output grammars run on the CPU beside the steps"},
    // The rest of EngineArgs.add_cli_args and the frontend's flags (FrontendArgs; the
    // newest of them, --grpc, --fingerprint-*, the data-parallel supervisor's, come from
    // vllm-project/vllm@005223338608, and an older release simply lacks them).
    Flag{"hf-config-path", "", Kind::refuse, "", "the model's config read from another path: pass that config's folder as the model"},
    Flag{"runner", "", Kind::special, "", ""},
    Flag{"convert", "", Kind::special, "", ""},
    Flag{"task", "", Kind::special, "", ""},
    Flag{"pooler-config", "", Kind::refuse, "", kPooling},
    Flag{"override-pooler-config", "", Kind::refuse, "", kPooling},
    Flag{"io-processor-plugin", "", Kind::refuse, "", kPooling},
    Flag{"rope-theta", "", Kind::refuse, "", "an edited model config: edit config.json and pass its folder as the model"},
    Flag{"model-impl", "", Kind::refuse, "", kSpeed},
    Flag{"override-attention-dtype", "", Kind::refuse, "", "attention computed in a dtype other than the model's is not modelled yet"},
    Flag{"disable-sliding-window", "", Kind::refuse_flag, "", "sliding-window layers cached at full length are not modelled (kvplan caps them at their window, as vLLM does by default)"},
    Flag{"disable-hybrid-kv-cache-manager", "", Kind::refuse_flag, "", "hybrid models' layers cached in one layout (without the hybrid KV cache manager) are not modelled"},
    Flag{"disable-cascade-attn", "", Kind::note_flag, "", "cascade attention, a shared-prefix kernel, is not in kvplan's step times with or without this flag"},
    Flag{"kv-sharing-fast-prefill", "", Kind::refuse_flag, "", "prefill skipping for models sharing KV across layers is not modelled yet"},
    Flag{"mamba-cache-dtype", "", Kind::refuse, "", "a Mamba state dtype other than the checkpoint's is not modelled yet"},
    Flag{"mamba-ssm-cache-dtype", "", Kind::refuse, "", "a Mamba state dtype other than the checkpoint's is not modelled yet"},
    Flag{"mamba-block-size", "", Kind::refuse, "", "the Mamba state's block size is not modelled yet"},
    Flag{"num-lookahead-slots", "", Kind::refuse, "", "KV slots held ahead of each sequence are not modelled yet (speculative decoding sets its own: --speculative-config)"},
    Flag{"max-long-partial-prefills", "", Kind::refuse, "", "partial prefills are not modelled yet"},
    Flag{"scheduler-cls", "", Kind::refuse, "", "a scheduler class of one's own: kvplan simulates vLLM's"},
    Flag{"all2all-backend", "", Kind::refuse, "", kSpeed},
    Flag{"enable-dbo", "", Kind::refuse_flag, "", "dual-batch overlap (two micro-batches whose communication and compute overlap) is not modelled yet"},
    Flag{"dbo-decode-token-threshold", "", Kind::note, "", "a setting of --enable-dbo, which kvplan refuses; alone it does nothing"},
    Flag{"dbo-prefill-token-threshold", "", Kind::note, "", "a setting of --enable-dbo, which kvplan refuses; alone it does nothing"},
    Flag{"disable-nccl-for-dp-synchronization", "", Kind::refuse_flag, "", "how the data-parallel ranks synchronize each step changes its time"},
    Flag{"eplb-config", "", Kind::refuse, "", "EPLB settings as JSON: give the redundant experts as --num-redundant-experts"},
    Flag{"eplb-window-size", "", Kind::note, "", "EPLB moves experts between GPUs; kvplan plans balanced routing, and the memory of --num-redundant-experts"},
    Flag{"eplb-step-interval", "", Kind::note, "", "EPLB moves experts between GPUs; kvplan plans balanced routing, and the memory of --num-redundant-experts"},
    Flag{"eplb-log-balancedness", "", Kind::note_flag, "", "EPLB moves experts between GPUs; kvplan plans balanced routing, and the memory of --num-redundant-experts"},
    Flag{"expert-placement-strategy", "", Kind::note, "", "which GPU holds which expert; kvplan plans balanced routing"},
    Flag{"data-parallel-rank", "dpn", Kind::note, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"data-parallel-backend", "dpb", Kind::note, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"data-parallel-hybrid-lb", "", Kind::note_flag, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"ray-workers-use-nsight", "", Kind::note_flag, "", "profiling of the workers"},
    Flag{"worker-cls", "", Kind::note, "", "how worker processes are launched (ray or multiprocessing)"},
    Flag{"worker-extension-cls", "", Kind::note, "", "how worker processes are launched (ray or multiprocessing)"},
    Flag{"lora-extra-vocab-size", "", Kind::refuse, "", "the extra-vocabulary rows of LoRA slots (releases before 0.12) are not modelled"},
    Flag{"default-mm-loras", "", Kind::note, "", kLoraNames},
    Flag{"enable-mm-embeds", "", Kind::note_flag, "", kMmInput},
    Flag{"interleave-mm-strings", "", Kind::note_flag, "", kMmInput},
    Flag{"media-io-kwargs", "", Kind::note, "", kMmInput},
    Flag{"mm-processor-cache-gb", "", Kind::note, "", kMmInput},
    Flag{"mm-processor-cache-type", "", Kind::note, "", kMmInput},
    Flag{"mm-shm-cache-max-object-size-mb", "", Kind::note, "", kMmInput},
    Flag{"disable-mm-preprocessor-cache", "", Kind::note_flag, "", kMmInput},
    Flag{"disable-chunked-mm-input", "", Kind::note_flag, "", kMmInput},
    Flag{"allowed-local-media-path", "", Kind::note, "", kMmInput},
    Flag{"allowed-media-domains", "", Kind::note_list, "", kMmInput},
    Flag{"mm-encoder-tp-mode", "", Kind::refuse, "", kMm},
    Flag{"mm-encoder-attn-backend", "", Kind::refuse, "", kMm},
    Flag{"skip-mm-profiling", "", Kind::refuse_flag, "", kMm},
    Flag{"video-pruning-rate", "", Kind::refuse, "", kMm},
    Flag{"enable-multimodal-encoder-data-parallel", "", Kind::refuse_flag, "", kMm},
    Flag{"cudagraph-capture-sizes", "", Kind::note_list, "", "CUDA graph capture sizes: kvplan's vLLM accounting deducts no graph memory (docs/engines.md)"},
    Flag{"max-cudagraph-capture-size", "", Kind::note, "", "CUDA graph capture sizes: kvplan's vLLM accounting deducts no graph memory (docs/engines.md)"},
    Flag{"skip-tokenizer-init", "", Kind::note_flag, "", kLoading},
    Flag{"safetensors-load-strategy", "", Kind::note, "", kLoading},
    Flag{"model-loader-extra-config", "", Kind::note, "", kLoading},
    Flag{"ignore-patterns", "", Kind::note_list, "", kLoading},
    Flag{"use-tqdm-on-load", "", Kind::note_flag, "", kLoading},
    Flag{"pt-load-map-location", "", Kind::note, "", kLoading},
    Flag{"enable-prompt-embeds", "", Kind::note_flag, "", "prompts given as embeddings in place of token IDs: kvplan plans by token counts"},
    Flag{"logprobs-mode", "", Kind::note, "", kOutput},
    Flag{"logits-processor-pattern", "", Kind::note, "", kOutput},
    Flag{"logits-processors", "", Kind::note_list, "", kOutput},
    Flag{"structured-outputs-config", "", Kind::note, "", "structured output grammars run on the CPU beside the steps"},
    Flag{"guided-decoding-disable-fallback", "", Kind::note, "", "structured output grammars run on the CPU beside the steps"},
    Flag{"guided-decoding-disable-any-whitespace", "", Kind::note, "", "structured output grammars run on the CPU beside the steps"},
    Flag{"guided-decoding-disable-additional-properties", "", Kind::note, "", "structured output grammars run on the CPU beside the steps"},
    Flag{"additional-config", "", Kind::note, "", "settings of platform plugins; kvplan plans vLLM's CUDA platform"},
    Flag{"kv-events-config", "", Kind::note, "", "KV cache events published for a router"},
    Flag{"aggregate-engine-logging", "", Kind::note_flag, "", kServer},
    Flag{"show-hidden-metrics-for-version", "", Kind::note, "", kServer},
    Flag{"otlp-traces-endpoint", "", Kind::note, "", kServer},
    Flag{"collect-detailed-traces", "", Kind::note_list, "", kServer},
    Flag{"grpc", "", Kind::note_flag, "", kServer},
    Flag{"chat-template-content-format", "", Kind::note, "", kOutput},
    Flag{"trust-request-chat-template", "", Kind::note_flag, "", kOutput},
    Flag{"default-chat-template-kwargs", "", Kind::note, "", kOutput},
    Flag{"exclude-tools-when-tool-choice-none", "", Kind::note_flag, "", kOutput},
    Flag{"tool-parser-plugin", "", Kind::note, "", kOutput},
    Flag{"tool-server", "", Kind::note, "", kOutput},
    Flag{"enable-force-include-usage", "", Kind::note_flag, "", kOutput},
    Flag{"cohere-is-reasoning-model", "", Kind::note_flag, "", kOutput},
    Flag{"cohere-format", "", Kind::note, "", kOutput},
    Flag{"fingerprint-mode", "", Kind::note, "", kOutput},
    Flag{"fingerprint-value", "", Kind::note, "", kOutput},
    Flag{"tokens-only", "", Kind::note_flag, "", kOutput},
    Flag{"log-config-file", "", Kind::note, "", kServer},
    Flag{"log-error-stack", "", Kind::note_flag, "", kServer},
    Flag{"enable-log-outputs", "", Kind::note_flag, "", kServer},
    Flag{"enable-log-deltas", "", Kind::note_flag, "", kServer},
    Flag{"enable-per-request-metrics", "", Kind::note_flag, "", kServer},
    Flag{"enable-tokenizer-info-endpoint", "", Kind::note_flag, "", kServer},
    Flag{"enable-request-id-headers", "", Kind::note_flag, "", kServer},
    Flag{"disable-frontend-multiprocessing", "", Kind::note_flag, "", "V1 releases ignore it: vllm/entrypoints/openai/api_server.py warns 'V1 is enabled, but got --disable-frontend-multiprocessing'"},
    Flag{"disable-access-log-for-endpoints", "", Kind::note, "", kServer},
    Flag{"enable-ssl-refresh", "", Kind::note_flag, "", kServer},
    Flag{"ssl-cert-reqs", "", Kind::note, "", kServer},
    Flag{"ssl-ciphers", "", Kind::note, "", kServer},
    Flag{"h11-max-incomplete-event-size", "", Kind::note, "", kServer},
    Flag{"h11-max-header-count", "", Kind::note, "", kServer},
    Flag{"enable-offline-docs", "", Kind::note_flag, "", kServer},
    Flag{"enable-flash-late-interaction", "", Kind::note_flag, "", "where pooling models score; kvplan plans text generation"},
    Flag{"data-parallel-supervisor-port", "", Kind::note, "", kServer},
    Flag{"dp-supervisor-probe-interval-s", "", Kind::note, "", kServer},
    Flag{"dp-supervisor-probe-timeout-s", "", Kind::note, "", kServer},
    Flag{"dp-supervisor-probe-failure-threshold", "", Kind::note, "", kServer},
    Flag{"config", "", Kind::special, "", ""},
    Flag{"speculative-config", "", Kind::map, "speculative-config", ""},
    Flag{"kv-cache-memory-bytes", "", Kind::refuse, "", "a KV pool given in bytes is not modelled yet (use --gpu-memory-utilization)"},
    Flag{"cpu-offload-gb", "", Kind::refuse, "", "weights offloaded to host memory are not modelled yet"},
    Flag{"kv-offloading-size", "", Kind::map, "kv-offloading-size", ""},
    Flag{"kv-offloading-backend", "", Kind::map, "kv-offloading-backend", ""},
    Flag{"kv-transfer-config", "", Kind::refuse, "", kDisagg},
    Flag{"enable-lora", "", Kind::map_switch, "enable-lora", ""},
    Flag{"max-loras", "", Kind::map, "max-loras", ""},
    Flag{"max-lora-rank", "", Kind::map, "max-lora-rank", ""},
    Flag{"max-cpu-loras", "", Kind::map, "max-cpu-loras", ""},
    Flag{"lora-target-modules", "", Kind::map_list, "lora-target-modules", ""},
    Flag{"lora-modules", "", Kind::note_list, "", kLoraNames},
    Flag{"fully-sharded-loras", "", Kind::refuse_flag, "", "fully sharded LoRA layers (lora_a split over TP too) are not modelled yet"},
    Flag{"lora-dtype", "", Kind::special, "", ""},
    Flag{"limit-mm-per-prompt", "", Kind::refuse, "", kMm},
    Flag{"mm-processor-kwargs", "", Kind::refuse, "", kMm},
    Flag{"hf-overrides", "", Kind::refuse, "", "an edited model config: edit config.json and pass its folder as the model"},
    Flag{"rope-scaling", "", Kind::refuse, "", "an edited model config: edit config.json and pass its folder as the model"},
    Flag{"override-generation-config", "", Kind::note, "", "default sampling parameters"},
    Flag{"preemption-mode", "", Kind::special, "", ""},
    Flag{"scheduling-policy", "", Kind::special, "", ""},
    Flag{"long-prefill-token-threshold", "", Kind::refuse, "", "partial prefills are not modelled yet"},
    Flag{"max-num-partial-prefills", "", Kind::refuse, "", "partial prefills are not modelled yet"},
    Flag{"api-server-count", "", Kind::refuse, "", "more than one API server process changes the host overheads kvplan fitted on one"},
    Flag{"disable-custom-all-reduce", "", Kind::refuse_flag, "", "NCCL's all-reduce in place of vLLM's changes the communication time"},
    Flag{"data-parallel-size-local", "dpl", Kind::note, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"data-parallel-address", "dpa", Kind::note, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"data-parallel-rpc-port", "dpp", Kind::note, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"data-parallel-start-rank", "dpr", Kind::note, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"headless", "", Kind::note_flag, "", "how the data-parallel ranks are spread over nodes"},
    Flag{"enable-sleep-mode", "", Kind::note_flag, "", "freeing memory while idle"},
    Flag{"attention-backend", "", Kind::refuse, "", kSpeed},
};

// SGLang: every flag of ServerArgs.add_cli_args (python/sglang/srt/server_args.py) at
// sgl-project/sglang@0c006b8809cd, the commit that made release 0.5.5 ("bump SGLang
// version to 0.5.5", #12739). argparse reads a unique prefix of a flag as the flag
// (allow_abbrev): the prefixes --tp and --dp are read, as they are common.
// std::to_array: clang deduces std::array{...} through a fold expression, which stops at 256
// elements.
constexpr auto kSglangFlags = std::to_array<Flag>({
    Flag{"model-path", "model", Kind::special, "", ""},
    Flag{"tokenizer-path", "", Kind::note, "", kLoading},
    Flag{"tokenizer-mode", "", Kind::note, "", kLoading},
    Flag{"tokenizer-worker-num", "", Kind::note, "", kHost},
    Flag{"skip-tokenizer-init", "", Kind::note_flag, "", kLoading},
    Flag{"load-format", "", Kind::note, "", kLoading},
    Flag{"model-loader-extra-config", "", Kind::note, "", kLoading},
    Flag{"trust-remote-code", "", Kind::note_flag, "", kTrust},
    Flag{"context-length", "", Kind::map, "max-model-len", ""},
    Flag{"is-embedding", "", Kind::refuse_flag, "", kPooling},
    Flag{"enable-multimodal", "", Kind::refuse_flag, "", kMm},
    Flag{"revision", "", Kind::special, "", ""},
    Flag{"model-impl", "", Kind::refuse, "", kSpeed},
    Flag{"host", "", Kind::note, "", kServer},
    Flag{"port", "", Kind::note, "", kServer},
    Flag{"grpc-mode", "", Kind::note_flag, "", kServer},
    Flag{"skip-server-warmup", "", Kind::note_flag, "", kServer},
    Flag{"warmups", "", Kind::note, "", kServer},
    Flag{"nccl-port", "", Kind::note, "", kServer},
    Flag{"checkpoint-engine-wait-weights-before-ready", "", Kind::note_flag, "", kLoading},
    Flag{"dcp-size", "decode-context-parallel-size", Kind::refuse, "", "SGLang's decode context parallelism (2026) is newer than the SGLang releases kvplan models; vLLM's is modelled (docs/long-context.md)"},
    Flag{"dtype", "", Kind::map, "dtype", ""},
    Flag{"quantization", "", Kind::map, "quantization", ""},
    Flag{"quantization-param-path", "", Kind::note, "", "scales for the fp8 KV cache: the cache's size is the dtype's"},
    Flag{"kv-cache-dtype", "", Kind::special, "", ""},
    Flag{"enable-fp32-lm-head", "", Kind::refuse_flag, "", "an LM head computed in fp32 is not modelled yet"},
    Flag{"modelopt-quant", "", Kind::refuse, "", kCkpt},
    Flag{"modelopt-checkpoint-restore-path", "", Kind::refuse, "", kCkpt},
    Flag{"modelopt-checkpoint-save-path", "", Kind::note, "", "a setting of --modelopt-quant, which kvplan refuses; alone it does nothing"},
    Flag{"modelopt-export-path", "", Kind::note, "", "a setting of --modelopt-quant, which kvplan refuses; alone it does nothing"},
    Flag{"quantize-and-serve", "", Kind::refuse_flag, "", kCkpt},
    Flag{"mem-fraction-static", "", Kind::map, "gpu-memory-utilization", ""},
    Flag{"max-running-requests", "", Kind::map, "max-num-seqs", ""},
    Flag{"max-queued-requests", "", Kind::refuse, "", "a bound on waiting requests (those above it are rejected) is not modelled yet"},
    Flag{"stream-interval", "", Kind::map, "stream-interval", ""},
    Flag{"max-total-tokens", "", Kind::refuse, "", "a KV pool given in tokens is not modelled yet (use --mem-fraction-static)"},
    Flag{"chunked-prefill-size", "", Kind::special, "", ""},
    Flag{"max-prefill-tokens", "", Kind::refuse, "", "the prefill step's token limit beside --chunked-prefill-size is not modelled yet"},
    Flag{"schedule-policy", "", Kind::special, "", ""},
    Flag{"enable-priority-scheduling", "", Kind::refuse_flag, "", "priority scheduling: kvplan schedules first come, first served"},
    Flag{"abort-on-priority-when-disabled", "", Kind::note_flag, "", "requests that carry a priority are refused when priority scheduling is off"},
    Flag{"schedule-low-priority-values-first", "", Kind::note_flag, "", "a setting of --enable-priority-scheduling, which kvplan refuses; alone it does nothing"},
    Flag{"priority-scheduling-preemption-threshold", "", Kind::note, "", "a setting of --enable-priority-scheduling, which kvplan refuses; alone it does nothing"},
    Flag{"schedule-conservativeness", "", Kind::map, "schedule-conservativeness", ""},
    Flag{"page-size", "", Kind::map, "block-size", ""},
    Flag{"hybrid-kvcache-ratio", "", Kind::refuse_optional, "", kHybrid},
    Flag{"swa-full-tokens-ratio", "", Kind::refuse, "", kHybrid},
    Flag{"disable-hybrid-swa-memory", "", Kind::refuse_flag, "", kHybrid},
    Flag{"radix-eviction-policy", "", Kind::default_only, "lru", "an eviction order other than least recently used, kvplan's"},
    Flag{"device", "", Kind::default_only, "cuda", "devices other than CUDA GPUs (kvplan's catalog) are not modelled by this engine's table"},
    Flag{"tp-size", "tensor-parallel-size tp", Kind::special, "", ""},
    Flag{"pp-size", "pipeline-parallel-size", Kind::map, "pipeline-parallel-size", ""},
    Flag{"pp-max-micro-batch-size", "", Kind::refuse, "", "pipeline micro-batches of a size of one's own are not modelled yet"},
    Flag{"random-seed", "", Kind::note, "", "the sampling seed"},
    Flag{"stream-output", "", Kind::note_flag, "", kOutput},
    Flag{"constrained-json-whitespace-pattern", "", Kind::note, "", kGrammar},
    Flag{"constrained-json-disable-any-whitespace", "", Kind::note_flag, "", kGrammar},
    Flag{"watchdog-timeout", "", Kind::note, "", kServer},
    Flag{"dist-timeout", "", Kind::note, "", kServer},
    Flag{"download-dir", "", Kind::note, "", kLoading},
    Flag{"base-gpu-id", "", Kind::note, "", kRanks},
    Flag{"gpu-id-step", "", Kind::note, "", kRanks},
    Flag{"sleep-on-idle", "", Kind::note_flag, "", "how the scheduler waits while no request runs"},
    Flag{"log-level", "", Kind::note, "", kServer},
    Flag{"log-level-http", "", Kind::note, "", kServer},
    Flag{"log-requests", "", Kind::note_flag, "", kServer},
    Flag{"log-requests-level", "", Kind::note, "", kServer},
    Flag{"crash-dump-folder", "", Kind::note, "", kServer},
    Flag{"show-time-cost", "", Kind::note_flag, "", kServer},
    Flag{"enable-metrics", "", Kind::note_flag, "", kServer},
    Flag{"enable-metrics-for-all-schedulers", "", Kind::note_flag, "", kServer},
    Flag{"tokenizer-metrics-custom-labels-header", "", Kind::note, "", kServer},
    Flag{"tokenizer-metrics-allowed-custom-labels", "", Kind::note_list, "", kServer},
    Flag{"bucket-time-to-first-token", "", Kind::note_list, "", kServer},
    Flag{"bucket-inter-token-latency", "", Kind::note_list, "", kServer},
    Flag{"bucket-e2e-request-latency", "", Kind::note_list, "", kServer},
    Flag{"collect-tokens-histogram", "", Kind::note_flag, "", kServer},
    Flag{"prompt-tokens-buckets", "", Kind::note_list, "", kServer},
    Flag{"generation-tokens-buckets", "", Kind::note_list, "", kServer},
    Flag{"gc-warning-threshold-secs", "", Kind::note, "", kServer},
    Flag{"decode-log-interval", "", Kind::note, "", kServer},
    Flag{"enable-request-time-stats-logging", "", Kind::note_flag, "", kServer},
    Flag{"kv-events-config", "", Kind::note, "", "KV cache events published for a router"},
    Flag{"enable-trace", "", Kind::note_flag, "", kServer},
    Flag{"otlp-traces-endpoint", "", Kind::note, "", kServer},
    Flag{"api-key", "", Kind::note, "", kServer},
    Flag{"served-model-name", "", Kind::note, "", kServer},
    Flag{"weight-version", "", Kind::note, "", kServer},
    Flag{"chat-template", "", Kind::note, "", kOutput},
    Flag{"completion-template", "", Kind::note, "", kOutput},
    Flag{"file-storage-path", "", Kind::note, "", kServer},
    Flag{"enable-cache-report", "", Kind::note_flag, "", kServer},
    Flag{"reasoning-parser", "", Kind::note, "", kOutput},
    Flag{"tool-call-parser", "", Kind::note, "", kOutput},
    Flag{"tool-server", "", Kind::note, "", kOutput},
    Flag{"sampling-defaults", "", Kind::note, "", "default sampling parameters"},
    Flag{"dp-size", "data-parallel-size dp", Kind::special, "", ""},
    Flag{"load-balance-method", "", Kind::default_only, "round_robin", "the data-parallel router: kvplan models SGLang's default, round_robin"},
    Flag{"load-watch-interval", "", Kind::note, "", "how often the tokenizer manager polls the ranks' load (their reports, not the routing of round_robin)"},
    Flag{"prefill-round-robin-balance", "", Kind::note_flag, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"dist-init-addr", "nccl-init-addr", Kind::note, "", kRanks},
    Flag{"nnodes", "", Kind::note, "", kRanks},
    Flag{"node-rank", "", Kind::note, "", kRanks},
    Flag{"json-model-override-args", "", Kind::refuse, "", "an edited model config: edit config.json and pass its folder as the model"},
    Flag{"preferred-sampling-params", "", Kind::note, "", "default sampling parameters"},
    Flag{"enable-lora", "", Kind::refuse_flag, "", kLora},
    Flag{"max-lora-rank", "", Kind::refuse, "", kLora},
    Flag{"lora-target-modules", "", Kind::refuse_list, "", kLora},
    Flag{"lora-paths", "", Kind::refuse_list, "", kLora},
    Flag{"max-loras-per-batch", "", Kind::refuse, "", kLora},
    Flag{"max-loaded-loras", "", Kind::refuse, "", kLora},
    Flag{"lora-eviction-policy", "", Kind::refuse, "", kLora},
    Flag{"lora-backend", "", Kind::refuse, "", kLora},
    Flag{"max-lora-chunk-size", "", Kind::refuse, "", kLora},
    Flag{"attention-backend", "", Kind::refuse, "", kSpeed},
    Flag{"prefill-attention-backend", "", Kind::refuse, "", kSpeed},
    Flag{"decode-attention-backend", "", Kind::refuse, "", kSpeed},
    Flag{"sampling-backend", "", Kind::refuse, "", kSpeed},
    Flag{"grammar-backend", "", Kind::note, "", kGrammar},
    Flag{"mm-attention-backend", "", Kind::refuse, "", kMm},
    Flag{"nsa-prefill-backend", "", Kind::refuse, "", kSpeed},
    Flag{"nsa-decode-backend", "", Kind::refuse, "", kSpeed},
    Flag{"speculative-algorithm", "", Kind::map, "speculative-algorithm", ""},
    Flag{"speculative-draft-model-path", "speculative-draft-model", Kind::map, "speculative-draft-model-path", ""},
    Flag{"speculative-draft-model-revision", "", Kind::note, "", kLoading},
    Flag{"speculative-draft-load-format", "", Kind::note, "", kLoading},
    Flag{"speculative-num-steps", "", Kind::map, "speculative-num-steps", ""},
    Flag{"speculative-eagle-topk", "", Kind::map, "speculative-eagle-topk", ""},
    Flag{"speculative-num-draft-tokens", "", Kind::map, "speculative-num-draft-tokens", ""},
    Flag{"speculative-accept-threshold-single", "", Kind::refuse, "", kSpec},
    Flag{"speculative-accept-threshold-acc", "", Kind::refuse, "", kSpec},
    Flag{"speculative-token-map", "", Kind::refuse, "", kSpec},
    Flag{"speculative-attention-mode", "", Kind::refuse, "", kSpec},
    Flag{"speculative-moe-runner-backend", "", Kind::refuse, "", kSpeed},
    Flag{"speculative-ngram-min-match-window-size", "", Kind::refuse, "", kSpec},
    Flag{"speculative-ngram-max-match-window-size", "", Kind::refuse, "", kSpec},
    Flag{"speculative-ngram-min-bfs-breadth", "", Kind::refuse, "", kSpec},
    Flag{"speculative-ngram-max-bfs-breadth", "", Kind::refuse, "", kSpec},
    Flag{"speculative-ngram-match-type", "", Kind::refuse, "", kSpec},
    Flag{"speculative-ngram-branch-length", "", Kind::refuse, "", kSpec},
    Flag{"speculative-ngram-capacity", "", Kind::refuse, "", kSpec},
    Flag{"ep-size", "expert-parallel-size ep", Kind::map, "expert-parallel-size", ""},
    Flag{"moe-a2a-backend", "", Kind::default_only, "none", kSpeed},
    Flag{"moe-runner-backend", "", Kind::refuse, "", kSpeed},
    Flag{"flashinfer-mxfp4-moe-precision", "", Kind::refuse, "", kSpeed},
    Flag{"enable-flashinfer-allreduce-fusion", "", Kind::refuse_flag, "", kSpeed},
    Flag{"deepep-mode", "", Kind::note, "", "a setting of --moe-a2a-backend deepep, which kvplan refuses; alone it does nothing"},
    Flag{"ep-num-redundant-experts", "", Kind::map, "num-redundant-experts", ""},
    Flag{"ep-dispatch-algorithm", "", Kind::note, "", kEplb},
    Flag{"init-expert-location", "", Kind::note, "", kEplb},
    Flag{"enable-eplb", "", Kind::note_flag, "", kEplb},
    Flag{"eplb-algorithm", "", Kind::note, "", kEplb},
    Flag{"eplb-rebalance-num-iterations", "", Kind::note, "", kEplb},
    Flag{"eplb-rebalance-layers-per-chunk", "", Kind::note, "", kEplb},
    Flag{"eplb-min-rebalancing-utilization-threshold", "", Kind::note, "", kEplb},
    Flag{"expert-distribution-recorder-mode", "", Kind::note, "", kDebug},
    Flag{"expert-distribution-recorder-buffer-size", "", Kind::note, "", kDebug},
    Flag{"enable-expert-distribution-metrics", "", Kind::note_flag, "", kDebug},
    Flag{"deepep-config", "", Kind::note, "", "a setting of --moe-a2a-backend deepep, which kvplan refuses; alone it does nothing"},
    Flag{"moe-dense-tp-size", "", Kind::refuse, "", "the dense layers of a MoE model at a TP size of their own are not modelled yet"},
    Flag{"elastic-ep-backend", "", Kind::default_only, "none", "elastic expert parallelism (experts moved off a lost rank) is not modelled"},
    Flag{"mooncake-ib-device", "", Kind::note, "", "which network device a transfer uses"},
    Flag{"max-mamba-cache-size", "", Kind::refuse, "", kMamba},
    Flag{"mamba-ssm-dtype", "", Kind::refuse, "", "a Mamba state dtype other than the checkpoint's is not modelled yet"},
    Flag{"mamba-full-memory-ratio", "", Kind::refuse, "", kMamba},
    Flag{"enable-hierarchical-cache", "", Kind::map_switch, "enable-hierarchical-cache", ""},
    Flag{"hicache-ratio", "", Kind::map, "hicache-ratio", ""},
    Flag{"hicache-size", "", Kind::map, "hicache-size", ""},
    Flag{"hicache-write-policy", "", Kind::map, "hicache-write-policy", ""},
    Flag{"hicache-io-backend", "", Kind::note, "", "how HiCache copies (kvplan prices a load as bytes over the host link)"},
    Flag{"hicache-mem-layout", "", Kind::note, "", "how HiCache copies (kvplan prices a load as bytes over the host link)"},
    Flag{"hicache-storage-backend", "", Kind::refuse, "", "the file backend has no capacity flag to read: give --kv-disk-size for a disk tier below the host pool (docs/kv-tiers.md)"},
    Flag{"hicache-storage-prefetch-policy", "", Kind::note, "", "a setting of --hicache-storage-backend, which kvplan refuses; alone it does nothing"},
    Flag{"hicache-storage-backend-extra-config", "", Kind::note, "", "a setting of --hicache-storage-backend, which kvplan refuses; alone it does nothing"},
    Flag{"enable-lmcache", "", Kind::refuse_flag, "", "an LMCache KV tier is not modelled yet"},
    Flag{"kt-amx-weight-path", "", Kind::refuse, "", kKt},
    Flag{"kt-amx-method", "", Kind::refuse, "", kKt},
    Flag{"kt-cpuinfer", "", Kind::refuse, "", kKt},
    Flag{"kt-threadpool-count", "", Kind::refuse, "", kKt},
    Flag{"kt-num-gpu-experts", "", Kind::refuse, "", kKt},
    Flag{"kt-max-deferred-experts-per-token", "", Kind::refuse, "", kKt},
    Flag{"enable-double-sparsity", "", Kind::refuse_flag, "", "double-sparsity attention is not modelled yet"},
    Flag{"ds-channel-config-path", "", Kind::note, "", "a setting of --enable-double-sparsity, which kvplan refuses; alone it does nothing"},
    Flag{"ds-heavy-channel-num", "", Kind::note, "", "a setting of --enable-double-sparsity, which kvplan refuses; alone it does nothing"},
    Flag{"ds-heavy-token-num", "", Kind::note, "", "a setting of --enable-double-sparsity, which kvplan refuses; alone it does nothing"},
    Flag{"ds-heavy-channel-type", "", Kind::note, "", "a setting of --enable-double-sparsity, which kvplan refuses; alone it does nothing"},
    Flag{"ds-sparse-decode-threshold", "", Kind::note, "", "a setting of --enable-double-sparsity, which kvplan refuses; alone it does nothing"},
    Flag{"cpu-offload-gb", "", Kind::refuse, "", kOffloadW},
    Flag{"offload-group-size", "", Kind::refuse, "", kOffloadW},
    Flag{"offload-num-in-group", "", Kind::refuse, "", kOffloadW},
    Flag{"offload-prefetch-step", "", Kind::refuse, "", kOffloadW},
    Flag{"offload-mode", "", Kind::refuse, "", kOffloadW},
    Flag{"multi-item-scoring-delimiter", "", Kind::refuse, "", kPooling},
    Flag{"disable-radix-cache", "", Kind::map_off, "enable-prefix-caching", ""},
    Flag{"cuda-graph-max-bs", "", Kind::special, "", ""},
    Flag{"cuda-graph-bs", "", Kind::special_list, "", ""},
    Flag{"disable-cuda-graph", "", Kind::special_flag, "", ""},
    Flag{"disable-cuda-graph-padding", "", Kind::refuse_flag, "", "batches between the captured sizes run without CUDA graphs, not modelled yet"},
    Flag{"enable-profile-cuda-graph", "", Kind::note_flag, "", kDebug},
    Flag{"enable-cudagraph-gc", "", Kind::note_flag, "", "garbage collection during CUDA graph capture, at start-up"},
    Flag{"enable-nccl-nvls", "", Kind::refuse_flag, "", kSpeed},
    Flag{"enable-symm-mem", "", Kind::refuse_flag, "", kSpeed},
    Flag{"disable-flashinfer-cutlass-moe-fp4-allgather", "", Kind::refuse_flag, "", kSpeed},
    Flag{"enable-tokenizer-batch-encode", "", Kind::note_flag, "", kHost},
    Flag{"disable-tokenizer-batch-decode", "", Kind::note_flag, "", kHost},
    Flag{"disable-outlines-disk-cache", "", Kind::note_flag, "", kGrammar},
    Flag{"disable-custom-all-reduce", "", Kind::refuse_flag, "", "NCCL's all-reduce in place of SGLang's own changes the communication time"},
    Flag{"enable-mscclpp", "", Kind::refuse_flag, "", kSpeed},
    Flag{"enable-torch-symm-mem", "", Kind::refuse_flag, "", kSpeed},
    Flag{"disable-overlap-schedule", "", Kind::refuse_flag, "", "without the overlap scheduler the host's batch preparation adds to each step, not modelled yet"},
    Flag{"enable-mixed-chunk", "", Kind::map_switch, "enable-mixed-chunk", ""},
    Flag{"enable-dp-attention", "", Kind::special_flag, "", ""},
    Flag{"enable-dp-lm-head", "", Kind::refuse_flag, "", "the LM head split over the DP attention ranks is not modelled yet"},
    Flag{"enable-two-batch-overlap", "", Kind::refuse_flag, "", "two-batch overlap (two micro-batches whose communication and compute overlap) is not modelled yet"},
    Flag{"enable-single-batch-overlap", "", Kind::refuse_flag, "", "overlap of communication and compute within one batch is not modelled yet"},
    Flag{"tbo-token-distribution-threshold", "", Kind::note, "", "a setting of --enable-two-batch-overlap, which kvplan refuses; alone it does nothing"},
    Flag{"enable-torch-compile", "", Kind::refuse_flag, "", kSpeed},
    Flag{"enable-piecewise-cuda-graph", "", Kind::refuse_flag, "", kSpeed},
    Flag{"piecewise-cuda-graph-tokens", "", Kind::note, "", "a setting of --enable-piecewise-cuda-graph, which kvplan refuses; alone it does nothing"},
    Flag{"piecewise-cuda-graph-compiler", "", Kind::note, "", "a setting of --enable-piecewise-cuda-graph, which kvplan refuses; alone it does nothing"},
    Flag{"torch-compile-max-bs", "", Kind::note, "", "a setting of --enable-torch-compile, which kvplan refuses; alone it does nothing"},
    Flag{"piecewise-cuda-graph-max-tokens", "", Kind::note, "", "a setting of --enable-piecewise-cuda-graph, which kvplan refuses; alone it does nothing"},
    Flag{"torchao-config", "", Kind::refuse, "", kCkpt},
    Flag{"enable-nan-detection", "", Kind::note_flag, "", kDebug},
    Flag{"enable-p2p-check", "", Kind::note_flag, "", "a check at start-up"},
    Flag{"triton-attention-reduce-in-fp32", "", Kind::refuse_flag, "", kSpeed},
    Flag{"triton-attention-num-kv-splits", "", Kind::refuse, "", kSpeed},
    Flag{"triton-attention-split-tile-size", "", Kind::refuse, "", kSpeed},
    Flag{"num-continuous-decode-steps", "", Kind::default_only, "1", "several decode steps per scheduling round are not modelled yet"},
    Flag{"delete-ckpt-after-loading", "", Kind::note_flag, "", kLoading},
    Flag{"enable-memory-saver", "", Kind::note_flag, "", kIdle},
    Flag{"enable-weights-cpu-backup", "", Kind::note_flag, "", kIdle},
    Flag{"allow-auto-truncate", "", Kind::note_flag, "", "requests longer than the context are cut rather than refused; kvplan's workloads fit the context"},
    Flag{"enable-custom-logit-processor", "", Kind::note_flag, "", kOutput},
    Flag{"flashinfer-mla-disable-ragged", "", Kind::refuse_flag, "", kSpeed},
    Flag{"disable-shared-experts-fusion", "", Kind::refuse_flag, "", kSpeed},
    Flag{"disable-chunked-prefix-cache", "", Kind::refuse_flag, "", kSpeed},
    Flag{"disable-fast-image-processor", "", Kind::note_flag, "", kMmInput},
    Flag{"keep-mm-feature-on-device", "", Kind::refuse_flag, "", kMm},
    Flag{"enable-return-hidden-states", "", Kind::note_flag, "", kOutput},
    Flag{"scheduler-recv-interval", "", Kind::default_only, "1", "requests received every N steps, not every step as kvplan schedules them"},
    Flag{"numa-node", "", Kind::note_list, "", kRanks},
    Flag{"enable-deterministic-inference", "", Kind::refuse_flag, "", kSpeed},
    Flag{"rl-on-policy-target", "", Kind::refuse, "", kSpeed},
    Flag{"enable-dynamic-batch-tokenizer", "", Kind::note_flag, "", kHost},
    Flag{"dynamic-batch-tokenizer-batch-size", "", Kind::note, "", kHost},
    Flag{"dynamic-batch-tokenizer-batch-timeout", "", Kind::note, "", kHost},
    Flag{"debug-tensor-dump-output-folder", "", Kind::note, "", kDebug},
    Flag{"debug-tensor-dump-layers", "", Kind::note_list, "", kDebug},
    Flag{"debug-tensor-dump-input-file", "", Kind::note, "", kDebug},
    Flag{"debug-tensor-dump-inject", "", Kind::note, "", kDebug},
    Flag{"disaggregation-mode", "", Kind::default_only, "null", kDisagg},
    Flag{"disaggregation-transfer-backend", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-bootstrap-port", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-decode-tp", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-decode-dp", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-prefill-pp", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-ib-device", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-decode-enable-offload-kvcache", "", Kind::note_flag, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"num-reserved-decode-tokens", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"disaggregation-decode-polling-interval", "", Kind::note, "", "a setting of --disaggregation-mode, which kvplan refuses; alone it does nothing"},
    Flag{"custom-weight-loader", "", Kind::note_list, "", kLoading},
    Flag{"weight-loader-disable-mmap", "", Kind::note_flag, "", kLoading},
    Flag{"remote-instance-weight-loader-seed-instance-ip", "", Kind::note, "", kLoading},
    Flag{"remote-instance-weight-loader-seed-instance-service-port", "", Kind::note, "", kLoading},
    Flag{"remote-instance-weight-loader-send-weights-group-ports", "", Kind::note, "", kLoading},
    Flag{"enable-pdmux", "", Kind::refuse_flag, "", "prefill and decode multiplexed on SM groups of one GPU are not modelled yet"},
    Flag{"pdmux-config-path", "", Kind::note, "", "a setting of --enable-pdmux, which kvplan refuses; alone it does nothing"},
    Flag{"sm-group-num", "", Kind::note, "", "a setting of --enable-pdmux, which kvplan refuses; alone it does nothing"},
    Flag{"config", "", Kind::refuse, "", "SGLang's YAML config file is not read yet: pass its flags on the command line"},
    Flag{"mm-max-concurrent-calls", "", Kind::note, "", kMmInput},
    Flag{"mm-per-request-timeout", "", Kind::note, "", kMmInput},
    Flag{"decrypted-config-file", "", Kind::refuse, "", "the model's config read from another file: pass that config's folder as the model"},
    Flag{"decrypted-draft-config-file", "", Kind::refuse, "", "the draft model's config read from another file is not read"},
});

// TensorRT-LLM: the click options of `trtllm-serve serve` (tensorrt_llm/commands/serve.py),
// NVIDIA/TensorRT-LLM@00209af149e7. Click spells them with underscores.
constexpr std::array kTrtllmFlags{
    Flag{"tensor_parallel_size", "tp_size", Kind::map, "tensor-parallel-size", ""},
    Flag{"pipeline_parallel_size", "pp_size", Kind::map, "pipeline-parallel-size", ""},
    Flag{"moe_expert_parallel_size", "ep_size", Kind::map, "expert-parallel-size", ""},
    Flag{"max_batch_size", "", Kind::map, "max-num-seqs", ""},
    Flag{"max_num_tokens", "", Kind::map, "max-num-batched-tokens", ""},
    Flag{"max_seq_len", "", Kind::map, "max-model-len", ""},
    Flag{"free_gpu_memory_fraction", "kv_cache_free_gpu_memory_fraction", Kind::map, "gpu-memory-utilization", ""},
    Flag{"enable_chunked_prefill", "", Kind::special_flag, "", ""},
    Flag{"backend", "", Kind::special, "", ""},
    Flag{"max_beam_width", "", Kind::special, "", ""},
    Flag{"context_parallel_size", "cp_size", Kind::special, "", ""},
    Flag{"moe_cluster_parallel_size", "cluster_size", Kind::refuse, "", "expert cluster parallelism is not modelled yet"},
    Flag{"config", "extra_llm_api_options", Kind::special, "", ""},
    Flag{"revision", "", Kind::special, "", ""},
    Flag{"server_role", "", Kind::refuse, "", kDisagg},
    Flag{"disagg_cluster_uri", "", Kind::refuse, "", kDisagg},
    Flag{"metadata_server_config_file", "", Kind::refuse, "", kDisagg},
    Flag{"host", "", Kind::note, "", kServer},
    Flag{"port", "", Kind::note, "", kServer},
    Flag{"log_level", "", Kind::note, "", kServer},
    Flag{"otlp_traces_endpoint", "", Kind::note, "", kServer},
    Flag{"gpus_per_node", "", Kind::note, "", "how the ranks are spread over nodes"},
    Flag{"num_postprocess_workers", "", Kind::note, "", "output detokenization workers"},
    Flag{"trust_remote_code", "", Kind::note_flag, "", kTrust},
    Flag{"tokenizer", "", Kind::note, "", kLoading},
    Flag{"custom_tokenizer", "", Kind::note, "", kLoading},
    Flag{"custom_module_dirs", "", Kind::note, "", kLoading},
    Flag{"reasoning_parser", "", Kind::note, "", kOutput},
    Flag{"tool_parser", "", Kind::note, "", kOutput},
    Flag{"chat_template", "", Kind::note, "", kOutput},
    Flag{"media_io_kwargs", "", Kind::note, "", kOutput},
    Flag{"fail_fast_on_attention_window_too_large", "", Kind::note_flag, "", "an error instead of a warning at start-up"},
};

//! One engine's command: its display name, the kvplan engine and the flag table.
struct EngineCommand {
  std::string program;  //!< "vllm serve", "python -m sglang.launch_server", ...
  Engine engine;
  const Flag* flags;
  size_t num_flags;
  bool positional_model;  //!< MODEL as the first bare argument
  bool underscores_are_dashes;  //!< vLLM's FlexibleArgumentParser
  bool no_prefix;  //!< --no-FLAG for booleans
};

template <size_t N>
EngineCommand engine_command(std::string program, Engine e, const std::array<Flag, N>& flags, bool positional,
                             bool underscores, bool no_prefix) {
  return {std::move(program), e, flags.data(), N, positional, underscores, no_prefix};
}

bool is_python(const std::string& s) {
  const std::string base = s.substr(s.find_last_of('/') == std::string::npos ? 0 : s.find_last_of('/') + 1);
  return base.rfind("python", 0) == 0;
}

//! The engine a command line starts, and how many of its leading words name it.
std::pair<EngineCommand, size_t> which_engine(const Args& cmd) {
  const auto at = [&](size_t i) { return i < cmd.size() ? cmd[i] : std::string(); };
  if (at(0) == "vllm" && at(1) == "serve")
    return {engine_command("vllm serve", Engine::vllm, kVllmFlags, true, true, true), 2};
  if (is_python(at(0)) && at(1) == "-m") {
    if (at(2) == "vllm.entrypoints.openai.api_server")
      return {engine_command("python -m vllm.entrypoints.openai.api_server", Engine::vllm, kVllmFlags, false, true, true), 3};
    if (at(2) == "sglang.launch_server")
      return {engine_command("python -m sglang.launch_server", Engine::sglang, kSglangFlags, false, false, false), 3};
  }
  if (at(0) == "trtllm-serve")
    return {engine_command("trtllm-serve", Engine::trtllm, kTrtllmFlags, true, false, false), at(1) == "serve" ? 2 : 1};
  throw InputError(kWhere, "",
                   "a server command after --: vllm serve MODEL ..., python -m vllm.entrypoints.openai.api_server "
                   "--model MODEL ..., python -m sglang.launch_server --model-path MODEL ... or trtllm-serve MODEL ...",
                   "'" + (cmd.empty() ? std::string() : cmd.front()) + "'");
}

bool is_alias(std::string_view aliases, const std::string& name) {
  for (size_t at = 0; at < aliases.size();) {
    const size_t end = std::min(aliases.find(' ', at), aliases.size());
    if (aliases.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

const Flag* find_flag(const EngineCommand& ec, const std::string& name) {
  for (size_t i = 0; i < ec.num_flags; ++i)
    if (ec.flags[i].name == name || is_alias(ec.flags[i].alias, name)) return &ec.flags[i];
  return nullptr;
}

//! One word of the server command and where it was written: on the command line (`file`
//! empty) or in a config file, under the YAML key `key`; errors name the one or the other.
struct Word {
  std::string text;
  std::string file;
  std::string key;
};

[[noreturn]] void refuse_word(const Word& w, const std::string& shown, const std::string& expected,
                              const std::string& got) {
  if (w.file.empty()) throw InputError(kWhere, shown, expected, got);
  throw InputError(w.file, w.key, expected, got);
}

//! The engine's flags as given: canonical name -> value ("" for a boolean; "no" for
//! vLLM's --no-FLAG), the last occurrence winning as with argparse and click.
struct Given {
  std::map<std::string, std::string> values;
  std::vector<const Flag*> order;  //!< first occurrence order, for the notes
  std::string model;
  //! Canonical name -> "FILE: key" for a flag whose value a config file gave.
  std::map<std::string, std::string> from_file;

  //! The flag as messages name it: "--name", or "--name (FILE: key)" when a file set it.
  std::string flag(const std::string& name) const {
    const auto it = from_file.find(name);
    return "--" + name + (it == from_file.end() ? "" : " (" + it->second + ")");
  }
  void set(const Flag* f, const std::string& value, const Word& w) {
    const std::string key(f->name);
    if (!values.count(key)) order.push_back(f);
    values[key] = value;
    if (w.file.empty()) from_file.erase(key);
    else from_file[key] = w.file + ": " + w.key;
  }
  void erase(const std::string& name) {
    values.erase(name);
    from_file.erase(name);
    order.erase(std::remove_if(order.begin(), order.end(), [&](const Flag* f) { return f->name == name; }), order.end());
  }
};

Given read_flags(const std::vector<Word>& cmd, size_t first, const EngineCommand& ec) {
  Given g;
  for (size_t i = first; i < cmd.size(); ++i) {
    const Word& word = cmd[i];
    const std::string& tok = word.text;
    if (tok.size() < 2 || tok[0] != '-') {
      if (!ec.positional_model || !g.model.empty())
        refuse_word(word, tok, "flags of " + ec.program + " (a bare word here is not one)", "an unexpected argument");
      g.model = tok;
      continue;
    }
    // --flag=value, -tp 4, -O3 (vLLM's compilation level glued to its short flag).
    std::string name = tok.substr(tok[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (ec.engine == Engine::vllm && tok[1] != '-' && name.size() > 1 && name[0] == 'O') {
      value = name.substr(1);
      name = "O";
    }
    if (ec.underscores_are_dashes) std::replace(name.begin(), name.end(), '_', '-');
    const Flag* f = find_flag(ec, name);
    bool negated = false;
    if (!f && ec.no_prefix && name.rfind("no-", 0) == 0) {
      f = find_flag(ec, name.substr(3));
      negated = f && !takes_value(f->kind) && !takes_optional(f->kind);
      if (!negated) f = nullptr;
    }
    if (!f)
      refuse_word(word, tok, "a flag of " + ec.program + " (docs/server-command.md lists those kvplan reads)",
                  "an unknown flag");
    const std::string shown = std::string(tok[1] == '-' ? "--" : "-") + name;
    if (takes_value(f->kind)) {
      if (!value) {
        if (i + 1 < cmd.size() && cmd[i + 1].text.rfind("--", 0) != 0) value = cmd[++i].text;
        else if (f->kind == Kind::refuse_list) value = "";  // nargs="*": refused with or without words
        else refuse_word(word, shown, "a value after the flag", "nothing");
      }
      // nargs="+": the words up to the next flag.
      if (takes_list(f->kind))
        while (i + 1 < cmd.size() && cmd[i + 1].text.rfind('-', 0) != 0) *value += " " + cmd[++i].text;
    } else if (takes_optional(f->kind)) {
      // The next word is its value unless it is a flag, or MODEL still to come.
      if (!value && i + 1 < cmd.size() && cmd[i + 1].text.rfind('-', 0) != 0 && !(ec.positional_model && g.model.empty()))
        value = cmd[++i].text;
    } else if (value) {
      refuse_word(word, shown, "the flag alone (it takes no value)", "'" + *value + "'");
    }
    g.set(f, negated ? "no" : value.value_or(""), word);
  }
  if (g.values.count("model-path") || g.values.count("model")) {
    const std::string key = g.values.count("model-path") ? "model-path" : "model";
    if (!g.model.empty()) throw InputError(kWhere, "--" + key, "the model once (positional or --" + key + ")", "both");
    g.model = g.values[key];
  }
  if (g.model.empty()) throw InputError(kWhere, "MODEL", "the model " + ec.program + " serves", "nothing");
  return g;
}

//! A plain YAML scalar as PyYAML's safe_load reads it (YAML 1.1), as far as the flags tell
//! apart: booleans (true/yes/on, false/no/off, each in three cases) and null; a quoted
//! scalar is always text.
enum class Scalar { text, yes, no, null };
Scalar scalar_kind(const YAML::Node& n) {
  if (n.Tag() == "!") return Scalar::text;
  static const std::array<std::string_view, 9> kYes{"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const std::array<std::string_view, 9> kNo{"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  const std::string& v = n.Scalar();
  if (std::find(kYes.begin(), kYes.end(), v) != kYes.end()) return Scalar::yes;
  if (std::find(kNo.begin(), kNo.end(), v) != kNo.end()) return Scalar::no;
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return Scalar::null;
  return Scalar::text;
}

//! The digits of `v` from `i` on; `i` is left after the last.
size_t skip_digits(std::string_view v, size_t i) {
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
  return i;
}

//! PyYAML's int as vLLM's yaml.safe_load resolves it, [-+]?(0|[1-9][0-9]*), scanned by
//! hand: <regex> under GCC 12 -O2 with sanitizers fails -Werror (a false maybe-uninitialized).
bool is_yaml_int(std::string_view v) {
  size_t i = (!v.empty() && (v[0] == '-' || v[0] == '+')) ? 1 : 0;
  if (i == v.size()) return false;
  if (v[i] == '0') return i + 1 == v.size();
  return skip_digits(v, i) == v.size();
}

//! [-+]?([0-9]+)?\.[0-9]*([eE][-+][0-9]+)? with at least one digit: PyYAML's float with a
//! point (1e5 without one stays a string there, and here).
bool is_yaml_float(std::string_view v) {
  size_t i = (!v.empty() && (v[0] == '-' || v[0] == '+')) ? 1 : 0;
  const size_t int_end = skip_digits(v, i);
  if (int_end == v.size() || v[int_end] != '.') return false;
  const size_t frac_end = skip_digits(v, int_end + 1);
  if (int_end == i && frac_end == int_end + 1) return false;
  if (frac_end == v.size()) return true;
  if (v[frac_end] != 'e' && v[frac_end] != 'E') return false;
  const size_t sign = frac_end + 1;
  if (sign >= v.size() || (v[sign] != '-' && v[sign] != '+')) return false;
  const size_t exp_end = skip_digits(v, sign + 1);
  return exp_end > sign + 1 && exp_end == v.size();
}

//! A YAML value as the JSON Python's json.dumps writes of what safe_load read: integers
//! and floats (YAML 1.1 needs a dot in a float) as numbers, the rest as above.
nlohmann::json yaml_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = yaml_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& item : n) j.push_back(yaml_json(item));
    return j;
  }
  switch (scalar_kind(n)) {
    case Scalar::yes: return true;
    case Scalar::no: return false;
    case Scalar::null: return nullptr;
    case Scalar::text: break;
  }
  const std::string& v = n.Scalar();
  if (n.Tag() != "!" && is_yaml_int(v)) return nlohmann::json::parse(v.front() == '+' ? v.substr(1) : v);
  if (n.Tag() != "!" && is_yaml_float(v)) return std::stod(v);
  return v;
}

//! The mapping of a config file, or InputError naming the file (io::read_file refuses a
//! missing, special or oversized file before parsing).
YAML::Node read_config(const std::string& file) { return io::parse_yaml_mapping(io::read_file(file), file); }

//! vLLM's --config FILE (FlexibleArgumentParser._pull_args_from_config and
//! load_config_file in vllm/utils/argparse_utils.py, vllm-project/vllm@00da11e37d1f):
//! each key of the YAML mapping is a flag (underscores as dashes, like the command
//! line's); true is --KEY, false --no-KEY, a list --KEY ITEM..., a mapping --KEY JSON,
//! anything else --KEY VALUE. The words are inserted after `vllm serve [MODEL]`, before
//! the rest of the command line, so that a flag given on the command line wins.
std::vector<Word> with_vllm_config(const Args& cmd, size_t words, const EngineCommand& ec,
                                   std::vector<std::string>& notes) {
  std::vector<Word> out;
  std::optional<size_t> at;
  for (size_t i = 0; i < cmd.size(); ++i) {
    if (cmd[i].rfind("--config=", 0) == 0)
      throw InputError(kWhere, "--config", "--config FILE, with a space (the form vLLM's FlexibleArgumentParser reads)",
                       "'" + cmd[i] + "'");
    if (cmd[i] != "--config") continue;
    if (at) throw InputError(kWhere, "--config", "one config file (vLLM reads at most one)", "two");
    at = i;
  }
  if (!at) {
    for (const auto& w : cmd) out.push_back({w, "", ""});
    return out;
  }
  if (*at + 1 >= cmd.size()) throw InputError(kWhere, "--config", "a YAML file after the flag", "nothing");
  const std::string& file = cmd[*at + 1];
  const std::string ext = file.substr(file.find_last_of('.') == std::string::npos ? file.size() : file.find_last_of('.') + 1);
  if (ext != "yaml" && ext != "yml")
    throw InputError(kWhere, "--config", "a .yaml or .yml file (vLLM reads no other kind)", "'" + file + "'");
  const YAML::Node root = read_config(file);
  const bool positional = ec.positional_model && words < cmd.size() && words != *at && cmd[words].rfind('-', 0) != 0;

  std::vector<Word> config;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    const YAML::Node& v = kv.second;
    if (name == "model" && positional) {
      notes.push_back(file + ": model: the MODEL on the command line is the one vllm serve serves");
      continue;
    }
    const Flag* f = find_flag(ec, name);
    const bool boolean = f && !takes_value(f->kind) && !takes_optional(f->kind);
    const auto word = [&](std::string text) { config.push_back({std::move(text), file, key}); };
    if (v.IsMap()) {
      word("--" + key);
      word(yaml_json(v).dump());
    } else if (v.IsSequence()) {
      if (v.size() == 0) continue;
      if (!f || boolean || (f->kind != Kind::note && f->kind != Kind::refuse && !takes_list(f->kind)))
        throw InputError(file, key, f ? "one value for --" + name : "a flag of " + ec.program, "a list");
      std::string items;
      for (const auto& item : v) items += (items.empty() ? "" : " ") + item.as<std::string>();
      word("--" + key);
      word(items);
    } else {
      const Scalar k = scalar_kind(v);
      if (k == Scalar::null) throw InputError(file, key, "a value", "null");
      if (f && !boolean && k != Scalar::text)
        throw InputError(file, key, "a value for --" + name + " (it is not a boolean)", "'" + v.Scalar() + "'");
      if (boolean && k == Scalar::text)
        throw InputError(file, key, "true or false (--" + name + " is a boolean)", "'" + v.Scalar() + "'");
      if (k == Scalar::yes) {
        word("--" + key);
      } else if (k == Scalar::no) {
        word("--no-" + key);
      } else {
        word("--" + key);
        word(v.Scalar());
      }
    }
  }
  const size_t head = words + (positional ? 1 : 0);
  for (size_t i = 0; i < head; ++i) out.push_back({cmd[i], "", ""});
  out.insert(out.end(), config.begin(), config.end());
  for (size_t i = head; i < cmd.size(); ++i)
    if (i != *at && i != *at + 1) out.push_back({cmd[i], "", ""});
  return out;
}

//! TensorRT-LLM's LLM API options beside a flag of the same name: LlmArgs fields
//! (tensorrt_llm/llmapi/llm_args.py) that trtllm-serve also takes as click options.
constexpr std::array<std::string_view, 19> kTrtllmFlagOptions{
    "tensor_parallel_size", "pipeline_parallel_size", "moe_expert_parallel_size", "moe_cluster_parallel_size",
    "max_batch_size", "max_num_tokens", "max_seq_len", "enable_chunked_prefill", "backend", "max_beam_width",
    "context_parallel_size", "revision", "trust_remote_code", "tokenizer", "gpus_per_node",
    "num_postprocess_workers", "reasoning_parser", "fail_fast_on_attention_window_too_large",
    "otlp_traces_endpoint"};

//! A scalar option of an LLM API options file as a flag value: "" for true, nullopt for
//! false (the flag absent), the text otherwise; `boolean` says which the option is.
std::optional<std::string> llm_api_value(const YAML::Node& v, const std::string& file, const std::string& key,
                                         bool boolean) {
  if (!v.IsScalar()) throw InputError(file, key, boolean ? "true or false" : "one value", "a list or mapping");
  const Scalar k = scalar_kind(v);
  if (k == Scalar::null) throw InputError(file, key, "a value", "null");
  if (boolean != (k != Scalar::text))
    throw InputError(file, key, boolean ? "true or false" : "a value (the option is not a boolean)", "'" + v.Scalar() + "'");
  if (k == Scalar::no) return std::nullopt;
  return k == Scalar::yes ? std::string() : v.Scalar();
}

//! TensorRT-LLM's --config / --extra_llm_api_options FILE (tensorrt_llm/commands/serve.py,
//! NVIDIA/TensorRT-LLM@00209af149e7: "a YAML file that overwrites the parameters specified
//! by trtllm-serve"): yaml.safe_load, then update_llm_args_with_extra_dict
//! (tensorrt_llm/llmapi/llm_args.py), `llm_args | options`: an option of the file wins
//! over the flag of the same name, and a kv_cache_config in the file replaces the one the
//! command line's --free_gpu_memory_fraction built, whole (a field it does not give takes
//! KvCacheConfig's default: free_gpu_memory_fraction 0.9, kvplan's TensorRT-LLM default;
//! enable_block_reuse true; dtype auto). kvplan options the file sets beyond the flags go
//! into `options` (option, value, the flag messages name).
void apply_llm_api_options(Given& g, const EngineCommand& ec, const std::string& file,
                           std::vector<std::tuple<std::string, std::string, std::string>>& options,
                           std::vector<std::string>& notes) {
  const YAML::Node root = read_config(file);
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    const std::string from = "--config (" + file + ": " + key + ")";
    if (std::find(kTrtllmFlagOptions.begin(), kTrtllmFlagOptions.end(), key) != kTrtllmFlagOptions.end()) {
      const Flag* f = find_flag(ec, key);
      const auto value = llm_api_value(v, file, key, !takes_value(f->kind));
      if (value) g.set(f, *value, {"", file, key});
      else g.erase(key);
    } else if (key == "model") {
      g.model = *llm_api_value(v, file, key, false);
      notes.push_back(file + ": model: the file's model is the one trtllm-serve serves (it overrides MODEL)");
    } else if (key == "dtype") {
      options.emplace_back("dtype", *llm_api_value(v, file, key, false), from);
    } else if (key == "stream_interval") {
      options.emplace_back("stream-interval", *llm_api_value(v, file, key, false), from);
    } else if (key == "batch_wait_timeout_iters" || key == "batch_wait_max_tokens_ratio") {
      // TorchLlmArgs (PR #7416): PyExecutor's batch waiting, 0 = off.
      std::string option = key;
      std::replace(option.begin(), option.end(), '_', '-');
      options.emplace_back(option, *llm_api_value(v, file, key, false), from);
    } else if (key == "kv_cache_config") {
      if (!v.IsMap()) throw InputError(file, key, "a mapping of KvCacheConfig fields", "a single value");
      if (g.values.count("free_gpu_memory_fraction") && !v["free_gpu_memory_fraction"]) {
        notes.push_back(g.flag("free_gpu_memory_fraction") + " is replaced: " + file +
                        "'s kv_cache_config holds no free_gpu_memory_fraction, so TensorRT-LLM's default 0.9 applies");
        g.erase("free_gpu_memory_fraction");
      }
      for (const auto& field : v) {
        const std::string sub = field.first.as<std::string>();
        const std::string path = key + "." + sub;
        const std::string sub_from = "--config (" + file + ": " + path + ")";
        if (sub == "free_gpu_memory_fraction") {
          g.set(find_flag(ec, sub), *llm_api_value(field.second, file, path, false), {"", file, path});
        } else if (sub == "enable_block_reuse") {
          options.emplace_back("enable-prefix-caching", llm_api_value(field.second, file, path, true) ? "on" : "off",
                               sub_from);
        } else if (sub == "dtype") {
          const std::string d = *llm_api_value(field.second, file, path, false);
          if (d != "auto" && d != "fp8")
            throw InputError(file, path, "auto or fp8 (the TensorRT-LLM caches kvplan models)", "'" + d + "'");
          options.emplace_back("kv-cache-dtype", d, sub_from);
        } else if (sub == "max_tokens") {
          throw InputError(file, path, "LLM API options kvplan models (docs/server-command.md)",
                           "a KV pool given in tokens, not modelled yet (use free_gpu_memory_fraction)");
        } else if (sub == "host_cache_size") {
          throw InputError(file, path, "LLM API options kvplan models (docs/server-command.md)",
                           "a host-memory KV tier, not modelled yet");
        } else {
          throw InputError(file, path, "a KvCacheConfig field kvplan reads (docs/server-command.md lists them)",
                           "an unknown field");
        }
      }
    } else {
      throw InputError(file, key, "an LLM API option kvplan reads (docs/server-command.md lists them)",
                       "an unknown option");
    }
  }
}

//! vLLM's human-readable integers for --max-model-len (human_readable_int in
//! vllm/engine/arg_utils.py): lowercase suffixes are decimal and may follow a decimal
//! number (25.6k = 25,600), uppercase ones binary and integral (32K = 32,768); -1 (or
//! auto) asks vLLM to fit the length to memory.
std::string vllm_length(const std::string& v) {
  if (v == "-1" || v == "auto")
    throw InputError(kWhere, "--max-model-len", "a number of tokens (the length vLLM fits to memory is not modelled yet)",
                     "'" + v + "'");
  if (v.empty()) return v;
  const std::string decimal = "kmgt", binary = "KMGT";
  const char unit = v.back();
  const std::string number = v.substr(0, v.size() - 1);
  if (const size_t d = decimal.find(unit); d != std::string::npos) {
    double mult = 1;
    for (size_t i = 0; i <= d; ++i) mult *= 1000;
    const double x = parse_num_option(number, "--max-model-len", 0, 1e6);
    return std::to_string(static_cast<int64_t>(x * mult));  // Python's int(): toward zero
  }
  if (const size_t b = binary.find(unit); b != std::string::npos) {
    const int64_t n = parse_int_option(number, "--max-model-len");
    if (n > (int64_t{1} << 20)) throw InputError(kWhere, "--max-model-len", "a length below 2^60 tokens", "'" + v + "'");
    return std::to_string(n << (10 * (b + 1)));
  }
  return v;
}

//! The KV cache dtype names of vLLM (CacheDType in vllm/config/cache.py) and SGLang
//! (--kv-cache-dtype choices) as kvplan names them. fp8_e5m2 is one byte per element
//! like fp8_e4m3: the same memory and the same bytes read per step.
std::string kv_dtype(const std::string& v, std::vector<std::string>& notes, const std::string& program) {
  if (v == "auto" || v == "fp8" || v == "fp8_e4m3") return v;
  if (v == "bfloat16" || v == "bf16") return "bf16";
  if (v == "fp8_e5m2") {
    notes.push_back(program + " --kv-cache-dtype fp8_e5m2: planned as kvplan's fp8 (1 byte per element, as fp8_e4m3)");
    return "fp8";
  }
  throw InputError(kWhere, "--kv-cache-dtype", "auto, fp8, fp8_e4m3, fp8_e5m2 or bfloat16 (the caches kvplan models)",
                   "'" + v + "'");
}

//! Options each kvplan command takes beyond the serving options (cli/options.cpp).
bool command_takes(const std::string& command, const std::string& option) {
  static const std::vector<std::string> kSimulate{"schedule-conservativeness", "enable-mixed-chunk", "enable-chunked-prefill",
                                                  "batch-wait-timeout-iters", "batch-wait-max-tokens-ratio",
                                                  "scheduler", "swap", "num-gpu-blocks-override", "replicas", "router"};
  static const std::vector<std::string> kSize{"scheduler"};
  const auto& extra = command == "simulate" ? kSimulate : command == "size" ? kSize : std::vector<std::string>{};
  if (std::find(extra.begin(), extra.end(), option) != extra.end()) return true;
  static const std::vector<std::string> kServing{
      "tensor-parallel-size", "pipeline-parallel-size", "dtype", "quantization", "kv-cache-dtype", "block-size",
      "gpu-memory-utilization", "max-model-len", "max-num-seqs", "max-num-batched-tokens", "engine",
      "enable-prefix-caching", "async-scheduling", "stream-interval", "expert-parallel-size", "enable-expert-parallel",
      "data-parallel-size", "num-redundant-experts", "model",
      // Context parallelism (docs/long-context.md): every command plans DCP's shards.
      "decode-context-parallel-size", "prefill-context-parallel-size",
      // Speculative decoding (cli/spec_options.cpp): plan models it, simulate and size refuse it by name.
      "speculative-config", "speculative-algorithm", "speculative-num-steps", "speculative-eagle-topk",
      "speculative-num-draft-tokens", "speculative-draft-model-path",
      // LoRA (planner/lora.h): every command plans the slots and times the kernels.
      "enable-lora", "max-loras", "max-lora-rank", "max-cpu-loras", "lora-target-modules",
      // The host KV tier (docs/kv-tiers.md): plan states its size, simulate and size run it.
      "kv-offloading-size", "kv-offloading-backend", "enable-hierarchical-cache", "hicache-ratio", "hicache-size",
      "hicache-write-policy"};
  return std::find(kServing.begin(), kServing.end(), option) != kServing.end();
}

//! The kvplan options a server command stands for, built in the order the flags map.
class Translation {
 public:
  Translation(const EngineCommand& ec, std::string command) : ec_(ec), command_(std::move(command)) {}

  void set(const std::string& option, const std::string& value, const std::string& from) {
    // The plan (memory, capacity, one step's roofline) is the same under any schedule.
    static const std::vector<std::string> kSchedule{"schedule-conservativeness", "enable-mixed-chunk",
                                                    "enable-chunked-prefill", "scheduler", "swap",
                                                    "batch-wait-timeout-iters", "batch-wait-max-tokens-ratio"};
    if (command_ == "plan" && std::find(kSchedule.begin(), kSchedule.end(), option) != kSchedule.end()) {
      note(from, "a scheduling choice: the plan's memory and capacity do not depend on it; kvplan simulate models it");
      return;
    }
    if (!command_takes(command_, option))
      throw InputError(kWhere, from,
                       "flags kvplan " + command_ + " models (" + from + " changes the answer: kvplan simulate models it)",
                       "a flag kvplan " + command_ + " does not read");
    for (auto& [k, v] : opts_)
      if (k == option) {
        v = value;
        return;
      }
    opts_.emplace_back(option, value);
  }
  void note(const std::string& flag, std::string_view why) {
    notes_.push_back(ec_.program + " " + flag + ": does not change the plan (" + std::string(why) + ")");
  }
  std::vector<std::string>& notes() { return notes_; }
  const std::vector<std::pair<std::string, std::string>>& options() const { return opts_; }
  const std::string& command() const { return command_; }
  const std::string& program() const { return ec_.program; }

 private:
  const EngineCommand& ec_;
  std::string command_;
  std::vector<std::pair<std::string, std::string>> opts_;
  std::vector<std::string> notes_;
};

[[noreturn]] void not_modelled(const std::string& flag, std::string_view why) {
  throw InputError(kWhere, flag, "flags kvplan models (docs/server-command.md)",
                   "a flag that changes the plan and is not modelled yet: " + std::string(why));
}

//! vLLM releases before 0.8 run the V0 engine (docs/engines.md "vLLM releases").
bool vllm_v0(const std::string& version) { return version == "0.4" || version == "0.6" || version == "0.7"; }

//! Data parallelism of a dense model (or SGLang's --dp-size without DP attention): that
//! many independent engines behind the server's load balancer.
void dense_replicas(Translation& t, const std::string& flag, const std::string& n, const std::string& router) {
  const int64_t replicas = parse_int_option(n, flag);
  if (replicas == 1) return;
  if (t.command() == "simulate") {
    t.set("replicas", std::to_string(replicas), flag);
    t.set("router", router, flag);
  } else {
    t.note(flag + " " + n, t.command() == "size" ? "the replica count is what size chooses"
                                                 : "each of the " + std::to_string(replicas) +
                                                       " engines holds this plan; simulate runs them as --replicas");
  }
}

void translate_vllm(const Given& g, const ModelConfig& m, const std::string& version, Translation& t) {
  for (const auto& [name, value] : g.values) {
    const std::string flag = g.flag(name);
    if (name == "model") continue;
    if (name == "kv-cache-dtype") t.set("kv-cache-dtype", kv_dtype(value, t.notes(), t.program()), flag);
    else if (name == "max-model-len") t.set("max-model-len", vllm_length(value), flag);
    else if (name == "data-parallel-size") {
      // A MoE model's data-parallel ranks share its expert layers (vLLM's DP attention);
      // a dense model's are independent engines, balanced by the DP coordinator on
      // queue lengths (vllm/v1/engine/core_client.py DPLBAsyncMPClient).
      if (m.is_moe()) t.set("data-parallel-size", value, flag);
      else dense_replicas(t, flag, value, "least-outstanding");
    } else if (name == "enable-chunked-prefill") {
      // V1 always schedules chunked prefill (vllm/v1/core/sched/scheduler.py), kvplan's
      // scheduler auto for V1; V0 chunks only when asked (or above 32K tokens).
      const bool on = value != "no";
      if (vllm_v0(version)) {
        if (t.command() == "plan") not_modelled(flag, "V0's chunked-prefill batch limit in the plan");
        t.set("scheduler", on ? "chunked" : "continuous", flag);
      } else if (on) {
        t.note(flag, "vLLM V1 chunks prefills by default, as kvplan's scheduler auto does for it");
      } else {
        not_modelled("--no-enable-chunked-prefill", "vLLM V1 without chunked prefill");
      }
    } else if (name == "enforce-eager") {
      // No CUDA graphs. vLLM captures them after the KV cache is sized, so their memory
      // is in no release's accounting kvplan models (docs/engines.md); the launch time
      // eager mode adds per kernel has no sourced figure and is not modelled.
      if (value != "no")
        t.notes().push_back(t.program() +
                            " --enforce-eager: no CUDA graphs; kvplan's vLLM memory accounting deducts no graph memory "
                            "either way, and " + std::string(kEagerTime));
    } else if (name == "num-gpu-blocks-override") {
      t.set("num-gpu-blocks-override", value, flag);
    } else if (name == "revision") {
      if (value != "main") not_modelled(flag, "kvplan reads the snapshot refs/main points to");
      t.note(flag, "main is the revision kvplan reads");
    } else if (name == "preemption-mode") {
      if (value == "recompute") t.note(flag, "recomputation is how kvplan preempts");
      else if (value == "swap") t.set("swap", "", flag);
      else throw InputError(kWhere, flag, "recompute or swap", "'" + value + "'");
    } else if (name == "scheduling-policy") {
      if (value != "fcfs") not_modelled(flag, "kvplan schedules first come, first served");
      t.note(flag, "fcfs is kvplan's order");
    } else if (name == "runner" || name == "convert" || name == "task") {
      // ModelConfig's defaults (auto; convert none) and the generate runner serve a
      // generative model as kvplan plans it; pooling runners and conversions do not.
      if (value != "auto" && value != (name == "convert" ? "none" : "generate")) not_modelled(flag + " " + value, kPooling);
      t.note(flag + " " + value, "text generation is what kvplan plans");
    } else if (name == "lora-dtype") {
      // auto (LoRAConfig's default): the slots take the model's dtype, as kvplan sizes them.
      if (value != "auto") not_modelled(flag, "LoRA slots in a dtype other than the model's ('auto') are not modelled yet");
      t.note(flag + " auto", "the slots take the model's dtype, as kvplan sizes them");
    }
  }
}

void translate_sglang(const Given& g, const ModelConfig& m, Translation& t) {
  const auto has = [&](const char* k) { return g.values.count(k) > 0; };
  const bool dp_attention = has("enable-dp-attention");
  const int64_t tp = has("tp-size") ? parse_int_option(g.values.at("tp-size"), "--tp-size") : 1;
  const int64_t dp = has("dp-size") ? parse_int_option(g.values.at("dp-size"), "--dp-size") : 1;
  for (const auto& [name, value] : g.values) {
    const std::string flag = g.flag(name);
    if (name == "model-path") continue;
    if (name == "kv-cache-dtype") t.set("kv-cache-dtype", kv_dtype(value, t.notes(), t.program()), flag);
    else if (name == "tp-size") {
      // With DP attention --tp-size counts every GPU and each of the --dp-size attention
      // ranks holds tp / dp of them (server_args.py: attention TP = tp_size // dp_size);
      // kvplan's --tp is the GPUs of one rank.
      if (dp_attention && tp % dp != 0)
        throw InputError(kWhere, "--tp-size", "a multiple of --dp-size with --enable-dp-attention", std::to_string(tp));
      t.set("tensor-parallel-size", std::to_string(dp_attention ? tp / dp : tp), flag);
    } else if (name == "dp-size") {
      if (dp_attention && tp % dp != 0)
        throw InputError(kWhere, "--tp-size", "a multiple of --dp-size with --enable-dp-attention (all GPUs)",
                         std::to_string(tp));
      if (dp_attention) {
        if (!m.is_moe()) not_modelled("--enable-dp-attention", "DP attention on a dense model");
        t.set("data-parallel-size", value, flag);
      } else {
        // Without DP attention: dp_size whole engines behind DataParallelController,
        // round_robin by default (--load-balance-method).
        dense_replicas(t, flag, value, "round-robin");
      }
    } else if (name == "enable-dp-attention") {
      if (!has("dp-size")) t.note(flag, "with --dp-size 1 there is one attention rank");
    } else if (name == "chunked-prefill-size") {
      if (value == "-1") not_modelled(flag + " -1", "SGLang without chunked prefill");
      t.set("max-num-batched-tokens", value, flag);
    } else if (name == "schedule-policy") {
      if (value != "fcfs") not_modelled(flag + " " + value, "kvplan schedules first come, first served");
      t.note(flag, "fcfs is kvplan's order");
    } else if (name == "disable-cuda-graph") {
      // The graphs' memory is outside the static pool either way, and their batch size
      // enters the default --mem-fraction-static whether they are captured or not
      // (_handle_gpu_memory_settings reads cuda_graph_max_bs, not disable_cuda_graph,
      // server_args.py at sgl-project/sglang@0c006b8809cd; 0.4's table reads the TP size).
      if (value != "no")
        t.notes().push_back(t.program() + " " + flag + ": no CUDA graphs; SGLang's KV pool is the same, and " +
                            std::string(kEagerTime));
    } else if (name == "cuda-graph-max-bs" || name == "cuda-graph-bs") {
      // The CUDA graph batch size enters SGLang's default --mem-fraction-static
      // (server_args.py, reserved memory; docs/engines.md); a fraction given outright
      // leaves the KV pool as it is. --cuda-graph-bs sets it to its largest size.
      if (!has("mem-fraction-static"))
        not_modelled(flag, "its effect on SGLang's default --mem-fraction-static (give --mem-fraction-static)");
      t.note(flag, "--mem-fraction-static is given, so the KV pool does not depend on the CUDA graphs");
    } else if (name == "revision") {
      if (value != "main") not_modelled(flag, "kvplan reads the snapshot refs/main points to");
      t.note(flag, "main is the revision kvplan reads");
    }
  }
}

void translate_trtllm(const Given& g, Translation& t) {
  for (const auto& [name, value] : g.values) {
    const std::string flag = g.flag(name);
    if (name == "enable_chunked_prefill") {
      if (t.command() == "simulate") t.set("enable-chunked-prefill", "", flag);
      else if (t.command() == "plan") t.note(flag, "chunking changes the schedule, not the memory");
      else not_modelled(flag, "kvplan size searches TensorRT-LLM without chunked prefill; simulate models it");
    } else if (name == "backend") {
      // kvplan's TensorRT-LLM accounting is the PyTorch backend's KvCacheCreator.
      if (value != "pytorch") not_modelled(flag + " " + value, "kvplan models the PyTorch backend (the default)");
      t.note(flag, "pytorch is the backend kvplan models");
    } else if (name == "max_beam_width") {
      if (value != "1") not_modelled(flag + " " + value, "beam search is not modelled yet");
      t.note(flag, "1 is greedy or sampled decoding, as kvplan models");
    } else if (name == "context_parallel_size") {
      if (value != "1") not_modelled(flag + " " + value, "context parallelism is not modelled yet");
      t.note(flag, "1 is no context parallelism");
    } else if (name == "revision") {
      if (value != "main") not_modelled(flag, "kvplan reads the snapshot refs/main points to");
      t.note(flag, "main is the revision kvplan reads");
    }
  }
}

//! The value of kvplan option `name` before "--" (nullopt when absent).
std::optional<std::string> option_value(const Args& before, const std::string& name) {
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] == "--" + name) return i + 1 < before.size() ? before[i + 1] : std::string();
    if (before[i].rfind("--" + name + "=", 0) == 0) return before[i].substr(name.size() + 3);
  }
  return std::nullopt;
}

}  // namespace

ServerCommand read_server_command(const Args& args, const std::string& command) {
  const auto dash = std::find(args.begin(), args.end(), "--");
  if (dash == args.end()) return {args, {}};
  const Args before(args.begin(), dash);
  const Args cmd(dash + 1, args.end());
  const auto [ec, words] = which_engine(cmd);
  std::vector<std::string> file_notes;
  std::vector<Word> all;
  if (ec.engine == Engine::vllm) all = with_vllm_config(cmd, words, ec, file_notes);
  else
    for (const auto& w : cmd) all.push_back({w, "", ""});
  Given given = read_flags(all, words, ec);
  std::vector<std::tuple<std::string, std::string, std::string>> file_options;
  if (ec.engine == Engine::trtllm && given.values.count("config")) {
    const std::string file = given.values.at("config");
    given.erase("config");
    apply_llm_api_options(given, ec, file, file_options, file_notes);
  }
  const std::string engine_name(to_string(ec.engine));
  // --engine vllm@0.10 before "--" chooses the release; another engine is a contradiction.
  std::string version;
  if (const auto e = option_value(before, "engine")) {
    const std::string base = e->substr(0, e->find('@'));
    if (base != engine_name)
      throw InputError("command line", "--engine", engine_name + " or " + engine_name + "@VERSION (the server command is " + ec.program + ")",
                       "'" + *e + "'");
    if (e->find('@') != std::string::npos) version = e->substr(e->find('@') + 1);
  }
  const ModelConfig model = io::load_model(given.model);
  Translation t(ec, command);
  t.set("model", given.model, "MODEL");
  if (!option_value(before, "engine")) t.set("engine", engine_name, ec.program);
  for (const Flag* f : given.order) {
    const std::string flag = given.flag(std::string(f->name));
    const std::string& value = given.values.at(std::string(f->name));
    switch (f->kind) {
      case Kind::map:
      case Kind::map_list: t.set(std::string(f->target), value, flag); break;
      case Kind::map_on_off: t.set(std::string(f->target), value == "no" ? "off" : "on", flag); break;
      case Kind::map_off: t.set(std::string(f->target), "off", flag); break;
      case Kind::map_switch:
        if (value != "no") t.set(std::string(f->target), "", flag);
        break;
      case Kind::note:
      case Kind::note_flag:
      case Kind::note_list:
      case Kind::note_optional: t.note(flag, f->why); break;
      case Kind::refuse:
      case Kind::refuse_flag:
      case Kind::refuse_list:
      case Kind::refuse_optional:
        if (value != "no") not_modelled(flag, f->why);
        break;
      case Kind::default_only:
        if (value != f->target) not_modelled(flag + " " + value, f->why);
        t.note(flag + " " + value, "the engine's default, which kvplan models");
        break;
      case Kind::special:
      case Kind::special_flag:
      case Kind::special_list: break;
    }
  }
  for (const auto& [option, value, from] : file_options) t.set(option, value, from);
  if (ec.engine == Engine::vllm) translate_vllm(given, model, version, t);
  else if (ec.engine == Engine::sglang) translate_sglang(given, model, t);
  else translate_trtllm(given, t);
  for (auto& n : file_notes) t.notes().push_back(ec.program + " " + n);

  ServerCommand out{before, std::move(t.notes())};
  for (const auto& [option, value] : t.options()) {
    if (option_value(before, option))
      throw InputError("command line", "--" + option, "the option either before -- or in the server command",
                       "both");
    out.args.push_back("--" + option);
    if (!value.empty()) out.args.push_back(value);
  }
  return out;
}

Args with_server_command(const Args& args, const std::string& command) {
  ServerCommand s = read_server_command(args, command);
  for (const auto& n : s.notes) std::cerr << "kvplan: note: " << n << "\n";
  return std::move(s.args);
}

}  // namespace kvplan::cli
