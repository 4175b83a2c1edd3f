// Default runtime overheads, read from the embedded data/overheads.json (each value carries its source there).
#include <nlohmann/json.hpp>

#include "gpuplan/memory.hpp"
#include "util/embedded_data.hpp"

namespace gpuplan {

Overheads default_overheads() {
  static const Overheads defaults = [] {
    Overheads o;
    for (const auto& f : detail::embedded_files()) {
      if (f.path != "overheads.json") continue;
      const auto j = nlohmann::json::parse(f.content);
      o.cuda_context_bytes = j.at("cuda_context_bytes").at("value").get<bytes_t>();
      o.nccl_per_communicator_bytes = j.at("nccl_per_communicator_bytes").at("value").get<bytes_t>();
      o.allocator_reserve_factor = j.at("allocator_reserve_factor").at("value").get<double>();
      o.nvme_param_buffer_count = j.at("nvme_param_buffer_count").at("value").get<double>();
      o.nvme_param_buffer_elements = j.at("nvme_param_buffer_elements").at("value").get<double>();
      o.nvme_optimizer_buffer_count = j.at("nvme_optimizer_buffer_count").at("value").get<double>();
      o.optimizer_sub_group_elements = j.at("optimizer_sub_group_elements").at("value").get<double>();
      o.deepspeed_allreduce_buffer_elements = j.at("deepspeed_allreduce_buffer_elements").at("value").get<double>();
      o.zero_reduce_bucket_elements = j.at("zero_reduce_bucket_elements").at("value").get<double>();
      o.zero_allgather_bucket_elements = j.at("zero_allgather_bucket_elements").at("value").get<double>();
      o.zero3_prefetch_elements = j.at("zero3_prefetch_elements").at("value").get<double>();
      o.zero3_max_live_elements = j.at("zero3_max_live_elements").at("value").get<double>();
    }
    return o;
  }();
  return defaults;
}

}  // namespace gpuplan
