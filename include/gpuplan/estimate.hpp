#pragma once
// Step time of a training job: compute per operation, every collective each parallel dimension needs priced on
// the fabric, pipeline bubble, overlap; with throughput, MFU and HFU. Pure; see docs/estimate.md.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuplan/comm.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"

namespace gpuplan {

struct TimeOptions {
  bool tp_overlap = false;               // --tp-overlap: TP communication hidden behind GEMMs
  std::string order = "tp-cp-ep-dp-pp";  // rank placement, innermost first (Megatron-LM's default)
  bool dp_overlap = true;                // gradient reduction in buckets overlapped with backward (Megatron-LM
                                         // --overlap-grad-reduce, PyTorch DDP); false: after backward (--no-dp-overlap)
  bool pp_overlap = true;                // Megatron-LM and NeMo under the interleaved schedule: pipeline sends and
                                         // receives run beside the next chunk's compute (overlap_p2p_comm, their
                                         // default there); false: each waits (--no-overlap-p2p-communication)
  std::optional<double> tp_overlap_sms;  // with TP overlap, the SMs this job's overlap configuration gives the
                                         // reduce-scatter kernels (userbuffers num_sm); none: the perf constant
                                         // tp_overlap_reserved_sms
};

// Efficiency constants of the compute model for one GPU (data/perf.json; every value carries its source there).
// Measured GEMM efficiencies of one GPU by shape (data/gemm/*.json): the fraction of the dense bf16 peak the
// forward, input-gradient and weight-gradient GEMMs of a linear layer reach, keyed by its forward shape.
struct GemmEfficiencyTable {
  struct Entry {
    double rows = 0, outputs = 0, inputs = 0;       // the forward GEMM: rows x inputs times inputs x outputs
    double forward = 0, dgrad = 0, wgrad = 0;
    double log2_rows = 0, log2_outputs = 0, log2_inputs = 0;   // derived: where the lookup measures distances
  };
  std::string gpu, source;
  std::vector<Entry> dense;                          // one linear layer
  std::vector<Entry> grouped;                        // one expert of a grouped GEMM (MoE)
  double best = 0;                                   // the highest efficiency of any entry
  // Flash attention of one kernel call (causal), as measured: full s x s FLOPs (forward 2 x keys x tokens x heads
  // x (qk + v head dims), backward 2.5x that) over time and peak, so twice what the causal kernel reaches.
  struct AttentionEntry {
    double heads = 0, keys = 0, qk_head_dim = 0, v_head_dim = 0;
    double forward = 0, backward = 0;
  };
  std::vector<AttentionEntry> attention;
};

struct PerfConstants {
  double gemm_max_efficiency = 0;        // fraction of the dense peak a large, square GEMM reaches
  double fp8_gemm_max_efficiency = 0;    // the same for fp8 GEMMs, of the fp8 peak; 0: gemm_max_efficiency
  double fp8_split_accumulation_slowdown = 1;  // time of an fp8 input- or weight-gradient GEMM's math over the
                                         // forward's: the frameworks ask for the split accumulator there, and
                                         // fp8_gemm_max_efficiency is measured with fast accumulation
  double gemm_memory_efficiency = 0;     // fraction of HBM peak a GEMM's operand traffic reaches
  double roofline_sharpness = 0;         // p of t = (tc^p + tm^p)^(1/p): 1 adds compute and memory time, large -> max
  double gemm_tile_m = 0, gemm_tile_n = 0;  // output tile of one thread block (wave quantization)
  double sm_count = 0;                   // streaming multiprocessors (wave quantization)
  double flash_attention_efficiency = 0; // fraction of the peak a flash-attention kernel reaches on long keys
  double flash_attention_half_length = 0; // keys per kernel call at which it reaches half that (tokens)
  double sdpa_attention_efficiency = 0;  // the same for PyTorch's scaled_dot_product_attention (FlashAttention-2
                                         // kernels), which PyTorch modules call; 0: flash_attention_efficiency
  double memory_bound_efficiency = 0;    // fraction of HBM peak elementwise/normalization kernels reach
  double kernel_overhead_s = 0;          // GPU-side launch latency + tail of one kernel (idle SMs between kernels)
  double host_op_s = 0;                  // host (CPU) time the framework spends per kernel it launches; the GPU
                                         // runs asynchronously behind it, so a microbatch takes max(GPU, host)
  double optimizer_bytes_per_param = 0;  // HBM traffic of one mixed-precision Adam step per local parameter
  double host_link_efficiency = 0;       // fraction of the host-link rate offload copies reach
  double cpu_adam_params_per_s = 0;      // CPU optimizer step rate (offload), parameters per second per node
  double dp_bucket_elements = 0;         // gradient bucket in elements (the last one is exposed when overlapped)
  double dp_bucket_elements_per_rank = 0;   // ... at least this many per rank of the data x context group
  double step_overhead_s = 0;            // per-iteration fixed cost outside the modelled kernels
  double overlap_slowdown = 0;           // compute lost per second of communication overlapped with it (SMs and
                                         // HBM bandwidth the collective's kernels take)
  double gpu_speed_spread = 0;           // relative standard deviation of the sustained speeds of a SKU's GPUs; a
                                         // synchronous job waits for its slowest (breakdown `slowest_gpu`)
  double tp_overlap_reserved_sms = 0;    // with TP overlap, SMs the reduce-scatter after each row-parallel forward
                                         // GEMM takes from that GEMM (Transformer Engine's set_sm_margin)
  double measured_gemm_efficiency = 1;   // 1: use data/gemm/'s measured table for this GPU where there is one
  double nvme_optimizer_overlap = 0;     // fraction of the CPU optimizer step that NVMe reads and writes of the
                                         // swapped states hide behind (DeepSpeed pipeline_read/pipeline_write)
  double collective_call_s = 0;          // the framework's cost of one collective call beyond the wire (launch, the
                                         // stream synchronisation around it), as measured on a node
  double permute_efficiency = 0;         // fraction of HBM peak the MoE token permute/unpermute kernels reach;
                                         // 0: memory_bound_efficiency
  double cross_entropy_efficiency = 0;   // fraction of HBM peak Megatron-LM's vocab-parallel cross-entropy passes
                                         // reach (unfused and fused-native); 0: memory_bound_efficiency
  double te_cross_entropy_efficiency = 0;  // the same for Transformer Engine's fused cross-entropy kernels
  // What `gpuplan calibrate --runs` fits to measured step times (1, 1, 1, 0: the model as published).
  double compute_efficiency_scale = 1;   // multiplies every GEMM efficiency (measured table or constant), capped
                                         // at the peak
  double comm_intra_efficiency = 1;      // fraction of the modelled speed collectives inside one node reach
  double comm_inter_efficiency = 1;      // the same for collectives whose group spans nodes (the NICs)
  double microbatch_host_s = 0;          // host time per microbatch and pipeline stage the GPUs wait for
                                         // (schedule, p2p bookkeeping, loss synchronization), not hidden
  std::string source;                    // which entry of data/perf.json (and overlays) these came from
  // Measured 16-bit GEMM efficiencies by shape for this GPU, when data/gemm/ has them; otherwise (null) linear
  // layers use gemm_max_efficiency with wave quantization, an assumed constant.
  std::shared_ptr<const GemmEfficiencyTable> gemm_table;
  // The table's source; without one, the GPU's own gemm_max_efficiency entry or overlay, else "assumed: ...".
  const std::string& gemm_efficiency_source() const;
  // Under fp8 training: the layers' fp8 GEMMs (fp8_gemm_max_efficiency's entry, or "assumed"), then the 16-bit
  // work's source as gemm_efficiency_source() gives it.
  std::string fp8_gemm_efficiency_source() const;
  // Where flash_attention_efficiency and gemm_max_efficiency were set ("builtin:perf.json: architectures.cdna3.
  // flash_attention_efficiency", with the entry's source).
  std::string flash_attention_origin, gemm_max_origin, fp8_gemm_origin, sdpa_attention_origin;
  std::string gemm_constant_source;  // gemm_max_origin where it is the GPU's own or the user's; empty otherwise
  // Where the attention kernels' efficiencies come from: the measured table's attention calls, the entry of
  // data/perf.json (or an overlay) for this GPU or its architecture, or "assumed: ..." where only the defaults'
  // A100 figure applies to another architecture.
  std::string attention_efficiency_source;
  // The same for attention through PyTorch's scaled_dot_product_attention (Hugging Face and torch.nn modules,
  // torchtitan) rather than Transformer Engine's fused attention.
  std::string sdpa_attention_efficiency_source;
};

// The constants for `gpu` from data/perf.json, patched by each overlay JSON text (same schema; "-" names a
// section). Keys: "defaults", then per "architecture" and per GPU name, later ones winning. Throws InputError
// naming the origin and key for a malformed overlay.
PerfConstants perf_constants(const GpuSpec& gpu, const std::vector<std::pair<std::string, std::string>>& overlays = {});
// Throws InputError naming `field` unless `reserved_sms` TP-overlap SMs leave some of the GPU's sm_count.
void check_reserved_sms(double reserved_sms, const PerfConstants& constants, const GpuSpec& gpu,
                        const std::string& field);

struct EstimateInputs {
  MemoryInputs memory;                   // model, training setup, layout (as `gpuplan memory`)
  GpuSpec gpu;                           // compute peaks and HBM bandwidth
  Fabric fabric;
  TimeOptions time;
  std::optional<PerfConstants> perf;     // the compute constants (--perf overlays applied); empty: perf_constants(gpu)
};

// One term of the step time: exposed seconds on the critical path. Names are fixed literals ("forward",
// "tp_comm", ...), the same terms in the same order for every estimate.
struct TimeTerm {
  std::string_view name;
  double seconds = 0;
  bool operator==(const TimeTerm&) const = default;
};
inline constexpr std::size_t kTimeTerms = 18;

struct StepEstimate {
  MemoryReport memory;
  double step_s = 0;
  std::array<TimeTerm, kTimeTerms> breakdown;  // sums to step_s
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;       // model FLOPs (no recompute) per GPU per second / 1e12
  double hardware_tflops_per_gpu = 0;    // with recomputation counted
  double mfu = 0;                        // model FLOPs utilization vs dense bf16/fp16 (or fp8) peak
  double mfu_causal = 0;                 // the same with causal attention's score and context FLOPs halved
  double hfu = 0;                        // hardware FLOPs (with recompute) utilization
  double hfu_causal = 0;                 // the same with causal attention's score and context FLOPs halved
  double peak_tflops = 0;                // the peak MFU and HFU divide by
};

StepEstimate estimate_step(const EstimateInputs& in);

// What no step of the layout can beat, however its work overlaps, each worked out on its own from the layout
// (src/perf/physical_bounds.cpp): its FLOPs per GPU (causal attention) over the dense peak; the bytes a GPU must
// move through HBM (every weight it holds read forward and backward each microbatch, the optimizer's states read
// and written) over the HBM bandwidth; the bytes a node must bring in over its NICs (data-parallel gradients and
// ZeRO gathers, TP, CP and EP exchanges of groups that leave the node, pipeline sends between nodes) over the
// node's NIC bandwidth. `binding` names the largest.
struct PhysicalBounds {
  double flops_per_gpu = 0, compute_s = 0;
  double hbm_bytes_per_gpu = 0, memory_s = 0;
  double node_import_bytes = 0, network_s = 0;
  const char* binding = "compute";
};
PhysicalBounds physical_bounds(const EstimateInputs& in);
// estimate_step without its memory report (left empty): the same time, breakdown and throughput, for searches
// that have priced the memory already.
StepEstimate estimate_step_time(const EstimateInputs& in);

// A cheap floor for search pruning: never above estimate_step(in).step_s for a valid input (one estimate_step
// accepts). The decoder layers' linear-layer FLOPs of the most loaded pipeline stage (forward, backward and
// recomputed forward) at the best GEMM efficiency the model assigns; no communication, bubble or memory-bound
// work. Give `perf` to keep it free of the constants lookup.
double step_time_lower_bound_s(const EstimateInputs& in);

// Rank placement. Dimensions in the order innermost first ("tp-cp-ep-dp-pp"; '-' or ',' separated); throws
// InputError naming --order unless each of tp, cp, ep, dp, pp appears exactly once.
enum class ParallelDim { tp = 0, cp = 1, ep = 2, dp = 3, pp = 4 };
std::array<ParallelDim, 5> parse_order(std::string_view order);

// Where each communication group lies for a layout on nodes of `gpus_per_node` GPUs. `dp` is the dense-gradient
// group (data x context parallel, experts included), `edp` the expert-gradient group, `pp` one stage boundary
// (two neighbouring stages).
struct RankPlacement {
  GroupPlacement tp, cp, ep, dp, edp, pp;
};
RankPlacement place_ranks(const Layout& layout, int gpus_per_node, const std::array<ParallelDim, 5>& order);

}  // namespace gpuplan
