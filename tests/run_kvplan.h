// Runs the built `kvplan` binary (KVPLAN_BINARY, set by the test target) for the tests
// that check the command line: exit code, stdout and stderr.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kvplan_test {

struct Run {
  int code = -1;
  std::string out, err;
};

//! Runs `kvplan ARGS` with stdin closed, from `dir` when given (the repository root, for
//! relative paths), stopped after `timeout_s` seconds when positive; `redirect` may
//! replace stdout ("> /dev/full"). stderr goes to a file of this process's own: ctest runs
//! test cases in parallel processes.
inline Run run_kvplan(const std::string& args, const std::filesystem::path& dir = {}, const std::string& redirect = "",
                      int timeout_s = 0) {
  const auto err_path = std::filesystem::temp_directory_path() / ("kvplan_test." + std::to_string(getpid()) + ".err");
  std::string cmd = dir.empty() ? "" : "cd '" + dir.string() + "' && ";
  if (timeout_s > 0) cmd += "timeout " + std::to_string(timeout_s) + " ";
  cmd += std::string(KVPLAN_BINARY) + " " + args + " 2>'" + err_path.string() + "' </dev/null " + redirect;
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::error_code ec;
  std::filesystem::remove(err_path, ec);
  return r;
}

}  // namespace kvplan_test
