// The server command pasted after "--" (cli/server_command.cpp), models by their Hub name
// (io/hf_model.cpp) and questions asked without a workload file (cli/workload_options.cpp),
// through the real binary.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_kvplan.h"

using kvplan_test::run_kvplan;
namespace fs = std::filesystem;

namespace {

//! A Hugging Face cache under the build tree holding `repo` (org/name) at revision
//! `rev` with config.json copied from `config` and, when given, hf_quant_config.json.
fs::path fake_cache(const std::string& tag, const std::string& repo, const fs::path& config,
                    const std::string& quant_config = "") {
  const fs::path cache = fs::path(KVPLAN_TEST_TMP_DIR) / ("hf-cache-" + tag);
  fs::remove_all(cache);
  std::string folder = "models--" + repo;
  folder.replace(folder.find('/'), 1, "--");
  const std::string rev = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(cache / folder / "refs");
  fs::create_directories(cache / folder / "snapshots" / rev);
  std::ofstream(cache / folder / "refs" / "main") << rev;  // the cache writes no newline
  fs::copy_file(config, cache / folder / "snapshots" / rev / "config.json");
  if (!quant_config.empty()) std::ofstream(cache / folder / "snapshots" / rev / "hf_quant_config.json") << quant_config;
  return cache;
}

struct HubCacheEnv {
  explicit HubCacheEnv(const fs::path& cache) {
    setenv("HF_HUB_CACHE", cache.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): one thread
  }
  ~HubCacheEnv() { unsetenv("HF_HUB_CACHE"); }  // NOLINT(concurrency-mt-unsafe)
  HubCacheEnv(const HubCacheEnv&) = delete;
  HubCacheEnv& operator=(const HubCacheEnv&) = delete;
};

const std::string kLlama8bConfig = "tests/data/hf_configs/meta-llama--Meta-Llama-3.1-8B.json";

}  // namespace

TEST_CASE("a pasted vllm serve command with 15 common flags plans as the same kvplan options") {
  // Each flag as vLLM reads it (vllm/engine/arg_utils.py): --max-model-len 16k is
  // human_readable_int's 16,000; fp8_e5m2 is a 1-byte cache like kvplan's fp8;
  // --no-async-scheduling is BooleanOptionalAction's off. --enforce-eager, --swap-space,
  // --host, --port, --served-model-name, --trust-remote-code, --disable-log-requests and
  // --api-key do not change the plan; --enable-chunked-prefill is V1's default.
  const std::string common = "plan --gpu h100-sxm --context 8192 --batch 32 --format json";
  const auto pasted = run_kvplan(
      common + " -- vllm serve " + kLlama8bConfig +
      " --tensor-parallel-size 2 --dtype bfloat16 --kv-cache-dtype fp8_e5m2 --max-model-len 16k"
      " --max-num-seqs 128 --max-num-batched-tokens=8192 --gpu-memory-utilization 0.92 --block-size 32"
      " --enable-prefix-caching --no-async-scheduling --enable-chunked-prefill --enforce-eager --swap-space 8"
      " --host 0.0.0.0 --port 8000 --served-model-name llama --trust-remote-code --disable-log-requests"
      " --api-key secret");
  const auto options = run_kvplan(common + " --model " + kLlama8bConfig +
                                  " --engine vllm --tensor-parallel-size 2 --dtype bf16 --kv-cache-dtype fp8"
                                  " --max-model-len 16000 --max-num-seqs 128 --max-num-batched-tokens 8192"
                                  " --gpu-memory-utilization 0.92 --block-size 32 --enable-prefix-caching on"
                                  " --async-scheduling off");
  REQUIRE_MESSAGE(pasted.code == 0, pasted.err);
  REQUIRE_MESSAGE(options.code == 0, options.err);
  CHECK(pasted.out == options.out);
  // One note per flag that does not change the plan, naming it.
  for (const char* flag : {"--host", "--port", "--served-model-name", "--trust-remote-code", "--api-key",
                           "--disable-log-requests", "--swap-space", "--enforce-eager", "--enable-chunked-prefill",
                           "fp8_e5m2"})
    CHECK_MESSAGE(pasted.err.find(flag) != std::string::npos, flag);
  const auto row = nlohmann::json::parse(pasted.out)["rows"][0];
  CHECK(row["tp"] == 2);
  CHECK(row["block_size"] == 32);
  CHECK(row["engine"] == "vllm");
}

TEST_CASE("the other spellings of a server command give the same plan") {
  const std::string common = "plan --gpu h100-sxm --format json";
  const auto options = run_kvplan(common + " --model " + kLlama8bConfig +
                                  " --engine vllm --tp 2 --max-model-len 32768 --enable-prefix-caching off");
  REQUIRE_MESSAGE(options.code == 0, options.err);
  // The OpenAI entry point takes --model; FlexibleArgumentParser reads underscores as
  // dashes; 32K is binary (32 x 1024).
  for (const std::string& pasted :
       {" -- python3 -m vllm.entrypoints.openai.api_server --model " + kLlama8bConfig +
            " -tp 2 --max_model_len 32K --no-enable-prefix-caching",
        " -- vllm serve --tensor-parallel-size=2 " + kLlama8bConfig + " --max-model-len 32768 --no-enable-prefix-caching"}) {
    const auto r = run_kvplan(common + pasted);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out == options.out);
  }
  // SGLang: --mem-fraction-static is the KV fraction, --context-length the longest
  // request, --disable-radix-cache prefix caching off, --chunked-prefill-size and
  // --max-running-requests the step limits (python/sglang/srt/server_args.py).
  const auto sglang = run_kvplan(common + " -- python -m sglang.launch_server --model-path " + kLlama8bConfig +
                                 " --tp-size 2 --mem-fraction-static 0.85 --context-length 8192 --disable-radix-cache"
                                 " --chunked-prefill-size 4096 --max-running-requests 64 --host 0.0.0.0");
  const auto sglang_options = run_kvplan(common + " --model " + kLlama8bConfig +
                                         " --engine sglang --tp 2 --gpu-memory-utilization 0.85 --max-model-len 8192"
                                         " --enable-prefix-caching off --max-num-batched-tokens 4096 --max-num-seqs 64");
  REQUIRE_MESSAGE(sglang.code == 0, sglang.err);
  CHECK(sglang.out == sglang_options.out);
  // TensorRT-LLM's click options, underscores and all (tensorrt_llm/commands/serve.py).
  const auto trt = run_kvplan(common + " -- trtllm-serve " + kLlama8bConfig +
                              " --tp_size 2 --max_batch_size 128 --max_num_tokens 8192 --max_seq_len 8192"
                              " --kv_cache_free_gpu_memory_fraction 0.8 --backend pytorch --port 8001");
  const auto trt_options = run_kvplan(common + " --model " + kLlama8bConfig +
                                      " --engine trtllm --tp 2 --max-num-seqs 128 --max-num-batched-tokens 8192"
                                      " --max-model-len 8192 --gpu-memory-utilization 0.8");
  REQUIRE_MESSAGE(trt.code == 0, trt.err);
  CHECK(trt.out == trt_options.out);
}

TEST_CASE("SGLang's other spellings, defaults and eager mode plan as its canonical flags") {
  // server_args.py at sgl-project/sglang@0c006b8809cd: --tensor-parallel-size and
  // --pipeline-parallel-size are --tp-size and --pp-size; --tp is argparse's prefix of
  // --tp-size. A default (--load-balance-method round_robin, --scheduler-recv-interval 1)
  // is SGLang without the flag, and --disable-cuda-graph leaves the KV pool as it is:
  // its graphs are outside --mem-fraction-static, whose default reads cuda_graph_max_bs only.
  const std::string common = "plan --gpu h100-sxm --format json -- python -m sglang.launch_server --model-path " +
                             kLlama8bConfig + " --mem-fraction-static 0.85";
  const auto canonical = run_kvplan(common + " --tp-size 2 --pp-size 1");
  REQUIRE_MESSAGE(canonical.code == 0, canonical.err);
  for (const std::string flags : {" --tensor-parallel-size 2 --pipeline-parallel-size 1", " --tp 2 --pp-size 1",
                                  " --tp-size 2 --pp-size 1 --load-balance-method round_robin --scheduler-recv-interval 1",
                                  " --tp-size 2 --pp-size 1 --disable-cuda-graph"}) {
    CAPTURE(flags);
    const auto r = run_kvplan(common + flags);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out == canonical.out);
  }
  const auto eager = run_kvplan(common + " --tp-size 2 --disable-cuda-graph");
  CHECK(eager.err.find("--disable-cuda-graph: no CUDA graphs; SGLang's KV pool is the same") != std::string::npos);
  CHECK(eager.err.find("a lower bound") != std::string::npos);
  // nargs="*" and "?": a refused flag with or without its words is refused by name, its
  // words never read as MODEL or as a flag of their own.
  for (const std::string flags : {" --lora-paths a=/loras/a b=/loras/b", " --lora-paths", " --hybrid-kvcache-ratio",
                                  " --hybrid-kvcache-ratio 0.5"}) {
    CAPTURE(flags);
    const auto r = run_kvplan(common + flags);
    CHECK(r.code == 2);
    CHECK(r.err.find("not modelled yet") != std::string::npos);
  }
}

TEST_CASE("speculative decoding flags of a server command plan as kvplan's own") {
  // vLLM's --speculative-config JSON and SGLang's --speculative-algorithm / --speculative-num-steps
  // are kvplan's flags of the same names (cli/spec_options.cpp); the acceptance stays a kvplan option.
  const std::string common = "plan --gpu h100-sxm --format json --acceptance-rate 0.7";
  const std::string ngram = R"('{"method":"ngram","num_speculative_tokens":3}')";
  const auto vllm = run_kvplan(common + " -- vllm serve " + kLlama8bConfig + " --speculative-config " + ngram);
  const auto vllm_options =
      run_kvplan(common + " --model " + kLlama8bConfig + " --engine vllm --speculative-config " + ngram);
  REQUIRE_MESSAGE(vllm.code == 0, vllm.err);
  CHECK(vllm.out == vllm_options.out);
  CHECK(nlohmann::json::parse(vllm.out)["rows"][0]["speculative"].is_object());
  const auto sglang = run_kvplan(common + " -- python -m sglang.launch_server --model-path " + kLlama8bConfig +
                                 " --speculative-algorithm NGRAM --speculative-num-steps 3");
  const auto sglang_options = run_kvplan(common + " --model " + kLlama8bConfig +
                                         " --engine sglang --speculative-algorithm NGRAM --speculative-num-steps 3");
  REQUIRE_MESSAGE(sglang.code == 0, sglang.err);
  CHECK(sglang.out == sglang_options.out);
}

TEST_CASE("vLLM's LoRA flags of a server command plan as kvplan's own, nargs lists included") {
  // --lora-target-modules takes space-separated names (argparse nargs="+"); kvplan's own
  // flag the same names comma-separated. q_proj and v_proj wrap the packed qkv_proj:
  // (3 x 16 x 4096 + (4096 + 2 x 1024) x 16) x 32 layers x 2 B = 18,874,368 B per slot,
  // two slots 37,748,736 B (tests/planner/lora_test.cpp works the shapes).
  const std::string common = "plan --gpu h100-sxm --format json";
  const auto pasted = run_kvplan(common + " -- vllm serve " + kLlama8bConfig +
                                 " --enable-lora --max-loras 2 --lora-target-modules q_proj v_proj --lora-modules a=/x b=/y");
  const auto own = run_kvplan(common + " --model " + kLlama8bConfig +
                              " --engine vllm --enable-lora --max-loras 2 --lora-target-modules q_proj,v_proj");
  REQUIRE_MESSAGE(pasted.code == 0, pasted.err);
  REQUIRE_MESSAGE(own.code == 0, own.err);
  CHECK(pasted.out == own.out);
  CHECK(pasted.err.find("--lora-modules") != std::string::npos);  // the note naming it
  const auto row = nlohmann::json::parse(own.out)["rows"][0];
  CHECK(row["memory"]["lora_bytes"] == 37748736);
  CHECK(row["lora"]["slot_bytes_per_gpu"] == 18874368);
  CHECK(row["lora"]["modules"].size() == 1);
  // Every byte of the slots is a byte less of KV: whole 16-token blocks of 131,072 B per
  // token, 37,748,736 / 131,072 = 288 tokens = 18 blocks.
  const auto base = nlohmann::json::parse(run_kvplan(common + " --model " + kLlama8bConfig + " --engine vllm").out)["rows"][0];
  CHECK(base["memory"]["kv_budget_bytes"].get<int64_t>() - row["memory"]["kv_budget_bytes"].get<int64_t>() == 37748736);
  CHECK(row["lora"]["kv_tokens_lost"] == 288);
  CHECK(row["lora"]["max_kv_tokens_without_lora"] == base["capacity"]["max_kv_tokens"]);
}

TEST_CASE("a server command keeps the release chosen with --engine and refuses another engine") {
  const auto r = run_kvplan("plan --gpu h100-sxm --format json --engine vllm@0.10 -- vllm serve " + kLlama8bConfig);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto o = run_kvplan("plan --gpu h100-sxm --format json --engine vllm@0.10 --model " + kLlama8bConfig);
  CHECK(r.out == o.out);
  const auto bad = run_kvplan("plan --gpu h100-sxm --engine sglang -- vllm serve " + kLlama8bConfig);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--engine") != std::string::npos);
}

TEST_CASE("data parallelism of a dense model is replicas: of a MoE model, kvplan's --dp") {
  // A dense model's vLLM DP ranks are whole engines: simulate runs them as --replicas.
  const auto r = run_kvplan(
      "simulate --gpu h100-sxm --workload chat --requests 200 --format json -- vllm serve " + kLlama8bConfig +
      " --data-parallel-size 2");
  const auto o = run_kvplan("simulate --gpu h100-sxm --workload chat --requests 200 --format json --model " +
                            kLlama8bConfig + " --engine vllm --replicas 2 --router least-outstanding");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto a = nlohmann::json::parse(r.out), b = nlohmann::json::parse(o.out);
  a.erase("sim");  // the simulator's own wall time
  b.erase("sim");
  CHECK(a == b);
  const auto moe = run_kvplan("plan --gpu h100-sxm --format json -- vllm serve qwen3-30b-a3b --data-parallel-size 2 "
                              "--enable-expert-parallel");
  const auto moe_o = run_kvplan("plan --gpu h100-sxm --format json --model qwen3-30b-a3b --engine vllm --dp 2 "
                                "--enable-expert-parallel");
  REQUIRE_MESSAGE(moe.code == 0, moe.err);
  CHECK(moe.out == moe_o.out);
}

TEST_CASE("a Hub model name resolves in the local Hugging Face cache, without the network") {
  const fs::path cache = fake_cache("llama", "meta-llama/Llama-3.1-8B", kLlama8bConfig);
  const HubCacheEnv env(cache);
  const auto r = run_kvplan("plan --model meta-llama/Llama-3.1-8B --gpu h100-sxm --format json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  CHECK(row["model"] == "meta-llama/Llama-3.1-8B");
  // 8,030,261,248 parameters (the Hub's safetensors metadata of Llama-3.1-8B), bf16.
  CHECK(row["memory"]["weights_bytes"] == int64_t{2} * 8'030'261'248);
  // The same name pasted in a server command plans as the file it resolves to.
  const auto pasted = run_kvplan("plan --gpu h100-sxm --format json -- vllm serve meta-llama/Llama-3.1-8B");
  REQUIRE_MESSAGE(pasted.code == 0, pasted.err);
  const auto file = run_kvplan("plan --gpu h100-sxm --format json --engine vllm --model " + kLlama8bConfig);
  auto a = nlohmann::json::parse(pasted.out)["rows"][0], b = nlohmann::json::parse(file.out)["rows"][0];
  CHECK(a["model"] == "meta-llama/Llama-3.1-8B");
  a.erase("model");
  b.erase("model");
  CHECK(a == b);
}

TEST_CASE("hf_quant_config.json beside config.json quantizes the weights as vLLM reads it") {
  // ModelOpt <= 0.29 exports keep the scheme in hf_quant_config.json, which vLLM reads
  // when config.json has no quantization_config (vllm/transformers_utils/config.py).
  const fs::path cache = fake_cache("modelopt", "nvidia/Llama-3.1-8B-Instruct-FP8", kLlama8bConfig,
                                    R"({"producer": {"name": "modelopt", "version": "0.19.0"},
                                        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
                                                         "exclude_modules": ["lm_head"]}})");
  const HubCacheEnv env(cache);
  const auto r = run_kvplan("plan --model nvidia/Llama-3.1-8B-Instruct-FP8 --gpu h100-sxm --format json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto mem = nlohmann::json::parse(r.out)["rows"][0]["memory"];
  // FP8 linear layers: 32 layers x (41,943,040 attention + 176,160,768 MLP) = 6,979,321,856
  // one-byte weights; embeddings and lm_head (2 x 525,336,576) and the norms stay bf16.
  const int64_t fp8_linear = 6'979'321'856, bf16_rest = 2 * (2 * 525'336'576 + 32 * 8192 + 4096);
  CHECK(mem["weights_bytes"].get<int64_t>() >= fp8_linear + bf16_rest);
  CHECK(mem["weights_bytes"].get<int64_t>() < fp8_linear + bf16_rest + 1'000'000);  // + per-tensor scales
}

TEST_CASE("a Hub model that is not in the cache names every place looked and how to fetch it") {
  const fs::path cache = fs::path(KVPLAN_TEST_TMP_DIR) / "hf-cache-empty";
  fs::create_directories(cache);
  const HubCacheEnv env(cache);
  const auto r = run_kvplan("plan --model some-org/Missing-Model --gpu h100-sxm");
  CHECK(r.code == 2);
  CHECK(r.err.find((cache / "models--some-org--Missing-Model").string()) != std::string::npos);
  CHECK(r.err.find("./some-org/Missing-Model") != std::string::npos);
  CHECK(r.err.find("huggingface-cli download some-org/Missing-Model config.json") != std::string::npos);
}

TEST_CASE("size and simulate take the question on the command line") {
  const std::string base = "size --model llama-3.1-8b --gpus h100-sxm --tp 1 --quantization none "
                           "--kv-cache-dtype auto --evaluator planner --format json";
  const auto file = run_kvplan(base + " --workload tests/data/workloads/chat-2000-requests.yaml");
  REQUIRE_MESSAGE(file.code == 0, file.err);
  // The workload file restated as options (its Poisson rate, lognormal lengths and SLO;
  // its 2,000 requests are size's --requests) is the same search.
  const auto restated = run_kvplan(
      base + " --rate 11 --prompt-tokens dist=lognormal,mean=1155,sigma=0.985,min=1,max=7000"
             " --output-tokens dist=lognormal,mean=211,sigma=0.859,min=1,max=1000 --ttft-p99 2s --tpot-p99 100ms");
  REQUIRE_MESSAGE(restated.code == 0, restated.err);
  const auto a = nlohmann::json::parse(file.out), b = nlohmann::json::parse(restated.out);
  CHECK(a["options"] == b["options"]);
  CHECK(a["recommendations"] == b["recommendations"]);
  // One value overridden: the rate the search sizes for.
  const auto rate = run_kvplan(base + " --workload chat --rate 50");
  REQUIRE_MESSAGE(rate.code == 0, rate.err);
  CHECK(nlohmann::json::parse(rate.out)["workload"]["rate_per_s"] == 50.0);
  const auto dist = run_kvplan(base + " --workload chat --prompt-tokens dist=uniform,min=100,max=300 --output-tokens 200");
  REQUIRE_MESSAGE(dist.code == 0, dist.err);
  const auto w = nlohmann::json::parse(dist.out)["workload"];
  CHECK(w["prompt_mean_tokens"].get<double>() == doctest::Approx(200.0).epsilon(0.02));  // uniform 100..300
  CHECK(w["output_mean_tokens"] == 200.0);
  CHECK(w["slo"]["ttft_p99_s"] == 2.0);  // chat.yaml's, kept

  // simulate: the same requests from the file or from the options.
  const std::string sim = "simulate --model llama-3.1-8b --gpu h100-sxm --engine vllm --format json --requests 300";
  const auto sfile = run_kvplan(sim + " --workload chat --rate 4");
  const auto sopts = run_kvplan(
      sim + " --rate 4 --prompt-tokens dist=lognormal,mean=1155,sigma=0.985,min=1,max=7000"
            " --output-tokens dist=lognormal,mean=211,sigma=0.859,min=1,max=1000 --ttft-p99 2s --tpot-p99 100ms");
  REQUIRE_MESSAGE(sfile.code == 0, sfile.err);
  REQUIRE_MESSAGE(sopts.code == 0, sopts.err);
  auto sa = nlohmann::json::parse(sfile.out), sb = nlohmann::json::parse(sopts.out);
  for (auto* j : {&sa, &sb}) {
    j->erase("sim");       // the simulator's own wall time
    j->erase("workload");  // its name
  }
  CHECK(sa == sb);
}

TEST_CASE("vllm serve --config FILE.yaml plans as its flags on the command line, which win over the file") {
  // vLLM's load_config_file (vllm/utils/argparse_utils.py, vllm-project/vllm@00da11e37d1f):
  // each key is a flag, dashes or underscores; true is --KEY, false --no-KEY, a mapping
  // --KEY JSON; the file's flags go after `vllm serve MODEL` and before the rest of the
  // command line, so a flag given there wins.
  const fs::path dir = fs::path(KVPLAN_TEST_TMP_DIR) / "engine-configs";
  fs::create_directories(dir);
  const fs::path file = dir / "vllm.yaml";
  std::ofstream(file) << "# a vllm serve config\n"
                         "tensor-parallel-size: 2\nmax_model_len: 16k\nkv-cache-dtype: fp8\n"
                         "gpu-memory-utilization: 0.85\nenable-prefix-caching: false\nmax-num-seqs: 128\n"
                         "enforce-eager: true\nport: 8001\n"
                         "compilation-config:\n  cudagraph_capture_sizes: [1, 2, 4]\n";
  const std::string common = "plan --gpu h100-sxm --context 8192 --batch 32 --format json -- vllm serve " + kLlama8bConfig;
  const auto from_file = run_kvplan(common + " --config " + file.string());
  const auto flags = run_kvplan(common + " --tensor-parallel-size 2 --max-model-len 16k --kv-cache-dtype fp8"
                                         " --gpu-memory-utilization 0.85 --no-enable-prefix-caching --max-num-seqs 128"
                                         " --enforce-eager --port 8001");
  REQUIRE_MESSAGE(from_file.code == 0, from_file.err);
  REQUIRE_MESSAGE(flags.code == 0, flags.err);
  CHECK(from_file.out == flags.out);
  // The notes name the file and key of a flag the file set.
  CHECK_MESSAGE(from_file.err.find("--port (" + file.string() + ": port)") != std::string::npos, from_file.err);
  CHECK_MESSAGE(from_file.err.find("--compilation-config (" + file.string() + ": compilation-config)") !=
                    std::string::npos,
                from_file.err);

  // The command line wins, before or after --config: TP 4 and the 8192-token limit.
  for (const std::string& order : {" --config " + file.string() + " --tensor-parallel-size 4 --max-model-len 8192",
                                   " --tensor-parallel-size 4 --max-model-len 8192 --config " + file.string()}) {
    const auto over = run_kvplan(common + order);
    REQUIRE_MESSAGE(over.code == 0, over.err);
    const auto row = nlohmann::json::parse(over.out)["rows"][0];
    CHECK(row["tp"] == 4);
    const auto same = run_kvplan(common + " --tensor-parallel-size 4 --max-model-len 8192 --kv-cache-dtype fp8"
                                          " --gpu-memory-utilization 0.85 --no-enable-prefix-caching --max-num-seqs 128");
    REQUIRE_MESSAGE(same.code == 0, same.err);
    CHECK(over.out == same.out);
  }
}

TEST_CASE("trtllm-serve --extra_llm_api_options FILE.yaml overrides the flags, as TensorRT-LLM merges them") {
  // tensorrt_llm/commands/serve.py (NVIDIA/TensorRT-LLM@00209af149e7): the YAML "overwrites
  // the parameters specified by trtllm-serve" (update_llm_args_with_extra_dict:
  // llm_args | file). KvCacheConfig (tensorrt_llm/llmapi/llm_args.py): free_gpu_memory_fraction
  // is kvplan's --gpu-memory-utilization, enable_block_reuse its prefix caching, dtype the
  // KV cache dtype; the top-level dtype is the model's.
  const fs::path dir = fs::path(KVPLAN_TEST_TMP_DIR) / "engine-configs";
  fs::create_directories(dir);
  const fs::path file = dir / "trtllm.yaml";
  std::ofstream(file) << "tensor_parallel_size: 2\nmax_batch_size: 64\nmax_num_tokens: 4096\ndtype: bfloat16\n"
                         "kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n  enable_block_reuse: false\n  dtype: fp8\n";
  const std::string common = "plan --gpu h100-sxm --context 8192 --batch 32 --format json";
  const auto options = run_kvplan(common + " --model " + kLlama8bConfig +
                                  " --engine trtllm --tp 2 --max-num-seqs 64 --max-num-batched-tokens 4096 --dtype bf16"
                                  " --gpu-memory-utilization 0.8 --enable-prefix-caching off --kv-cache-dtype fp8");
  REQUIRE_MESSAGE(options.code == 0, options.err);
  // The file's max_batch_size 64 wins over the flag's 32, either spelling of the option.
  for (const char* flag : {" --extra_llm_api_options ", " --config="}) {
    const auto pasted = run_kvplan(common + " -- trtllm-serve " + kLlama8bConfig + " --max_batch_size 32" + flag +
                                   file.string());
    REQUIRE_MESSAGE(pasted.code == 0, pasted.err);
    CHECK(pasted.out == options.out);
  }

  // A kv_cache_config without free_gpu_memory_fraction replaces the command line's 0.7
  // whole: TensorRT-LLM's default 0.9 applies, which is kvplan's TensorRT-LLM default.
  const fs::path reuse = dir / "trtllm-reuse.yaml";
  std::ofstream(reuse) << "kv_cache_config:\n  enable_block_reuse: true\n";
  const auto replaced = run_kvplan(common + " -- trtllm-serve " + kLlama8bConfig +
                                   " --free_gpu_memory_fraction 0.7 --config " + reuse.string());
  const auto default_fraction = run_kvplan(common + " --model " + kLlama8bConfig + " --engine trtllm");
  const auto fraction_07 = run_kvplan(common + " --model " + kLlama8bConfig + " --engine trtllm --gpu-memory-utilization 0.7");
  REQUIRE_MESSAGE(replaced.code == 0, replaced.err);
  CHECK(replaced.out == default_fraction.out);
  CHECK(replaced.out != fraction_07.out);
  CHECK_MESSAGE(replaced.err.find("kv_cache_config holds no free_gpu_memory_fraction") != std::string::npos, replaced.err);
}
