// What `gpuplan memory` prints: each component of the worst (or every) stage, the phases, the terms with their
// sources when explaining, and the cheapest changes when the job does not fit.
#include <fmt/format.h>

#include "report/launch_text.hpp"
#include "report/memory_text.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api {

namespace {

struct Component {
  const char* label;
  std::int64_t StageReport::*field;
  Nullable<std::int64_t> StageReport::*unknown_when_null;
};
constexpr Component kComponents[] = {
    {"weights", &StageReport::weights, nullptr},
    {"fp32 master weights", &StageReport::master_weights, nullptr},
    {"gradients", &StageReport::gradients, nullptr},
    {"optimizer states", &StageReport::optimizer_states, nullptr},
    {"activations", nullptr, &StageReport::activations},
    {"logits and loss", nullptr, &StageReport::logits},
    {"weight-gradient buffers (TE)", &StageReport::wgrad_buffers, nullptr},
    {"communication buffers", &StageReport::comm_buffers, nullptr},
    {"runtime (context, comms, allocator)", &StageReport::runtime, nullptr},
};

std::string in_gb(std::int64_t b) { return format_bytes(static_cast<double>(b)); }

std::string stage_table(const StageReport& st, bool explain) {
  // A parameter count alone has no layers to name.
  const std::string layers = st.layers > 0 ? format_quantity(st.layers, "layer", "layers") + ", " : "";
  std::string out = fmt::format("Pipeline stage {} ({}{} in flight), per GPU:\n", st.stage, layers,
                                format_quantity(st.in_flight_microbatches, "microbatch", "microbatches"));
  for (const auto& c : kComponents) {
    std::string value;
    if (c.field != nullptr) value = in_gb(st.*c.field);
    else value = (st.*c.unknown_when_null) ? in_gb(*(st.*c.unknown_when_null)) : "unknown (no architecture)";
    if (c.field == &StageReport::wgrad_buffers && st.wgrad_buffers == 0) continue;   // megatron only
    out += fmt::format("  {:<36} {:>24}\n", c.label, value);
    if (c.field == &StageReport::optimizer_states)
      out += fmt::format("  {:<36} {:>24}\n", "= model states",
                         in_gb(st.weights + st.master_weights + st.gradients + st.optimizer_states));
  }
  out += fmt::format("  {:<36} {:>24}   torch.cuda.max_memory_allocated\n", "allocated peak (tensors)",
                     in_gb(st.allocated_peak));
  out += fmt::format("  {:<36} {:>24}   torch.cuda.max_memory_reserved\n", "reserved peak (caching allocator)",
                     in_gb(st.reserved_peak));
  out += fmt::format("  {:<36} {:>24}   GPU context, communicator buffers\n", "outside PyTorch",
                     in_gb(st.outside_torch));
  out += fmt::format("  {:<36} {:>24}   peak at {}\n", "total = reserved + outside PyTorch", in_gb(st.total),
                     st.peak_phase);
  out += fmt::format("  {:<36} forward end {}, backward {}, optimizer step {}\n", "phases",
                     in_gb(st.phases.forward_end), in_gb(st.phases.backward), in_gb(st.phases.optimizer_step));
  if (st.offloaded_to_host)
    out += fmt::format("  {:<36} {:>24}\n", "offloaded to host memory", in_gb(*st.offloaded_to_host));
  if (st.offloaded_to_nvme) out += fmt::format("  {:<36} {:>24}\n", "offloaded to NVMe", in_gb(*st.offloaded_to_nvme));
  if (explain && st.terms) {
    out += "  Terms:\n";
    for (const auto& t : *st.terms)
      out += fmt::format("    {:<17} {:<62} {:>22}  [{}]\n", t.component, t.name,
                         format_bytes(static_cast<double>(t.bytes)), t.source);
  }
  return out + "\n";
}

// "4.3 GB (4.0 GiB) to spare" or "10.1 GB (9.4 GiB) short": how a total stands against the usable memory.
std::string headroom_text(std::int64_t usable, std::int64_t total) {
  return usable >= total ? in_gb(usable - total) + " to spare" : in_gb(total - usable) + " short";
}

std::string suggestions_header(const MemoryResult& r, bool any_fits) {
  if (!r.activations_known)
    return "With a parameter count alone the activations are unknown, so no change is known to fit; changes that "
           "shrink the rest, closest first:\n";
  if (any_fits) return "Cheapest single changes that make it fit:\n";
  return "No single change makes it fit; the closest:\n";
}

// One host's memory or NVMe: what its GPUs keep there against what it has.
std::string storage_line(const char* what, const NodeStorageReport& s) {
  if (!s.per_gpu) return "";
  std::string per_gpu = in_gb(*s.per_gpu);
  if (s.pinned_buffers && *s.pinned_buffers > 0)
    per_gpu += s.total > 0 ? fmt::format(" ({} offloaded + {} pinned NVMe swap buffers)", in_gb(s.total),
                                         in_gb(*s.pinned_buffers))
                           : " of pinned NVMe swap buffers";
  if (!s.gpus_per_node)
    return fmt::format("{} per GPU: {} (not checked: the GPUs per node are not known)\n", what, per_gpu);
  const std::string needs = fmt::format("{} per host: {} x {} per GPU = {}", what,
                                        format_quantity(*s.gpus_per_node, "GPU", "GPUs"), per_gpu,
                                        in_gb(*s.needed_per_node));
  if (!s.capacity_per_node) return needs + " (capacity not known: not checked)\n";
  return fmt::format("{} of {}: {}\n", needs, in_gb(*s.capacity_per_node), *s.fits ? "fits" : "does NOT fit");
}

std::string node_lines(const MemoryResult& r, bool explain) {
  std::string out = storage_line("Host memory", r.host) + storage_line("NVMe", r.nvme);
  if (out.empty()) return "";
  if (explain && r.host.pinned_buffers && *r.host.pinned_buffers > 0)
    out += "  pinned NVMe swap buffers: offload_optimizer.buffer_count x sub_group_size fp32 elements, and with "
           "parameters offload_param.buffer_count x buffer_size 16-bit elements, each at most what it swaps "
           "[DeepSpeed ZeRO-Infinity defaults, data/overheads.json: nvme_optimizer_buffer_count, "
           "optimizer_sub_group_elements, nvme_param_buffer_count, nvme_param_buffer_elements]\n";
  if (explain)
    out += "  per host: the worst stage's bytes per GPU x the job's GPUs on one host [offloaded states: "
           "ZeRO-Offload arXiv 2101.06840, ZeRO-Infinity arXiv 2104.07857]\n";
  const std::string origin =
      r.node ? *r.node : "not known: give --system, or --host-memory / --nvme-capacity with --gpus-per-node";
  return fmt::format("Host ({}):\n{}\n", origin, out);
}

// What is short besides the GPU: "host memory", "nvme".
std::string node_shortfall(const MemoryResult& r) {
  std::string out;
  if (r.host.fits && !*r.host.fits)
    out += fmt::format("; host memory does NOT fit, {} per node of {}", in_gb(*r.host.needed_per_node),
                       in_gb(*r.host.capacity_per_node));
  if (r.nvme.fits && !*r.nvme.fits)
    out += fmt::format("; NVMe does NOT fit, {} per node of {}", in_gb(*r.nvme.needed_per_node),
                       in_gb(*r.nvme.capacity_per_node));
  return out;
}

std::string verdict(const MemoryResult& r) {
  const std::string needs = fmt::format("Worst stage: {}. Needs {} of {} usable per GPU: ", r.stage,
                                        in_gb(r.per_gpu.total), in_gb(r.usable));
  const std::string standing = headroom_text(r.usable, r.per_gpu.total);
  const bool gpu_fits = r.usable >= r.per_gpu.total;
  if (!r.activations_known)
    return needs + (gpu_fits ? "the model states and runtime fit, " + standing + "; the activations are unknown "
                                                                                 "(give --model)"
                             : "does NOT fit, " + standing + ", before any activation") +
           node_shortfall(r);
  return needs + (gpu_fits ? "fits, " : "does NOT fit, ") + standing + node_shortfall(r);
}

// The memory the check is against, and whose it is: a named GPU, the default one, or a size given; and what is
// usable of it once the margin is kept free.
std::string gpu_line(const MemoryResult& r) {
  const std::string usable = fmt::format("{}; usable {} with {:.0f}% kept free (--memory-margin)", in_gb(r.capacity),
                                         in_gb(r.usable), 100 * r.memory_margin);
  if (r.gpu.empty()) return fmt::format("GPU memory: {} (--gpu-memory)\n", usable);
  return fmt::format("GPU: {}{}: {}\n", r.gpu, r.gpu_assumed ? " (the default; --gpu or --gpu-memory for another)" : "",
                     usable);
}

// The CP exchange where it is not the ring: " (a2a)", " (a2a+p2p, all-to-all groups of 2)".
std::string cp_comm_words(const LayoutSummary& l) {
  if (l.cp <= 1 || l.cp_comm_type == "p2p") return "";
  if (l.cp_comm_type == "a2a+p2p") return fmt::format(" (a2a+p2p, all-to-all groups of {})", l.cp_a2a_size);
  return fmt::format(" ({})", l.cp_comm_type);
}

}  // namespace

std::string detail::suggestions_text(const MemoryResult& r, int most) {
  bool any = false;
  for (const auto& f : r.suggestions) any = any || f.fits;
  std::string out = suggestions_header(r, any);
  int shown = 0, left = 0;
  for (const auto& f : r.suggestions) {
    if (any && !f.fits) continue;
    if (shown == most) {
      ++left;
      continue;
    }
    ++shown;
    out += fmt::format("  {:<24} -> {} per GPU, {}. Cost: {}. ({})\n", f.change, in_gb(f.new_total),
                       headroom_text(r.usable, f.new_total), f.cost, f.description);
  }
  if (left > 0) out += fmt::format("  and {} more: --json lists every one\n", left);
  return out;
}

std::string to_text(const MemoryResult& r, bool explain) {
  const LayoutSummary& l = r.layout;
  const std::string params = format_count(static_cast<double>(r.params.total)) + " parameters";
  const std::string name = r.activations_known ? fmt::format("{} ({})", r.training.model, params) : params;
  std::string out = fmt::format("Model {} on {}: tp {} x pp {} x cp {}{} x dp {}{}, ZeRO {}\n", name,
                                format_quantity(l.gpus, "GPU", "GPUs"), l.tp, l.pp, l.cp, cp_comm_words(l), l.dp,
                                l.ep > 1 ? fmt::format(" (ep {})", l.ep) : "", l.zero);
  out += fmt::format("Training: {} precision{}, {} optimizer, sequence {}, micro-batch {}, {} per step{}\n",
                     r.training.precision, r.training.fp8_param_gather ? " with fp8 parameters" : "",
                     r.training.optimizer, r.training.seq_len, r.training.micro_batch,
                     format_quantity(l.microbatches, "microbatch", "microbatches"),
                     r.vocab_padded ? fmt::format(", vocabulary {} (as padded)", *r.vocab_padded) : "");
  out += gpu_line(r) + detail::framework_text(r.framework) + "\n";
  if (r.stages) {
    for (const auto& st : *r.stages) out += stage_table(st, explain);
  } else {
    out += stage_table(r.per_gpu, explain);
  }
  out += node_lines(r, explain);
  out += verdict(r) + ".\n";
  if (!r.fits) out += detail::suggestions_text(r, 8);
  for (const auto& w : r.warnings) out += fmt::format("Warning: {}\n", w);
  for (const auto& n : r.notes) out += fmt::format("Note: {}\n", n);
  return out + detail::launch_read_text(r.launch_config);
}

}  // namespace gpuplan::api
