// The kvplan binary as a user runs it: output, exit codes and error messages.
#include <doctest/doctest.h>

#include "tests/run_kvplan.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/gpu_validate/timing_checks.h"

namespace {

using kvplan_test::Run;

Run kvplan(const std::string& args) { return kvplan_test::run_kvplan(args); }

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
                       "--context 2048,4096 --format json");
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.out)["rows"];
  CHECK(rows.size() == 6);  // (fp16, int4/raw, int4/kivi) x 2 contexts
}

TEST_CASE("rows that differ only in the host KV tier, the engine release or the entry point are all kept") {
  // The duplicate filter (same_options) once keyed on neither: '64, 256' printed one row,
  // and two releases of one engine collapsed into the first.
  const auto rows = [](const std::string& args) {
    const Run r = kvplan("plan --model llama-3.1-8b --gpu h100-sxm " + args + " --format json");
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["rows"];
  };
  const auto tiers = rows("--engine vllm --kv-offloading-size '64, 256'");
  REQUIRE(tiers.size() == 2);
  CHECK(tiers[0]["host_kv_tier"]["blocks"] == 32768);   // 64 GiB / 2 MiB
  CHECK(tiers[1]["host_kv_tier"]["blocks"] == 131072);  // 256 GiB / 2 MiB
  CHECK(rows("--engine 'vllm@0.10, vllm@0.15'").size() == 2);
  CHECK(rows("--engine vllm --entry-point 'server, llm'").size() == 2);
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

TEST_CASE("simulate --max-concurrency N1,N2 prints a sweep: one run per concurrency, Little's law in each") {
  // Equal requests (vLLM bench's random lengths at range ratio 0: 512 in, 64 out), all
  // sent at once, the bare roofline (no request overhead or output lag): with N slots
  // and 40 requests, groups of N go out together and end together, so exactly N are in
  // flight from the first send to the last end and throughput x mean E2E = N (Little).
  const std::string base =
      "simulate --model llama-3-8b --gpu h100-sxm --workload chat --calibration none --rate inf --requests 40 "
      "--random-input-len 512 --random-output-len 64 --max-concurrency 1,4";
  const Run r = kvplan(base + " --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "kvplan.sim/1");
  CHECK(j["client"]["all_at_once"] == true);
  CHECK(j["client"]["max_concurrency"] == 1);  // the top-level figures are the first run's
  REQUIRE(j["sweep"].size() == 2);
  const int64_t n[] = {1, 4};
  for (size_t i = 0; i < 2; ++i) {
    const auto& p = j["sweep"][i];
    CAPTURE(i);
    CHECK(p["max_concurrency"] == n[i]);
    CHECK(p["completed"] == 40);
    for (const char* k : {"requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "ttft_s", "tpot_s", "itl_s", "e2e_s"})
      CHECK_MESSAGE(p.contains(k), k);
    CHECK(p["requests_per_s"].get<double>() * p["e2e_s"]["mean"].get<double>() ==
          doctest::Approx(static_cast<double>(n[i])).epsilon(1e-9));
    // 40 requests of 64 output tokens over the run: output tokens/s = 64 x requests/s,
    // total = (512 + 64) x requests/s.
    CHECK(p["output_tokens_per_s"].get<double>() == doctest::Approx(64 * p["requests_per_s"].get<double>()));
    CHECK(p["total_tokens_per_s"].get<double>() == doctest::Approx(576 * p["requests_per_s"].get<double>()));
  }
  CHECK(j["sweep"][0]["ttft_s"]["mean"] == j["latency"]["ttft_s"]["mean"]);
  const Run table = kvplan(base);
  REQUIRE(table.code == 0);
  CHECK(table.out.find("max concurrency") != std::string::npos);
  CHECK(table.out.find("ITL median") != std::string::npos);
}

TEST_CASE("simulate without a benchmark client prints the same keys as before") {
  const Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(!j.contains("client"));
  CHECK(!j.contains("sweep"));
  CHECK(!j["latency"].contains("itl_s"));
  CHECK(!j["throughput"].contains("total_tokens_per_s"));
  CHECK(!j["requests"].contains("warmup"));
}

TEST_CASE("simulate --replicas adds the fleet's keys to kvplan.sim/1 and leaves the rest as they were") {
  // 300 requests round-robin over 3 replicas: request i to replica i mod 3, 100 each.
  const std::string base = "simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 300 --format json";
  const Run one = kvplan(base);
  const Run fleet = kvplan(base + " --replicas 3 --router round-robin");
  REQUIRE(one.code == 0);
  REQUIRE(fleet.code == 0);
  const auto a = nlohmann::json::parse(one.out);
  const auto f = nlohmann::json::parse(fleet.out);
  CHECK_FALSE(a.contains("fleet"));
  for (const auto& item : a.items()) {  // new keys only
    const std::string key = item.key();
    CHECK_MESSAGE(f.contains(key), key);
  }
  CHECK(f["fleet"]["replicas"] == 3);
  CHECK(f["fleet"]["router"] == "round-robin");
  CHECK(f["fleet"]["gpus"] == 3);
  REQUIRE(f["fleet"]["per_replica"].size() == 3);
  for (const auto& r : f["fleet"]["per_replica"]) CHECK(r["requests"]["arrived"] == 100);
  CHECK(f["requests"]["arrived"] == 300);
  // The same stream at the same total rate: a fleet of one replica is the lone engine.
  const auto f1 = nlohmann::json::parse(kvplan(base + " --replicas 1").out);
  CHECK(f1["latency"] == a["latency"]);
  CHECK(f1["requests"] == a["requests"]);
  // CSV: one column per leaf, the replicas' by index.
  const Run csv = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --format csv "
                         "--replicas 2 --router least-kv");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.find("fleet.per_replica.1.requests.arrived") != std::string::npos);
  CHECK(csv.out.find("fleet.router") != std::string::npos);
}

TEST_CASE("simulate --replicas --timeseries leads each row with the replica") {
  const auto path = std::filesystem::temp_directory_path() / ("kvplan_fleet_ts_" + std::to_string(getpid()) + ".csv");
  std::filesystem::remove(path);
  const Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 40 --replicas 2 "
                       "--router least-outstanding --timeseries " + path.string());
  REQUIRE(r.code == 0);
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  CHECK(header.rfind("replica,time_s,", 0) == 0);
  bool seen[2] = {false, false};
  while (std::getline(in, row)) {
    const std::string replica = row.substr(0, row.find(','));
    REQUIRE((replica == "0" || replica == "1"));
    seen[replica == "1"] = true;
  }
  CHECK(seen[0]);
  CHECK(seen[1]);
  std::filesystem::remove(path);
}

TEST_CASE("simulate --disagg: kvplan.sim/1 plus a disagg object, with the catalog's link figures") {
  // Prefill on one H100 SXM, decode on two: 3 GPUs of one type fit an 8-GPU node, so the
  // KV crosses NVLink 4 at 450 GB/s per direction (H100 datasheet: 900 GB/s total) with
  // 14.1 us per transfer (NCCL's Simple-protocol latency, docs/gpus.md).
  const Run r = kvplan("simulate --model llama-3-8b --workload configs/workloads/chat.yaml --disagg "
                       "--prefill-pool h100-sxm --decode-pool h100-sxm:x2 --requests 300 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "kvplan.sim/1");
  CHECK(j["requests"]["arrived"] == 300);
  CHECK(j["requests"]["completed"].get<int>() + j["requests"]["rejected"].get<int>() == 300);
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s", "queue_s"})
    for (const char* p : {"p50", "p90", "p99"}) CHECK_MESSAGE(j["latency"][k].contains(p), k << "." << p);
  const auto& d = j["disagg"];
  CHECK(d["link"]["kind"] == "nvlink");
  CHECK(d["link"]["same_node"] == true);
  CHECK(d["link"]["bytes_per_s"].get<double>() == doctest::Approx(450e9));
  CHECK(d["link"]["latency_s"].get<double>() == doctest::Approx(14.1e-6));
  CHECK(d["prefill"]["instances"] == 1);
  CHECK(d["decode"]["instances"] == 2);
  CHECK(d["decode"]["gpus"] == 2);
  CHECK(d["transfer"]["count"] == j["requests"]["completed"]);
  // Every request's TTFT includes its transfer: the smallest TTFT is above the smallest
  // transfer (the p50s are ordered the same way).
  CHECK(j["latency"]["ttft_s"]["p50"].get<double>() > d["transfer"]["time_s"]["p50"].get<double>());
  // Llama-3-8B keeps 131,072 bytes of KV per token (2 x 32 layers x 8 heads x 128 x 2 B):
  // the mean transfer is a whole number of tokens' worth.
  const double tokens = d["transfer"]["bytes_mean"].get<double>() * d["transfer"]["count"].get<double>() / 131072.0;
  CHECK(tokens == doctest::Approx(std::round(tokens)));
}

TEST_CASE("validate --backend cpu passes every check but the timed ones and follows the kvplan.validate/1 contract") {
  const Run r = kvplan("validate --backend cpu --format json");
  REQUIRE((r.code == 0 || r.code == 1));  // 1: some check failed
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "kvplan.validate/1");
  CHECK(j["backend"] == "cpu");
  REQUIRE(j["checks"].size() > 10);
  bool all_pass = true;
  for (const auto& c : j["checks"]) {
    for (const char* k : {"name", "quantity", "unit", "predicted", "measured", "error", "tolerance", "pass"})
      CHECK_MESSAGE(c.contains(k), k);
    const std::string name = c["name"].get<std::string>();
    all_pass = all_pass && c["pass"].get<bool>();
    // Timed checks depend on the load of a shared core (tests/gpu_validate/timing_checks.h); the rest are
    // counts, bytes and arithmetic.
    if (!kvplan_test::is_timing_check(name)) CHECK_MESSAGE(c["pass"].get<bool>(), name);
  }
  CHECK(r.code == (all_pass ? 0 : 1));
}

TEST_CASE("validate --backend cpu --calibration-out writes a kvplan.calibration/2 file of host measurements") {
  const auto path = std::filesystem::temp_directory_path() / ("kvplan_cli_calib." + std::to_string(getpid()) + ".json");
  const Run r = kvplan("validate --backend cpu --quick --format json --calibration-out " + path.string());
  REQUIRE(r.code == 0);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  CHECK(j["schema"] == "kvplan.calibration/2");
  CHECK(j["device"].get<std::string>().rfind("cpu: ", 0) == 0);
  for (const char* k : {"source", "created", "measurements"}) CHECK_MESSAGE(j.contains(k), k);
  // --quick: one copy of 64 MiB, counted as read + written; the reference GEMM at m = 1, 64.
  REQUIRE(j["measurements"]["hbm_copy"].size() == 1);
  CHECK(j["measurements"]["hbm_copy"][0]["bytes"] == 134217728);
  CHECK(j["measurements"]["gemm"].size() == 2);
}

TEST_CASE("validate --backend cuda without a harness exits 2 and names the path") {
  const Run r = kvplan("validate --backend cuda --harness /nonexistent/kvplan_harness");
  CHECK(r.code == 2);
  CHECK(r.err.find("kvplan: error:") == 0);
  CHECK(r.err.find("/nonexistent/kvplan_harness") != std::string::npos);
}

TEST_CASE("validate --backend cuda runs the harness as a child process and renders its report") {
  // A stand-in harness: writes a one-check kvplan.validate/1 report to --out, exits 1.
  const auto dir = std::filesystem::temp_directory_path() / ("kvplan_fake_harness." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto harness = dir / "kvplan_harness";
  {
    std::ofstream f(harness);
    f << "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
         "printf '%s' '{\"schema\": \"kvplan.validate/1\", \"backend\": \"cuda\", \"device\": \"fake\", "
         "\"all_pass\": false, \"wall_s\": 0.5, \"checks\": [{\"group\": \"g\", \"name\": \"x\", "
         "\"quantity\": \"q\", \"unit\": \"s\", \"predicted\": 1, \"measured\": 2, \"error\": 1, "
         "\"tolerance\": 0.3, \"compare\": \"relative\", \"pass\": false, \"note\": \"n\"}]}' > \"$out\"\nexit 1\n";
  }
  std::filesystem::permissions(harness, std::filesystem::perms::owner_all);
  const Run r = kvplan("validate --backend cuda --harness " + harness.string() + " --format json");
  std::filesystem::remove_all(dir);
  CHECK(r.code == 1);  // a failed check
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["backend"] == "cuda");
  CHECK(j["device"] == "fake");
  REQUIRE(j["checks"].size() == 1);
  CHECK(j["checks"][0]["name"] == "x");
  CHECK(j["checks"][0]["measured"] == 2);
  CHECK(j["checks"][0]["pass"] == false);
}

TEST_CASE("size --evaluator planner says its rates are the planner's estimate, not a simulation") {
  // The planner's closed form can sit several times above the simulator's max rate
  // (docs/long-context.md), so its output must never read as simulated.
  const Run r = kvplan("size --model llama-3-8b --workload chat --gpus l40s --evaluator planner");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("estimated by the planner (not simulated)") != std::string::npos);
  CHECK(r.out.find("--evaluator planner, nothing simulated") != std::string::npos);
  CHECK(r.out.find("whose simulated p99") == std::string::npos);
  CHECK(r.out.find("found again with other seeds") == std::string::npos);
  const Run j = kvplan("size --model llama-3-8b --workload chat --gpus l40s --evaluator planner --format json");
  REQUIRE(j.code == 0);
  CHECK(nlohmann::json::parse(j.out)["search"]["evaluator"] == "planner");
  const Run s = kvplan("size --model llama-3-8b --workload chat --gpus l40s --requests 1000 --format json");
  REQUIRE(s.code == 0);
  CHECK(nlohmann::json::parse(s.out)["search"]["evaluator"] == "simulator");
}

TEST_CASE("plan --engine vllm prints the two lines vLLM logs at start-up") {
  const Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --engine vllm --max-model-len 8192 --context 8192");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("GPU KV cache size: ") != std::string::npos);
  CHECK(r.out.find("Maximum concurrency for 8,192 tokens per request: ") != std::string::npos);
}

TEST_CASE("plan --engine vllm@X prints what that release logs: an unknown release exits 2 listing the known ones") {
  Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --engine vllm@0.6.4 --max-model-len 8192 --context 8192");
  REQUIRE(r.code == 0);
  // V0 (0.6.4, vllm-project/vllm#10517): the block line, not V1's token line.
  CHECK(r.out.find("vLLM 0.6 would log") != std::string::npos);
  CHECK(r.out.find("# GPU blocks: ") != std::string::npos);
  CHECK(r.out.find("GPU KV cache size:") == std::string::npos);
  // 0.4 is the oldest release modelled (its V0 profile run, docs/engines.md); 0.5 has none.
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --engine vllm@0.3");
  CHECK(r.code == 2);
  CHECK(r.err.find("key '--engine': expected one of vllm@0.4, vllm@0.6, vllm@0.7,") != std::string::npos);
  CHECK(r.err.find("vllm@0.19, got 'vllm@0.3'") != std::string::npos);
}

// The verdict counts rejected requests and says why; no SLO
// means no verdict; nothing completed means no latencies, with the reason.
TEST_CASE("simulate: rejected requests miss the SLO with their count and reason") {
  const Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload tests/data/limits/long_prompts.yaml");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("prompts reach max_model_len 8,192)") != std::string::npos);
  CHECK(r.out.find("SLO at p99                  missed: ") != std::string::npos);
  CHECK(r.out.find("rejected ones count as failed") != std::string::npos);
  const Run j = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload tests/data/limits/long_prompts.yaml "
                       "--format json");
  REQUIRE(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  const auto rejected = doc["requests"]["rejected"].get<int64_t>();
  CHECK(rejected > 40);  // ~35 % of 200
  CHECK(doc["requests"]["rejected_max_model_len"].get<int64_t>() == rejected);
  CHECK(doc["slo"]["meets"] == false);
  CHECK(doc["slo"]["attainment"].get<double>() <= 1.0 - static_cast<double>(rejected) / 200.0 + 1e-12);
}

TEST_CASE("simulate without an SLO reports latencies and no verdict: with nothing completed, no latencies") {
  const Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload tests/data/limits/no_slo.yaml");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("SLO at p99                  no SLO in the workload") != std::string::npos);
  CHECK(r.out.find("50 completed, 0 rejected") != std::string::npos);
  const Run z = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload tests/data/limits/all_rejected.yaml");
  REQUIRE(z.code == 0);
  CHECK(z.out.find("0 completed, 20 rejected (20 prompts reach max_model_len 8,192)") != std::string::npos);
  CHECK(z.out.find("TTFT p50 / p90 / p99        none: no request completed (every one was rejected)") !=
        std::string::npos);
  // No latency printed as zero. The "wall" line is the simulator's own run time (33 us,
  // 40 us, ...), not a latency: left out, or a run of 40 us fails the check.
  const size_t wall = z.out.find("\nwall ");
  REQUIRE(wall != std::string::npos);
  const std::string latencies = z.out.substr(0, wall) + z.out.substr(z.out.find('\n', wall + 1));
  CHECK(latencies.find("0 us") == std::string::npos);
}

// What-ifs say so and print no engine log; batches that do not fit
// are marked.
TEST_CASE("plan marks what-ifs no engine runs and batches that do not fit") {
  const Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --engine vllm --kv-cache-dtype int2 --kv-quant kivi");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("would log") == std::string::npos);
  CHECK(r.out.find("vLLM v0.10.0 cannot run KV cache dtype int2") != std::string::npos);
  const Run f = kvplan("plan --model llama-3-8b --gpu h100-sxm --engine vllm --kv-cache-dtype fp8");
  REQUIRE(f.code == 0);
  CHECK(f.out.find("would log") != std::string::npos);
  CHECK(f.out.find("what-if") == std::string::npos);
  // Llama-2-70B TP 2 on A100-80GB holds 16 requests of 2,048 tokens (README): 17 do not fit.
  const Run b = kvplan("plan --model llama-2-70b --gpu a100-80gb --tp 2 --batch 16,17");
  REQUIRE(b.code == 0);
  CHECK(b.out.find("(no fit)") != std::string::npos);
  CHECK(b.out.find("no fit (llama-2-70b on a100-80gb, TP 2, context 2,048, batch 17, KV fp16): at most 16 requests") !=
        std::string::npos);
  CHECK(b.out.find("batch 16, KV fp16): at most") == std::string::npos);
}

TEST_CASE("the shipped H100 vLLM profile is the default time model: --calibration none is the roofline") {
  Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --format json");
  REQUIRE(r.code == 0);
  auto cal = nlohmann::json::parse(r.out)["calibration"];
  CHECK(cal["file"] == "configs/calibration/h100-sxm-vllm.json");
  CHECK(cal["device"] == "NVIDIA H100 80GB HBM3");
  CHECK(cal["fitted_on_gpu"] == "h100-sxm");

  // The catalog name and the path are the same profile.
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --calibration h100-sxm-vllm");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("calibration                 configs/calibration/h100-sxm-vllm.json (NVIDIA H100 80GB HBM3)\n") !=
        std::string::npos);

  // On another GPU the report says what carried over: L40S has no measured memory
  // bandwidth, so its memory-bound efficiencies stay the datasheet fraction; A100's take
  // (1.70 / 2.039) / (2.97 / 3.35) = 0.940 (configs/gpus `measured`).
  r = kvplan("simulate --model llama-3-8b --gpu l40s --workload chat --requests 50");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("fitted on h100-sxm, on l40s its efficiencies and host overheads, memory-bound ones at the datasheet "
                   "fraction (memory bandwidth not measured on both GPUs), all-reduce scaled to the link") !=
        std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu a100-80gb --workload chat --requests 50");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("on a100-80gb its efficiencies and host overheads, memory-bound ones x 0.940 by measured memory "
                   "bandwidth") != std::string::npos);

  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --calibration none --format json");
  REQUIRE(r.code == 0);
  cal = nlohmann::json::parse(r.out)["calibration"];
  CHECK(cal["file"].is_null());
  CHECK(cal["fitted_on_gpu"].is_null());
}

TEST_CASE("a calibration's measured-error statements reach the reports of the models they concern") {
  // One statement for every model, one for models with routed experts only.
  const auto dir = std::filesystem::temp_directory_path() / ("kvplan_accuracy." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto cal = dir / "cal.json";
  std::ofstream(cal) << R"({"schema": "kvplan.calibration/2", "device": "test GPU", "source": "test",
    "parameters": {"step_overhead_s": {"value": 0.001, "unit": "s", "source": "test"}},
    "accuracy": [{"scope": "all", "text": "ALL-MODELS statement"},
                 {"scope": "moe", "text": "MOE-ONLY statement"},
                 {"scope": "dense", "text": "DENSE-ONLY statement"},
                 {"scope": "all", "gpus": ["l40s"], "text": "L40S-ONLY statement"}]})";
  const std::string common = " --gpu h100-sxm --workload chat --requests 50 --calibration " + cal.string();

  Run r = kvplan("simulate --model llama-3-8b" + common);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("measured error              ALL-MODELS statement\n") != std::string::npos);
  CHECK(r.out.find("measured error              DENSE-ONLY statement\n") != std::string::npos);
  CHECK(r.out.find("MOE-ONLY") == std::string::npos);
  CHECK(r.out.find("L40S-ONLY") == std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu l40s --workload chat --requests 50 --calibration " + cal.string());
  REQUIRE(r.code == 0);
  CHECK(r.out.find("measured error              L40S-ONLY statement\n") != std::string::npos);

  r = kvplan("simulate --model mixtral-8x7b --tp 2 --format json" + common);
  REQUIRE(r.code == 0);
  const auto acc = nlohmann::json::parse(r.out)["calibration"]["accuracy"];
  REQUIRE(acc.size() == 2);
  CHECK(acc[0] == "ALL-MODELS statement");
  CHECK(acc[1] == "MOE-ONLY statement");

  // kvplan calibrate --merge carries the statements with the parameters they describe.
  const auto merged = dir / "merged.json";
  r = kvplan("calibrate configs/calibration/vidur-h100-measurements.json --merge " + cal.string() + " -o " +
             merged.string());
  REQUIRE(r.code == 0);
  std::ifstream in(merged);
  const auto j = nlohmann::json::parse(in);
  REQUIRE(j["accuracy"].size() == 4);
  CHECK(j["accuracy"][3]["gpus"][0] == "l40s");
  CHECK(j["accuracy"][1]["scope"] == "moe");
  CHECK(j["accuracy"][1]["text"] == "MOE-ONLY statement");
  std::filesystem::remove_all(dir);
}

TEST_CASE("plan --shared-prefix-tokens: the prefix's full blocks are held once for all requests") {
  // Llama-3-8B bf16: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B per token, a
  // 16-token block 2 MiB; the H100 pool of 28,096 blocks (README) holds 28,096 / 128 = 219
  // requests of 2,048 tokens. A 1,000-token system prompt fills 62 whole blocks (the 8
  // tokens of the 63rd are each request's own): (28,096 - 62) / (128 - 62) = 424.8 -> 424.
  const Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 2048 --shared-prefix-tokens 1000 --format json");
  REQUIRE(r.code == 0);
  const auto c = nlohmann::json::parse(r.out)["rows"][0]["capacity"];
  CHECK(c["num_blocks"] == 28096);
  CHECK(c["max_concurrent_requests"] == 219);
  CHECK(c["shared_prefix"]["shared_blocks"] == 62);
  CHECK(c["shared_prefix"]["blocks_per_request"] == 66);
  CHECK(c["shared_prefix"]["max_concurrent_requests"] == 424);
  const Run t = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 2048 --shared-prefix-tokens 1000");
  CHECK(t.out.find("1,000 tokens held once (62 blocks); at most 424 requests of 2,048 tokens fit (219 without sharing)") !=
        std::string::npos);
}

TEST_CASE("plan --ep/--dp: the ep and dp columns and keys appear only when a row uses them") {
  const Run plain = kvplan("plan --model deepseek-v3 --gpu h200 --format json");
  REQUIRE(plain.code == 0);
  CHECK_FALSE(nlohmann::json::parse(plain.out)["rows"][0].contains("ep"));
  // --enable-expert-parallel as vLLM spells it: EP = TP x DP = 8.
  const Run r = kvplan("plan --model deepseek-v3 --gpu h200 --tp 1 --dp 8 --enable-expert-parallel --format json");
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  CHECK(row["ep"] == 8);
  CHECK(row["dp"] == 8);
  // 8 DP ranks, each its own pool of num_blocks blocks of 16 tokens.
  CHECK(row["capacity"]["max_kv_tokens"].get<int64_t>() == 8 * 16 * row["capacity"]["num_blocks"].get<int64_t>());
  const Run csv = kvplan("plan --model deepseek-v3 --gpu h200 --tp 1 --dp 8 --ep 8 --format csv");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.rfind("model,gpu,tp,pp,ep,dp,", 0) == 0);
  CHECK(kvplan("plan --model deepseek-v3 --gpu h200 --format csv").out.rfind("model,gpu,tp,pp,context_tokens,", 0) == 0);
}

TEST_CASE("simulate --dp: the JSON and the text count the same GPUs, tp x dp x pp per replica") {
  // Two replicas of TP 1 x DP 2 (EP 2): 2 x (1 x 2 x 1) = 4 GPUs. The JSON once counted
  // replicas x tp x pp = 2 while the text said 4.
  const std::string args =
      "simulate --model mixtral-8x7b --gpu h100-sxm --tp 1 --dp 2 --enable-expert-parallel --replicas 2 "
      "--workload chat --requests 200";
  const Run json = kvplan(args + " --format json");
  REQUIRE(json.code == 0);
  CHECK(nlohmann::json::parse(json.out)["fleet"]["gpus"] == 4);
  const Run text = kvplan(args);
  REQUIRE(text.code == 0);
  CHECK(text.out.find("2 behind a round-robin router, 4 GPUs") != std::string::npos);
}
