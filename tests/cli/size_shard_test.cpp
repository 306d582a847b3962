// size --shard I/N and kvplan merge (cli/size_shard.cpp) through the real binary.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_kvplan.h"

using kvplan_test::run_kvplan;
namespace fs = std::filesystem;

namespace {
const std::string kSearch = "size --model qwen3-8b --gpus h100-sxm,l40s --workload chat --requests 1000";
fs::path shard_path(const std::string& tag, int i) {
  return fs::path(KVPLAN_TEST_TMP_DIR) / ("shard-" + tag + "-" + std::to_string(i) + ".json");
}
std::string read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}
}  // namespace

TEST_CASE("three shards merged print byte for byte what the unsharded search prints") {
  const auto whole = run_kvplan(kSearch + " --format json");
  REQUIRE_MESSAGE(whole.code == 0, whole.err);
  std::string files;
  for (int i = 0; i < 3; ++i) {
    // Each shard on its own thread count: the answer does not depend on it.
    const auto r = run_kvplan(kSearch + " --threads " + std::to_string(i + 1) + " --shard " + std::to_string(i) +
                              "/3 --force -o " + shard_path("a", i).string());
    REQUIRE_MESSAGE(r.code == 0, r.err);
    files += " " + shard_path("a", i).string();
  }
  // In any order.
  const auto merged = run_kvplan("merge" + files + " --format json");
  REQUIRE_MESSAGE(merged.code == 0, merged.err);
  CHECK(merged.out == whole.out);
  const auto table = run_kvplan("merge " + shard_path("a", 2).string() + " " + shard_path("a", 0).string() + " " +
                                shard_path("a", 1).string());
  CHECK(table.out == run_kvplan(kSearch).out);

  // The slices are disjoint and cover every candidate the shards simulated.
  size_t evaluated = 0;
  for (int i = 0; i < 3; ++i) {
    const auto doc = nlohmann::json::parse(read(shard_path("a", i)));
    for (const auto& [key, e] : doc["evaluations"].items()) CHECK(std::stoll(key) % 3 == i);
    evaluated += doc["evaluations"].size();
  }
  CHECK(evaluated > 0);
}

TEST_CASE("merge reads the shards' evaluations and refuses an incomplete or mixed set") {
  for (int i = 0; i < 2; ++i) {
    const auto r = run_kvplan(kSearch + " --shard " + std::to_string(i) + "/2 --force -o " + shard_path("b", i).string());
    REQUIRE_MESSAGE(r.code == 0, r.err);
  }
  const std::string both = shard_path("b", 0).string() + " " + shard_path("b", 1).string();
  // A doubled max rate in a shard shows in the merged answer: it was read, not re-simulated.
  auto doc = nlohmann::json::parse(read(shard_path("b", 0)));
  REQUIRE(!doc["evaluations"].empty());
  for (auto& [key, e] : doc["evaluations"].items()) e["max_rate_per_s"] = "0x1p+20";
  std::ofstream(shard_path("b", 9)) << doc.dump();
  const auto edited = run_kvplan("merge " + shard_path("b", 9).string() + " " + shard_path("b", 1).string() + " --format json");
  REQUIRE_MESSAGE(edited.code == 0, edited.err);
  CHECK(edited.out != run_kvplan("merge " + both + " --format json").out);

  const auto missing = run_kvplan("merge " + shard_path("b", 0).string());
  CHECK(missing.code == 2);
  CHECK(missing.err.find("all 2 shards of the sweep, got 1 of them") != std::string::npos);
  const auto twice = run_kvplan("merge " + shard_path("b", 0).string() + " " + shard_path("b", 0).string());
  CHECK(twice.code == 2);
  CHECK(twice.err.find("each shard once") != std::string::npos);
  // A shard of another sweep (other arguments) does not belong.
  const auto other = run_kvplan(kSearch + " --seed 1 --shard 1/2 --force -o " + shard_path("b", 8).string());
  REQUIRE_MESSAGE(other.code == 0, other.err);
  const auto mixed = run_kvplan("merge " + shard_path("b", 0).string() + " " + shard_path("b", 8).string());
  CHECK(mixed.code == 2);
  CHECK(mixed.err.find("the same size arguments in every shard") != std::string::npos);
}
