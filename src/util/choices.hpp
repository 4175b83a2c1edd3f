// The names of the enumerations' values, one table per enumeration: what the command line accepts, what JSON and
// text print, and what an error lists as accepted.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan.hpp"

namespace gpuplan::choices {

template <typename E>
struct Named {
  const char* name;
  E value;
};

inline constexpr Named<Precision> kPrecision[] = {
    {"fp32", Precision::fp32}, {"fp16", Precision::fp16}, {"bf16", Precision::bf16}, {"fp8", Precision::fp8}};
inline constexpr Named<DType> kDType[] = {{"fp32", DType::fp32}, {"bf16", DType::bf16}, {"fp16", DType::fp16}};
inline constexpr Named<Optimizer> kOptimizer[] = {
    {"adam", Optimizer::adam},           {"adamw", Optimizer::adamw},         {"sgd", Optimizer::sgd},
    {"sgd-momentum", Optimizer::sgd_momentum}, {"adafactor", Optimizer::adafactor}, {"adam-8bit", Optimizer::adam_8bit}};
inline constexpr Named<Recompute> kRecompute[] = {
    {"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}};
inline constexpr Named<Offload> kOffload[] = {
    {"none", Offload::none}, {"optimizer", Offload::optimizer}, {"optimizer+params", Offload::optimizer_and_params}};
inline constexpr Named<OffloadTarget> kOffloadTarget[] = {{"cpu", OffloadTarget::cpu}, {"nvme", OffloadTarget::nvme}};
inline constexpr Named<PpSchedule> kPpSchedule[] = {
    {"1f1b", PpSchedule::one_f_one_b}, {"interleaved", PpSchedule::interleaved}};
inline constexpr Named<Attention> kAttention[] = {{"eager", Attention::eager}, {"flash", Attention::flash}};
inline constexpr Named<AttentionBackend> kAttentionBackend[] = {
    {"auto", AttentionBackend::automatic}, {"fused", AttentionBackend::fused}, {"flash", AttentionBackend::flash}};
inline constexpr Named<CpComm> kCpComm[] = {
    {"p2p", CpComm::p2p}, {"a2a", CpComm::a2a}, {"all_gather", CpComm::all_gather}, {"a2a+p2p", CpComm::a2a_p2p}};
inline constexpr Named<MoeDispatcher> kMoeDispatcher[] = {{"alltoall", MoeDispatcher::alltoall},
                                                          {"flex", MoeDispatcher::flex}};
inline constexpr Named<Impl> kImpl[] = {{"megatron", Impl::megatron}, {"torch-nn", Impl::torch_nn}, {"hf", Impl::hf}};
inline constexpr Named<Framework> kFramework[] = {{"megatron", Framework::megatron},
                                                  {"deepspeed", Framework::deepspeed},
                                                  {"torchtitan", Framework::torchtitan},
                                                  {"nemo", Framework::nemo}};
inline constexpr Named<Loss> kLoss[] = {{"unfused", Loss::unfused},
                                        {"fused-te", Loss::fused_te},
                                        {"fused-native", Loss::fused_native},
                                        {"chunked", Loss::chunked}};
inline constexpr Named<Objective> kObjective[] = {
    {"step-time", Objective::step_time}, {"tokens-per-s", Objective::tokens_per_s}, {"cost", Objective::cost}};

template <typename E, std::size_t N>
const char* name_of(const Named<E> (&table)[N], E value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

// The entry named `given`, or null.
template <typename E, std::size_t N>
const Named<E>* find(const Named<E> (&table)[N], std::string_view given) {
  for (const auto& entry : table)
    if (given == entry.name) return &entry;
  return nullptr;
}

// Every name of the table, joined by `separator`: what an error lists as accepted.
template <typename E, std::size_t N>
std::string names(const Named<E> (&table)[N], std::string_view separator) {
  std::string joined;
  for (const auto& entry : table) joined += (joined.empty() ? "" : std::string(separator)) + entry.name;
  return joined;
}

// The value named `given`; anything else is an InputError naming `field` and listing the names.
template <typename E, std::size_t N>
E parse(const Named<E> (&table)[N], std::string_view given, std::string_view field) {
  if (const Named<E>* entry = find(table, given)) return entry->value;
  throw InputError(std::string(field), "'" + std::string(given) + "'", names(table, ", "));
}

}  // namespace gpuplan::choices
