// reports/plan_report.h: the terminal text of `kvplan plan` around its table, on rows
// written by hand (no plan is computed here).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reports/plan_report.h"

using namespace kvplan;

namespace {
reports::PlanRow row(int64_t tp, int64_t dp, const std::string& log, const std::string& note) {
  reports::PlanRow r;
  r.model = "m";
  r.gpu = "g";
  r.options.tp = tp;
  r.options.dp = dp;
  r.requested = r.options;
  r.plan.context_tokens = 2048;
  r.plan.batch = 1;
  r.plan.capacity.max_concurrent_requests = 10;
  r.plan.fits = true;
  r.plan.memory.note = note;
  r.engine_log = log;
  r.engine_name = "vLLM 0.10";
  return r;
}
}  // namespace

TEST_CASE("plan text: the units line, each engine's log indented under its row, each memory note once") {
  const std::vector<reports::PlanRow> rows = {row(2, 1, "line one\nline two", "first note"),
                                              row(4, 2, "rank line", "second note")};
  const std::string text = reports::plan_text(rows);
  CHECK(text.find("GB = 1e9 bytes, GiB = 2^30 bytes; memory per GPU; KV/token and KV/request for the whole model.\n") !=
        std::string::npos);
  CHECK(text.find("vLLM 0.10 would log (m on g, TP 2):\n  line one\n  line two\n") != std::string::npos);
  // A data-parallel row's log is one rank's.
  CHECK(text.find("vLLM 0.10 would log (m on g, TP 4, DP 2, per rank):\n  rank line\n") != std::string::npos);
  // Two rows, two notes: each printed, each naming its row.
  CHECK(text.find("note (m on g, TP 2): first note\n") != std::string::npos);
  CHECK(text.find("note (m on g, TP 4): second note\n") != std::string::npos);
  // Two rows: no single-row breakdown.
  CHECK(text.find("Memory per GPU") == std::string::npos);
}

TEST_CASE("plan text prints a note shared by rows once, naming them") {
  // Rows 1-3 share the engine's note (TP 1 and 2 on g, TP 1 on h); row 4 has its own.
  std::vector<reports::PlanRow> rows = {row(1, 1, "", "engine note"), row(2, 1, "", "engine note"),
                                        row(1, 1, "", "engine note"), row(8, 1, "", "weights exceed memory")};
  rows[2].gpu = "h";
  std::string text = reports::plan_text(rows);
  CHECK(text.find("note (m on g, TP 1, 2; m on h, TP 1): engine note\n") != std::string::npos);
  CHECK(text.find("note (m on g, TP 8): weights exceed memory\n") != std::string::npos);
  // Once each: the engine note's text appears in one line only.
  CHECK(text.find("engine note") == text.rfind("engine note"));
  // A note every row shares says so rather than listing them.
  rows[3].plan.memory.note = "engine note";
  text = reports::plan_text(rows);
  CHECK(text.find("note (every row): engine note\n") != std::string::npos);
  CHECK(text.find("engine note") == text.rfind("engine note"));
}

TEST_CASE("plan text without an engine log says nothing about one") {
  const std::string text = reports::plan_text({row(1, 1, "", ""), row(2, 1, "", "")});
  CHECK(text.find("would log") == std::string::npos);
  CHECK(text.find("note (") == std::string::npos);
}

TEST_CASE("requests x compares a row with the first row of the same model on the same GPU") {
  // m on g: 10 then 25 requests (2.50x the first); another model on g with 40 is its own
  // first row (1.00x), not 4.00x m's.
  std::vector<reports::PlanRow> rows = {row(1, 1, "", ""), row(2, 1, "", ""), row(1, 1, "", "")};
  rows[1].plan.capacity.max_concurrent_requests = 25;
  rows[2].model = "other";
  rows[2].plan.capacity.max_concurrent_requests = 40;
  const reports::Table t = reports::plan_table(rows, false);
  const auto col = static_cast<size_t>(std::find(t.header.begin(), t.header.end(), "requests ×") - t.header.begin());
  REQUIRE(col < t.header.size());
  CHECK(t.rows[0][col] == "1.00×");
  CHECK(t.rows[1][col] == "2.50×");
  CHECK(t.rows[2][col] == "1.00×");
}
