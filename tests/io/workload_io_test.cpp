// Tests of io/workload_io.h: the shipped workloads load; bad files give an InputError
// naming the file and the key; traces are found beside the workload, then under the root.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/workload_io.h"
#include "planner/types.h"

using namespace kvplan;
namespace fs = std::filesystem;

namespace {

//! A scratch folder for this test binary, emptied on first use.
fs::path scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / "kvplan_workload_io_test";
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p;
}

const char* kGood = R"(name: t
requests: 100
arrival: {process: poisson, rate_per_s: 2.5}
prompt_tokens: {dist: lognormal, mean: 600, sigma: 1.0, max: 8192}
output_tokens: {dist: fixed, value: 256}
slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}
)";

//! Replaces the first occurrence of `from` in kGood.
std::string good_with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

//! Parsing `text` throws an InputError for file `file` and key `key`.
void check_error(const std::string& text, const std::string& key, const std::string& file = "w.yaml") {
  CAPTURE(text);
  try {
    io::parse_workload(text, file);
    FAIL("no error for key " << key);
  } catch (const InputError& e) {
    CHECK(e.file() == file);
    CHECK(e.key() == key);
    CHECK(std::string(e.what()).find(file) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a workload file gives its arrival, lengths and SLO") {
  const Workload w = io::parse_workload(kGood, "w.yaml");
  CHECK(w.name == "t");
  CHECK(w.requests == 100);
  CHECK(w.arrival.process == ArrivalProcess::poisson);
  CHECK(w.arrival.rate_per_s == 2.5);
  CHECK(w.prompt_tokens.kind == LengthKind::lognormal);
  CHECK(w.prompt_tokens.mean == 600);
  CHECK(w.prompt_tokens.sigma == 1.0);
  CHECK(w.prompt_tokens.min == 1);
  CHECK(w.prompt_tokens.max == 8192);
  CHECK(w.output_tokens.kind == LengthKind::fixed);
  CHECK(w.output_tokens.value == 256);
  CHECK(w.slo.ttft_p99_s == 2.0);
  CHECK(w.slo.tpot_p99_s == 0.1);
  CHECK_FALSE(w.trace);
}

TEST_CASE("gamma arrivals need a coefficient of variation") {
  const Workload w = io::parse_workload(
      good_with("{process: poisson, rate_per_s: 2.5}", "{process: gamma, rate_per_s: 4, cv: 3}"), "w.yaml");
  CHECK(w.arrival.process == ArrivalProcess::gamma);
  CHECK(w.arrival.cv == 3.0);
  check_error(good_with("{process: poisson, rate_per_s: 2.5}", "{process: gamma, rate_per_s: 4}"), "arrival.cv");
}

TEST_CASE("a workload file with a missing, negative, unknown or misspelled key names it") {
  check_error(good_with("arrival: {process: poisson, rate_per_s: 2.5}\n", ""), "arrival");
  check_error(good_with("requests: 100\n", ""), "requests");
  check_error(good_with("slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}", "slo: {ttft_p99_s: 2.0}"), "slo.tpot_p99_s");
  check_error(good_with("rate_per_s: 2.5", "rate_per_s: -3"), "arrival.rate_per_s");
  check_error(good_with("rate_per_s: 2.5", "rate_per_s: 0"), "arrival.rate_per_s");
  check_error(good_with("process: poisson", "process: hawkes"), "arrival.process");
  check_error(good_with("dist: fixed", "dist: zipf"), "output_tokens.dist");
  check_error(good_with("dist: fixed, value: 256", "dist: fixed"), "output_tokens.value");
  check_error(good_with("dist: fixed, value: 256", "dist: uniform, min: 10, max: 5"), "output_tokens.max");
  check_error(good_with("sigma: 1.0", "sigma: -1"), "prompt_tokens.sigma");
  check_error(good_with("mean: 600", "maen: 600"), "prompt_tokens.maen");
  check_error(good_with("value: 256", "value: 0"), "output_tokens.value");
  check_error(good_with("requests: 100", "requests: many"), "requests");
  check_error(good_with("output_tokens: {dist: fixed, value: 256}", "output_tokens: 256"), "output_tokens");
  check_error("just a string", "");
}

TEST_CASE("random: vLLM bench's random dataset sets both length distributions") {
  // input 1,000 at range ratio 0.25: uniform [750, 1250], after a shared prefix of 100:
  // [850, 1350]; output 100: [75, 125] (vllm/benchmarks/datasets/random.py).
  const std::string lengths =
      "prompt_tokens: {dist: lognormal, mean: 600, sigma: 1.0, max: 8192}\n"
      "output_tokens: {dist: fixed, value: 256}\n";
  const std::string text =
      good_with(lengths, "random: {input_len: 1000, output_len: 100, range_ratio: 0.25, prefix_len: 100}\n");
  const Workload w = io::parse_workload(text, "w.yaml");
  CHECK(w.random.given());
  CHECK(w.prompt_tokens.kind == LengthKind::uniform);
  CHECK(w.prompt_tokens.min == 850);
  CHECK(w.prompt_tokens.max == 1350);
  CHECK(w.output_tokens.min == 75);
  CHECK(w.output_tokens.max == 125);
  CHECK(w.random.prefix_len == 100);
  // range_ratio and prefix_len default to vLLM's 0.
  const Workload plain = io::parse_workload(good_with(lengths, "random: {input_len: 64, output_len: 8}\n"), "w.yaml");
  CHECK(plain.prompt_tokens.kind == LengthKind::fixed);
  CHECK(plain.prompt_tokens.value == 64);
  check_error(good_with(lengths, "random: {input_len: 64, output_len: 8, range_ratio: 1}\n"), "random.range_ratio");
  check_error(good_with(lengths, "random: {input_len: 64}\n"), "random.output_len");
  check_error(good_with(lengths, "random: {input_len: 64, output_len: 8, ratio: 0.5}\n"), "random.ratio");
  check_error(good_with("output_tokens: {dist: fixed, value: 256}\n", "random: {input_len: 64, output_len: 8}\n"),
              "prompt_tokens");
}

TEST_CASE("a trace is found beside the workload file and its rows are checked") {
  write("set/traces/t.csv", "arrival_s,prompt_tokens,output_tokens\n5.0,100,10\n5.5,200,20\n7.0,300,30\n");
  std::string text = good_with("requests: 100\n", "trace: ../traces/t.csv\n");
  const std::string poisson = "{process: poisson, rate_per_s: 2.5}";
  text.replace(text.find(poisson), poisson.size(), "{process: trace}");
  const fs::path wf = write("set/workloads/w.yaml", text);
  const Workload w = io::load_workload(wf.string());
  REQUIRE(w.trace);
  CHECK(w.requests == 3);  // every row when requests is not given
  REQUIRE(w.trace->size() == 3);
  CHECK((*w.trace)[0].arrival_s == 0.0);  // shifted to start at 0
  CHECK((*w.trace)[2].arrival_s == 2.0);
  CHECK((*w.trace)[1].prompt_tokens == 200);
  CHECK((*w.trace)[2].output_tokens == 30);
  CHECK(w.base_rate_per_s() == doctest::Approx(1.0));

  // A trace that is not there: the workload file and key `trace` are named.
  check_error(good_with("requests: 100\n", "trace: ../traces/none.csv\n"), "trace", wf.string());
  // A length distribution `trace` needs the key.
  check_error(good_with("dist: fixed, value: 256", "dist: trace"), "trace");
}

TEST_CASE("a trace CSV with a bad header, a bad field or arrivals out of order is rejected") {
  const auto error_key = [](const std::string& csv) {
    try {
      io::parse_trace(csv, "t.csv");
    } catch (const InputError& e) {
      CHECK(e.file() == "t.csv");
      return e.key();
    }
    return std::string("no error");
  };
  const std::string h = "arrival_s,prompt_tokens,output_tokens\n";
  CHECK(error_key("time,prompt,output\n0,1,1\n") == "");
  CHECK(error_key(h) == "");
  CHECK(error_key(h + "0,1\n") == "");
  CHECK(error_key(h + "x,1,1\n") == "arrival_s");
  CHECK(error_key(h + "-1,1,1\n") == "arrival_s");
  CHECK(error_key(h + "0,0,1\n") == "prompt_tokens");
  CHECK(error_key(h + "0,1.5,1\n") == "prompt_tokens");
  CHECK(error_key(h + "0,1,\n") == "output_tokens");
  CHECK(error_key(h + "2,1,1\n1,1,1\n") == "arrival_s");
  CHECK(io::parse_trace(h + "0.5, 7 ,8\r\n\n", "t.csv").size() == 1);
}

TEST_CASE("the shipped workloads load, and the trace workloads find the shipped traces") {
  for (const char* name : {"chat", "code", "summarization", "azure-conv", "azure-code"}) {
    CAPTURE(name);
    Workload w;
    REQUIRE_NOTHROW(w = io::load_workload(name));
    CHECK(w.requests > 0);
    CHECK(w.slo.ttft_p99_s > 0);
    CHECK(w.slo.tpot_p99_s > 0);
    CHECK_FALSE(w.source.empty());
  }
  // The README's figures for the two traces.
  CHECK(io::load_workload("azure-conv").trace->size() == 19366);
  CHECK(io::load_workload("azure-code").requests == 8819);
}

TEST_CASE("stages and shared_prefix are read, and requests default to the stages' rate x duration") {
  // 2.5/s x 600 s + 6/s x 600 s = 1500 + 3600 = 5100 requests over 1200 s: 4.25/s mean.
  const Workload w = io::parse_workload(
      "arrival: {process: fixed, stages: [{rate_per_s: 2.5, duration_s: 600}, {rate_per_s: 6.0, duration_s: 600}]}\n"
      "shared_prefix: {groups: 9, users_per_group: 5, system_prompt_tokens: 100, multi_turn: true}\n"
      "prompt_tokens: {dist: fixed, value: 473}\noutput_tokens: {dist: fixed, value: 248}\n"
      "slo: {ttft_p99_s: 1, tpot_p99_s: 0.1}\n",
      "staged.yaml");
  CHECK(w.requests == 5100);
  REQUIRE(w.arrival.stages.size() == 2);
  CHECK(w.arrival.stages[1].rate_per_s == 6.0);
  CHECK(w.base_rate_per_s() == doctest::Approx(4.25));
  CHECK(w.shared_prefix.groups == 9);
  CHECK(w.shared_prefix.users_per_group == 5);
  CHECK(w.shared_prefix.system_prompt_tokens == 100);
  CHECK(w.shared_prefix.multi_turn);
}

TEST_CASE("the lora key: adapters, their popularity and a base-model fraction") {
  const std::string base = std::string(kGood);
  const Workload uniform = io::parse_workload(base + "lora: {adapters: 40}\n", "w.yaml");
  CHECK(uniform.lora.adapters == 40);
  CHECK(uniform.lora.zipf_s == 0);
  CHECK(uniform.lora.base_fraction == 0);
  const Workload zipf =
      io::parse_workload(base + "lora: {adapters: 8, popularity: zipf, zipf_s: 1.2, base_fraction: 0.3}\n", "w.yaml");
  CHECK(zipf.lora.adapters == 8);
  CHECK(zipf.lora.zipf_s == 1.2);
  CHECK(zipf.lora.base_fraction == 0.3);
  CHECK_FALSE(io::parse_workload(kGood, "w.yaml").lora.given());
  check_error(base + "lora: {adapters: 0}\n", "lora.adapters");
  check_error(base + "lora: {adapters: 4, popularity: zipf}\n", "lora.zipf_s");
  check_error(base + "lora: {adapters: 4, zipf_s: 1}\n", "lora.zipf_s");
  check_error(base + "lora: {adapters: 4, base_fraction: 1}\n", "lora.base_fraction");
  check_error(base + "lora: {adapters: 4, adapter: 1}\n", "lora.adapter");
}

TEST_CASE("a top-level key that is no workload key is refused, not ignored") {
  check_error(good_with("slo:", "slos:"), "slos");
  check_error(std::string(kGood) + "lora_adapters: 4\n", "lora_adapters");
}
