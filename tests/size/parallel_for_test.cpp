// size/parallel_for.h: every index runs once, results land by index, and the error
// rethrown is the lowest failing index's whatever the order the failures happen in.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "size/parallel_for.h"

using kvplan::size::parallel_for;

TEST_CASE("parallel_for runs each index once and the results land by index") {
  for (const int threads : {1, 3, 8}) {
    std::vector<int64_t> squares(100, -1);
    std::vector<std::atomic<int>> runs(100);
    parallel_for(100, threads, [&](int64_t i) {
      squares[static_cast<size_t>(i)] = i * i;
      ++runs[static_cast<size_t>(i)];
    });
    // 7 x 7 = 49, 99 x 99 = 9801: each slot holds its own index's square.
    CHECK(squares[0] == 0);
    CHECK(squares[7] == 49);
    CHECK(squares[99] == 9801);
    for (size_t i = 0; i < runs.size(); ++i) CHECK(runs[i].load() == 1);
  }
}

TEST_CASE("parallel_for with nothing to do calls nothing") {
  int calls = 0;
  parallel_for(0, 4, [&](int64_t) { ++calls; });
  parallel_for(-3, 4, [&](int64_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("parallel_for rethrows the lowest failing index even when a higher one fails first") {
  // Index 9 fails at once; index 2 fails only after index 9 has thrown, so the first
  // failure in time is 9's, and the one rethrown must still be 2's.
  std::atomic<bool> nine_failed{false};
  std::atomic<int> ran{0};
  const auto f = [&](int64_t i) {
    ++ran;
    if (i == 9) {
      nine_failed = true;
      throw std::runtime_error("index 9");
    }
    if (i == 2) {
      while (!nine_failed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      throw std::runtime_error("index 2");
    }
  };
  // Two threads claim 0 and 1 first, so 2 and 9 are on different threads; 2 waits for 9.
  std::string what;
  try {
    parallel_for(12, 2, f);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  CHECK(what == "index 2");
  CHECK(ran.load() == 12);  // every index ran although two failed
}

TEST_CASE("parallel_for on one thread rethrows the lowest failing index after running all") {
  std::vector<int> seen;
  std::string what;
  try {
    parallel_for(5, 1, [&](int64_t i) {
      seen.push_back(static_cast<int>(i));
      if (i >= 3) throw std::invalid_argument("index " + std::to_string(i));
    });
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  CHECK(what == "index 3");
  CHECK(seen == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("thread_count: the requested count, or every core (at least one)") {
  CHECK(kvplan::size::thread_count(3) == 3);
  CHECK(kvplan::size::thread_count(0) >= 1);
  CHECK(kvplan::size::thread_count(-1) == kvplan::size::thread_count(0));
}
