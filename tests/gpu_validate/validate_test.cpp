#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu_validate/datasheets.h"
#include "gpu_validate/validate.h"
#include "tests/gpu_validate/timing_checks.h"

using namespace kvplan;
using namespace kvplan::gv;

TEST_CASE("make_check computes the relative error and applies each comparison") {
  const Check r = make_check("g", "n", "q", "u", 100, 110, Compare::relative, 0.1);
  CHECK(r.error == doctest::Approx(0.1));
  CHECK(r.pass);
  CHECK_FALSE(make_check("g", "n", "q", "u", 100, 111, Compare::relative, 0.1).pass);
  CHECK(make_check("g", "n", "q", "u", 5, 5, Compare::exact, 0).pass);
  CHECK_FALSE(make_check("g", "n", "q", "u", 5, 6, Compare::exact, 0).pass);
  CHECK(make_check("g", "n", "q", "u", 1, 2, Compare::at_least, 0).pass);
  CHECK_FALSE(make_check("g", "n", "q", "u", 1, 2, Compare::at_most, 0).pass);
  CHECK(make_check("g", "n", "q", "u", 46, 3, Compare::info, 0).pass);
}

namespace {
// The quick CPU run, once for the test cases that read it (it takes seconds).
const Report& quick_cpu_report() {
  static const Report r = [] {
    Options o;
    o.quick = true;
    return run_validation(o);
  }();
  return r;
}

bool is_int(const nlohmann::json& v) { return v.is_number_integer(); }
bool is_pos(const nlohmann::json& v) { return v.is_number() && v.get<double>() > 0; }
}  // namespace

TEST_CASE("the calibration file holds every key of the kvplan.calibration/2 contract") {
  // Hand-set values: each must come back under the contract's key (docs/calibration.md).
  CalibrationOut c;
  c.device = "NVIDIA H200";
  c.gpu = "h200";
  c.source = "test";
  c.created = "2026-12-01";
  c.parameters = {{"bandwidth_efficiency", 0.9, "fraction", "copy / datasheet"},
                  {"runtime_reserve_bytes", 600.0 * (1 << 20), "B", "total - free"}};
  c.hbm_copy = {{int64_t{1} << 31, 1e-3}};
  c.gemm = {{1, 6144, 4096, "bf16", 2e-5}, {8192, 6144, 4096, "fp8", 3e-4}};
  c.decode_attention = {{"gqa", 32, 4096, 32, 8, 128, "bf16", 268435456, 7e-5}};
  c.launch = {{"eager", 1000, 2.5e-3}, {"graph", 1000, 1.1e-3}};
  c.all_reduce = {{2, 1 << 20, 1e-5}};
  const auto j = nlohmann::json::parse(calibration_json(c));
  CHECK(j["schema"] == "kvplan.calibration/2");
  CHECK(j["device"] == "NVIDIA H200");
  CHECK(j["gpu"] == "h200");
  CHECK(j["source"] == "test");
  CHECK(j["created"] == "2026-12-01");
  CHECK(j["parameters"]["bandwidth_efficiency"]["value"] == 0.9);
  CHECK(j["parameters"]["bandwidth_efficiency"]["unit"] == "fraction");
  CHECK(j["parameters"]["runtime_reserve_bytes"]["source"] == "total - free");
  const auto& m = j["measurements"];
  CHECK(m["hbm_copy"][0]["bytes"] == int64_t{1} << 31);
  CHECK(m["hbm_copy"][0]["time_s"] == 1e-3);
  CHECK(m["gemm"][1]["m"] == 8192);
  CHECK(m["gemm"][1]["n"] == 6144);
  CHECK(m["gemm"][1]["k"] == 4096);
  CHECK(m["gemm"][1]["dtype"] == "fp8");
  const auto& a = m["decode_attention"][0];
  for (const char* k : {"kind", "batch", "context_tokens", "q_heads", "kv_heads", "head_dim", "kv_dtype",
                        "bytes_read", "time_s"})
    CHECK_MESSAGE(a.contains(k), k);
  CHECK(a["bytes_read"] == 268435456);
  CHECK(m["launch"][1]["mode"] == "graph");
  CHECK(m["launch"][1]["kernels"] == 1000);
  CHECK(m["all_reduce"][0]["gpus"] == 2);
  CHECK(m["all_reduce"][0]["bytes"] == 1 << 20);
}

TEST_CASE("the CPU backend measures a calibration file through the same writer") {
  const CalibrationOut& c = quick_cpu_report().calibration;
  const auto j = nlohmann::json::parse(calibration_json(c));
  CHECK(j["schema"] == "kvplan.calibration/2");
  REQUIRE(j["device"].is_string());
  CHECK(j["device"].get<std::string>().rfind("cpu: ", 0) == 0);
  CHECK(j["source"].get<std::string>().find("--backend cpu") != std::string::npos);
  CHECK(j["created"] == utc_date());
  REQUIRE(j["created"].get<std::string>().size() == 10);  // YYYY-MM-DD
  // No datasheet on a CPU: no efficiencies, so no parameters object (measurements only).
  CHECK_FALSE(j.contains("parameters"));
  const auto& m = j["measurements"];
  REQUIRE(m["hbm_copy"].size() == 1);  // --quick: one 64 MiB copy, read + written
  CHECK(m["hbm_copy"][0]["bytes"] == int64_t{2} * (int64_t{64} << 20));
  CHECK(is_pos(m["hbm_copy"][0]["time_s"]));
  REQUIRE(m["gemm"].size() == 2);  // --quick: m = 1 and 64 of the reference's 256 x 256 GEMM
  for (const auto& g : m["gemm"]) {
    CHECK(is_int(g["m"]));
    CHECK(g["n"] == 256);
    CHECK(g["k"] == 256);
    CHECK(g["dtype"] == "fp32");
    CHECK(is_pos(g["time_s"]));
  }
  CHECK(m["gemm"][0]["m"] == 1);
  CHECK(m["gemm"][1]["m"] == 64);
}

TEST_CASE("datasheets come from configs/gpus and match the device name exactly") {
  const auto h200 = datasheet_for_device("NVIDIA H200");
  REQUIRE(h200);
  CHECK(h200->gpu == "h200");
  CHECK(h200->bandwidth_bytes_per_s == 4.8e12);  // H200 datasheet: 4.8 TB/s
  CHECK(h200->bf16_flops_per_s == 989.4e12);     // 1,979 TFLOPS sparse / 2
  CHECK(h200->fp32_flops_per_s == 67e12);
  const auto sxm = datasheet_for_device("NVIDIA H100 80GB HBM3");
  REQUIRE(sxm);
  CHECK(sxm->gpu == "h100-sxm");
  CHECK(sxm->bandwidth_bytes_per_s == 3.35e12);
  const auto l4 = datasheet_for_device("NVIDIA L4");
  REQUIRE(l4);
  CHECK(l4->bandwidth_bytes_per_s == 300e9);
  // Not substrings: an L40 is not an L4, an H100 NVL is not the SXM part, an A100 80GB
  // PCIe (1,935 GB/s) is not the SXM4 one (2,039 GB/s).
  CHECK_FALSE(datasheet_for_device("NVIDIA L40"));
  CHECK_FALSE(datasheet_for_device("NVIDIA H100 NVL"));
  CHECK_FALSE(datasheet_for_device("NVIDIA A100 80GB PCIe"));
  CHECK_FALSE(datasheet_for_device("NVIDIA H200 NVL"));
  const auto a100 = datasheet_for_device("NVIDIA A100-SXM4-40GB");
  REQUIRE(a100);
  CHECK(a100->fp8_flops_per_s == 0);  // Ampere has no fp8
}

TEST_CASE("GEMM shapes come from the catalog models' layers") {
  auto has = [](int64_t n, int64_t k) {
    for (const GemmShape& s : catalog_gemm_shapes())
      if (s.n == n && s.k == k) return true;
    return false;
  };
  // Llama-3-8B: hidden 4096, 32 heads of 128, 8 KV heads, MLP 14336 (config.json):
  // fused QKV (32 + 2 x 8) x 128 = 6144 outputs; gate+up 2 x 14336 = 28672.
  CHECK(has(6144, 4096));
  CHECK(has(4096, 4096));
  CHECK(has(28672, 4096));
  CHECK(has(4096, 14336));
  // Llama-3.1-405B: hidden 16384, 128 + 2 x 8 heads of 128 = 18432; MLP 53248.
  CHECK(has(18432, 16384));
  CHECK(has(106496, 16384));
  // Phi-2's MLP is not gated: fc1 is 10240 x 2560, never 20480.
  CHECK(has(10240, 2560));
  CHECK_FALSE(has(20480, 2560));
  // DeepSeek-V3 (MLA): no fused-QKV shape from 128 heads x 56 (hidden / heads).
  CHECK_FALSE(has((128 + 2 * 128) * 56, 7168));
}

TEST_CASE("report_json writes the kvplan.validate/1 schema with every check") {
  Report r;
  r.device = "cpu \"quoted\"";
  r.checks.push_back(make_check("g", "a", "q", "u", 1, 1, Compare::exact, 0));
  const std::string j = report_json(r);
  CHECK(j.find("\"schema\": \"kvplan.validate/1\"") != std::string::npos);
  CHECK(j.find("\"backend\": \"cpu\"") != std::string::npos);
  CHECK(j.find("\"device\": \"cpu \\\"quoted\\\"\"") != std::string::npos);
  CHECK(j.find("\"pass\": true") != std::string::npos);
}

TEST_CASE("the quick CPU validation passes every check but the timed ones, which it runs") {
  const Report& r = quick_cpu_report();
  CHECK(r.backend == Backend::cpu);
  CHECK(r.checks.size() > 30);
  int timed = 0;
  for (const Check& c : r.checks) {
    CAPTURE(c.name);
    CAPTURE(c.predicted);
    CAPTURE(c.measured);
    CHECK(std::isfinite(c.measured));
    if (kvplan_test::is_timing_check(c.name)) {
      ++timed;  // a time on a shared core: its pass depends on the machine's load
      CHECK(c.measured > 0);
    } else {
      CHECK(c.pass);
    }
  }
  // naive/cached at T 8 and 32, the growth between them, and three attention speed-ups.
  CHECK(timed == 2 + 1 + 2);
}

TEST_CASE("run_validation runs the CPU backend only: CUDA lives in the harness") {
  Options o;
  o.backend = Backend::cuda;
  CHECK_THROWS_AS(run_validation(o), std::runtime_error);
}
