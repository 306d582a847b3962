// The bad-input corpus (tests/bad_inputs/): every hand-written mistake a user can make in a
// model, GPU, workload or calibration file, or on the command line, must exit 2 with one
// line on stderr naming the file (or option), the key and what was expected. Nothing may
// crash, hang, print to stdout or fail with exit 1 ("internal error").
//
// tests/bad_inputs/cases.txt holds one case a line: `ARGS | EXIT | MATCH | MESSAGE`, run
// from the repository root. MATCH `=`: stderr is exactly "kvplan: error: MESSAGE\n";
// MATCH `~`: stderr is one "kvplan: error: ..." line containing MESSAGE (for messages that
// embed a library's wording or a catalog listing that grows).
#include <doctest/doctest.h>

#include "tests/run_kvplan.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

// KVPLAN_TEST_DATA_DIR is <repo>/tests/data.
const fs::path kRepo = fs::path(KVPLAN_TEST_DATA_DIR).parent_path().parent_path();
const fs::path kCorpus = kRepo / "tests" / "bad_inputs";

struct Case {
  int line = 0;
  std::string args;
  int exit_code = 2;
  char match = '=';
  std::string message;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<Case> load_cases() {
  std::ifstream in(kCorpus / "cases.txt");
  REQUIRE_MESSAGE(in, "cannot read tests/bad_inputs/cases.txt");
  std::vector<Case> cases;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    // ARGS | EXIT | MATCH | MESSAGE (the message may itself contain '|').
    std::array<size_t, 3> bar{};
    size_t from = 0;
    for (auto& b : bar) {
      b = line.find(" | ", from);
      REQUIRE_MESSAGE(b != std::string::npos, "cases.txt line " << no << ": expected ARGS | EXIT | MATCH | MESSAGE");
      from = b + 3;
    }
    Case c;
    c.line = no;
    c.args = trim(line.substr(0, bar[0]));
    c.exit_code = std::stoi(trim(line.substr(bar[0] + 3, bar[1] - bar[0] - 3)));
    const std::string match = trim(line.substr(bar[1] + 3, bar[2] - bar[1] - 3));
    REQUIRE_MESSAGE((match == "=" || match == "~"), "cases.txt line " << no << ": MATCH is = or ~");
    c.match = match[0];
    c.message = line.substr(bar[2] + 3);
    cases.push_back(c);
  }
  return cases;
}

using kvplan_test::Run;

// Runs kvplan from the repository root.
Run kvplan(const std::string& args) { return kvplan_test::run_kvplan(args, kRepo); }

}  // namespace

TEST_CASE("every case of the bad-input corpus exits 2 with its message") {
  const auto cases = load_cases();
  for (const auto& c : cases) {
    CAPTURE(c.line);
    CAPTURE(c.args);
    const Run r = kvplan(c.args);
    CHECK(r.code == c.exit_code);
    CHECK_MESSAGE(r.out.empty(), "nothing on stdout on error");
    if (c.match == '=') {
      CHECK(r.err == "kvplan: error: " + c.message + "\n");
    } else {
      CHECK(r.err.rfind("kvplan: error: ", 0) == 0);
      CHECK(r.err.find('\n') == r.err.size() - 1);
      CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, "stderr: " << r.err);
    }
  }
}

TEST_CASE("the bad-input corpus has at least 50 cases and uses every file in it") {
  const auto cases = load_cases();
  CHECK(cases.size() >= 50);
  std::string all_args;
  for (const auto& c : cases) all_args += c.args + "\n";
  std::set<std::string> unused;
  for (const auto& e : fs::recursive_directory_iterator(kCorpus)) {
    if (!e.is_regular_file() || e.path().filename() == "cases.txt" || e.path().filename() == "README.md") continue;
    const std::string rel = fs::relative(e.path(), kRepo).string();
    // Trace CSVs are named by the workload files that point at them.
    if (e.path().extension() == ".csv") continue;
    if (all_args.find(rel) == std::string::npos) unused.insert(rel);
  }
  std::string list;
  for (const auto& u : unused) list += u + " ";
  CHECK_MESSAGE(unused.empty(), "files no case uses: " << list);
}

TEST_CASE("bad-input messages name the file or option, then the key, then what was expected") {
  // The contract of InputError as main.cpp prints it: "<file>: key '<key>': expected <what>, got <value>"
  // (no key for whole-file errors: empty, malformed, a directory).
  for (const auto& c : load_cases()) {
    if (c.match != '=') continue;
    CAPTURE(c.line);
    CHECK(c.message.find(": expected ") != std::string::npos);
    const auto key = c.message.find(": key '");
    if (key != std::string::npos) CHECK(key < c.message.find(": expected "));
  }
}
