// What each term means, shown on hover (docs/memory.md and docs/estimate.md say it at length, with sources).
export const MEMORY_TERMS = {
  weights: "Parameters in the training dtype that this GPU holds (after TP, PP, EP and ZeRO-3 sharding)",
  master_weights: "fp32 copy of the parameters kept by mixed-precision optimizers (sharded by ZeRO-1 and up)",
  gradients: "Gradient buffers (fp32 main_grad in Megatron-LM; 16-bit under DeepSpeed with ZeRO; sharded by ZeRO-2 and up)",
  optimizer_states: "Adam moments or the chosen optimizer's state (sharded by ZeRO-1 and up)",
  activations: "Tensors saved for backward by the micro-batches in flight on this stage",
  logits: "Output-layer logits and the loss's buffers on the last stage",
  wgrad_buffers: "Transformer Engine's cached weight-gradient buffers, one per distinct Linear shape (Megatron-Core)",
  comm_buffers: "Communication buckets and all-gather/reduce-scatter buffers",
  runtime: "CUDA context, NCCL communicators and allocator overhead",
  other: "What the peak holds beyond the listed parts: transient buffers at the peak (backward gradients, the " +
         "loss) and what PyTorch's caching allocator reserves beyond what is allocated",
};

export const TIME_TERMS = {
  forward: "Forward compute of the slowest pipeline stage",
  backward: "Backward compute (input and weight gradients)",
  recompute: "Forward recomputed for activation checkpointing",
  tp_comm: "Tensor-parallel all-gather/reduce-scatter not hidden behind compute",
  cp_comm: "Context-parallel ring exchange of keys and values not hidden",
  ep_comm: "Expert-parallel all-to-all (dispatch and combine)",
  zero3_comm: "ZeRO-3/FSDP collectives not hidden, and FSDP2's copies around them",
  offload_stream: "Offloaded states streamed over the host link",
  nvme_offload: "Offloaded states read and written on NVMe",
  host_bound: "CPU optimizer step time beyond what the GPU hides",
  slowest_gpu: "Waiting for the job's slowest GPU: GPUs of one kind sustain slightly different clocks, and every collective waits for the slowest",
  pipeline_bubble: "Pipeline fill and drain: stages idle while others work",
  pp_comm: "Activations sent between pipeline stages",
  dp_comm: "Data-parallel gradient reduction and weight gather not overlapped with backward (with DeepSpeed's bucket copies; without ZeRO DeepSpeed all-reduces after the backward)",
  embedding_sync: "All-reduce of the tied embedding's gradients across first and last stages",
  sp_grad_sync: "All-reduce over the TP group of the gradients of the weights sequence parallelism duplicates (norms, row-parallel biases, routers, MLA down projections)",
  optimizer: "Optimizer step",
  overhead: "Per-step launch and framework overhead",
};
