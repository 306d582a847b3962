// The kvplan binary as a user runs it: output, exit codes and error messages.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Run {
  int code = -1;
  std::string out, err;
};

Run kvplan(const std::string& args) {
  // One file per test process: ctest runs the cases of this file in parallel.
  const auto err_path = std::filesystem::temp_directory_path() / ("kvplan_cli_test." + std::to_string(getpid()) + ".err");
  const std::string cmd = std::string(KVPLAN_BINARY) + " " + args + " 2>" + err_path.string();
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

}  // namespace

TEST_CASE("plan --format json follows the kvplan.plan/1 contract") {
  const Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 4096 --batch 8 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "kvplan.plan/1");
  const auto& row = j["rows"][0];
  for (const char* k : {"model", "gpu", "tp", "pp", "context_tokens", "batch", "kv_dtype", "kv_quant", "weight_dtype",
                        "engine", "kv_cache", "params", "memory", "capacity", "flops", "latency"})
    CHECK_MESSAGE(row.contains(k), k);
  for (const char* k : {"gpu_bytes", "usable_bytes", "weights_bytes", "activation_bytes", "reserve_bytes",
                        "kv_budget_bytes", "kv_bytes_per_token", "kv_bytes_per_request"})
    CHECK_MESSAGE(row["memory"].contains(k), k);
  CHECK(row["memory"]["kv_bytes_per_token"] == 131072);
  CHECK(row["memory"]["kv_bytes_per_request"] == 4096 * 131072);
  CHECK(row["params"] == 8030261248LL);
  CHECK(row["latency"]["bound"] == "memory");
  CHECK(row["flops"]["generate_naive"].get<double>() > row["flops"]["generate_cached"].get<double>());
}

TEST_CASE("comma lists expand to one row per combination") {
  const Run r = kvplan("plan --model llama-2-70b --gpu a100-80gb --tp 2 --kv-cache-dtype fp16,int4 --kv-quant raw,kivi "
                       "--context 2048,32768 --format json");
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.out)["rows"];
  CHECK(rows.size() == 6);  // (fp16, int4/raw, int4/kivi) x 2 contexts
}

TEST_CASE("the seed's chain in one table: fp16 → int4 about 4× the requests, KIVI under 3.3×") {
  const Run r = kvplan("plan --model llama-2-70b --gpu a100-80gb --tp 2 --kv-cache-dtype fp16,int4 --kv-quant raw,kivi "
                       "--format json");
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.out)["rows"];
  REQUIRE(rows.size() == 3);  // fp16 (a scheme does not apply to it), int4/raw, int4/kivi
  const double fp16 = rows[0]["capacity"]["max_concurrent_requests"].get<double>();
  REQUIRE(fp16 > 0);
  CHECK(rows[1]["capacity"]["max_concurrent_requests"].get<double>() / fp16 > 3.7);
  CHECK(rows[2]["capacity"]["max_concurrent_requests"].get<double>() / fp16 < 3.3);
  const Run t = kvplan("plan --model llama-2-70b --gpu a100-80gb --tp 2 --kv-cache-dtype fp16,int4 --kv-quant raw,kivi");
  CHECK(t.code == 0);
  CHECK(t.out.find("requests ×") != std::string::npos);
  CHECK(t.out.find("GB = 1e9 bytes, GiB = 2^30 bytes") != std::string::npos);
}

TEST_CASE("Llama-2-70B bf16 on one A100-80GB says it does not fit") {
  const Run r = kvplan("plan --model llama-2-70b --gpu a100-80gb --format json");
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  CHECK(row["capacity"]["max_concurrent_requests"] == 0);
  CHECK(row["capacity"]["limited_by"] == "weights do not fit");
}

TEST_CASE("bad input exits 2 with one clear message") {
  Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --tp 3");
  CHECK(r.code == 2);
  CHECK(r.err ==
        "kvplan: error: command line: key '--tensor-parallel-size': expected a divisor of num_attention_heads (32 for "
        "llama-3-8b), got 3\n");
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context -5");
  CHECK(r.code == 2);
  CHECK(r.err == "kvplan: error: command line: key '--context': expected an integer >= 1, got '-5'\n");
  r = kvplan("plan --model no-such-model --gpu h100-sxm");
  CHECK(r.code == 2);
  CHECK(r.err.find("expected a file or a catalog model name (") != std::string::npos);
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --kv-cache-dtype int3");
  CHECK(r.code == 2);
  CHECK(r.err == "kvplan: error: command line: key '--kv-cache-dtype': expected auto, fp16, bf16, fp8, int8, int4 or int2, got 'int3'\n");
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --bogus 1");
  CHECK(r.code == 2);
  r = kvplan("frobnicate");
  CHECK(r.code == 2);
}

TEST_CASE("-o refuses to overwrite a file unless --force") {
  const auto path = std::filesystem::temp_directory_path() / "kvplan_cli_test_out.json";
  std::ofstream(path) << "keep me";
  const Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --format json -o " + path.string());
  CHECK(r.code == 2);
  std::ifstream in(path);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "keep me");
  CHECK(kvplan("plan --model llama-3-8b --gpu h100-sxm --format json --force -o " + path.string()).code == 0);
  std::filesystem::remove(path);
}

TEST_CASE("the catalogs list every model and GPU with units") {
  const Run m = kvplan("models");
  CHECK(m.code == 0);
  CHECK(m.out.find("deepseek-v3") != std::string::npos);
  const Run g = kvplan("gpus");
  CHECK(g.code == 0);
  CHECK(g.out.find("h200") != std::string::npos);
  CHECK(g.out.find("GiB") != std::string::npos);
}

TEST_CASE("simulate --format json follows the kvplan.sim/1 contract and completes every request") {
  const Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload configs/workloads/chat.yaml "
                       "--requests 300 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "kvplan.sim/1");
  CHECK(j["requests"]["arrived"] == 300);
  CHECK(j["requests"]["completed"].get<int>() + j["requests"]["rejected"].get<int>() == 300);
  for (const char* k : {"requests_per_s", "output_tokens_per_s"}) CHECK_MESSAGE(j["throughput"].contains(k), k);
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"})
    for (const char* p : {"p50", "p90", "p99"}) CHECK_MESSAGE(j["latency"][k].contains(p), k << "." << p);
  CHECK(j["latency"]["ttft_s"]["p50"].get<double>() <= j["latency"]["ttft_s"]["p99"].get<double>());
  CHECK(j["batch"].contains("mean"));
  CHECK(j["kv"]["peak_utilization"].get<double>() <= 1.0);
  CHECK(j["sim"]["events"].get<int64_t>() > 0);
}

TEST_CASE("validate --backend cpu passes every check and follows the kvplan.validate/1 contract") {
  const Run r = kvplan("validate --backend cpu --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "kvplan.validate/1");
  CHECK(j["backend"] == "cpu");
  REQUIRE(j["checks"].size() > 10);
  for (const auto& c : j["checks"]) {
    for (const char* k : {"name", "quantity", "unit", "predicted", "measured", "error", "tolerance", "pass"})
      CHECK_MESSAGE(c.contains(k), k);
    CHECK_MESSAGE(c["pass"].get<bool>(), c["name"].get<std::string>());
  }
}

TEST_CASE("validate --backend cuda without a GPU exits 2 and says why") {
  const Run r = kvplan("validate --backend cuda");
  CHECK(r.code == 2);
  CHECK(r.err.find("kvplan: error:") == 0);
}

TEST_CASE("plan --engine vllm prints the two lines vLLM logs at start-up") {
  const Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --engine vllm --max-model-len 8192 --context 8192");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("GPU KV cache size: ") != std::string::npos);
  CHECK(r.out.find("Maximum concurrency for 8,192 tokens per request: ") != std::string::npos);
}
