#include "size/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kvplan::size {

void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& f) {
  if (n <= 0) return;
  const auto workers = static_cast<int>(std::min<int64_t>(std::max(threads, 1), n));
  std::atomic<int64_t> next{0};
  std::mutex mu;
  int64_t failed_at = n;
  std::exception_ptr failure;
  const auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) {
      try {
        f(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mu);
        if (i < failed_at) {
          failed_at = i;
          failure = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(workers - 1));
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

int thread_count(int requested) {
  return requested > 0 ? requested : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace kvplan::size
