// The layout search's workers on threads.
#include <algorithm>
#include <thread>
#include <vector>

#include "gpuplan/host.hpp"

namespace gpuplan {

int ThreadRunner::workers(int requested) const {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void ThreadRunner::run(int workers, const std::function<void(int worker)>& work) const {
  // The calling thread is worker 0: a one-worker search starts no thread at all.
  std::vector<std::thread> pool;
  for (int i = 1; i < workers; ++i) pool.emplace_back([&work, i] { work(i); });
  work(0);
  for (auto& t : pool) t.join();
}

PlanResult search_plans_threaded(const PlanInputs& inputs, ProgressCallback progress) {
  const ThreadRunner threads;
  return search_plans(inputs, std::move(progress), &threads);
}

}  // namespace gpuplan
