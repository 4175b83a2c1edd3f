// The results as the page draws them: memory per stage, the changes that make a job fit, the step time, the
// ranked plans with their sensitivity, and a pasted topology.
import { legend, memoryChart, MEMORY_COMPONENTS, sensitivityChart, stageParts, termColour, timeChart,
         topologyDrawing } from "./charts.js";
import { MEMORY_TERMS, TIME_TERMS } from "./explanations.js";
import { count, el, gb, gib, percent, seconds, value } from "./format.js";
import { PASTED_CONFIG, PASTED_TOPOLOGY } from "./state.js";

const results = () => document.getElementById("results");

function section(id, title, ...children) {
  return el("section", { id, "aria-labelledby": `${id}-title` }, el("h2", { id: `${id}-title` }, title), ...children);
}

function bytes(n, attributes = {}) {
  return value(gb(n), n, { title: gib(n), ...attributes });
}

// A component's hover text: what it is, then each contribution to it on this stage with its size and source.
function termsTitle(component, stage) {
  const lines = (stage.terms ?? []).filter((t) => t.component === component)
    .map((t) => `${t.name}: ${gb(t.bytes)} (${t.source})`);
  return [MEMORY_TERMS[component], ...lines].join("\n");
}

function memorySection(memory, prefix = "") {
  const stages = memory.stages?.length ? memory.stages : [memory.per_gpu];
  const worst = memory.per_gpu;
  const summary = el("p", { class: memory.fits ? "fits" : "does-not-fit" },
    memory.fits ? "Fits: " : "Does not fit: ", "worst stage (", String(memory.stage), ") needs ",
    bytes(worst.total, { id: "memory-total", "data-key": `${prefix}memory.total` }), " of ",
    bytes(memory.usable, { id: "memory-usable", "data-key": `${prefix}memory.usable` }),
    ` usable per GPU (${memory.gpu || "GPU"}, ${percent(memory.memory_margin)} kept free).`);
  // One row per component, one column per stage: a deep pipeline scrolls sideways, the names stay readable.
  const parts = stages.map((stage) => Object.fromEntries(stageParts(stage)));
  const cell = (stage, name, n) => el("td", { title: termsTitle(name, stage) },
    bytes(n, { "data-key": name === "other" ? undefined : `${prefix}stage.${stage.stage}.${name}` }));
  const rows = [...MEMORY_COMPONENTS, "other"].map((name) => el("tr", {},
    el("th", { scope: "row", title: MEMORY_TERMS[name] }, name.replaceAll("_", " ")),
    ...stages.map((stage, k) => cell(stage, name, parts[k][name]))));
  rows.push(el("tr", { class: "total" }, el("th", { scope: "row" }, "total"),
    ...stages.map((stage) => el("td", {}, bytes(stage.total, { "data-key": `${prefix}stage.${stage.stage}.total` })))));
  const header = el("tr", {}, el("th", { scope: "col" }, "per GPU"),
    ...stages.map((stage) => el("th", { scope: "col" }, `stage ${stage.stage}`)));
  return section("memory", "Memory per GPU", summary,
    memoryChart(stages, memory.usable, memory.capacity), legend([...MEMORY_COMPONENTS, "other"], MEMORY_TERMS),
    el("div", { class: "table-scroll" }, el("table", {}, el("thead", {}, header), el("tbody", {}, rows))));
}

function fixesSection(memory) {
  if (memory.fits || !memory.suggestions?.length) return null;
  const items = memory.suggestions.map((s) => el("li", { class: s.fits ? "fits" : "" },
    el("code", {}, s.change), ` ${s.description}: `, bytes(s.new_total, { "data-key": `change.${s.change}` }),
    s.fits ? " (fits)" : " (still too big)", ` — ${s.cost}`));
  const title = memory.suggestions.some((s) => s.fits) ? "Cheapest changes that make it fit"
    : "No single change makes it fit; the closest first";
  return section("fixes", title, el("ol", {}, items));
}

function timeSection(estimate, prefix = "") {
  const t = estimate.throughput;
  const terms = Object.entries(estimate.time.breakdown).filter(([, s]) => s > 0);
  return section("time", "Step time",
    el("p", { class: "summary" }, "Step ",
      value(seconds(estimate.time.step_s), estimate.time.step_s, { id: "step-time", "data-key": `${prefix}step_s` }),
      ", ", value(count(t.tokens_per_s), t.tokens_per_s, { id: "tokens-per-s", "data-key": `${prefix}tokens_per_s` }),
      " tokens/s, MFU ", value(percent(t.mfu), t.mfu, { id: "mfu", "data-key": `${prefix}mfu`, title: t.flop_convention }),
      " (", value(percent(t.mfu_causal), t.mfu_causal, { "data-key": `${prefix}mfu_causal`, title: t.flop_convention }),
      " counting causal attention's FLOPs)."),
    t.warnings.length ? el("ul", { class: "warnings" }, t.warnings.map((w) => el("li", {}, w))) : null,
    timeChart(estimate.time.breakdown, estimate.time.step_s),
    el("ul", { class: "terms" }, terms.map(([name, s]) => el("li", { title: TIME_TERMS[name] ?? "" },
      el("span", { class: "swatch", style: `background: ${termColour(estimate.time.breakdown, name)}` }),
      `${name.replaceAll("_", " ")}: `, value(seconds(s), s, { "data-term": name, "data-key": `${prefix}term.${name}` })))));
}

function layoutText(l) {
  let text = `TP ${l.tp} PP ${l.pp}`;
  if (l.vpp > 1) text += ` VPP ${l.vpp}`;
  if (l.cp > 1) text += ` CP ${l.cp}`;
  if (l.cp > 1 && l.cp_comm_type && l.cp_comm_type !== "p2p") text += ` (${l.cp_comm_type})`;
  if (l.ep > 1) text += ` EP ${l.ep}`;
  text += ` DP ${l.dp}, micro-batch ${l.micro_batch}, ZeRO-${l.zero}`;
  if (l.recompute !== "none") text += `, recompute ${l.recompute}`;
  if (l.offload !== "none") text += `, offload ${l.offload}`;
  return text;
}

function plansSection(plan) {
  if (!plan.plans.length) {
    const misses = plan.near_misses.map((p) => el("li", {}, layoutText(p.layout), ": needs ",
      bytes(p.memory.per_gpu.total), " per GPU"));
    return section("plans", "No layout fits", el("ol", {}, misses));
  }
  const rows = plan.plans.map((p, i) => el("tr", { "data-rank": i + 1 },
    el("td", {}, String(i + 1)), el("td", {}, layoutText(p.layout)),
    el("td", {}, value(seconds(p.time.step_s), p.time.step_s, { "data-key": `plan.${i + 1}.step_s` })),
    el("td", {}, value(percent(p.throughput.mfu), p.throughput.mfu, { "data-key": `plan.${i + 1}.mfu` })),
    el("td", {}, bytes(p.memory.per_gpu.total, { "data-key": `plan.${i + 1}.memory` })),
    el("td", {}, el("details", {}, el("summary", {}, "command"), el("code", { class: "command" }, p.command)))));
  const table = el("table", { class: "plans" }, el("thead", {}, el("tr", {}, ...["#", "layout", "step", "MFU", "memory", "reproduce"]
    .map((h) => el("th", { scope: "col" }, h)))), el("tbody", {}, rows));
  return section("plans", `Ranked layouts (${count(plan.space)} searched)`,
    el("div", { class: "table-scroll" }, table),
    el("h3", {}, "The winner with one choice changed"), sensitivityChart(plan.sensitivity),
    el("ul", { class: "why" }, plan.why_winner.map((w) => el("li", {}, w))));
}

function topologySection(topo) {
  const header = el("tr", {}, el("th", {}, ""), ...topo.gpus.map((g) => el("th", { scope: "col" }, `GPU${g.index}`)));
  const rows = topo.gpus.map((g, i) => el("tr", {}, el("th", { scope: "row" }, `GPU${g.index}`),
    ...topo.gpus.map((_, j) => el("td", { title: topo.links[i][j] },
      i === j ? "X" : value(`${topo.links[i][j]} ${topo.bandwidth_GBps[i][j]}`, topo.bandwidth_GBps[i][j],
                            j > i && topo.bandwidth_GBps[i][j] > 0 ? { "data-key": `link.${i}.${j}` } : {})))));
  return section("topology", "Topology",
    el("p", {}, value(String(topo.gpus.length), topo.gpus.length, { "data-key": "topo.gpus" }), " GPUs (",
      topo.gpu ?? "GPU", `, ${topo.generation ?? ""}), `,
      value(String(topo.nics.length), topo.nics.length, { "data-key": "topo.nics" }), " NICs",
      topo.nic_GBps ? ` at ${topo.nic_GBps} GB/s each` : "", "."),
    topologyDrawing(topo),
    el("h3", {}, "Links between GPUs (code, GB/s per direction)"),
    el("div", { class: "table-scroll" }, el("table", { class: "links" }, el("thead", {}, header), el("tbody", {}, rows))),
    el("h3", {}, "Advice"),
    el("ul", { class: "advice" }, [...topo.advice, ...topo.warnings].map((a) => el("li", {}, a))));
}

// A sizing sweep: the headline answers, the library's chart (its own SVG, as `gpuplan size --chart` writes it),
// and every point with the layout behind it.
function sizeSection(size) {
  const chart = el("div", { class: "size-chart" });
  chart.innerHTML = size.chart_svg ?? "";
  const number = (text, exact, key) => el("td", {}, value(text, exact, { "data-key": key }));
  const rows = size.points.map((p, i) => el("tr", { class: p.pareto ? "pareto" : "", title: p.note || p.command },
    el("td", {}, p.system), el("td", {}, String(p.nodes)), el("td", {}, count(p.gpus)),
    ...(p.fits ? [number(seconds(p.step_s), p.step_s, `size.${i}.step_s`),
                  number(percent(p.mfu), p.mfu, `size.${i}.mfu`),
                  number(p.days.toFixed(1), p.days, `size.${i}.days`),
                  number(count(p.gpu_hours), p.gpu_hours, `size.${i}.gpu_hours`),
                  p.cost_dollars === undefined ? el("td", {}, "-")
                    : number(`$${count(p.cost_dollars)}`, p.cost_dollars, `size.${i}.cost_dollars`),
                  number(p.energy_MWh.toFixed(0), p.energy_MWh, `size.${i}.energy_MWh`),
                  el("td", {}, layoutText(p.layout))]
                : [el("td", { colspan: 7, class: "does-not-fit" }, p.note || "does not fit")])));
  const header = el("tr", {}, ...["system", "nodes", "GPUs", "step", "MFU", "days", "GPU-hours", "cost", "MWh",
                                  "layout"].map((h) => el("th", { scope: "col" }, h)));
  return section("size", `Sizing ${size.job.model} for ${count(size.job.tokens)} tokens`,
    el("ul", { class: "why" }, size.headlines.map((h) => el("li", {}, el("strong", {}, `${h.question}: `), h.answer))),
    size.warnings.length ? el("ul", { class: "warnings" }, size.warnings.map((w) => el("li", {}, w))) : null,
    chart,
    el("div", { class: "table-scroll" }, el("table", { class: "size-points" }, el("thead", {}, header), el("tbody", {}, rows))),
    el("p", { class: "small" }, "* on the time-versus-cost front; hover a row for its reproducing command."),
    el("h3", {}, "Why the curves bend"), el("ul", {}, size.explanation.map((line) => el("li", {}, line))),
    el("h3", {}, "Assumptions"), el("ul", {}, [...size.job.assumptions, ...size.notes].map((line) => el("li", {}, line))));
}

// One line above everything: does it fit, how fast, and for a search which layout.
function headline(answers) {
  if (answers.size) {
    const pick = answers.size.headlines.at(-1);
    return el("p", { class: "headline" }, pick ? `${pick.question}: ${pick.answer}` : "No cluster of the sweep fits.");
  }
  const best = answers.estimate ?? answers.plan?.plans[0];
  if (!best) return el("p", { class: "headline does-not-fit" }, "No layout fits: the nearest misses are listed below.");
  const m = best.memory;
  return el("p", { class: `headline ${m.fits ? "fits" : "does-not-fit"}` },
    answers.plan ? `Best: ${layoutText(best.layout)}. ` : "",
    m.fits ? "Fits" : "Does not fit", `: ${gb(m.per_gpu.total)} of ${gb(m.usable)} per GPU · step `,
    seconds(best.time.step_s), ` · ${count(best.throughput.tokens_per_s)} tokens/s · MFU ${percent(best.throughput.mfu)}`);
}

export function render(answers, state) {
  const parts = [headline(answers)];
  if (answers.estimate) parts.push(memorySection(answers.estimate.memory), fixesSection(answers.estimate.memory),
                                   timeSection(answers.estimate));
  if (answers.plan) {
    parts.push(plansSection(answers.plan));
    const best = answers.plan.plans[0];
    if (best) parts.push(memorySection(best.memory, "best."), timeSection(best, "best."));
  }
  if (answers.topo) parts.push(topologySection(answers.topo));
  if (answers.size) parts.push(sizeSection(answers.size));
  results().replaceChildren(...parts.filter(Boolean));
  document.getElementById("status").textContent =
    state.mode === "search" ? `Searched ${count(answers.plan.space)} layouts.`
      : state.mode === "size" ? `Searched ${count(answers.size.layouts_evaluated)} layouts.` : "";
}

// The field the library named gets the message beside it; anything else goes above the results.
export function renderError(question, error) {
  const name = question === "size" && /^nodes\b/.test(error.field) ? "size_nodes" : fieldOf(error.field);
  const target = name ? document.querySelector(`[data-error-for="${name}"]`) : null;
  const message = error.message || `${error.field}: ${error.given}; accepted: ${error.accepted}`;
  if (target) {
    target.textContent = message;
    document.querySelector(`[name="${name}"]`)?.setAttribute("aria-invalid", "true");
  }
  document.getElementById("status").textContent = target ? `Check ${name.replaceAll("_", " ")}: ${message}` : message;
  results().replaceChildren();
}

// The form field an error names: a pasted file by the name the page gave it (state.js), else the option.
function fieldOf(field) {
  if (!field) return null;
  if (field.startsWith(PASTED_CONFIG)) return "config";
  if (field.startsWith(PASTED_TOPOLOGY)) return "topology";
  const option = field.split(/[ :.]/)[0];
  if (option === "model") return document.querySelector('[name="config"]').value.trim() ? "config" : "model";
  if (option === "file") return "topology";
  return document.querySelector(`[data-error-for="${option}"]`) ? option : null;
}

export function clearErrors() {
  for (const node of document.querySelectorAll("[data-error-for]")) node.textContent = "";
  for (const node of document.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
}

export function renderProgress(done, total) {
  const status = document.getElementById("status");
  status.textContent = `Searching: ${(100 * done / Math.max(1, total)).toFixed(0)} %`;
}
