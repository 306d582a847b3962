#include "gpu_validate/host_ceilings.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <limits>
#include <vector>

namespace kvplan::gv {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double min_time_s(int reps, const std::function<void()>& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; ++i) {
    const double t0 = thread_cpu_s();
    f();
    best = std::min(best, thread_cpu_s() - t0);
  }
  return best;
}

double host_read_bandwidth_bytes_per_s(int64_t bytes, int reps) {
  std::vector<float> buf(static_cast<size_t>(bytes) / sizeof(float), 1.0f);
  volatile float sink = 0;
  const double t = min_time_s(reps, [&] {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= buf.size(); i += 4) {
      s0 += buf[i]; s1 += buf[i + 1]; s2 += buf[i + 2]; s3 += buf[i + 3];
    }
    sink = sink + s0 + s1 + s2 + s3;
  });
  return static_cast<double>(buf.size() * sizeof(float)) / t;
}

double host_copy_time_s(int64_t bytes, int reps) {
  std::vector<char> a(static_cast<size_t>(bytes), 1), b(static_cast<size_t>(bytes), 0);
  const double t = min_time_s(reps, [&] { std::memcpy(b.data(), a.data(), a.size()); });
  volatile char sink = b[b.size() / 2];
  (void)sink;
  return t;
}

double host_gemm_time_s(int64_t m, int64_t n, int64_t k, int reps) {
  const auto M = static_cast<size_t>(m), N = static_cast<size_t>(n), K = static_cast<size_t>(k);
  std::vector<float> x(M * K, 0.5f), w(N * K, 0.25f), y(M * N, 0.0f);
  const double t = min_time_s(reps, [&] {
    for (size_t i = 0; i < M; ++i)
      for (size_t j = 0; j < N; ++j) {
        float acc = 0;
        for (size_t p = 0; p < K; ++p) acc += x[i * K + p] * w[j * K + p];
        y[i * N + j] = acc;
      }
  });
  volatile float sink = y[y.size() / 2];
  (void)sink;
  return t;
}

}  // namespace kvplan::gv
