// kvplan: capacity planning for LLM serving. `kvplan <command> --help` for each command.
#include <exception>
#include <iostream>
#include <string>

#include "cli/cli.h"

namespace {

constexpr const char* kUsage = R"(usage: kvplan <command> [options]

commands:
  plan       memory, FLOPs, capacity and roofline latency of a model on a GPU
  simulate   discrete-event simulation of a serving engine under a workload
  size       search GPUs and options for the cheapest deployment meeting an SLO
  validate   compare the planner's predictions with measurements (cpu or cuda)
  calibrate  fit the step-time model's parameters from measurements (least squares)
  models     the model catalog
  gpus       the GPU catalog

Units: GB = 1e9 bytes, GiB = 2^30 bytes; FLOPs count 2 per multiply-add.
Exit codes: 0 success, 2 bad input, 1 internal failure.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace kvplan::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = argv[1];
  const Args args(argv + 2, argv + argc);
  try {
    if (cmd == "plan") return cmd_plan(args);
    if (cmd == "simulate") return cmd_simulate(args);
    if (cmd == "size") return cmd_size(args);
    if (cmd == "validate") return cmd_validate(args);
    if (cmd == "calibrate") return cmd_calibrate(args);
    if (cmd == "models") return cmd_models(args);
    if (cmd == "gpus") return cmd_gpus(args);
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    std::cerr << "kvplan: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const kvplan::InputError& e) {
    std::cerr << "kvplan: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvplan: internal error: " << e.what() << "\n";
    return 1;
  }
}
