// kvplan_harness: runs every gpu_validate check and writes JSON, with no dependency
// beyond the planner (the device machine has CUDA, CMake, ninja and Python only). The
// only executable that links CUDA: `kvplan validate --backend cuda` runs this one.
//   kvplan_harness [--backend cpu|cuda] [--quick] [--out FILE.json]
//                  [--calibration-out FILE.json] [--npy-k K.npy [--npy-v V.npy]]
//                  [--datasheet-bandwidth BYTES_PER_S] [--datasheet-flops FLOP_PER_S]
// Exit 0 when every check passes, 1 when one fails, 2 on bad input or no backend.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "gpu_validate/cuda_backend.h"

namespace {

int usage(const std::string& why) {
  std::cerr << "kvplan_harness: " << why << "\n"
            << "usage: kvplan_harness [--backend cpu|cuda] [--quick] [--out FILE] "
               "[--calibration-out FILE] [--npy-k K.npy [--npy-v V.npy]] "
               "[--datasheet-bandwidth B/s] [--datasheet-flops FLOP/s]\n";
  return 2;
}

// Written beside the target and renamed over it: a reader (or a kill) never sees half a file.
bool write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".part";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

int run(int argc, char** argv) {
  using namespace kvplan::gv;
  Options o;
  std::string out_path, calib_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--backend") {
        const std::string b = next();
        if (b == "cpu") o.backend = Backend::cpu;
        else if (b == "cuda") o.backend = Backend::cuda;
        else return usage("--backend takes cpu or cuda, not '" + b + "'");
      } else if (a == "--quick") {
        o.quick = true;
      } else if (a == "--out") {
        out_path = next();
      } else if (a == "--calibration-out") {
        calib_path = next();
      } else if (a == "--npy-k") {
        o.npy_k = next();
      } else if (a == "--npy-v") {
        o.npy_v = next();
      } else if (a == "--datasheet-bandwidth") {
        o.datasheet_bandwidth_bytes_per_s = std::stod(next());
      } else if (a == "--datasheet-flops") {
        o.datasheet_peak_flops_per_s = std::stod(next());
      } else if (a == "-h" || a == "--help") {
        usage("help");
        return 0;
      } else {
        return usage("unknown option '" + a + "'");
      }
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (o.backend == Backend::cuda) {
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) {
      std::cerr << "kvplan_harness: --backend cuda is not available: " << why << "\n";
      return 2;
    }
  }
  // After each CUDA group: the report and calibration so far, rewritten, so that a run
  // stopped by a timeout still leaves what it measured.
  o.on_progress = [&](const Report& partial) {
    if (!out_path.empty()) write_text(out_path, report_json(partial));
    if (!calib_path.empty()) write_text(calib_path, calibration_json(partial.calibration));
  };
  Report r;
  try {
    r = o.backend == Backend::cuda ? run_cuda_validation(o) : run_validation(o);
  } catch (const std::exception& e) {
    std::cerr << "kvplan_harness: " << e.what() << "\n";
    return 2;
  }
  std::cout << report_table(r);
  const std::string json = report_json(r);
  if (!out_path.empty() && !write_text(out_path, json)) {
    std::cerr << "kvplan_harness: cannot write " << out_path << "\n";
    return 1;
  }
  if (!calib_path.empty() && !write_text(calib_path, calibration_json(r.calibration))) {
    std::cerr << "kvplan_harness: cannot write " << calib_path << "\n";
    return 1;
  }
  return r.all_pass() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Printing the report can still throw (allocation); exit 1 rather than terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kvplan_harness: internal error: " << e.what() << "\n";
    return 1;
  }
}
