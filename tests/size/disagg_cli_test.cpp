// `kvplan size --disagg` as a user runs it: the JSON gains one key and keeps the others,
// the verdict names a winner, and impossible pools exit 2 naming --disagg.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/run_kvplan.h"

namespace {

using kvplan_test::Run;

// Two 8B layouts on one GPU at 1,000 requests per probe: a few seconds.
const std::string kSize =
    "size --model llama-3-8b --workload chat --gpus h100-sxm --requests 1000 --quantization none "
    "--kv-cache-dtype auto --tensor-parallel-size 1 --threads 1 --format json ";

}  // namespace

TEST_CASE("size --disagg adds the 'disaggregated' key and leaves the aggregated JSON as it was") {
  const Run plain = kvplan_test::run_kvplan(kSize);
  const Run dis = kvplan_test::run_kvplan(kSize + "--disagg 1P1D,1P2D --disagg-all");
  REQUIRE(plain.code == 0);
  REQUIRE(dis.code == 0);
  auto a = nlohmann::json::parse(plain.out);
  auto b = nlohmann::json::parse(dis.out);
  CHECK_FALSE(a.contains("disaggregated"));
  REQUIRE(b.contains("disaggregated"));
  const auto d = b["disaggregated"];
  b.erase("disaggregated");
  CHECK(a == b);
  // 1 prefill GPU x 1 decode GPU x TP 1 x TP 1 x 2 ratios, none pruned (--disagg-all).
  CHECK(d["candidates"] == 2);
  CHECK(d["simulated"] == 2);
  REQUIRE(d["verdicts"].size() == 1);
  const std::string winner = d["verdicts"][0]["winner"];
  CHECK((winner == "aggregated" || winner == "disaggregated"));
  // 1P2D of TP 1 H100s: 3 GPUs per unit.
  for (const auto& o : d["options"])
    if (o["xpyd"] == "1P2D" && o["found"] == true) CHECK(o["gpus_total"].get<int64_t>() % 3 == 0);
}

TEST_CASE("size --disagg with an impossible pool exits 2 naming the flag") {
  for (const char* bad : {"--disagg 0P1D", "--disagg 1P0D", "--disagg 2x3", "--disagg 1P2D,"}) {
    CAPTURE(bad);
    const Run r = kvplan_test::run_kvplan(kSize + bad);
    CHECK(r.code == 2);
    CHECK(r.err.find("--disagg") != std::string::npos);
  }
}
