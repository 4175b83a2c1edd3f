// The numbers the page must show, taken from the command line's --json: each under the key the page gives the
// element that shows it (data-key), with the exact value it must carry (data-value).
import { execFileSync } from "node:child_process";

// The parts of a stage's memory the page lists, as the command line's JSON names them.
const COMPONENTS = ["weights", "master_weights", "gradients", "optimizer_states", "activations", "logits",
                   "wgrad_buffers", "comm_buffers", "runtime", "total"];

export function cli(args) {
  const gpuplan = process.env.GPUPLAN;
  if (!gpuplan) throw new Error("GPUPLAN must name the gpuplan program (make web-test sets it)");
  return JSON.parse(execFileSync(gpuplan, [...args, "--json"], { encoding: "utf8" }));
}

function memoryNumbers(memory, prefix, out) {
  out[`${prefix}memory.total`] = memory.per_gpu.total;
  out[`${prefix}memory.usable`] = memory.usable;
  for (const stage of memory.stages?.length ? memory.stages : [memory.per_gpu])
    for (const part of COMPONENTS) out[`${prefix}stage.${stage.stage}.${part}`] = stage[part] ?? 0;
  if (!memory.fits) for (const s of memory.suggestions) out[`change.${s.change}`] = s.new_total;
}

function timeNumbers(estimate, prefix, out) {
  out[`${prefix}step_s`] = estimate.time.step_s;
  out[`${prefix}tokens_per_s`] = estimate.throughput.tokens_per_s;
  out[`${prefix}mfu`] = estimate.throughput.mfu;
  out[`${prefix}mfu_causal`] = estimate.throughput.mfu_causal;
  for (const [term, seconds] of Object.entries(estimate.time.breakdown))
    if (seconds > 0) out[`${prefix}term.${term}`] = seconds;
}

export function estimateNumbers(estimate) {
  const out = {};
  memoryNumbers(estimate.memory, "", out);
  timeNumbers(estimate, "", out);
  return out;
}

export function planNumbers(plan) {
  const out = {};
  plan.plans.forEach((p, i) => {
    out[`plan.${i + 1}.step_s`] = p.time.step_s;
    out[`plan.${i + 1}.mfu`] = p.throughput.mfu;
    out[`plan.${i + 1}.memory`] = p.memory.per_gpu.total;
  });
  if (plan.plans.length) {
    memoryNumbers(plan.plans[0].memory, "best.", out);
    timeNumbers(plan.plans[0], "best.", out);
  }
  return out;
}

export function topoNumbers(topo) {
  const out = { "topo.gpus": topo.gpus.length, "topo.nics": topo.nics.length };
  topo.bandwidth_GBps.forEach((row, i) => row.forEach((rate, j) => {
    if (j > i && rate > 0) out[`link.${i}.${j}`] = rate;
  }));
  return out;
}

export function sizeNumbers(size) {
  const out = {};
  size.points.forEach((p, i) => {
    if (!p.fits) return;
    for (const key of ["step_s", "mfu", "days", "gpu_hours", "energy_MWh", "cost_dollars"])
      if (p[key] !== undefined) out[`size.${i}.${key}`] = p[key];
  });
  return out;
}
