// Every price and power figure of the purchase catalog (configs/servers) and every rent
// price of the GPU catalog (configs/gpus) names its source and a date (year-month) in the
// comment on its line; an estimate says so and gives its basis after a colon (issue 27).
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(KVPLAN_TEST_DATA_DIR) / ".." / ".." / "configs";

//! A year-month such as 2026-12 somewhere in s.
bool has_year_month(const std::string& s) {
  const auto digit = [&](size_t i) { return std::isdigit(static_cast<unsigned char>(s[i])) != 0; };
  for (size_t i = 0; i + 7 <= s.size(); ++i)
    if (s[i] == '2' && s[i + 1] == '0' && digit(i + 2) && digit(i + 3) && s[i + 4] == '-' && digit(i + 5) &&
        digit(i + 6))
      return true;
  return false;
}

//! Why the comment of `key`'s line in `file` does not source and date its figure; empty
//! when it does, or when the figure is 0 (nothing to source).
std::string check_line(const std::filesystem::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    const size_t hash = line.find('#');
    const std::string value = line.substr(key.size() + 1, hash == std::string::npos ? std::string::npos : hash - key.size() - 1);
    if (value.find_first_not_of(" 0") == std::string::npos) return "";
    if (hash == std::string::npos) return "no comment";
    const std::string comment = line.substr(hash + 1);
    if (!has_year_month(comment)) return "no year-month date";
    const size_t est = comment.find("estimate");
    if (est != std::string::npos) {
      const size_t colon = comment.find(':', est);
      if (colon == std::string::npos || comment.size() - colon < 20) return "an estimate without its basis";
    } else if (comment.size() < 20) {
      return "no source";
    }
    return "";
  }
  return "missing";
}

std::vector<std::filesystem::path> yaml_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("configs/servers: every price, power and DRAM figure has a source and a date") {
  const auto files = yaml_files(kConfigs / "servers");
  REQUIRE(files.size() >= 10);
  for (const auto& f : files)
    for (const char* key : {"gpu_price_usd", "server_price_usd", "gpu_board_power_w", "gpu_idle_power_w", "server_power_w",
                            "host_memory_bytes"}) {
      INFO(f.filename().string() << " " << std::string(key));
      CHECK(check_line(f, key) == "");
    }
}

TEST_CASE("configs/gpus: every rent price has a source and a date") {
  const auto files = yaml_files(kConfigs / "gpus");
  REQUIRE(files.size() >= 10);
  for (const auto& f : files) {
    INFO(f.filename().string());
    CHECK(check_line(f, "price_per_hour_usd") == "");
  }
}

TEST_CASE("the check itself: undated, unsourced and basis-less figures are caught") {
  const auto p = std::filesystem::temp_directory_path() / "kvplan_config_sources_test.yaml";
  std::ofstream(p) << "a: 1 # a vendor price list page, no date given\n"
                      "b: 2 # kvplan's estimate (2026-12)\n"
                      "c: 3 # kvplan's estimate (2026-12): half the H100's price, same memory\n"
                      "d: 0 # in another field\n"
                      "e: 5\n";
  CHECK(check_line(p, "a") == "no year-month date");
  CHECK(check_line(p, "b") == "an estimate without its basis");
  CHECK(check_line(p, "c") == "");
  CHECK(check_line(p, "d") == "");
  CHECK(check_line(p, "e") == "no comment");
  CHECK(check_line(p, "f") == "missing");
}
