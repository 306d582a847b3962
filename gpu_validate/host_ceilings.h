// Host (CPU) timing and ceilings for the CPU backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace kvplan::gv {

//! CPU time this thread has used, in seconds (CLOCK_THREAD_CPUTIME_ID): time spent
//! preempted on a shared CI machine is not counted, unlike wall time.
double thread_cpu_s();
//! Fastest of `reps` runs of f, in thread CPU seconds.
double min_time_s(int reps, const std::function<void()>& f);

//! Streaming read bandwidth of host memory: sums a buffer of `bytes`, bytes/s.
double host_read_bandwidth_bytes_per_s(int64_t bytes, int reps);
//! Seconds of one memcpy of `bytes` (fastest of `reps`); it reads and writes `bytes` each.
double host_copy_time_s(int64_t bytes, int reps);
//! Seconds of one fp32 GEMM y[m, n] = x[m, k] W[n, k]^T as the references compute it
//! (dot products over k), fastest of `reps`.
double host_gemm_time_s(int64_t m, int64_t n, int64_t k, int reps);

}  // namespace kvplan::gv
