// The layout search's workers on threads.
#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "gpuplan/host.hpp"

namespace gpuplan {

int ThreadRunner::workers(int requested) const {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void ThreadRunner::run(int workers, const std::function<void(int worker)>& work) const {
  // An error in any worker (an InputError a layout raises) reaches the caller as it would from one thread: every
  // worker is joined first, then the first error is rethrown. Escaping a thread, it would end the program.
  std::mutex first_error_mutex;
  std::exception_ptr first_error;
  const auto guarded = [&](int worker) {
    try {
      work(worker);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(first_error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  // The calling thread is worker 0: a one-worker search starts no thread at all.
  std::vector<std::thread> pool;
  for (int i = 1; i < workers; ++i) pool.emplace_back(guarded, i);
  guarded(0);
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

PlanResult search_plans_threaded(const PlanInputs& inputs, ProgressCallback progress) {
  const ThreadRunner threads;
  return search_plans(inputs, std::move(progress), &threads);
}

}  // namespace gpuplan
