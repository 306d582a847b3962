// simulate and size say, as plan does, when a replica spans more than one scale-up
// domain and which link its collectives then pay. h100-sxm (configs/gpus/h100-sxm.yaml):
// an 8-GPU HGX board (scale_up.domain_gpus 8), one 400 Gb/s ConnectX-7 per GPU
// (kv_links.rdma 50e9 B/s = 50 GB/s). TP 16 = 2 boards: ceil(16 / 8) = 2 domains.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_kvplan.h"

namespace {

kvplan_test::Run kvplan(const std::string& args) { return kvplan_test::run_kvplan(args); }

constexpr const char* kNote =
    "TP 16 x PP 1 x DP 1 = 16 GPUs span 2 scale-up domains of 8 GPUs: TP all-reduces (hierarchical: within 8 GPUs "
    "at the GPU link, then across 2 domains) cross the scale-out link (50 GB/s per GPU)";

}  // namespace

TEST_CASE("simulate names the scale-out link a TP group beyond the board pays") {
  const std::string run = "simulate --model llama-3.1-70b --gpu h100-sxm --workload chat --requests 50";
  kvplan_test::Run r = kvplan(run + " --tp 16");
  REQUIRE(r.code == 0);
  CHECK(r.out.find(std::string("scale-out                   ") + kNote) != std::string::npos);
  r = kvplan(run + " --tp 16 --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["scale_out_note"] == kNote);
  // TP 8 fits the board: no row, a null in JSON.
  r = kvplan(run + " --tp 8");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("scale-out") == std::string::npos);
  r = kvplan(run + " --tp 8 --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["scale_out_note"].is_null());
}

TEST_CASE("size names the scale-out link of the options that span domains") {
  const std::string run = "size --model llama-3.1-70b --workload chat --gpus h100-sxm --requests 1000 --quantization none";
  kvplan_test::Run r = kvplan(run + " --tp 16");
  REQUIRE(r.code == 0);
  CHECK(r.out.find(std::string("Scale-out: ") + kNote + ".") != std::string::npos);
  r = kvplan(run + " --tp 8,16 --format json");
  REQUIRE(r.code == 0);
  // Each option's layout carries its own note, pruned or not: TP 16 the one above, TP 8 null.
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int spanning = 0, within = 0;
  for (const nlohmann::json& o : j["options"]) {
    if (o["tp"] == 16) {
      CHECK(o["scale_out_note"] == kNote);
      ++spanning;
    } else {
      CHECK(o["scale_out_note"].is_null());
      ++within;
    }
  }
  CHECK(spanning > 0);
  CHECK(within > 0);
  // Only the options that were evaluated are named among the assumptions: TP 8 alone, none.
  r = kvplan(run + " --tp 8");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Scale-out") == std::string::npos);
}
