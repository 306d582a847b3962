// kvplan: capacity planning for LLM serving. `kvplan <command> --help` for each command.
#include <fmt/format.h>

#include <exception>
#include <iostream>
#include <string>

#include "cli/cli.h"
#include "cli/server_command.h"
#include "cli/size_shard.h"
#include "planner/units.h"

namespace {

//! The top-level help; its units line is planner/units.h's legend.
std::string usage() {
  return std::string(R"(usage: kvplan <command> [options]

commands:
  plan       memory, FLOPs, capacity and roofline latency of a model on a GPU
  simulate   discrete-event simulation of a serving engine under a workload
  size       search GPUs and options for the cheapest deployment meeting an SLO
  merge      combine the shards of `size --shard I/N` into the answer of the whole search
  validate   compare the planner's predictions with measurements (cpu or cuda)
  calibrate  fit the step-time model's parameters from measurements (least squares)
  models     the model catalog
  gpus       the GPU catalog
  serve      a what-if page in the browser (http://127.0.0.1:8000/ by default)

Units: )") + kvplan::kSizeUnitsLegend + R"(; FLOPs count 2 per multiply-add.
Exit codes: 0 success, 2 bad input, 1 internal failure.
)";
}

//! The message with control characters and bytes that are not UTF-8 escaped as \xNN, so
//! that a binary file quoted in an error cannot garble the terminal. Valid UTF-8
//! sequences (×, ≥) and newlines stay as they are.
std::string printable(const std::string& s) {
  std::string out;
  const auto cont = [&](size_t i) { return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;  // length of a valid UTF-8 sequence starting here (0: escape the byte)
    if (c == '\n' || (c >= 0x20 && c < 0x7F)) n = 1;
    else if (c >= 0xC2 && c <= 0xDF && cont(i + 1)) n = 2;
    else if (c >= 0xE0 && c <= 0xEF && cont(i + 1) && cont(i + 2)) n = 3;
    else if (c >= 0xF0 && c <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) n = 4;
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

int run(const std::string& cmd, const kvplan::cli::Args& args) {
  using namespace kvplan::cli;
  // `kvplan plan ... -- vllm serve MODEL ...`: the server command read as kvplan options.
  if (cmd == "plan") return cmd_plan(with_server_command(args, cmd));
  if (cmd == "simulate") return cmd_simulate(with_server_command(args, cmd));
  if (cmd == "size") return cmd_size(with_server_command(args, cmd));
  if (cmd == "merge") return cmd_merge(args);
  if (cmd == "validate") return cmd_validate(args);
  if (cmd == "calibrate") return cmd_calibrate(args);
  if (cmd == "models") return cmd_models(args);
  if (cmd == "gpus") return cmd_gpus(args);
  if (cmd == "serve") {
#ifdef KVPLAN_SERVE
    return cmd_serve(args);
#else
    throw kvplan::InputError("command line", "serve", "a kvplan built with cpp-httplib (Debian libcpp-httplib-dev)",
                             "a build without it: install the package and rerun cmake");
#endif
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << usage();
    return 0;
  }
  std::cerr << "kvplan: unknown command '" << printable(cmd) << "'\n" << usage();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kvplan::cli;
  if (argc < 2) {
    std::cerr << usage();
    return 2;
  }
  const std::string cmd = argv[1];
  const Args args(argv + 2, argv + argc);
  int code = 2;
  try {
    code = run(cmd, args);
  } catch (const kvplan::InputError& e) {
    std::cerr << "kvplan: error: " << printable(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvplan: internal error: " << printable(e.what()) << "\n";
    return 1;
  }
  // `kvplan plan > /dev/full` fails only when stdout is flushed: a lost output is an error.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "kvplan: error: writing to standard output failed (disk full or closed pipe?)\n";
    return 1;
  }
  return code;
}
