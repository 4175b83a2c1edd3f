#pragma once
// Step time of a training job: compute per operation, every collective each parallel dimension needs priced on
// the fabric, pipeline bubble, overlap; with throughput, MFU and HFU. Pure; see docs/estimate.md.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/comm.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"

namespace gpuplan {

struct TimeOptions {
  bool tp_overlap = false;               // --tp-overlap: TP communication hidden behind GEMMs
  std::string order = "tp-cp-ep-dp-pp";  // rank placement, innermost first (Megatron-LM's default)
};

struct EstimateInputs {
  MemoryInputs memory;                   // model, training setup, layout (as `gpuplan memory`)
  GpuSpec gpu;                           // compute peaks and HBM bandwidth
  Fabric fabric;
  TimeOptions time;
};

struct StepEstimate {
  MemoryReport memory;
  double step_s = 0;
  std::vector<std::pair<std::string, double>> breakdown;  // name -> seconds (exposed time on the critical path)
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;       // model FLOPs (no recompute) per GPU per second / 1e12
  double mfu = 0;                        // model FLOPs utilization vs dense bf16/fp16 (or fp8) peak
  double hfu = 0;                        // hardware FLOPs (with recompute) utilization
};

StepEstimate estimate_step(const EstimateInputs& in);

}  // namespace gpuplan
