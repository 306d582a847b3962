// kvplan calib: fitting the step-time model's parameters from measurements by linear
// least squares (Eigen). docs/calibration.md names every parameter, its unit and the
// model form each fit assumes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvplan::calib {

struct GemmSample {
  int64_t m = 0, n = 0, k = 0;   // (m x k) x (k x n)
  double bytes_per_elem = 2;     // from the dtype
  double time_s = 0;
};
struct AllReduceSample {
  int64_t gpus = 2;
  int64_t bytes = 0;
  double time_s = 0;
};
//! A memory-bound kernel (a copy, a norm, an add): bytes read plus written.
struct BytesSample {
  int64_t bytes = 0;
  double time_s = 0;
};

struct Measurements {
  std::vector<GemmSample> gemm;
  std::vector<AllReduceSample> all_reduce;
  std::vector<BytesSample> hbm_copy;
  std::vector<BytesSample> elementwise;
  bool empty() const { return gemm.empty() && all_reduce.empty() && hbm_copy.empty() && elementwise.empty(); }
};

struct Parameter {
  double value = 0;
  std::string unit;
  std::string source;
};
using Parameters = std::map<std::string, Parameter>;

//! The device the measurements were taken on, as its datasheet gives it: efficiencies
//! are fitted rates over these.
struct Datasheet {
  double peak_flops_per_s = 0;   // dense, of the GEMMs' dtype
  double bandwidth_bytes_per_s = 0;
};

//! The fit of one table, for reports and tests.
struct FitQuality {
  int64_t samples = 0;
  double rms_relative_error = 0;  // sqrt(mean((fit - measured)^2 / measured^2))
};

//! Fits every parameter the tables determine (gemm: kernel_floor_s,
//! gemm_bandwidth_efficiency, gemm_flops_efficiency, joint with elementwise:
//! elementwise_bandwidth_efficiency; all_reduce: allreduce_latency_s,
//! allreduce_bus_bytes_per_s; hbm_copy: bandwidth_efficiency). Rows are weighted by 1 / time, so
//! the fit minimizes relative error and a 5 us kernel counts as much as a 5 ms one.
//! Throws InputError(`file`, "measurements.<table>", ...) when a table has fewer rows
//! than unknowns or gives a non-positive rate. `quality` (optional) gets one entry per table.
Parameters fit(const Measurements& m, const Datasheet& d, const std::string& file,
               std::map<std::string, FitQuality>* quality = nullptr);

}  // namespace kvplan::calib
