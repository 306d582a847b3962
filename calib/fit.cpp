// Least-squares fits of the step-time model's kernel and collective terms. Each table
// has a model linear in its unknowns (the additive kernel form t = floor + bytes /
// bandwidth + FLOPs / rate; NCCL's t = latency + 2 (n-1)/n bytes / bus bandwidth,
// nccl-tests doc/PERFORMANCE.md), solved with Eigen's column-pivoting Householder QR on
// rows scaled by 1 / measured time (relative error).
#include "calib/fit.h"

#include <Eigen/Dense>
#include <cmath>
#include <string>

#include "planner/types.h"

namespace kvplan::calib {

namespace {

struct Solved {
  Eigen::VectorXd x;
  double rms_rel = 0;
};

Solved solve(const Eigen::MatrixXd& a, const Eigen::VectorXd& t, const std::string& file, const std::string& key) {
  if (a.rows() < a.cols())
    throw InputError(file, key, "at least " + std::to_string(a.cols()) + " rows to fit", std::to_string(a.rows()));
  Eigen::MatrixXd w = a;
  Eigen::VectorXd b = Eigen::VectorXd::Ones(t.size());
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    if (!(t(i) > 0) || !std::isfinite(t(i)))
      throw InputError(file, key, "positive finite time_s in every row", std::to_string(t(i)));
    w.row(i) /= t(i);
  }
  Solved s;
  s.x = w.colPivHouseholderQr().solve(b);
  const Eigen::VectorXd r = w * s.x - b;
  s.rms_rel = std::sqrt(r.squaredNorm() / static_cast<double>(r.size()));
  return s;
}

double positive(double v, const std::string& file, const std::string& key, const std::string& what) {
  if (!(v > 0) || !std::isfinite(v))
    throw InputError(file, key, "timings from which " + what + " comes out positive", std::to_string(v));
  return v;
}

}  // namespace

Parameters fit(const Measurements& m, const Datasheet& d, const std::string& file,
               std::map<std::string, FitQuality>* quality) {
  Parameters p;
  auto note = [&](const std::string& table, int64_t n, double rms) {
    if (quality) (*quality)[table] = FitQuality{n, rms};
  };
  if (!m.gemm.empty()) {
    // Unknowns: floor (s), 1 / bandwidth (s/B), 1 / FLOP rate (s/FLOP), and with
    // elementwise rows 1 / their bandwidth; the floor is shared by every kernel.
    const bool el = !m.elementwise.empty();
    const auto rows = static_cast<Eigen::Index>(m.gemm.size() + m.elementwise.size());
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows, el ? 4 : 3);
    Eigen::VectorXd t(rows);
    Eigen::Index i = 0;
    for (const GemmSample& g : m.gemm) {
      const auto mm = static_cast<double>(g.m), nn = static_cast<double>(g.n), kk = static_cast<double>(g.k);
      a(i, 0) = 1;
      a(i, 1) = (mm * kk + kk * nn + mm * nn) * g.bytes_per_elem;  // A and B read, C written
      a(i, 2) = 2 * mm * nn * kk;
      t(i++) = g.time_s;
    }
    for (const BytesSample& e : m.elementwise) {
      a(i, 0) = 1;
      a(i, 3) = static_cast<double>(e.bytes);
      t(i++) = e.time_s;
    }
    const std::string key = el ? "measurements.gemm+elementwise" : "measurements.gemm";
    const Solved s = solve(a, t, file, key);
    const std::string src = "least squares over " + std::to_string(m.gemm.size()) + " GEMM" +
                            (el ? " and " + std::to_string(m.elementwise.size()) + " elementwise" : std::string()) +
                            " timings (" + file + ")";
    p["kernel_floor_s"] = {positive(s.x(0), file, key, "the kernel floor"), "s", src};
    p["gemm_bandwidth_efficiency"] = {
        1.0 / positive(s.x(1), file, key, "the GEMM bandwidth") / d.bandwidth_bytes_per_s, "fraction of datasheet bandwidth", src};
    p["gemm_flops_efficiency"] = {
        1.0 / positive(s.x(2), file, key, "the GEMM FLOP rate") / d.peak_flops_per_s, "fraction of datasheet peak", src};
    if (el)
      p["elementwise_bandwidth_efficiency"] = {
          1.0 / positive(s.x(3), file, key, "the elementwise bandwidth") / d.bandwidth_bytes_per_s,
          "fraction of datasheet bandwidth", src};
    note(key, rows, s.rms_rel);
  }
  if (!m.all_reduce.empty()) {
    const auto rows = static_cast<Eigen::Index>(m.all_reduce.size());
    Eigen::MatrixXd a(rows, 2);
    Eigen::VectorXd t(rows);
    for (Eigen::Index i = 0; i < rows; ++i) {
      const AllReduceSample& r = m.all_reduce[static_cast<size_t>(i)];
      if (r.gpus < 2) throw InputError(file, "measurements.all_reduce.gpus", "at least 2", std::to_string(r.gpus));
      const auto n = static_cast<double>(r.gpus);
      a(i, 0) = 1;
      a(i, 1) = 2 * (n - 1) / n * static_cast<double>(r.bytes);
      t(i) = r.time_s;
    }
    const std::string key = "measurements.all_reduce";
    const Solved s = solve(a, t, file, key);
    const std::string src = "least squares over " + std::to_string(rows) + " all-reduce timings (" + file + ")";
    p["allreduce_latency_s"] = {positive(s.x(0), file, key, "the latency"), "s", src};
    p["allreduce_bus_bytes_per_s"] = {1.0 / positive(s.x(1), file, key, "the bus bandwidth"), "B/s", src};
    note(key, rows, s.rms_rel);
  }
  if (!m.hbm_copy.empty()) {
    const auto rows = static_cast<Eigen::Index>(m.hbm_copy.size());
    Eigen::MatrixXd a(rows, 2);
    Eigen::VectorXd t(rows);
    for (Eigen::Index i = 0; i < rows; ++i) {
      a(i, 0) = 1;
      a(i, 1) = static_cast<double>(m.hbm_copy[static_cast<size_t>(i)].bytes);
      t(i) = m.hbm_copy[static_cast<size_t>(i)].time_s;
    }
    const std::string key = "measurements.hbm_copy";
    const Solved s = solve(a, t, file, key);
    p["bandwidth_efficiency"] = {1.0 / positive(s.x(1), file, key, "the bandwidth") / d.bandwidth_bytes_per_s,
                                 "fraction of datasheet bandwidth",
                                 "least squares over " + std::to_string(rows) + " copy timings (" + file + ")"};
    note(key, rows, s.rms_rel);
  }
  return p;
}

}  // namespace kvplan::calib
