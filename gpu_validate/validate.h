// kvplan gpu_validate: measurements that check the planner's predictions.
// Five checks (README.md): naive vs cached decode FLOPs and times, paged decode attention
// for MHA/GQA/MQA, KV quantization error and bytes, memory sizing, bandwidth and FLOP/s
// ceilings. Two backends: `cpu` (the references, always built, run in CI) and `cuda`
// (built when nvcc is found, run where a GPU is). No third-party dependency.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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

//! What a harness run measured for the latency model: the `kvplan.calibration/2` file
//! (docs/validate.md, docs/calibration.md), written by calibration_json on every backend.
struct CalibrationParameter {
  std::string name;   //!< bandwidth_efficiency, prefill_flops_efficiency, ...
  double value = 0;
  std::string unit;   //!< "fraction", "B", ...
  std::string source; //!< which measurement over which datasheet figure
};
struct CopyRow { int64_t bytes = 0; double time_s = 0; };  //!< bytes read + written
struct GemmRow { int64_t m = 0, n = 0, k = 0; std::string dtype; double time_s = 0; };
struct AttentionRow {
  std::string kind;  //!< mha, gqa, mqa, mla
  int64_t batch = 0, context_tokens = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  std::string kv_dtype;
  int64_t bytes_read = 0;  //!< every byte the kernels read, split-K partials included
  double time_s = 0;
};
struct LaunchRow { std::string mode; int64_t kernels = 0; double time_s = 0; };  //!< eager|graph
struct AllReduceRow { int64_t gpus = 0, bytes = 0; double time_s = 0; };

struct CalibrationOut {
  std::string device;   //!< as the driver names it, or "cpu: <model name>"
  std::string gpu;      //!< catalog name the parameters apply to; empty when none
  std::string source;   //!< who measured what, how
  std::string created;  //!< YYYY-MM-DD (UTC)
  std::vector<CalibrationParameter> parameters;
  std::vector<CopyRow> hbm_copy;
  std::vector<GemmRow> gemm;
  std::vector<AttentionRow> decode_attention;
  std::vector<LaunchRow> launch;
  std::vector<AllReduceRow> all_reduce;
  //! The parameter's value, if it was measured.
  std::optional<double> parameter(std::string_view name) const;
};

//! Today's date, UTC, as YYYY-MM-DD.
std::string utc_date();

struct Report {
  Backend backend = Backend::cpu;
  std::string device;
  std::vector<Check> checks;
  CalibrationOut calibration;  //!< what was measured for the latency model (every backend)
  double wall_s = 0;
  bool all_pass() const;
};

struct Options {
  Backend backend = Backend::cpu;
  bool quick = false;                 //!< smaller shapes and fewer repetitions (tests)
  std::string npy_k, npy_v;           //!< user K and V (.npy, [T, C] or [T, H, D]), optional
  //! Datasheet ceilings for the calibration; 0 = look the device name up in the catalog
  //! (configs/gpus `cuda_device_names`, exact match).
  double datasheet_bandwidth_bytes_per_s = 0;
  double datasheet_peak_flops_per_s = 0;
  //! Called by the CUDA backend after each group with the report so far, so that a run
  //! cut short (a lent machine's timeout) still leaves what it measured.
  std::function<void(const Report&)> on_progress;
};

//! Runs the CPU backend (the references). The CUDA backend lives in the harness only
//! (kvplan_gpu_validate_cuda: run_cuda_validation), so that nothing else links CUDA.
Report run_validation(const Options& o);

//! {"schema": "kvplan.validate/1", "backend", "device", "all_pass", "wall_s", "checks": [...]}:
//! the one writer of the validate JSON (the harness writes it; `kvplan validate` prints it).
std::string report_json(const Report& r);
//! {"schema": "kvplan.calibration/2", ...}: the file `--calibration` reads.
std::string calibration_json(const CalibrationOut& c);
//! A plain-text table of the checks (the harness prints it; the CLI has its own).
std::string report_table(const Report& r);

namespace detail {
Report run_cpu(const Options& o);
}  // namespace detail

}  // namespace kvplan::gv
