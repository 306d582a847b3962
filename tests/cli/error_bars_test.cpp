// simulate's error bars, from a calibration file whose held-out errors are chosen so the
// bands can be worked by hand: five h100-sxm runs with TTFT and TPOT errors -0.2, -0.1,
// 0, 0.1, 0.25, i.e. measured / predicted = 1.25, 1.111, 1, 0.909, 0.8.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_kvplan.h"

namespace {

kvplan_test::Run kvplan(const std::string& args) { return kvplan_test::run_kvplan(args); }

const double kErrors[] = {-0.2, -0.1, 0, 0.1, 0.25};

std::string write(const std::string& name, const std::string& body) {
  const auto path = std::filesystem::temp_directory_path() / ("kvplan_error_bars." + std::to_string(getpid()) + name);
  std::ofstream(path) << body;
  return path.string();
}

std::string calibration_file() {
  nlohmann::json j = {{"schema", "kvplan.calibration/2"},
                      {"device", "NVIDIA H100 80GB HBM3"},
                      {"source", "test: five chosen errors"},
                      {"parameters", {{"step_overhead_s", {{"value", 0.0015}, {"unit", "s"}, {"source", "test"}}}}}};
  for (double e : kErrors)
    j["held_out_errors"].push_back({{"run", "r"}, {"gpu", "h100-sxm"}, {"moe", false}, {"ttft", e}, {"tpot", e}, {"e2e", e}});
  return write(".json", j.dump());
}

}  // namespace

TEST_CASE("simulate's error band is the central 80 % of the held-out runs' measured / predicted") {
  const std::string cal = calibration_file();
  kvplan_test::Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 300 --calibration " +
                              cal + " --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& b = j["error_bars"];
  REQUIRE(b.is_object());
  CHECK(b["runs"] == 5);
  CHECK(b["on_gpu"] == true);
  // Nearest rank of five factors: the 10th percentile is the smallest, 0.8, the 90th the
  // largest, 1.25.
  const double ttft = j["latency"]["ttft_s"]["p99"], tpot = j["latency"]["tpot_s"]["p99"];
  CHECK(b["ttft_p99_s"]["lo"].get<double>() == doctest::Approx(0.8 * ttft));
  CHECK(b["ttft_p99_s"]["hi"].get<double>() == doctest::Approx(1.25 * ttft));
  CHECK(b["tpot_p99_s"]["hi"].get<double>() == doctest::Approx(1.25 * tpot));
  // The share of runs whose factor keeps both p99s within chat's SLO (2 s, 100 ms).
  int met = 0;
  for (double e : kErrors) met += ttft / (1 + e) <= 2.0 && tpot / (1 + e) <= 0.1 ? 1 : 0;
  CHECK(b["slo_probability"].get<double>() == doctest::Approx(met / 5.0));
  CHECK(b["max_rate_per_s"].is_null());

  // On h200 no run was measured: the band borrows all five and says so.
  r = kvplan("simulate --model llama-3-8b --gpu h200 --workload chat --requests 300 --calibration " + cal);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("5 held-out runs on any GPU (too few on h200: wider, less certain)") != std::string::npos);

  // No held-out errors in the file: no band, JSON null.
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 300 --calibration none --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["error_bars"].is_null());
}

TEST_CASE("simulate's max rate band is the max rate against the SLO / f, divided by f") {
  // At the pessimistic edge f = 1.25: steps 1.25 x as long serve rate x as the model serves
  // 1.25 x, with latencies 1.25 x as long, so the true max rate against chat's SLO is the
  // model's against (2 s, 100 ms) / 1.25 = (1.6 s, 80 ms), divided by 1.25.
  const std::string cal = calibration_file();
  const std::string common = " --gpu h100-sxm --model llama-3-8b --find-max-rate --max-rate-requests 1000 "
                             "--max-rate-seeds 1 --calibration " + cal + " --format json";
  const kvplan_test::Run r = kvplan("simulate --workload chat --requests 300" + common);
  REQUIRE(r.code == 0);
  const auto band = nlohmann::json::parse(r.out)["error_bars"]["max_rate_per_s"];
  REQUIRE(band.is_object());
  const std::string tight = write(".yaml",
                                  "name: chat-tight\nrequests: 300\narrival: {process: poisson, rate_per_s: 11}\n"
                                  "prompt_tokens: {dist: lognormal, mean: 1155, sigma: 0.985, min: 1, max: 7000}\n"
                                  "output_tokens: {dist: lognormal, mean: 211, sigma: 0.859, min: 1, max: 1000}\n"
                                  "slo: {ttft_p99_s: 1.6, tpot_p99_s: 0.08}\n");
  const kvplan_test::Run t = kvplan("simulate --workload " + tight + common);
  REQUIRE(t.code == 0);
  const double model_rate = nlohmann::json::parse(t.out)["max_rate_per_s"];
  CHECK(band["lo"].get<double>() == doctest::Approx(model_rate / 1.25));
  CHECK(band["lo"].get<double>() < band["hi"].get<double>());
}

TEST_CASE("size carries the measured error into the recommendation: probability and replicas at 0.9 and 0.99") {
  const std::string cal = calibration_file();
  const kvplan_test::Run r = kvplan("size --model llama-3-8b --workload chat --gpus h100-sxm --requests 1000 "
                                    "--calibration " + cal + " --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& rec = j["recommendations"][0];
  const auto& c = rec["slo_confidence"];
  REQUIRE(c.is_object());
  CHECK(c["runs"] == 5);
  REQUIRE(c["levels"].size() == 2);
  const auto& option = j["options"][rec["rank"].get<size_t>() - 1];
  for (const auto& l : c["levels"]) {
    // Five runs: a probability of 0.9 or 0.99 needs every run, so the worst (1 + e = 0.8)
    // decides: the SLO x 0.8, the rate x 0.8, below the model's own max rate.
    CHECK(l["worst_run"] == true);
    CHECK(l["max_rate_per_s"].get<double>() < option["max_rate_per_s"].get<double>());
    CHECK(l["replicas"].get<int>() >= option["replicas"].get<int>());
  }
  CHECK(c["levels"][0]["max_rate_per_s"] == c["levels"][1]["max_rate_per_s"]);
}
