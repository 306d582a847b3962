// Golden simulator output: every request event of a small fixed workload, byte for byte,
// under each scheduler and preemption mode, so that any change in scheduling semantics or
// step times shows as a diff of tests/data/golden/sim_events.txt. Events are listed in
// time order.
//
// After an intentional change (a new step-time model, a scheduling fix), regenerate with
//   scripts/update_golden.sh
// (KVPLAN_UPDATE_GOLDEN=1 makes this test write the file instead of comparing), then read
// the diff and commit it with the change that caused it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;

namespace {

const char* kind_name(RequestEventKind k) {
  switch (k) {
    case RequestEventKind::arrived: return "arrived";
    case RequestEventKind::rejected: return "rejected";
    case RequestEventKind::scheduled: return "scheduled";
    case RequestEventKind::first_token: return "first_token";
    case RequestEventKind::preempted: return "preempted";
    case RequestEventKind::finished: return "finished";
  }
  return "?";
}

//! Twelve requests (arrival s, prompt tokens, output tokens): a burst at 0, a few spaced
//! arrivals, one request too long for the pool (rejected), long outputs that outgrow a
//! 64-block pool of 16-token blocks (1,024 tokens) and force preemptions.
Workload golden_workload() {
  auto rows = std::make_shared<std::vector<TraceRow>>(std::vector<TraceRow>{
      {0.000, 300, 40}, {0.000, 120, 90}, {0.000, 500, 12}, {0.010, 64, 150}, {0.020, 800, 30},
      {0.025, 1100, 10}, {0.050, 200, 200}, {0.050, 40, 5}, {0.120, 350, 60}, {0.200, 16, 1},
      {0.210, 600, 80}, {0.400, 90, 25}});
  Workload w;
  w.name = "golden";
  w.requests = static_cast<int64_t>(rows->size());
  w.arrival.process = ArrivalProcess::trace;
  w.prompt_tokens.kind = LengthKind::trace;
  w.output_tokens.kind = LengthKind::trace;
  w.trace = rows;
  w.slo = Slo{1.0, 0.05};
  return w;
}

std::string golden_text() {
  ServingOptions o;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 1024;
  const Simulator sim(kvplan::test::llama3_8b(), kvplan::test::h100(), o);
  std::string out =
      "# kvplan golden simulator events (tests/sim/golden_test.cpp; regenerate: scripts/update_golden.sh)\n"
      "# Llama-3-8B bf16 on one H100 SXM (tests/fixtures.h), max_num_seqs 8, max_num_batched_tokens 1024,\n"
      "# a pool of 64 blocks of 16 tokens; 12 requests (golden_workload). One line per request event:\n"
      "# time_s request event tokens_out kv_blocks\n";
  struct Run {
    Scheduler scheduler;
    Preemption preemption;
  };
  for (const Run run : {Run{Scheduler::continuous, Preemption::recompute}, Run{Scheduler::continuous, Preemption::swap},
                        Run{Scheduler::chunked, Preemption::recompute}, Run{Scheduler::static_batch, Preemption::recompute}}) {
    SimOptions so;
    so.scheduler = run.scheduler;
    so.preemption = run.preemption;
    so.num_blocks = 64;
    so.check_invariants = true;
    // An arrival is reported when the engine lets the request in, stamped with its
    // arrival time; the file lists the events in time order (a stable sort: events at
    // one instant keep the order the engine reported them in).
    std::vector<std::pair<double, std::string>> events;
    so.on_request = [&events](const RequestEvent& e) {
      char line[160];
      std::snprintf(line, sizeof line, "%.9f %2lld %-11s %4lld %3lld\n", e.time_s, static_cast<long long>(e.request),
                    kind_name(e.kind), static_cast<long long>(e.tokens), static_cast<long long>(e.kv_blocks));
      events.emplace_back(e.time_s, line);
    };
    out += "## scheduler " + std::string(to_string(run.scheduler)) + ", preemption " +
           (run.preemption == Preemption::swap ? "swap" : "recompute") + "\n";
    const SimResult r = sim.run(golden_workload(), so);
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& e : events) out += e.second;
    char summary[200];
    std::snprintf(summary, sizeof summary, "## completed %lld, rejected %lld, preemptions %lld, steps %lld, duration %.9f s\n",
                  static_cast<long long>(r.completed), static_cast<long long>(r.rejected),
                  static_cast<long long>(r.preemptions), static_cast<long long>(r.steps), r.duration_s);
    out += summary;
  }
  return out;
}

}  // namespace

TEST_CASE("golden: the simulator's request events for a fixed workload are unchanged") {
  const std::filesystem::path path = std::filesystem::path(KVPLAN_TEST_DATA_DIR) / "golden" / "sim_events.txt";
  const std::string got = golden_text();
  if (const char* update = std::getenv("KVPLAN_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << got;
    MESSAGE("wrote " << path.string());
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "missing " << path.string() << ": run scripts/update_golden.sh");
  const std::string want(std::istreambuf_iterator<char>(in), {});
  if (got != want) {
    // Name the first differing line; the whole new output goes to a file to diff.
    std::istringstream a(want), b(got);
    std::string la, lb;
    int line = 0;
    while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
    const auto fresh = std::filesystem::temp_directory_path() / "kvplan_sim_events.txt";
    std::ofstream(fresh, std::ios::binary) << got;
    FAIL("simulator events differ from " << path.string() << " at line " << line + 1 << ":\n  golden: " << la
                                         << "\n  now:    " << lb << "\nnew output in " << fresh.string()
                                         << "; if the change is intended, run scripts/update_golden.sh");
  }
}
