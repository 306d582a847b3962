// simulate and size say, beside the latency figures, when no measured error statement of
// the calibration covers the GPU they ran on: the shipped profile
// (configs/calibration/h100-sxm-vllm.json) measured its error on h100-sxm only.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_kvplan.h"

namespace {

kvplan_test::Run kvplan(const std::string& args) { return kvplan_test::run_kvplan(args); }

}  // namespace

TEST_CASE("simulate on a GPU without a measured error statement says its latencies are unmeasured") {
  kvplan_test::Run r = kvplan("simulate --model llama-3-8b --gpu h200 --workload chat --requests 50");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("measured error              none on h200: its latency figures are unmeasured") != std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu h200 --workload chat --requests 50 --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["calibration"]["unmeasured_on_gpu"] == true);
  // On h100-sxm the profile's own statement stands, and nothing says unmeasured.
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("unmeasured") == std::string::npos);
  CHECK(r.out.find("measured error              h100-sxm: held-out abs. error") != std::string::npos);
}

TEST_CASE("size names the GPUs among its options that no measured error covers") {
  kvplan_test::Run r =
      kvplan("size --model llama-3-8b --workload chat --gpus h100-sxm,h200 --requests 1000 --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["search"]["unmeasured_gpus"] == nlohmann::json::array({"h200"}));
  r = kvplan("size --model llama-3-8b --workload chat --gpus h100-sxm,h200 --requests 1000");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Unmeasured: no measured error of the time model covers h200") != std::string::npos);
}
