// Every option of every request: name, JSON path, help with unit and default, and the field it fills.
#include "api/fields.hpp"

namespace gpuplan::api::detail {

namespace {

constexpr std::string_view kModelGroup = "Model";
constexpr std::string_view kOverrides = "Model overrides";
constexpr std::string_view kTraining = "Training";
constexpr std::string_view kLayout = "Layout";
constexpr std::string_view kHardware = "Hardware and overheads";
constexpr std::string_view kCluster = "Cluster";
constexpr std::string_view kTiming = "Step time";
constexpr std::string_view kOutput = "Output";
constexpr std::string_view kCollective = "Collective";
constexpr std::string_view kWhat = "What to list";
constexpr std::string_view kFrameworkGroup = "Framework and launch files";

constexpr Bounds kAtLeastOne{.minimum = 1};
constexpr Bounds kAtLeastZero{.minimum = 0};
constexpr Bounds kDegree{.minimum = 1, .maximum = 65536};
constexpr Bounds kGpuCount{.minimum = 1, .maximum = 1e8};
constexpr Bounds kNodes{.minimum = 1, .maximum = 1e6};
constexpr Bounds kSequence{.minimum = 1, .maximum = 1e9};
constexpr Bounds kPositiveRate{.minimum = 0, .minimum_open = true};
constexpr Bounds kFraction{.minimum = 0, .maximum = 1, .maximum_open = true};

void add_model(FieldList& f, ModelSource& model) {
  f.add(&model, "model", "model",
        "Model: catalog name (see 'gpuplan catalog models'), path to a Hugging Face config.json, or a folder "
        "holding one",
        kModelGroup, "NAME|PATH");
}

void add_overrides(FieldList& f, ModelOverrides& o) {
  f.add(&o.layers, "layers", "model_overrides.layers", "Decoder layers (count; default: the model's)",
        kOverrides, kAtLeastOne);
  f.add(&o.hidden, "hidden", "model_overrides.hidden", "Hidden size (channels; default: the model's)",
        kOverrides, kAtLeastOne);
  f.add(&o.heads, "heads", "model_overrides.heads", "Attention (query) heads (count; default: the model's)",
        kOverrides, kAtLeastOne);
  f.add(&o.kv_heads, "kv_heads", "model_overrides.kv_heads",
        "Key/value heads, 1 = MQA (count; default: the model's, or --heads when the model is multi-head)",
        kOverrides, kAtLeastOne);
  f.add(&o.head_dim, "head_dim", "model_overrides.head_dim",
        "Channels per head (default: the model's, or hidden / heads after --hidden or --heads)",
        kOverrides, kAtLeastOne);
  f.add(&o.ffn_hidden, "ffn_hidden", "model_overrides.ffn_hidden",
        "FFN width of the dense layers (channels; default: the model's)", kOverrides, kAtLeastOne);
  f.add(&o.vocab, "vocab", "model_overrides.vocab", "Vocabulary size (tokens; default: the model's)",
        kOverrides, kAtLeastOne);
  f.add(&o.max_positions, "max_positions", "model_overrides.max_positions",
        "Maximum positions, the rows of a learned position table (tokens; default: the model's)",
        kOverrides, kAtLeastOne);
  f.add(&o.mlp, "mlp", "model_overrides.mlp",
        "MLP kind: gelu (plain up/down) or swiglu (gated) (default: the model's)", kOverrides, "gelu|swiglu");
  f.add(&o.norm, "norm", "model_overrides.norm",
        "Normalisation: layernorm (weight + bias) or rmsnorm (weight) (default: the model's)", kOverrides,
        "layernorm|rmsnorm");
  f.add(&o.tied_embeddings, "tied_embeddings", "model_overrides.tied_embeddings",
        "Share the output layer with the token embedding (default: the model's)", kOverrides);
  f.add_negated(&o.tied_embeddings, "untied_embeddings", "model_overrides.tied_embeddings",
                "Separate output layer (default: the model's)", kOverrides);
  f.add(&o.experts, "experts", "model_overrides.experts",
        "Routed experts per MoE layer, 0 = dense (count; default: the model's)", kOverrides, kAtLeastZero);
  f.add(&o.top_k, "top_k", "model_overrides.top_k", "Routed experts each token uses (count; default: the model's)",
        kOverrides, kAtLeastOne);
  f.add(&o.expert_ffn_hidden, "expert_ffn_hidden", "model_overrides.expert_ffn_hidden",
        "FFN width of one routed expert (channels; default: the model's, or --ffn-hidden for a dense model)",
        kOverrides, kAtLeastOne);
}

// How the loss is computed and how Megatron pads the vocabulary: memory, estimate and plan alike.
void add_loss(FieldList& f, TrainingOptions& t) {
  f.add(&t.loss, "loss", "training.loss",
        "Loss computation: unfused (Megatron's default: fp32 softmax kept), fused-te (TE fused cross-entropy: 16-bit "
        "logits kept, gradient in place), fused-native (Megatron's fused kernel), chunked (logits never "
        "materialized) (default unfused)",
        kTraining, "NAME");
  f.add(&t.fused_loss, "fused_loss", "training.fused_loss", "The same as --loss chunked (kept for older scripts)",
        kTraining);
  f.add(&t.vocab_divisible_by, "make_vocab_size_divisible_by", "training.make_vocab_size_divisible_by",
        "Pad the vocabulary to a multiple of this x TP, as Megatron-LM does (default 128 with --impl megatron, "
        "1 = no padding, the default of the other implementations)",
        kTraining, Bounds{.minimum = 1, .maximum = 1e6});
  f.add(&t.te_version, "te_version", "training.te_version",
        "Transformer Engine release the megatron terms follow, MAJOR.MINOR: from 2.3 on TE keeps one weight-gradient "
        "buffer per Linear shape (default 2.11)",
        kTraining, "VERSION");
  f.add(&t.megatron_version, "megatron_version", "training.megatron_version",
        "Megatron-Core release the megatron terms follow, MAJOR.MINOR: from 0.13 on the MoE routing probabilities "
        "are applied in the expert activation (default 0.15)",
        kTraining, "VERSION");
  f.add_negated(&t.grad_nan_check, "no_grad_nan_check", "training.grad_nan_check",
                "Megatron-LM, NeMo: no check of the gradients for non-finite values before their reduction "
                "(--no-check-for-nan-in-loss-and-grad; by default it reads the gradient buffer once per step)",
                kTraining);
  f.add(&t.grad_nan_check, "grad_nan_check", "training.grad_nan_check",
        "Megatron-LM, NeMo: the check of the gradients for non-finite values before their reduction (the default)",
        kTraining);
  f.add(&t.fp8_param_gather, "fp8_param_gather", "training.fp8_param_gather",
        "Megatron-LM, NeMo: --fp8-param-gather, the layers' Linear weights are fp8 parameters, gathered in fp8, "
        "with no 16-bit copy (needs --precision fp8 and --zero 1 or more)",
        kTraining);
  f.add_negated(&t.fp8_param_gather, "no_fp8_param_gather", "training.fp8_param_gather",
                "No fp8 parameters, the weights stay 16-bit (where a --from file sets --fp8-param-gather)", kTraining);
  f.add(&t.moe_imbalance, "moe_imbalance", "training.moe_imbalance",
        "MoE: tokens the busiest expert rank receives over its balanced share (default 1.0 = balanced)", kTraining,
        Bounds{.minimum = 1, .maximum = 1e4});
  f.add(&t.moe_capacity_factor, "moe_capacity_factor", "training.moe_capacity_factor",
        "MoE: Megatron's --moe-expert-capacity-factor, tokens beyond it are dropped (default: dropless)", kTraining,
        Bounds{.minimum = 0.01, .maximum = 1e4});
  f.add(&t.moe_pad_to_capacity, "moe_pad_to_capacity", "training.moe_pad_to_capacity",
        "MoE: Megatron's --moe-pad-expert-input-to-capacity, every expert gets its full capacity", kTraining);
  f.add(&t.moe_dispatcher, "moe_dispatcher", "training.moe_dispatcher",
        "MoE: Megatron's --moe-token-dispatcher-type: alltoall (a copy per routed expert) or flex (DeepEP or "
        "HybridEP: a token crosses to each node once, NVLink fans it out) (default alltoall)",
        kTraining, "NAME");
}

// The framework that runs the job, and the launch configurations read and written (docs/frameworks.md).
void add_framework(FieldList& f, TrainingOptions& t) {
  f.add(&t.framework, "framework", "training.framework",
        "Training framework: megatron|deepspeed|torchtitan|nemo: only layouts it runs, its memory behaviour, and "
        "its rules checked (default megatron; a --from file sets its own)",
        kFrameworkGroup, "NAME");
  f.add(&t.compile, "compile", "training.compile",
        "The model runs under torch.compile (torchtitan's compile.enable, or Hugging Face modules compiled): its "
        "norms, activations and RoPE are priced as fused kernels, not eager PyTorch ops; Megatron-Core's are fused "
        "already",
        kFrameworkGroup);
  constexpr Bounds kElements{.minimum = 1, .maximum = 1e13};
  f.add(&t.reduce_bucket_size, "reduce_bucket_size", "training.reduce_bucket_size",
        "DeepSpeed ZeRO-1/2: gradient elements reduced at a time, zero_optimization.reduce_bucket_size (default 5e8)",
        kFrameworkGroup, kElements);
  f.add(&t.allgather_bucket_size, "allgather_bucket_size", "training.allgather_bucket_size",
        "DeepSpeed ZeRO-1/2: weight elements all-gathered at a time after the step, "
        "zero_optimization.allgather_bucket_size (default 5e8)",
        kFrameworkGroup, kElements);
  f.add(&t.stage3_prefetch_bucket_size, "stage3_prefetch_bucket_size", "training.stage3_prefetch_bucket_size",
        "DeepSpeed ZeRO-3: parameter elements fetched ahead of the module running (default 5e7)", kFrameworkGroup,
        kElements);
  f.add(&t.stage3_max_live_parameters, "stage3_max_live_parameters", "training.stage3_max_live_parameters",
        "DeepSpeed ZeRO-3: most gathered parameter elements kept at once (default 1e9)", kFrameworkGroup, kElements);
}

void add_launch(FieldList& f, LaunchOptions& l, bool writes) {
  f.add(&l.from, "from", "launch.from",
        "Start from a launch configuration: a Megatron-LM launch script, a DeepSpeed ds_config.json, a torchtitan "
        "TOML or a NeMo recipe / override list; options given beside it win",
        kFrameworkGroup, "FILE");
  if (!writes) return;
  f.add(&l.emit, "emit", "launch.emit",
        "Write the launch files of the layout for this framework: megatron|deepspeed|torchtitan|nemo", kFrameworkGroup,
        "NAME");
  f.add(&l.out, "out", "launch.out", "Folder to write the --emit files to (default: print them)", kFrameworkGroup,
        "DIR");
}

// Job facts that change the states and the activations, for estimate and plan alike.
void add_master_and_dropout(FieldList& f, TrainingOptions& t) {
  f.add_negated(&t.master_weights, "no_master_weights", "training.master_weights",
                "No fp32 master copy under mixed precision", kTraining);
  f.add(&t.dropout, "dropout", "training.dropout", "Dropout probability (0 = none, as in most current LLMs)",
        kTraining, kFraction);
}

// The training options of memory and estimate (plan takes the subset in add_plan_training).
void add_training(FieldList& f, TrainingOptions& t) {
  f.add(&t.seq_len, "seq_len", "training.seq_len", "Sequence length (tokens; default 2048)", kTraining, kSequence);
  f.add(&t.micro_batch, "micro_batch", "training.micro_batch",
        "Micro-batch size (sequences per GPU per microbatch; default 1)",
        kTraining, Bounds{.minimum = 1, .maximum = 1e8});
  f.add(&t.global_batch, "global_batch", "training.global_batch",
        "Global batch (sequences per step; default: micro-batch x dp, no gradient accumulation)",
        kTraining, kAtLeastOne);
  f.add(&t.precision, "precision", "training.precision",
        "Training precision: fp32|fp16|bf16|fp8; fp16/bf16/fp8 mean mixed precision with fp32 master weights "
        "(default bf16)",
        kTraining, "NAME");
  f.add(&t.optimizer, "optimizer", "training.optimizer",
        "Optimizer: adam|adamw|sgd|sgd-momentum|adafactor|adam-8bit (default adam)", kTraining, "NAME");
  f.add(&t.grad_dtype, "grad_dtype", "training.grad_dtype",
        "Gradient accumulation dtype under mixed precision: fp32|bf16|fp16 (default the framework's: fp32, as "
        "Megatron-LM's main_grad; DeepSpeed: the 16-bit dtype under ZeRO or fp16)",
        kTraining, "NAME");
  add_master_and_dropout(f, t);
  add_loss(f, t);
}

void add_layout(FieldList& f, LayoutOptions& l) {
  f.add(&l.gpus, "gpus", "layout.gpus", "GPUs in all (default: tp x pp x cp x dp)", kLayout, kGpuCount);
  f.add(&l.tp, "tp", "layout.tp", "Tensor-parallel degree (default 1)", kLayout, kDegree);
  f.add(&l.pp, "pp", "layout.pp", "Pipeline-parallel degree, stages (default 1)", kLayout, kDegree);
  f.add(&l.vpp, "vpp", "layout.vpp",
        "Virtual pipeline stages (model chunks) per pipeline rank; >1 means interleaved (default 1)",
        kLayout, Bounds{.minimum = 1, .maximum = 4096});
  f.add(&l.cp, "cp", "layout.cp", "Context-parallel degree, splits the sequence (default 1)", kLayout, kDegree);
  f.add(&l.cp_comm_type, "cp_comm_type", "layout.cp_comm_type",
        "How context-parallel attention exchanges the sequence: p2p (ring)|a2a (all-to-all of Q, K, V and the output)|"
        "all_gather (of K and V)|a2a+p2p (all-to-all inside --cp-a2a-size ranks, a ring across) (default p2p, as "
        "Megatron-LM's --cp-comm-type)",
        kLayout, "NAME");
  f.add(&l.cp_a2a_size, "cp_a2a_size", "layout.cp_a2a_size",
        "With --cp-comm-type a2a+p2p: CP ranks of one all-to-all group (Megatron-LM's first "
        "--hierarchical-context-parallel-sizes)",
        kLayout, kDegree);
  f.add(&l.ep, "ep", "layout.ep", "Expert-parallel degree, MoE (default 1)", kLayout, kDegree);
  f.add(&l.etp, "etp", "layout.etp", "Expert tensor-parallel degree (default: --tp, as Megatron-LM)", kLayout, kDegree);
  f.add(&l.dp, "dp", "layout.dp", "Data-parallel degree (default: gpus / (tp x pp x cp))", kLayout, kGpuCount);
  f.add(&l.sequence_parallel, "sequence_parallel", "layout.sequence_parallel", "Megatron sequence parallelism with TP",
        kLayout);
  f.add_negated(&l.sequence_parallel, "no_sequence_parallel", "layout.sequence_parallel",
                "No sequence parallelism (where a --from file turns it on)", kLayout);
  f.add(&l.zero, "zero", "layout.zero",
        "ZeRO stage 0-3 (1 = Megatron distributed optimizer, 3 = FSDP full shard; default 0, or 3 with --framework "
        "torchtitan, whose FSDP2 shards by default)",
        kLayout, Bounds{.minimum = 0, .maximum = 3});
  f.add(&l.recompute, "recompute", "layout.recompute", "Activation recomputation: none|selective|full (default none)",
        kLayout, "NAME");
  f.add(&l.recompute_layers, "recompute_layers", "layout.recompute_layers",
        "With --recompute full: layers per pipeline stage recomputed (default: all)", kLayout, kAtLeastZero);
  f.add(&l.offload, "offload", "layout.offload",
        "ZeRO offload of states: none|optimizer|optimizer+params (default none)", kLayout, "NAME");
  f.add(&l.offload_target, "offload_target", "layout.offload_target",
        "Where offloaded states go: cpu|nvme (default cpu)", kLayout, "NAME");
  f.add(&l.pp_schedule, "pp_schedule", "layout.pp_schedule", "Pipeline schedule: 1f1b|interleaved (default 1f1b)",
        kLayout, "NAME");
  f.add(&l.attention, "attention", "layout.attention",
        "Attention kernel: eager|flash; flash keeps no s x s scores (default flash)", kLayout, "NAME");
  f.add(&l.attention_backend, "attention_backend", "layout.attention_backend",
        "Transformer Engine's flash kernel (Megatron-LM's --attention-backend): auto|fused|flash; fused is cuDNN's, "
        "flash the flash-attn package's FlashAttention-2 (default auto: cuDNN on Hopper and newer, flash-attn on "
        "Ampere)", kLayout, "NAME");
  f.add(&l.impl, "impl", "layout.impl",
        "Whose saved tensors to count: megatron (Megatron-Core with Transformer Engine), torch-nn (PyTorch "
        "nn.TransformerEncoderLayer), hf (Hugging Face transformers modules, as DeepSpeed and torchtitan train) "
        "(default: hf with --framework deepspeed, else megatron; torchtitan without Transformer Engine's buffers)",
        kLayout, "NAME");
  f.add(&l.first_stage_layers, "first_stage_layers", "layout.first_stage_layers",
        "Uneven pipeline split: layers on the first stage (Megatron's --decoder-first-pipeline-num-layers)", kLayout,
        kAtLeastOne);
  f.add(&l.last_stage_layers, "last_stage_layers", "layout.last_stage_layers",
        "Uneven pipeline split: layers on the last stage (Megatron's --decoder-last-pipeline-num-layers)", kLayout,
        kAtLeastOne);
}

void add_gpu(FieldList& f, std::optional<std::string>& gpu, std::string_view help, std::string_view path) {
  f.add(&gpu, "gpu", path, help, kHardware, "NAME");
}

void add_catalog(FieldList& f, std::vector<FileInput>& catalog, std::string_view path) {
  f.add(&catalog, "catalog", path, "Hardware catalog JSON adding or overriding entries (repeatable)", kHardware,
        "FILE");
}

// What the runtime holds beside the tensors, as measured on the user's GPUs (gpuplan-measure prints the context).
void add_runtime_overheads(FieldList& f, HardwareOptions& h) {
  f.add(&h.cuda_context, "cuda_context", "hardware.cuda_context",
        "CUDA context per process (default from data/overheads.json: 1343MB)", kHardware, "SIZE");
  f.add(&h.nccl_per_comm, "nccl_per_comm", "hardware.nccl_per_comm", "NCCL buffers per communicator (default: 500MB)",
        kHardware, "SIZE");
  f.add(&h.allocator_factor, "allocator_factor", "hardware.allocator_factor",
        "Caching-allocator reserved/allocated factor, used for every layout (default: replayed where the layout "
        "allows, else 1.064)", kHardware, Bounds{.minimum = 1, .maximum = 3});
}

void add_hardware(FieldList& f, HardwareOptions& h) {
  add_gpu(f, h.gpu, "GPU catalog name for usable memory (default: h100-sxm-80gb; see 'gpuplan catalog gpus')",
          "gpu");
  f.add(&h.gpu_memory, "gpu_memory", "hardware.gpu_memory",
        "Usable memory per GPU instead of --gpu, e.g. 80GiB or 80GB", kHardware, "SIZE");
  add_catalog(f, h.catalog, "hardware.catalog");
  add_runtime_overheads(f, h);
  f.add(&h.memory_margin, "memory_margin", "hardware.memory_margin",
        "Fraction of GPU memory kept free, as plan keeps it (default 0.08; see docs/plan.md)", kHardware, kFraction);
  f.add_negated(&h.overheads, "no_overheads", "hardware.overheads",
                "Pure tensor accounting: no context, NCCL or allocator reserve", kHardware);
}

// The node's host memory and NVMe that offloaded states are checked against (memory, estimate and plan).
void add_node_storage(FieldList& f, HardwareOptions& h) {
  f.add(&h.host_memory, "host_memory", "hardware.host_memory",
        "Host memory (RAM) of one node, instead of the system's, e.g. 2TB; offloaded states and pinned buffers of "
        "all the node's GPUs must fit",
        kHardware, "SIZE");
  f.add(&h.nvme_capacity, "nvme_capacity", "hardware.nvme_capacity",
        "Local NVMe capacity of one node, instead of the system's, e.g. 30TB; states offloaded to NVMe by all the "
        "node's GPUs must fit",
        kHardware, "SIZE");
}

void add_cluster(FieldList& f, ClusterOptions& c, std::string_view topology_help) {
  f.add(&c.system, "system", "cluster.system", "System of each node (see 'gpuplan catalog systems'), e.g. dgx-h100",
        kCluster, "NAME");
  f.add(&c.nodes, "nodes", "cluster.nodes", "Nodes of that system (default: as many as the job needs)",
        kCluster, kNodes);
  f.add(&c.topology, "topology", "cluster.topology", topology_help, kCluster, "FILE");
  f.add(&c.nic_GBps, "nic_GBps", "cluster.nic_GBps",
        "With a topology output: scale-out line rate per GPU, GB/s per direction (NCCL moves net_efficiency of "
        "it, data/comm.json)",
        kCluster, kPositiveRate);
}

constexpr std::string_view kClusterTopology =
    "Cluster JSON file ({\"system\": ..., \"nodes\": ..., \"network\": ...}), or one node's 'nvidia-smi topo -m' / "
    "'rocm-smi --showtopo' / 'amd-smi topology' output";

// What the user measured on their own cluster: compute constants (estimate, plan and size) and collective tiers
// (estimate and plan, on the cluster they were measured on).
void add_perf_files(FieldList& f, std::vector<FileInput>& perf) {
  f.add(&perf, "perf", "timing.perf",
        "Compute-model constants overriding data/perf.json (repeatable; 'gpuplan calibrate --runs ... --out FILE')",
        kTiming, "FILE");
}

void add_calibration_files(FieldList& f, std::vector<FileInput>& perf, std::optional<FileInput>& comm_calibration) {
  add_perf_files(f, perf);
  f.add(&comm_calibration, "comm_calibration", "timing.comm_calibration",
        "Collective latency/bandwidth fitted to nccl-tests logs ('gpuplan comm --calibrate ... --out FILE')", kTiming,
        "FILE");
}

void add_timing(FieldList& f, TimingOptions& t) {
  f.add(&t.tp_overlap, "tp_overlap", "timing.tp_overlap", "Tensor-parallel communication overlapped with GEMMs",
        kTiming);
  f.add_negated(&t.tp_overlap, "no_tp_overlap", "timing.tp_overlap",
                "No tensor-parallel communication overlap (where a --from file turns it on)", kTiming);
  f.add(&t.tp_overlap_sms, "tp_overlap_sms", "timing.tp_overlap_sms",
        "With --tp-overlap, SMs the reduce-scatter pipelined into each row-parallel GEMM takes from it (Transformer "
        "Engine userbuffers num_sm; default data/perf.json tp_overlap_reserved_sms)",
        kTiming, kAtLeastZero);
  f.add_negated(&t.dp_overlap, "no_dp_overlap", "timing.dp_overlap",
                "Gradient reduction after the backward pass (no bucketed overlap)", kTiming);
  f.add(&t.dp_overlap, "dp_overlap", "timing.dp_overlap",
        "Gradient reduction overlapped with the backward pass (the default; where a --from file turns it off)",
        kTiming);
  f.add_negated(&t.pp_overlap, "no_pp_overlap", "timing.pp_overlap",
                "Megatron-LM, NeMo: each pipeline send and receive waited for (--no-overlap-p2p-communication)",
                kTiming);
  f.add(&t.pp_overlap, "pp_overlap", "timing.pp_overlap",
        "Megatron-LM, NeMo: pipeline sends and receives beside the next chunk's compute under the interleaved "
        "schedule (overlap_p2p_comm; the default, where a --from file turns it off)",
        kTiming);
  f.add(&t.order, "order", "timing.order", "Rank placement, innermost first (default tp-cp-ep-dp-pp, Megatron-LM's)",
        kTiming, "ORDER");
  add_calibration_files(f, t.perf, t.comm_calibration);
}

void add_plan_training(FieldList& f, TrainingOptions& t) {
  f.add(&t.seq_len, "seq_len", "training.seq_len", "Sequence length (tokens; default 2048)", kTraining, kSequence);
  f.add(&t.global_batch, "global_batch", "training.global_batch", "Global batch in sequences (required; kept fixed)",
        kTraining, kAtLeastOne);
  f.add(&t.precision, "precision", "training.precision", "Training precision: fp32|fp16|bf16|fp8 (default bf16)",
        kTraining, "NAME");
  f.add(&t.optimizer, "optimizer", "training.optimizer",
        "Optimizer: adam|adamw|sgd|sgd-momentum|adafactor|adam-8bit (default adam)", kTraining, "NAME");
  f.add(&t.grad_dtype, "grad_dtype", "training.grad_dtype",
        "Gradient accumulation and reduction dtype under mixed precision: fp32|bf16|fp16 (default the "
        "framework's: fp32, as Megatron-LM's main_grad; DeepSpeed: the 16-bit dtype under ZeRO or fp16)",
        kTraining, "NAME");
  add_master_and_dropout(f, t);
  add_loss(f, t);
}

constexpr std::string_view kFilters = "Search space filters (comma-separated lists)";
constexpr std::string_view kRanking = "Ranking and output";

void add_search(FieldList& f, SearchOptions& s) {
  f.add(&s.tp, "tp", "space.tp", "Tensor-parallel degrees to try", kFilters, "LIST", kAtLeastOne);
  f.add(&s.pp, "pp", "space.pp", "Pipeline-parallel degrees", kFilters, "LIST", kAtLeastOne);
  f.add(&s.vpp, "vpp", "space.vpp", "Virtual pipeline stages", kFilters, "LIST", kAtLeastOne);
  f.add(&s.cp, "cp", "space.cp", "Context-parallel degrees", kFilters, "LIST", kAtLeastOne);
  f.add(&s.ep, "ep", "space.ep", "Expert-parallel degrees", kFilters, "LIST", kAtLeastOne);
  f.add(&s.etp, "etp", "space.etp", "Expert tensor-parallel degrees", kFilters, "LIST", kAtLeastOne);
  f.add(&s.dp, "dp", "space.dp", "Data-parallel degrees", kFilters, "LIST", kAtLeastOne);
  f.add(&s.micro_batch, "micro_batch", "space.micro_batch", "Micro-batch sizes", kFilters, "LIST", kAtLeastOne);
  f.add(&s.max_tp, "max_tp", "space.max_tp", "Largest TP degree", kFilters, kAtLeastOne);
  f.add(&s.max_pp, "max_pp", "space.max_pp", "Largest PP degree", kFilters, kAtLeastOne);
  f.add(&s.max_cp, "max_cp", "space.max_cp", "Largest CP degree", kFilters, kAtLeastOne);
  f.add(&s.max_vpp, "max_vpp", "space.max_vpp", "Largest VPP degree", kFilters, kAtLeastOne);
  f.add(&s.zero, "zero", "space.zero", "ZeRO stages to try (0-3; 1 = distributed optimizer)",
        kFilters, "LIST", Bounds{.minimum = 0, .maximum = 3});
  f.add(&s.recompute, "recompute", "space.recompute", "Recompute modes to try: none,selective,full", kFilters, "LIST");
  f.add(&s.cp_comm_type, "cp_comm_type", "space.cp_comm_type",
        "Context-parallel exchanges to try: p2p,a2a,all_gather,a2a+p2p (default: each the heads allow)", kFilters,
        "LIST");
  f.add_negated(&s.partial_recompute, "no_partial_recompute", "space.partial_recompute",
                "Full recompute of all layers only", kFilters);
  f.add_negated(&s.offload, "no_offload", "space.offload", "No optimizer or parameter offload", kFilters);
  f.add_negated(&s.sequence_parallel, "no_sequence_parallel", "space.sequence_parallel", "No sequence parallelism",
                kFilters);
  f.add_negated(&s.tp_overlap, "no_tp_overlap", "space.tp_overlap", "No TP communication overlap", kFilters);
  f.add(&s.attention_backend, "attention_backend", "space.attention_backend",
        "Transformer Engine's flash kernel every plan runs (Megatron-LM's --attention-backend): auto|fused|flash "
        "(default auto; a --from file sets its own)",
        kFrameworkGroup, "NAME");
}

void add_ranking(FieldList& f, RankingOptions& r) {
  f.add(&r.memory_margin, "memory_margin", "ranking.memory_margin",
        "Fraction of GPU memory kept free (default 0.08; see docs/plan.md)", kRanking, kFraction);
  f.add(&r.objective, "objective", "ranking.objective", "step-time|tokens-per-s|cost (default step-time)", kRanking,
        "NAME");
  f.add(&r.price_per_gpu_hour, "price_per_gpu_hour", "ranking.price_per_gpu_hour",
        "Dollars per GPU-hour (for --objective cost)", kRanking, kAtLeastZero);
  f.add(&r.top, "top", "ranking.top", "Plans to print (default 5)", kRanking, Bounds{.minimum = 1, .maximum = 1000});
  f.add(&r.threads, "threads", "ranking.threads", "Worker threads (default 0: all cores)",
        kRanking, Bounds{.minimum = 0, .maximum = 1024});
  f.add(&r.exhaustive, "exhaustive", "ranking.exhaustive",
        "Evaluate every layout (no pruning; same answer, slower)", kRanking);
}

}  // namespace

FieldList fields_of(ModelRequest& r) {
  FieldList f;
  add_model(f, r.model);
  f.positional();
  add_overrides(f, r.overrides);
  f.add(&r.seq_len, "seq_len", "seq_len",
        "Sequence length for FLOPs per token (tokens; default: the model's max positions, at most 2048)",
        kTraining, Bounds{.minimum = 1, .maximum = 67108864});
  return f;
}

FieldList fields_of(MemoryRequest& r) {
  FieldList f;
  add_model(f, r.model);
  add_overrides(f, r.overrides);
  f.add(&r.params, "params", "params",
        "Parameter count instead of a model, e.g. 7e9 or 70B: model states only, activations unknown", kModelGroup,
        "COUNT");
  add_training(f, r.training);
  add_layout(f, r.layout);
  add_framework(f, r.training);
  add_launch(f, r.launch, false);
  add_hardware(f, r.hardware);
  add_node_storage(f, r.hardware);
  f.add(&r.system, "system", "cluster.system",
        "System of each node (see 'gpuplan catalog systems'), e.g. dgx-h100: its GPU (unless --gpu), host memory, "
        "NVMe and GPUs per node for the host-memory and NVMe checks",
        kCluster, "NAME");
  f.add(&r.gpus_per_node, "gpus_per_node", "cluster.gpus_per_node",
        "GPUs per node sharing its host memory and NVMe (default: the system's; needed with --host-memory or "
        "--nvme-capacity alone)",
        kCluster, Bounds{.minimum = 1, .maximum = 100000});
  f.add(&r.all_stages, "all_stages", "all_stages", "Report every pipeline stage, not only the worst", kOutput);
  f.add(&r.explain, "explain", "explain", "List every term with its formula source", kOutput);
  return f;
}

FieldList fields_of(EstimateRequest& r) {
  FieldList f;
  add_model(f, r.model);
  add_overrides(f, r.overrides);
  f.add(&r.params, "params", "params", "Parameter count instead of a model (the step time needs a model)",
        kModelGroup, "COUNT");
  add_training(f, r.training);
  add_layout(f, r.layout);
  add_framework(f, r.training);
  add_launch(f, r.launch, true);
  add_hardware(f, r.hardware);
  add_node_storage(f, r.hardware);
  add_cluster(f, r.cluster, kClusterTopology);
  add_timing(f, r.timing);
  f.add(&r.all_stages, "all_stages", "all_stages", "Report the memory of every pipeline stage", kOutput);
  f.add(&r.explain, "explain", "explain",
        "Show what no step of this layout can beat: its FLOPs over the peak, its HBM bytes over the HBM bandwidth, "
        "the bytes each node brings in over its NICs; and which binds",
        kOutput);
  return f;
}

FieldList fields_of(PlanRequest& r) {
  FieldList f;
  add_model(f, r.model);
  add_overrides(f, r.overrides);
  add_plan_training(f, r.training);
  add_cluster(f, r.cluster, kClusterTopology);
  add_catalog(f, r.hardware.catalog, "hardware.catalog");
  f.add(&r.gpus, "gpus", "gpus",
        "Use this many of the cluster's GPUs (default: all; with --system and no --nodes, the nodes they need)",
        kHardware, kGpuCount);
  add_gpu(f, r.hardware.gpu, "GPU catalog name that computes (default: the system's)", "gpu");
  f.add(&r.hardware.gpu_memory, "gpu_memory", "hardware.gpu_memory", "Usable memory per GPU instead of the catalog's",
        kHardware, "SIZE");
  add_runtime_overheads(f, r.hardware);
  add_node_storage(f, r.hardware);
  add_search(f, r.space);
  add_ranking(f, r.ranking);
  add_framework(f, r.training);
  add_launch(f, r.launch, true);
  add_calibration_files(f, r.perf, r.comm_calibration);
  return f;
}

FieldList fields_of(CommRequest& r) {
  FieldList f;
  f.add(&r.collective, "collective", "collective",
        "allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv", kCollective, "COLLECTIVE");
  f.positional();
  f.add(&r.size, "size", "size",
        "Bytes as nccl-tests counts them (per-rank buffer for allreduce/broadcast/sendrecv, whole buffer for "
        "allgather/reducescatter/alltoall): 1GiB, 256MB, 1e9; or a sweep MIN:MAX in powers of two",
        kCollective, "BYTES");
  f.add(&r.ranks, "ranks", "ranks", "Ranks in the collective", kCollective, kAtLeastOne);
  f.add(&r.ranks_per_node, "ranks_per_node", "ranks_per_node",
        "Ranks of the group on each node (default: packed, min(ranks, GPUs per node)); fewer spreads the group "
        "across nodes, as data-parallel groups are",
        kCollective, kAtLeastOne);
  f.add(&r.concurrent_groups, "concurrent_groups", "concurrent_groups",
        "Groups that run at once on each node and share its NICs (default 1)", kCollective, kAtLeastOne);
  add_cluster(f, r.cluster, "'nvidia-smi topo -m' (or rocm-smi/amd-smi) output of one node");
  add_gpu(f, r.gpu, "GPU catalog name (overrides the system's, or names the topology's GPUs)", "gpu");
  add_catalog(f, r.catalog, "catalog");
  f.add(&r.comm_calibration, "comm_calibration", "comm_calibration",
        "JSON with a \"comm\" section (written by --calibrate --out): calibrated tiers and constants", kTiming, "FILE");
  return f;
}

FieldList fields_of(CalibrateRequest& r) {
  FieldList f;
  f.add(&r.logs, "calibrate", "logs",
        "nccl-tests outputs to fit (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf; vTrain "
        "CSV tables)",
        kCollective, "FILE...");
  f.add(&r.collective, "collective", "collective", "The collective of logs that do not say", kCollective,
        "COLLECTIVE");
  f.positional();
  f.add(&r.ranks, "ranks", "ranks", "Ranks of logs that do not say", kCollective, kAtLeastOne);
  add_cluster(f, r.cluster, "'nvidia-smi topo -m' (or rocm-smi/amd-smi) output of one node");
  add_gpu(f, r.gpu, "GPU catalog name (overrides the system's, or names the topology's GPUs)", "gpu");
  add_catalog(f, r.catalog, "catalog");
  f.add(&r.runs, "runs", "runs",
        "Measured training runs to fit the step-time model to: CSV tables of layouts and step times, or Megatron-LM "
        "logs (docs/estimate.md, 'Calibrate from your runs')",
        kTiming, "FILE...");
  f.add(&r.perf, "perf", "perf", "Compute-model constants to start the fit from, overriding data/perf.json",
        kTiming, "FILE");
  f.add(&r.precision, "precision", "precision", "Precision of runs that do not say (default bf16)", kTiming,
        "PRECISION");
  f.add(&r.recompute, "recompute", "recompute", "Activation recomputation of runs that do not say (default none)",
        kTiming, "MODE");
  f.add(&r.attention, "attention", "attention", "Attention kernel of runs that do not say (default flash)", kTiming,
        "KIND");
  f.add(&r.sequence_parallel, "sequence_parallel", "sequence_parallel",
        "Runs with tp > 1 that do not say use sequence parallelism", kTiming);
  f.add(&r.tp_overlap, "tp_overlap", "tp_overlap",
        "Runs with tp > 1 that do not say overlap TP communication with their GEMMs (--tp-overlap)", kTiming);
  f.add(&r.zero, "zero", "zero", "ZeRO stage of runs that do not say (1 = Megatron distributed optimizer; default 0)",
        kTiming, Bounds{.minimum = 0, .maximum = 3});
  f.add(&r.out, "out", "out", "Write the calibration JSON here (with --runs: a --perf file)", kOutput, "FILE");
  return f;
}

FieldList fields_of(TopoRequest& r) {
  FieldList f;
  f.add(&r.topology, "file", "topology", "Topology output to read; - for standard input (default: ask the driver)",
        kCluster, "FILE");
  f.positional();
  add_gpu(f, r.gpu,
          "GPU catalog name (h100-sxm-80gb, a100-sxm-80gb, v100-sxm-32gb, b200, mi300x, ...; see 'gpuplan catalog "
          "gpus') or device name: fixes per-link rates",
          "gpu");
  f.add(&r.nvlink, "nvlink", "nvlink", "'nvidia-smi nvlink -s' output: link counts, rates, inactive links", kCluster,
        "FILE");
  f.add(&r.nic_GBps, "nic_GBps", "nic_GBps", "Bandwidth of one NIC, GB/s per direction (400 Gb/s = 50)",
        kCluster, kPositiveRate);
  add_catalog(f, r.catalog, "catalog");
  return f;
}

FieldList fields_of(CatalogRequest& r) {
  FieldList f;
  f.add(&r.kind, "kind", "kind", "gpus, links, systems or models (default: all)", kWhat, "KIND");
  f.positional();
  f.add(&r.name, "name", "name", "Show one entry with every field and its source", kWhat, "NAME");
  f.positional();
  add_catalog(f, r.catalog, "catalog");
  return f;
}

}  // namespace gpuplan::api::detail

namespace gpuplan::api::detail {

namespace {

constexpr std::string_view kBudget = "Training run";
constexpr std::string_view kSweep = "Clusters to compare";

void add_size_training(FieldList& f, SizeRequest& r) {
  f.add(&r.tokens, "tokens", "tokens", "Tokens to train on: 15T, 300B, 2e12 (required)", kBudget, "COUNT");
  f.add(&r.training.seq_len, "seq_len", "training.seq_len", "Sequence length (tokens; default 2048)", kBudget,
        kSequence);
  f.add(&r.global_batch_tokens, "global_batch_tokens", "global_batch_tokens",
        "Global batch in tokens: 16M, 4e6 (default 4M; rounded to whole sequences)", kBudget, "COUNT");
  f.add(&r.training.global_batch, "global_batch", "training.global_batch",
        "Global batch in sequences instead of --global-batch-tokens", kBudget, kAtLeastOne);
  f.add(&r.training.precision, "precision", "training.precision", "Training precision: fp32|fp16|bf16|fp8 (default bf16)",
        kBudget, "NAME");
  f.add(&r.training.optimizer, "optimizer", "training.optimizer",
        "Optimizer: adam|adamw|sgd|sgd-momentum|adafactor|adam-8bit (default adam)", kBudget, "NAME");
  f.add(&r.goodput, "goodput", "goodput",
        "Fraction of wall time that trains, after failures and restarts (default 1.0; Llama 3 405B reports more "
        "than 0.9)",
        kBudget, Bounds{.minimum = 0, .maximum = 1, .minimum_open = true});
  f.add(&r.checkpoint_overhead, "checkpoint_overhead", "checkpoint_overhead",
        "Fraction of training time spent writing checkpoints (default 0)", kBudget, kFraction);
}

void add_size_sweep(FieldList& f, SizeRequest& r) {
  f.add(&r.systems, "systems", "systems",
        "Systems to compare (default dgx-h100,dgx-h200,dgx-b200,mi300x-8x; see 'gpuplan catalog systems')", kSweep,
        "LIST");
  f.add(&r.nodes, "nodes", "nodes",
        "Node counts: MIN:MAX (the powers of two between, and both ends) or a list 16,24,32 (default 1:2048)",
        kSweep, "RANGE");
  f.add(&r.nic_GBps, "nic_GBps", "nic_GBps",
        "Scale-out bandwidth per GPU, GB/s per direction, instead of each system's NICs (400 Gb/s = 50)", kSweep,
        kPositiveRate);
  f.add(&r.spine_oversubscription, "spine_oversubscription", "spine_oversubscription",
        "Oversubscription of the tiers above one leaf (default: the catalog's, 1 = non-blocking)", kSweep,
        Bounds{.minimum = 1, .maximum = 1000});
  add_catalog(f, r.catalog, "catalog");
  f.add(&r.memory_margin, "memory_margin", "memory_margin",
        "Fraction of GPU memory kept free (default 0.08; see docs/plan.md)", kSweep, kFraction);
  f.add(&r.threads, "threads", "threads", "Worker threads (default 0: all cores)", kSweep,
        Bounds{.minimum = 0, .maximum = 1024});
}

void add_size_costs(FieldList& f, SizeRequest& r) {
  f.add(&r.deadline, "deadline", "deadline", "Longest acceptable training time: 90d, 12w, 2000h", kBudget,
        "DURATION");
  f.add(&r.price, "price", "price",
        "Dollars per GPU-hour: one price for all, or per system: dgx-h100=2.5,dgx-b200=5", kBudget, "PRICES");
  f.add(&r.objective, "objective", "objective",
        "What the recommendation minimises: time|cost|energy (default time)", kBudget, "NAME");
  f.add(&r.power_overhead, "power_overhead", "power_overhead",
        "Host and network power as a fraction of the GPUs' board power (default: from the system's datasheet "
        "power)",
        kBudget, kAtLeastZero);
}

}  // namespace

FieldList fields_of(SizeRequest& r) {
  FieldList f;
  add_model(f, r.model);
  f.positional();
  add_overrides(f, r.overrides);
  add_size_training(f, r);
  add_loss(f, r.training);
  add_size_costs(f, r);
  add_size_sweep(f, r);
  add_framework(f, r.training);
  add_perf_files(f, r.perf);
  f.add(&r.power, "power", "power", "Show energy (MWh) in the table", kOutput);
  f.add(&r.chart, "chart", "chart",
        "Write an SVG chart of time to train against GPUs per system, with cost on a second axis", kOutput, "FILE");
  f.add(&r.explain, "explain", "explain",
        "Say why the curves bend: memory forcing model parallelism, pipeline bubbles, network tiers", kOutput);
  return f;
}

}  // namespace gpuplan::api::detail
