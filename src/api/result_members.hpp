// The JSON member tables of the results: each type's keys in the order `gpuplan ... --json` prints them.
#pragma once

#include "api/json_members.hpp"

namespace gpuplan::api::detail {

#define GPUPLAN_MEMBERS(Type, ...)                                   \
  template <>                                                        \
  struct Members<Type> {                                             \
    using T = Type;                                                  \
    static constexpr auto list = std::make_tuple(__VA_ARGS__);       \
  }

// gpuplan model
GPUPLAN_MEMBERS(MoeSummary, member("routed_experts", &T::routed_experts), member("top_k", &T::top_k),
                member("expert_ffn_hidden", &T::expert_ffn_hidden), member("shared_experts", &T::shared_experts),
                member("router_groups", &T::router_groups), member("router_groups_chosen", &T::router_groups_chosen));
GPUPLAN_MEMBERS(MlaSummary, member("q_lora_rank", &T::q_lora_rank), member("kv_lora_rank", &T::kv_lora_rank),
                member("qk_nope_head_dim", &T::qk_nope_head_dim), member("qk_rope_head_dim", &T::qk_rope_head_dim),
                member("v_head_dim", &T::v_head_dim));
GPUPLAN_MEMBERS(Architecture, member("layers", &T::layers), member("hidden", &T::hidden), member("heads", &T::heads),
                member("kv_heads", &T::kv_heads), member("head_dim", &T::head_dim),
                member("ffn_hidden", &T::ffn_hidden), member("vocab", &T::vocab),
                member("max_positions", &T::max_positions), member("mlp", &T::mlp),
                member("activation", &T::activation), member("norm", &T::norm), member("positions", &T::positions),
                member("tied_embeddings", &T::tied_embeddings), member("moe", &T::moe), member("mla", &T::mla));
GPUPLAN_MEMBERS(LayerParamCounts, member("attention", &T::attention), member("mlp", &T::mlp),
                member("routed_experts", &T::routed_experts), member("shared_experts", &T::shared_experts),
                member("router", &T::router), member("norms", &T::norms), member("total", &T::total));
GPUPLAN_MEMBERS(PerLayerParams, member("dense", &T::dense), member("moe", &T::moe));
GPUPLAN_MEMBERS(ParamSummary, member("total", &T::total), member("active", &T::active),
                member("embedding", &T::embedding), member("lm_head", &T::lm_head),
                member("final_norm", &T::final_norm), member("layers_total", &T::layers_total),
                member("dense_layers", &T::dense_layers), member("moe_layers", &T::moe_layers),
                member("per_layer", &T::per_layer));
GPUPLAN_MEMBERS(FlopsSummary, member("seq_len", &T::seq_len), member("per_token_forward", &T::per_token_forward),
                member("per_token_training", &T::per_token_training), member("six_n", &T::six_n),
                member("attention_forward", &T::attention_forward));
GPUPLAN_MEMBERS(ModelResult, member("name", &T::name), member("model_type", &T::model_type),
                member("architecture", &T::architecture), member("params", &T::params),
                member("flops", &T::flops), member("warnings", &T::warnings));

// gpuplan memory
GPUPLAN_MEMBERS(MemoryTerm, member("component", &T::component), member("name", &T::name),
                member("bytes", &T::bytes), member("source", &T::source));
GPUPLAN_MEMBERS(MemoryPhases, member("forward_end", &T::forward_end), member("backward", &T::backward),
                member("optimizer_step", &T::optimizer_step));
GPUPLAN_MEMBERS(StageReport, member("weights", &T::weights), member("master_weights", &T::master_weights),
                member("gradients", &T::gradients), member("optimizer_states", &T::optimizer_states),
                member("activations", &T::activations), member("logits", &T::logits),
                member("comm_buffers", &T::comm_buffers), member("runtime", &T::runtime), member("total", &T::total),
                member("wgrad_buffers", &T::wgrad_buffers), member("allocated_peak", &T::allocated_peak),
                member("reserved_peak", &T::reserved_peak), member("outside_torch", &T::outside_torch),
                member("peak_phase", &T::peak_phase), member("phases", &T::phases), member("stage", &T::stage),
                member("layers", &T::layers), member("in_flight_microbatches", &T::in_flight_microbatches),
                member("offloaded_to_host", &T::offloaded_to_host),
                member("offloaded_to_nvme", &T::offloaded_to_nvme), member("terms", &T::terms));
GPUPLAN_MEMBERS(ByteTotal, member("total", &T::total));
GPUPLAN_MEMBERS(NodeStorageReport, member("total", &T::total), member("pinned_buffers", &T::pinned_buffers),
                member("per_gpu", &T::per_gpu), member("gpus_per_node", &T::gpus_per_node),
                member("needed_per_node", &T::needed_per_node), member("capacity_per_node", &T::capacity_per_node),
                member("fits", &T::fits));
GPUPLAN_MEMBERS(LayoutSummary, member("gpus", &T::gpus), member("dp", &T::dp), member("tp", &T::tp),
                member("pp", &T::pp), member("cp", &T::cp), member("cp_comm_type", &T::cp_comm_type),
                member("cp_a2a_size", &T::cp_a2a_size), member("ep", &T::ep), member("zero", &T::zero),
                member("microbatches", &T::microbatches));
GPUPLAN_MEMBERS(TrainingSummary, member("model", &T::model), member("precision", &T::precision),
                member("optimizer", &T::optimizer), member("seq_len", &T::seq_len),
                member("micro_batch", &T::micro_batch), member("fp8_param_gather", &T::fp8_param_gather));
GPUPLAN_MEMBERS(SuggestionReport, member("change", &T::change), member("description", &T::description),
                member("new_total", &T::new_total), member("fits", &T::fits),
                member("extra_compute_fraction", &T::extra_compute_fraction),
                member("extra_comm_bytes_per_step", &T::extra_comm_bytes_per_step),
                member("extra_gpus", &T::extra_gpus), member("cost", &T::cost));
GPUPLAN_MEMBERS(FrameworkReport, member("name", &T::name), member("release", &T::release),
                member("rewrites", &T::rewrites));
GPUPLAN_MEMBERS(LaunchReadReport, member("file", &T::file), member("format", &T::format),
                member("framework", &T::framework), member("understood", &T::understood),
                member("not_understood", &T::not_understood), member("changed_beside", &T::changed_beside),
                member("issues", &T::issues));
GPUPLAN_MEMBERS(LaunchFileReport, member("name", &T::name), member("text", &T::text));
GPUPLAN_MEMBERS(MemoryResult, member("per_gpu", &T::per_gpu), member("host", &T::host), member("nvme", &T::nvme),
                member("capacity", &T::capacity), member("usable", &T::usable),
                member("memory_margin", &T::memory_margin), member("headroom", &T::headroom), member("gpu", &T::gpu),
                member("gpu_assumed", &T::gpu_assumed), member("fits", &T::fits), member("stage", &T::stage),
                member("activations_known", &T::activations_known), member("params", &T::params),
                member("vocab_padded", &T::vocab_padded), member("layout", &T::layout),
                member("training", &T::training), member("stages", &T::stages),
                member("does_not_fit", &T::does_not_fit), member("node", &T::node),
                member("suggestions", &T::suggestions), member("warnings", &T::warnings), member("notes", &T::notes),
                member("framework", &T::framework), member("launch_config", &T::launch_config));

// gpuplan estimate and plan
GPUPLAN_MEMBERS(TimeReport, member("step_s", &T::step_s), member("breakdown", &T::breakdown));
GPUPLAN_MEMBERS(ThroughputReport, member("tokens_per_s", &T::tokens_per_s),
                member("tokens_per_s_per_gpu", &T::tokens_per_s_per_gpu),
                member("model_tflops_per_gpu", &T::model_tflops_per_gpu),
                member("hardware_tflops_per_gpu", &T::hardware_tflops_per_gpu), member("mfu", &T::mfu),
                member("hfu", &T::hfu), member("peak_tflops_per_gpu", &T::peak_tflops_per_gpu),
                member("flop_convention", &T::flop_convention), member("mfu_causal", &T::mfu_causal),
                member("hfu_causal", &T::hfu_causal),
                member("warnings", &T::warnings));
GPUPLAN_MEMBERS(ClusterReport, member("origin", &T::origin), member("gpu", &T::gpu), member("nodes", &T::nodes),
                member("gpus_per_node", &T::gpus_per_node), member("order", &T::order),
                member("perf_constants", &T::perf_constants), member("comm_calibration", &T::comm_calibration),
                member("gemm_efficiency_source", &T::gemm_efficiency_source),
                member("attention_efficiency_source", &T::attention_efficiency_source));
GPUPLAN_MEMBERS(BoundsReport, member("compute_s", &T::compute_s), member("flops_per_gpu", &T::flops_per_gpu),
                member("memory_s", &T::memory_s), member("hbm_bytes_per_gpu", &T::hbm_bytes_per_gpu),
                member("network_s", &T::network_s), member("node_import_bytes", &T::node_import_bytes),
                member("node_nic_GBps", &T::node_nic_GBps), member("binding", &T::binding),
                member("step_over_binding", &T::step_over_binding));
GPUPLAN_MEMBERS(EstimateResult, member("time", &T::time), member("throughput", &T::throughput),
                member("memory", &T::memory), member("cluster", &T::cluster),
                member("launch_files", &T::launch_files), member("launch_written", &T::launch_written),
                member("bounds", &T::bounds));
GPUPLAN_MEMBERS(PlanLayout, member("gpus", &T::gpus), member("tp", &T::tp), member("pp", &T::pp),
                member("vpp", &T::vpp), member("cp", &T::cp), member("cp_comm_type", &T::cp_comm_type),
                member("cp_a2a_size", &T::cp_a2a_size), member("ep", &T::ep), member("etp", &T::etp),
                member("dp", &T::dp), member("micro_batch", &T::micro_batch), member("microbatches", &T::microbatches),
                member("sequence_parallel", &T::sequence_parallel), member("tp_overlap", &T::tp_overlap),
                member("zero", &T::zero), member("recompute", &T::recompute),
                member("recompute_layers", &T::recompute_layers), member("offload", &T::offload),
                member("offload_target", &T::offload_target), member("pp_schedule", &T::pp_schedule),
                member("first_stage_layers", &T::first_stage_layers),
                member("last_stage_layers", &T::last_stage_layers));
GPUPLAN_MEMBERS(PlanReport, member("time", &T::time), member("throughput", &T::throughput),
                member("memory", &T::memory), member("layout", &T::layout), member("usable_bytes", &T::usable_bytes),
                member("command", &T::command), member("cost_per_million_tokens", &T::cost_per_million_tokens),
                member("lacks_bytes", &T::lacks_bytes), member("equivalents", &T::equivalents));
GPUPLAN_MEMBERS(SensitivityReport, member("change", &T::change), member("fits", &T::fits),
                member("step_s", &T::step_s), member("delta", &T::delta), member("note", &T::note));
GPUPLAN_MEMBERS(PlanJob, member("model", &T::model), member("cluster", &T::cluster),
                member("objective", &T::objective), member("gpus", &T::gpus), member("seq_len", &T::seq_len),
                member("global_batch", &T::global_batch), member("capacity_bytes", &T::capacity_bytes),
                member("offload_searched", &T::offload_searched), member("warnings", &T::warnings));
GPUPLAN_MEMBERS(PlanBaseline, member("step_s", &T::step_s), member("memory_bytes", &T::memory_bytes),
                member("fits", &T::fits), member("speedup", &T::speedup), member("note", &T::note));
GPUPLAN_MEMBERS(PlanResult, member("job", &T::job), member("plans", &T::plans), member("space", &T::space),
                member("evaluated", &T::evaluated), member("feasible", &T::feasible),
                member("pruned_by_memory", &T::pruned_by_memory), member("pruned_by_time", &T::pruned_by_time),
                member("search_seconds", &T::search_seconds), member("memory_margin", &T::memory_margin),
                member("why_winner", &T::why_winner), member("sensitivity", &T::sensitivity),
                member("near_misses", &T::near_misses), member("launch_config", &T::launch_config),
                member("baseline", &T::baseline),
                member("launch_files", &T::launch_files), member("launch_written", &T::launch_written));

// gpuplan size
GPUPLAN_MEMBERS(SizePoint, member("system", &T::system), member("nodes", &T::nodes), member("gpus", &T::gpus),
                member("fits", &T::fits), member("network_tier", &T::network_tier), member("nic_GBps", &T::nic_GBps),
                member("step_s", &T::step_s), member("tokens_per_s", &T::tokens_per_s), member("mfu", &T::mfu),
                member("mfu_causal", &T::mfu_causal), member("bubble_fraction", &T::bubble_fraction),
                member("days", &T::days),
                member("gpu_hours", &T::gpu_hours), member("energy_MWh", &T::energy_MWh),
                member("cost_dollars", &T::cost_dollars), member("pareto", &T::pareto),
                member("meets_deadline", &T::meets_deadline), member("layout", &T::layout),
                member("command", &T::command), member("note", &T::note));
GPUPLAN_MEMBERS(SizeHeadline, member("question", &T::question), member("point", &T::point),
                member("answer", &T::answer));
GPUPLAN_MEMBERS(SizeJob, member("model", &T::model), member("tokens", &T::tokens), member("seq_len", &T::seq_len),
                member("global_batch", &T::global_batch), member("global_batch_tokens", &T::global_batch_tokens),
                member("objective", &T::objective), member("goodput", &T::goodput),
                member("checkpoint_overhead", &T::checkpoint_overhead), member("deadline_days", &T::deadline_days),
                member("assumptions", &T::assumptions));
GPUPLAN_MEMBERS(SizeResult, member("job", &T::job), member("points", &T::points),
                member("headlines", &T::headlines), member("explanation", &T::explanation),
                member("notes", &T::notes), member("warnings", &T::warnings),
                member("layouts_evaluated", &T::layouts_evaluated),
                member("search_seconds", &T::search_seconds), member("chart_svg", &T::chart_svg),
                member("chart_written", &T::chart_written));

// gpuplan comm
GPUPLAN_MEMBERS(CollectiveRow, member("size_bytes", &T::size_bytes), member("time_s", &T::time_s),
                member("algbw_GBps", &T::algbw_GBps), member("busbw_GBps", &T::busbw_GBps),
                member("algorithm", &T::algorithm), member("protocol", &T::protocol), member("reason", &T::reason));
GPUPLAN_MEMBERS(FitStats, member("rows", &T::rows), member("files", &T::files),
                member("mean_rel_error", &T::mean_rel_error), member("max_rel_error", &T::max_rel_error));
GPUPLAN_MEMBERS(RankBandwidth, member("ranks", &T::ranks), member("bus_GBps", &T::bus_GBps));
GPUPLAN_MEMBERS(TierFitReport, member("bus_GBps", &T::bus_GBps), member("latency_us", &T::latency_us),
                member("step_latency_us", &T::step_latency_us), member("bus_GBps_by_ranks", &T::bus_GBps_by_ranks),
                member("fit", &T::fit),
                member("sources", &T::sources));
GPUPLAN_MEMBERS(CommCalibrationSection, member("_comment", &T::comment), member("intra", &T::intra),
                member("inter", &T::inter), member("sources", &T::sources));
GPUPLAN_MEMBERS(CalibrationDocument, member("comm", &T::comm));
GPUPLAN_MEMBERS(CalibrationFileReport, member("file", &T::file), member("collective", &T::collective),
                member("ranks", &T::ranks), member("hosts", &T::hosts), member("rows", &T::rows),
                member("warnings", &T::warnings));
GPUPLAN_MEMBERS(CalibrationComparison, member("file", &T::file), member("ranks", &T::ranks), member("rows", &T::rows),
                member("model_mean_rel_error", &T::model_mean_rel_error),
                member("model_max_rel_error", &T::model_max_rel_error),
                member("calibrated_mean_rel_error", &T::calibrated_mean_rel_error),
                member("calibrated_max_rel_error", &T::calibrated_max_rel_error));
GPUPLAN_MEMBERS(FittedConstant, member("name", &T::name), member("before", &T::before), member("after", &T::after),
                member("lower", &T::lower), member("upper", &T::upper));
GPUPLAN_MEMBERS(MeasuredRunReport, member("run", &T::run), member("measured_s", &T::measured_s),
                member("before_s", &T::before_s), member("after_s", &T::after_s));
GPUPLAN_MEMBERS(RunsFit, member("gpu", &T::gpu), member("constants", &T::constants), member("runs", &T::runs),
                member("mape_before", &T::mape_before), member("mape_after", &T::mape_after),
                member("folds", &T::folds), member("held_out_mape_before", &T::held_out_mape_before),
                member("held_out_mape_after", &T::held_out_mape_after));
GPUPLAN_MEMBERS(CalibrateResult, member("runs_fit", &T::runs_fit), member("calibration", &T::calibration),
                member("files", &T::files),
                member("comparison", &T::comparison), member("compared_on", &T::compared_on),
                member("written", &T::written));

// gpuplan topo
GPUPLAN_MEMBERS(TopoGpuReport, member("index", &T::index), member("name", &T::name),
                member("numa_node", &T::numa_node), member("numa_affinity", &T::numa_affinity),
                member("cpu_affinity", &T::cpu_affinity),
                member("gpu_numa_id", &T::gpu_numa_id), member("pci_bus_id", &T::pci_bus_id),
                member("nearest_nic", &T::nearest_nic));
GPUPLAN_MEMBERS(TopoNicReport, member("label", &T::label), member("name", &T::name),
                member("gpu_codes", &T::gpu_codes), member("nearest_gpus", &T::nearest_gpus));
GPUPLAN_MEMBERS(TopoResult, member("format", &T::format), member("gpus", &T::gpus), member("nics", &T::nics),
                member("links", &T::links), member("bandwidth_GBps", &T::bandwidth_GBps),
                member("nvlink_domains", &T::nvlink_domains), member("scaleup_link", &T::scaleup_link),
                member("all_to_all_groups", &T::all_to_all_groups),
                member("max_tp_in_domain", &T::max_tp_in_domain), member("gpu", &T::gpu),
                member("generation", &T::generation), member("generation_reason", &T::generation_reason),
                member("nvlink_per_link_GBps", &T::nvlink_per_link_GBps), member("rates_source", &T::rates_source),
                member("fastest_gpu_GBps", &T::fastest_gpu_GBps), member("nic_GBps", &T::nic_GBps),
                member("nic_GBps_reason", &T::nic_GBps_reason), member("compute_nics", &T::compute_nics),
                member("warnings", &T::warnings), member("advice", &T::advice));

// gpuplan catalog (models; the hardware entries have their own writer in catalog_json.cpp)
GPUPLAN_MEMBERS(ModelSummary, member("name", &T::name), member("model_type", &T::model_type),
                member("layers", &T::layers), member("hidden", &T::hidden), member("total_params", &T::total_params),
                member("active_params", &T::active_params));

#undef GPUPLAN_MEMBERS

}  // namespace gpuplan::api::detail

