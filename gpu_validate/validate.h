// kvplan gpu_validate: measurements that check the planner's predictions.
// Five checks (README.md): naive vs cached decode FLOPs and times, paged decode attention
// for MHA/GQA/MQA, KV quantization error and bytes, memory sizing, bandwidth and FLOP/s
// ceilings. Two backends: `cpu` (the references, always built, run in CI) and `cuda`
// (built when nvcc is found, run where a GPU is). No third-party dependency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/types.h"

namespace kvplan::gv {

enum class Backend { cpu, cuda };
std::string_view to_string(Backend b);

//! How a check compares measured with predicted.
enum class Compare {
  exact,     //!< |measured - predicted| <= tolerance (absolute; 0 for counts and bytes)
  relative,  //!< |measured - predicted| / |predicted| <= tolerance
  at_least,  //!< measured >= predicted (a bound)
  at_most,   //!< measured <= predicted (a bound)
  info       //!< a measurement reported for the reader; always passes, no tolerance
};
std::string_view to_string(Compare c);

//! One line of the comparison table (ARCHITECTURE.md: validate JSON contract).
struct Check {
  std::string group;      //!< "decode", "attention", "kv_quant", "memory", "ceilings"
  std::string name;
  std::string quantity;   //!< what is compared, in words
  std::string unit;
  double predicted = 0;
  double measured = 0;
  double error = 0;       //!< relative: (measured - predicted) / |predicted| (0 if predicted is 0)
  double tolerance = 0;
  Compare compare = Compare::relative;
  bool pass = false;
  std::string note;       //!< where the prediction comes from, what the tolerance covers
};
//! Fills error and pass from predicted, measured, tolerance and compare.
Check make_check(std::string group, std::string name, std::string quantity, std::string unit,
                 double predicted, double measured, Compare compare, double tolerance,
                 std::string note = {});

//! Measured ceilings, as the planner's --calibration file carries them.
struct CalibrationOut {
  std::string device;
  double bandwidth_efficiency = 0;       //!< achieved copy bandwidth / datasheet
  double prefill_flops_efficiency = 0;   //!< large GEMM FLOP/s / datasheet peak
  double decode_flops_efficiency = 0;    //!< skinny (decode-shaped) GEMM FLOP/s / peak
  int64_t runtime_reserve_bytes = 0;     //!< CUDA context + cuBLAS workspace
  double measured_bandwidth_bytes_per_s = 0;
  double measured_prefill_flops_per_s = 0;
  double measured_decode_flops_per_s = 0;
  double datasheet_bandwidth_bytes_per_s = 0;
  double datasheet_peak_flops_per_s = 0;
};

struct Report {
  Backend backend = Backend::cpu;
  std::string device;
  std::vector<Check> checks;
  std::optional<CalibrationOut> calibration;  //!< cuda only: host figures have no datasheet
  double wall_s = 0;
  bool all_pass() const;
};

struct Options {
  Backend backend = Backend::cpu;
  bool quick = false;                 //!< smaller shapes and fewer repetitions (tests)
  std::string npy_k, npy_v;           //!< user K and V (.npy, [T, C] or [T, H, D]), optional
  //! Datasheet ceilings for the calibration; 0 = look the device name up (H100, H200, A100).
  double datasheet_bandwidth_bytes_per_s = 0;
  double datasheet_peak_flops_per_s = 0;
};

//! Throws std::runtime_error when the backend cannot run (no CUDA build, no GPU).
Report run_validation(const Options& o);

//! Empty when the CUDA backend can run here; otherwise why not, in one sentence.
std::string cuda_unavailable_reason();

//! {"schema": "kvplan.validate/1", "backend", "device", "checks": [...], ...}.
std::string report_json(const Report& r);
//! {"schema": "kvplan.calibration/1", ...}: the file `--calibration` reads.
std::string calibration_json(const CalibrationOut& c);
//! A plain-text table of the checks (the harness prints it; the CLI has its own).
std::string report_table(const Report& r);

namespace detail {
Report run_cpu(const Options& o);
Report run_cuda(const Options& o);  // checks_cuda.cu, or the stub that throws
}  // namespace detail

}  // namespace kvplan::gv
