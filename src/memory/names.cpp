// The names of the memory model's choices (src/util/choices.hpp holds the one table of each).
#include "util/choices.hpp"

namespace gpuplan {

const char* to_string(Precision p) { return choices::name_of(choices::kPrecision, p); }
const char* to_string(DType d) { return choices::name_of(choices::kDType, d); }
const char* to_string(Optimizer o) { return choices::name_of(choices::kOptimizer, o); }
const char* to_string(Recompute r) { return choices::name_of(choices::kRecompute, r); }
const char* to_string(Offload o) { return choices::name_of(choices::kOffload, o); }
const char* to_string(OffloadTarget t) { return choices::name_of(choices::kOffloadTarget, t); }
const char* to_string(PpSchedule s) { return choices::name_of(choices::kPpSchedule, s); }
const char* to_string(Attention a) { return choices::name_of(choices::kAttention, a); }
const char* to_string(AttentionBackend b) { return choices::name_of(choices::kAttentionBackend, b); }
const char* to_string(CpComm c) { return choices::name_of(choices::kCpComm, c); }
const char* to_string(MoeDispatcher d) { return choices::name_of(choices::kMoeDispatcher, d); }
const char* to_string(Impl i) { return choices::name_of(choices::kImpl, i); }
const char* to_string(Loss l) { return choices::name_of(choices::kLoss, l); }
const char* to_string(Objective o) { return choices::name_of(choices::kObjective, o); }

}  // namespace gpuplan
