// Numbers are never printed ambiguously: every human-readable size says its unit (B, KiB,
// GB, GiB, ...), every rate its unit per second, every time its unit, and a count is a
// plain integer. Checked on `kvplan plan`, `kvplan models` and `kvplan gpus` as a user
// runs them: the Markdown tables column by column (every column must be classified here, so a
// new column cannot slip in unchecked), and the plan's detail text number by number.
#include <doctest/doctest.h>

// GCC 12 at -O2 with sanitizers warns falsely inside <regex> (maybe-uninitialized in
// std::function moves of the regex automaton); the instantiations are in this file, so the
// pragma covers the whole file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <array>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace {

std::string kvplan_out(const std::string& args) {
  const std::string cmd = std::string(KVPLAN_BINARY) + " " + args + " 2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "kvplan " << args << " failed");
  return out;
}

const std::string kNum = R"((\d+(\.\d+)?|\d(\.\d+)?e[+-]\d+))";
const std::string kSize = "^" + kNum + " (B|KiB|MiB|GiB|TiB|PiB|KB|MB|GB|TB|PB)$";
const std::string kByteRate = "^" + kNum + " (KB|MB|GB|TB)/s$";
const std::string kFlopRate = "^(-|" + kNum + " [KMGTPEZ]?FLOP/s)$";
const std::string kTime = "^" + kNum + " (ns|us|µs|ms|s|min|h)$";
const std::string kCount = R"(^(-|\d{1,3}(,\d{3})*)$)";
const std::string kRatio = R"(^(-|\d+(\.\d+)?×)$)";
const std::string kText = ".*";

// What every column of the catalogs' and the plan's tables holds.
const std::map<std::string, std::string>& column_kinds() {
  static const std::map<std::string, std::string> kinds = {
      // plan
      {"model", kText}, {"gpu", kText}, {"tp", kCount}, {"pp", kCount}, {"context", kCount},
      {"batch", kCount}, {"weights", kText}, {"kv", kText}, {"kv quant", kText}, {"engine", kText},
      {"KV/token", kSize}, {"KV/request", kSize}, {"weights/GPU", kSize}, {"KV pool/GPU", kSize},
      {"max KV tokens", kCount}, {"max requests", kCount}, {"requests ×", kRatio},
      // A batch that does not fit is marked; the time still has its unit.
      {"prefill", kTime}, {"decode step", "^" + kNum + " (ns|us|µs|ms|s|min|h)( \\(no fit\\))?$"}, {"bound", "^(memory|compute)$"},
      // models (parameter counts are in billions, "B" as the footer defines it)
      {"name", kText}, {"type", kText}, {"layers", kCount}, {"hidden", R"(^\d+$)"}, {"heads", kCount},
      {"kv heads", kCount}, {"attention", kText}, {"params (computed)", R"(^\d+\.\d\d B$)"},
      {"published", R"(^(-|\d+\.\d\d B)$)"}, {"KV/token (16-bit)", kSize},
      // gpus
      {"memory (CUDA)", "^" + kNum + " GiB$"}, {"memory", "^" + kNum + " GB$"}, {"bandwidth", kByteRate},
      {"bf16 dense", kFlopRate}, {"fp8 dense", kFlopRate}, {"interconnect", kByteRate},
      {"price", R"(^(-|\$\d+\.\d\d/h)$)"},
  };
  return kinds;
}

// A Markdown table's rows (the separator line and text around the table left out).
std::vector<std::vector<std::string>> parse_md(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> row;
    for (size_t at = 2; at < line.size();) {
      size_t end = line.find(" | ", at);
      if (end == std::string::npos) end = line.size() - 2;  // before the closing " |"
      std::string cell = line.substr(at, end - at);
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      row.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      at = end + 3;
    }
    rows.push_back(row);
  }
  return rows;
}

void check_table(const std::string& args) {
  CAPTURE(args);
  // Markdown is for readers, with units on every number (CSV is raw numbers: cli/hygiene_test.cpp).
  const auto rows = parse_md(kvplan_out(args + " --format md"));
  REQUIRE(rows.size() >= 2);
  const auto& header = rows.front();
  for (size_t c = 0; c < header.size(); ++c) {
    CAPTURE(header[c]);
    const auto kind = column_kinds().find(header[c]);
    REQUIRE_MESSAGE(kind != column_kinds().end(), "new column: classify it in tests/cli/units_test.cpp");
    const std::regex re(kind->second);
    for (size_t r = 1; r < rows.size(); ++r) {
      // The catalogs append their unit footnote ("GB = 1e9 bytes, ...") as a last line.
      if (r + 1 == rows.size() && rows[r][0].find(" = ") != std::string::npos) continue;
      REQUIRE(rows[r].size() == header.size());
      CHECK_MESSAGE(std::regex_match(rows[r][c], re), "'" << rows[r][c] << "' in row " << r);
    }
  }
}

// In free text, a number with a fraction is a measurement: a unit must follow it.
void check_text(const std::string& text) {
  // Not inside a name ("llama-3.1-405b") or an exponent ("2^30").
  static const std::regex decimal(R"((^|[^\w.^-])(\d[\d,]*\.\d+(e[+-]\d+)?))");
  static const std::regex unit(
      R"(^ ?(B|KiB|MiB|GiB|TiB|PiB|KB|MB|GB|TB|PB|EB|[KMGTPEZ]?FLOP(/s)?|(KB|MB|GB|TB)/s|ns|us|µs|ms|s|min|h|billion)([^\w/]|$)|^(×|%|/h)|^x$)");  // "29.06x": vLLM's own concurrency line, reproduced verbatim
  // A long integer without thousands separators is a raw byte or FLOP count.
  static const std::regex raw_integer(R"((^|[^\w.,^])\d{5,}([^\w.,]|$))");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    CAPTURE(line);
    for (auto it = std::sregex_iterator(line.begin(), line.end(), decimal); it != std::sregex_iterator(); ++it) {
      const std::string after = line.substr(static_cast<size_t>(it->position(2) + it->length(2)));
      CHECK_MESSAGE(std::regex_search(after, unit), "no unit after " << it->str(2));
    }
    CHECK_FALSE(std::regex_search(line, raw_integer));
  }
}

}  // namespace

TEST_CASE("plan tables print every size with B/KiB/GB/GiB, every time with its unit, counts as integers") {
  check_table("plan --model llama-3-8b --gpu h100-sxm");
  check_table("plan --model llama-3-8b,mixtral-8x7b,deepseek-v3 --gpu h100-sxm,b200 --tp 1,8 --kv-cache-dtype fp16,int4 "
              "--context 2048,8192");
  check_table("plan --model llama-3.1-405b --gpu h100-sxm --engine vllm --kv-cache-dtype fp8 --context 131072");
  check_table("plan --model llama-3-8b --gpu a10 --no-kv-cache --batch 64");
}

TEST_CASE("the model and GPU catalogs print sizes in GB/GiB and rates per second") {
  check_table("models");
  check_table("gpus");
  CHECK(kvplan_out("models").find("B = 1e9 parameters") != std::string::npos);
  CHECK(kvplan_out("gpus").find("GB = 1e9 bytes, GiB = 2^30 bytes") != std::string::npos);
}

TEST_CASE("the plan's detail text puts a unit after every measured number") {
  for (const std::string args : {"plan --model llama-3-8b --gpu h100-sxm",
                           "plan --model llama-3.1-405b --gpu h100-sxm --engine vllm --context 131072",
                           "plan --model deepseek-v3 --gpu b200 --tp 8 --kv-cache-dtype int4 --kv-quant kivi",
                           "plan --model mistral-7b --gpu l4 --no-kv-cache --context 32768"}) {
    CAPTURE(args);
    const std::string out = kvplan_out(args);
    check_text(out);
    CHECK(out.find("GB = 1e9 bytes, GiB = 2^30 bytes") != std::string::npos);
    // "B" is bytes in this text ("GB = 1e9 B"): a parameter count says "billion".
    CHECK_FALSE(std::regex_search(out, std::regex(R"(parameters .*\d B\))")));
    CHECK(std::regex_search(out, std::regex(R"(parameters +[\d,]+ \(\d+\.\d\d billion\))")));
  }
}

TEST_CASE("the unit check itself rejects bare sizes and accepts units") {
  // Guards the regular expressions above against passing everything.
  const std::regex size(kSize);
  CHECK(std::regex_match("58.92 GB", size));
  CHECK(std::regex_match("128.0 KiB", size));
  CHECK_FALSE(std::regex_match("58.92", size));
  CHECK_FALSE(std::regex_match("58920000000", size));
  CHECK_FALSE(std::regex_match("58.92 G", size));
  CHECK(std::regex_match("3350 GB/s", std::regex(kByteRate)));
  CHECK_FALSE(std::regex_match("3350", std::regex(kByteRate)));
  CHECK(std::regex_match("6.09 ms", std::regex(kTime)));
  CHECK_FALSE(std::regex_match("6.09", std::regex(kTime)));
}
