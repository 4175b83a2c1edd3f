#include "gpuplan/memory.hpp"

namespace gpuplan {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}
const char* to_string(DType d) {
  switch (d) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
  }
  return "?";
}
const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return "adam";
    case Optimizer::adamw: return "adamw";
    case Optimizer::sgd: return "sgd";
    case Optimizer::sgd_momentum: return "sgd-momentum";
    case Optimizer::adafactor: return "adafactor";
    case Optimizer::adam_8bit: return "adam-8bit";
  }
  return "?";
}
const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}
const char* to_string(Offload o) {
  switch (o) {
    case Offload::none: return "none";
    case Offload::optimizer: return "optimizer";
    case Offload::optimizer_and_params: return "optimizer+params";
  }
  return "?";
}
const char* to_string(OffloadTarget t) { return t == OffloadTarget::cpu ? "cpu" : "nvme"; }
const char* to_string(PpSchedule s) { return s == PpSchedule::one_f_one_b ? "1f1b" : "interleaved"; }
const char* to_string(Attention a) { return a == Attention::eager ? "eager" : "flash"; }
const char* to_string(Impl i) {
  switch (i) {
    case Impl::megatron: return "megatron";
    case Impl::torch_nn: return "torch-nn";
    case Impl::hf: return "hf";
  }
  return "?";
}

}  // namespace gpuplan
