// Command-line and file hygiene as a user meets it: lists
// never split a number written with a thousands separator, failed writes and special input
// files are errors, no row is printed twice, CSV carries raw numbers, and traces with a
// byte-order mark or a single arrival instant are read and described correctly.
#include <doctest/doctest.h>

#include "tests/run_kvplan.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRepo = fs::path(KVPLAN_TEST_DATA_DIR).parent_path().parent_path();

using kvplan_test::Run;

// Runs kvplan from the repository root; `redirect` may replace stdout.
Run kvplan(const std::string& args, const std::string& redirect = "") {
  return kvplan_test::run_kvplan(args, kRepo, redirect, 60);
}

// A scratch folder of this test process's own (ctest runs cases in parallel).
fs::path scratch() {
  const fs::path d = fs::temp_directory_path() / ("kvplan_hygiene_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  return p;
}

// RFC 4180 CSV: quoted fields may hold commas; "" is a quote.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> row{""};
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        row.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        row.emplace_back();
      } else {
        row.back() += c;
      }
    }
    rows.push_back(row);
  }
  return rows;
}

std::string column(const std::vector<std::vector<std::string>>& csv, size_t row, const std::string& name) {
  REQUIRE(csv.size() > row);
  for (size_t c = 0; c < csv[0].size(); ++c)
    if (csv[0][c] == name) return csv[row].at(c);
  FAIL("no column " << name);
  return "";
}

// Machine-readable: snake_case names, and no display strings (thousands separators,
// units, multiplication signs) in any field.
void check_raw_csv(const std::string& text) {
  const auto csv = parse_csv(text);
  REQUIRE(csv.size() >= 2);
  for (const auto& h : csv[0]) {
    CAPTURE(h);
    CHECK(h.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.") == std::string::npos);
  }
  for (size_t r = 1; r < csv.size(); ++r)
    for (size_t c = 0; c < csv[r].size(); ++c) {
      CAPTURE(csv[0][c]);
      const std::string& v = csv[r][c];
      CAPTURE(v);
      // Provenance is free text a person wrote ("NVIDIA H100 80GB HBM3", a calibration's
      // source, its measured-error statements), quoted by the CSV writer, not a figure to
      // parse.
      const std::string& name = csv[0][c];
      const auto ends_with = [&](std::string_view suffix) {
        return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if (ends_with(".source") || ends_with(".device") || name.find("calibration.accuracy.") == 0) continue;
      // A number followed by a space is a number with a unit ("128.0 KiB", "6.09 ms");
      // labels such as "int4 awq" may have spaces.
      for (size_t sp = v.find(' '); sp != std::string::npos; sp = v.find(' ', sp + 1)) {
        const size_t start = v.find_last_of(' ', sp - 1) == std::string::npos ? 0 : v.find_last_of(' ', sp - 1) + 1;
        CHECK_FALSE(std::isdigit(static_cast<unsigned char>(v[start])));
      }
      CHECK(v.find("×") == std::string::npos);
      CHECK(v.find('$') == std::string::npos);
      // A comma inside a field is a thousands separator or a display list.
      CHECK(v.find(',') == std::string::npos);
    }
}

const char* const kSlo = "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n";

}  // namespace

TEST_CASE("digit grouping: 4,096 in a list is refused, never split: 4_096 and a single-valued 1,000 are accepted") {
  Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 4,096");
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("'--context'") != std::string::npos);
  CHECK(r.err.find("4096 or 4_096") != std::string::npos);
  // The suggested spellings work: 4_096 is one row of 4,096 tokens; "4, 096" the list.
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 4_096 --format json");
  REQUIRE(r.code == 0);
  auto rows = nlohmann::json::parse(r.out)["rows"];
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["context_tokens"] == 4096);
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --max-num-seqs '64, 256' --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["rows"].size() == 2);
  CHECK(kvplan("plan --model llama-3-8b --gpu h100-sxm --max-num-seqs 64,256").code == 2);
  // Lists without the ambiguity still split: 2048,4096 is two rows.
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 2048,4096 --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["rows"].size() == 2);
  // --requests takes one value, so "1,000" can only mean a thousand.
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 1,000 --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["requests"]["arrived"] == 1000);
  // Grouping must be regular: 1,00 or 10_00 is not a number.
  CHECK(kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 1,00").code == 2);
  CHECK(kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 10_00").code == 2);
}

TEST_CASE("the --help of plan, simulate and size explains lists and digit grouping") {
  for (const char* cmd : {"plan", "simulate", "size"}) {
    CAPTURE(cmd);
    const Run r = kvplan(std::string(cmd) + " --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("4_096") != std::string::npos);
    CHECK(r.out.find("'64, 256'") != std::string::npos);
  }
}

TEST_CASE("a write that fails is an error: -o, --report and stdout on a full device") {
  Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm -o /dev/full --force");
  CHECK(r.code == 2);
  CHECK(r.err.find("/dev/full") != std::string::npos);
  r = kvplan("size --model llama-3-8b --workload chat --gpus l40s --evaluator planner --report /dev/full --force");
  CHECK(r.code == 2);
  CHECK(r.err.find("--report") != std::string::npos);
  CHECK(r.err.find("/dev/full") != std::string::npos);
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm", ">/dev/full");
  CHECK(r.code == 1);
  CHECK(r.err.find("standard output") != std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --timeseries /dev/full --force");
  CHECK(r.code == 2);
  CHECK(r.err.find("--timeseries") != std::string::npos);
}

TEST_CASE("no output path is overwritten without --force, and a refused path fails before the work") {
  const fs::path keep = write("keep.txt", "keep me");
  for (const std::string& args :
       {"plan --model llama-3-8b --gpu h100-sxm -o " + keep.string(),
        "simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --timeseries " + keep.string(),
        "simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 -o " + keep.string(),
        "size --model llama-3-8b --workload chat --gpus l40s --evaluator planner --report " + keep.string(),
        "size --model llama-3-8b --workload chat --gpus l40s --evaluator planner -o " + keep.string(),
        "validate --backend cpu --calibration-out " + keep.string()}) {
    CAPTURE(args);
    const Run r = kvplan(args);
    CHECK(r.code == 2);
    CHECK(r.err.find("--force") != std::string::npos);
    std::ifstream in(keep);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "keep me");
  }
  fs::remove_all(scratch());
}

TEST_CASE("two outputs of one command cannot name the same file") {
  const std::string out = (scratch() / "same.txt").string();
  Run r = kvplan("size --model llama-3-8b --workload chat --gpus l40s --evaluator planner --report " + out + " -o " + out);
  CHECK(r.code == 2);
  CHECK(r.err.find("--report") != std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 50 --timeseries " + out + " -o " + out);
  CHECK(r.code == 2);
  CHECK(r.err.find("--timeseries") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  fs::remove_all(scratch());
}

TEST_CASE("validate --format csv is raw numbers too") {
  // Exit 1 when a timed check misses on a loaded machine; the CSV is printed either way.
  const Run r = kvplan("validate --backend cpu --format csv");
  REQUIRE((r.code == 0 || r.code == 1));
  check_raw_csv(r.out);
  const auto csv = parse_csv(r.out);
  CHECK(csv[0][5] == "error_fraction");
}

TEST_CASE("input files: special files are refused before they are opened, sizes are capped, bytes escaped") {
  Run r = kvplan("plan --model /dev/zero --gpu h100-sxm");
  CHECK(r.code == 2);
  CHECK(r.err == "kvplan: error: /dev/zero: expected a regular file, got a character device\n");
  // A FIFO with no writer would block open() forever (the command has 60 s before `timeout` ends it).
  const fs::path fifo = scratch() / "model.fifo";
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  r = kvplan("plan --model llama-3-8b --gpu " + fifo.string());
  CHECK(r.code == 2);
  CHECK(r.err.find("expected a regular file, got a named pipe") != std::string::npos);
  // 64 MiB + 1 byte (sparse: no disk is used) is one byte over the cap for model files.
  const fs::path big = scratch() / "big.yaml";
  std::ofstream(big).put('a');
  fs::resize_file(big, (std::uintmax_t{64} << 20) + 1);
  r = kvplan("plan --model " + big.string() + " --gpu h100-sxm");
  CHECK(r.code == 2);
  CHECK(r.err.find("expected a file of at most 64 MiB") != std::string::npos);
  // Control bytes and invalid UTF-8 quoted from a file are escaped; UTF-8 text is kept.
  const fs::path bad = write("bad.yaml", std::string("hidden_size: \"\x1b[2J\xff\xfe\"\nname: \xc3\x97\n"));
  r = kvplan("plan --model " + bad.string() + " --gpu h100-sxm");
  CHECK(r.code == 2);
  CHECK(r.err.find("\\x1b[2J\\xff\\xfe") != std::string::npos);
  for (const char c : r.err) CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
  fs::remove_all(scratch());
}

TEST_CASE("no duplicate rows: 16-bit caches ignore the scheme, lists refuse repeats, --kv-heads is a column") {
  // The README's first example: fp16 x {raw, kivi} is one row, int4 x {raw, kivi} two.
  Run r = kvplan("plan --model llama-2-70b --gpu a100-80gb --tp 2 --kv-cache-dtype fp16,int4 --kv-quant raw,kivi "
                 "--format json");
  REQUIRE(r.code == 0);
  auto rows = nlohmann::json::parse(r.out)["rows"];
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["kv_dtype"] == "fp16");
  CHECK(rows[1]["kv_quant"] == "raw");
  CHECK(rows[2]["kv_quant"] == "kivi");
  // `auto` is the model's bf16 here: the same collapse.
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --kv-quant raw,kivi --format json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["rows"].size() == 1);
  CHECK(kvplan("plan --model llama-3-8b --gpu l40s,l40s").code == 2);
  CHECK(kvplan("plan --model llama-3-8b --gpu h100-sxm --tp 2,2").code == 2);
  CHECK(kvplan("plan --model llama-3-8b,configs/models/llama-3-8b.yaml --gpu h100-sxm").code == 2);
  CHECK(kvplan("size --model llama-3-8b --workload chat --gpus l40s,l40s --evaluator planner").code == 2);
  // Llama-3-8B has 8 KV heads; the what-if 32 makes it MHA. The table says which row is which.
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --kv-heads 8,32 --format md");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("| kv heads |") != std::string::npos);
  r = kvplan("plan --model llama-3-8b --gpu h100-sxm --kv-heads 8,32 --format csv");
  REQUIRE(r.code == 0);
  const auto csv = parse_csv(r.out);
  CHECK(column(csv, 1, "kv_heads") == "8");
  CHECK(column(csv, 2, "kv_heads") == "32");
  // 2 (K and V) x 32 layers x 32 heads x 128 dims x 2 bytes = 524,288 bytes per token.
  CHECK(column(csv, 2, "kv_bytes_per_token") == "524288");
}

TEST_CASE("CSV is for machines: raw numbers, units in the column names (plan, simulate, size, catalogs)") {
  Run r = kvplan("plan --model llama-3-8b --gpu h100-sxm --context 2048,8192 --format csv");
  REQUIRE(r.code == 0);
  check_raw_csv(r.out);
  auto csv = parse_csv(r.out);
  CHECK(column(csv, 1, "context_tokens") == "2048");
  CHECK(column(csv, 2, "context_tokens") == "8192");
  // Llama-3-8B: 2 x 32 layers x 8 KV heads x 128 dims x 2 bytes (bf16) = 131,072 B/token;
  // x 2,048 tokens = 268,435,456 B per request.
  CHECK(column(csv, 1, "kv_bytes_per_token") == "131072");
  CHECK(column(csv, 1, "kv_bytes_per_request") == "268435456");

  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload chat --requests 200 --format csv");
  REQUIRE(r.code == 0);
  check_raw_csv(r.out);
  csv = parse_csv(r.out);
  REQUIRE(csv.size() == 2);
  CHECK(column(csv, 1, "requests.arrived") == "200");
  CHECK(column(csv, 1, "arrival_rate_per_s") == "11.0");  // chat.yaml: rate_per_s 11
  CHECK(column(csv, 1, "slo.ttft_p99_s") == "2.0");

  r = kvplan("size --model llama-3-8b --workload chat --gpus l40s,h100-sxm --evaluator planner --format csv");
  REQUIRE(r.code == 0);
  check_raw_csv(r.out);

  r = kvplan("models --format csv");
  REQUIRE(r.code == 0);
  check_raw_csv(r.out);
  csv = parse_csv(r.out);
  for (size_t i = 1; i < csv.size(); ++i)
    if (csv[i][0] == "llama-3-8b") CHECK(column(csv, i, "kv_bytes_per_token_16bit") == "131072");
  r = kvplan("gpus --format csv");
  REQUIRE(r.code == 0);
  check_raw_csv(r.out);
}

TEST_CASE("traces: a UTF-8 byte-order mark is accepted: arrivals at one instant are a burst, not 1 request/s") {
  const std::string rows = "arrival_s,prompt_tokens,output_tokens\n3.0,100,10\n3.0,200,20\n3.0,300,30\n";
  const fs::path bom = write("bom.csv", "\xEF\xBB\xBF" + rows);
  const fs::path wf = write("burst.yaml", "name: burst\narrival: {process: trace}\n"
                                          "prompt_tokens: {dist: trace}\noutput_tokens: {dist: trace}\n"
                                          "trace: " + bom.string() + "\n" + kSlo);
  Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " + wf.string());
  REQUIRE(r.code == 0);
  CHECK(r.out.find("burst: 3 requests, the trace's arrivals all at one instant") != std::string::npos);
  CHECK(r.out.find("at 1 requests/s") == std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " + wf.string() + " --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["arrival_rate_per_s"].is_null());
  CHECK(j["requests"]["completed"] == 3);
  // Replaying a burst past its rows would need a rate; scaling its rate has no meaning.
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " + wf.string() + " --requests 4");
  CHECK(r.code == 2);
  CHECK(r.err.find("at most the trace's 3 rows") != std::string::npos);
  CHECK(kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " + wf.string() + " --rate 5").code == 2);
  CHECK(kvplan("size --model llama-3-8b --gpus l40s --evaluator planner --workload " + wf.string()).code == 2);
  // A disaggregated run reads the same options the same way (it once replayed past the rows).
  r = kvplan("simulate --disagg --model llama-3-8b --prefill-pool h100-sxm:tp1:x1 --decode-pool h100-sxm:tp1:x1 "
             "--workload " + wf.string() + " --requests 4");
  CHECK(r.code == 2);
  CHECK(r.err.find("at most the trace's 3 rows") != std::string::npos);
  fs::remove_all(scratch());
}

TEST_CASE("a lognormal whose mean lies outside [min, max] is refused") {
  const auto workload = [](const std::string& prompt) {
    return write("ln.yaml", "name: ln\nrequests: 10\narrival: {process: poisson, rate_per_s: 1}\nprompt_tokens: " +
                                prompt + "\noutput_tokens: {dist: fixed, value: 10}\n" + kSlo);
  };
  Run r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " +
                 workload("{dist: lognormal, mean: 100, sigma: 0.5, min: 500}").string());
  CHECK(r.code == 2);
  CHECK(r.err.find("key 'prompt_tokens.min': expected at most prompt_tokens.mean (100), got 500") != std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " +
             workload("{dist: lognormal, mean: 100, sigma: 0.5, max: 50}").string());
  CHECK(r.code == 2);
  CHECK(r.err.find("key 'prompt_tokens.max': expected at least prompt_tokens.mean (100), got 50") != std::string::npos);
  r = kvplan("simulate --model llama-3-8b --gpu h100-sxm --workload " +
             workload("{dist: lognormal, mean: 100, sigma: 0.5, min: 100, max: 100}").string());
  CHECK(r.code == 0);
  fs::remove_all(scratch());
}
