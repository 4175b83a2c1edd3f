// Hand-written SVG charts: memory by component per pipeline stage, the step-time breakdown, the sensitivity of
// the winning plan, and a drawing of a node's topology. Every segment has a <title> (hover) and its exact value
// in data-value.
import { MEMORY_TERMS, TIME_TERMS } from "./explanations.js";
import { gb, gib, seconds } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";
// One colour per memory component and per step-time term, in their order: as many as the longer list (the 18 time
// terms), no two alike among the terms a dense layout shows together (forward to optimizer).
const COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
                 "#bab0ac", "#8cd17d", "#b6992d", "#f1ce63", "#d37295", "#a0cbe8", "#ffbe7d", "#79706e", "#d4a6c8"];

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function titled(node, text) {
  node.append(svg("title", {}, text));
  return node;
}

export const MEMORY_COMPONENTS = ["weights", "master_weights", "gradients", "optimizer_states", "activations",
                                  "logits", "wgrad_buffers", "comm_buffers", "runtime"];

// The parts of one stage's peak: the components, and what the peak holds beyond them.
export function stageParts(stage) {
  const parts = MEMORY_COMPONENTS.map((name) => [name, stage[name] ?? 0]);
  const listed = parts.reduce((sum, [, bytes]) => sum + bytes, 0);
  parts.push(["other", Math.max(0, stage.total - listed)]);
  return parts;
}

export function memoryChart(stages, usableBytes, capacityBytes) {
  const width = 560, height = 300, left = 76, bottom = 40, top = 24;
  const barWidth = Math.min(80, (width - left - 20) / stages.length - 16);
  const highest = Math.max(capacityBytes, ...stages.map((s) => s.total)) * 1.05;
  const y = (bytes) => height - bottom - (bytes / highest) * (height - bottom - top);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart",
                             "aria-label": "Memory per GPU by component for each pipeline stage" });
  for (let gbTick = 0; gbTick <= highest / 1e9; gbTick += gridStep(highest / 1e9)) {
    chart.append(svg("line", { x1: left, x2: width - 10, y1: y(gbTick * 1e9), y2: y(gbTick * 1e9), class: "grid" }));
    chart.append(svg("text", { x: left - 6, y: y(gbTick * 1e9) + 4, "text-anchor": "end" }, `${gbTick} GB`));
  }
  const offset = Math.max(12, (width - 10 - left - stages.length * (barWidth + 16)) / 2);
  stages.forEach((stage, i) => {
    const x = left + offset + i * (barWidth + 16);
    let base = 0;
    stageParts(stage).forEach(([name, bytes], k) => {
      if (bytes <= 0) return;
      const rect = svg("rect", { x, width: barWidth, y: y(base + bytes), height: y(base) - y(base + bytes),
                                 fill: COLOURS[k], "data-component": name, "data-value": bytes });
      chart.append(titled(rect, `Stage ${stage.stage}, ${name}: ${gb(bytes)} (${gib(bytes)}). ${MEMORY_TERMS[name]}`));
      base += bytes;
    });
    chart.append(svg("text", { x: x + barWidth / 2, y: height - bottom + 16, "text-anchor": "middle" },
                     `stage ${stage.stage}`));
  });
  const line = svg("line", { x1: left, x2: width - 10, y1: y(usableBytes), y2: y(usableBytes), class: "usable" });
  chart.append(titled(line, `Usable: ${gb(usableBytes)} (${gib(usableBytes)}) of ${gb(capacityBytes)}`));
  chart.append(svg("text", { x: width - 12, y: y(usableBytes) - 4, "text-anchor": "end", class: "usable-label" },
                   `usable ${gb(usableBytes)}`));
  return chart;
}

function gridStep(highestGb) {
  for (const step of [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]) if (highestGb / step <= 8) return step;
  return 2000;
}

export function legend(names, explanations) {
  const list = document.createElement("ul");
  list.className = "legend";
  names.forEach((name, k) => {
    const item = document.createElement("li");
    item.title = explanations[name] ?? "";
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = COLOURS[k % COLOURS.length];
    item.append(swatch, name.replaceAll("_", " "));
    list.append(item);
  });
  return list;
}

export const termColour = (breakdown, name) => COLOURS[Object.keys(breakdown).indexOf(name) % COLOURS.length];

export function timeChart(breakdown, stepSeconds) {
  const width = 560, height = 60;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart",
                             "aria-label": "Step time by term" });
  let x = 0;
  Object.entries(breakdown).forEach(([name, s], k) => {
    if (s <= 0) return;
    const w = (s / stepSeconds) * width;
    const rect = svg("rect", { x, y: 8, width: w, height: 40, fill: COLOURS[k % COLOURS.length],
                               "data-term": name, "data-value": s });
    chart.append(titled(rect, `${name}: ${seconds(s)} (${(100 * s / stepSeconds).toFixed(1)} %). ${TIME_TERMS[name] ?? ""}`));
    if (w > 70) chart.append(svg("text", { x: x + w / 2, y: 32, "text-anchor": "middle", class: "on-bar" },
                                 `${name.replaceAll("_", " ")} ${(100 * s / stepSeconds).toFixed(0)} %`));
    x += w;
  });
  return chart;
}

// The winner's step time with one choice changed: a bar per change, right (slower) or left (faster) of the
// winner. In HTML rather than SVG, so that its labels keep their size on a phone.
export function sensitivityChart(sensitivity) {
  const rows = sensitivity.filter((s) => s.fits);
  const widest = Math.max(0.05, ...rows.map((s) => Math.abs(s.delta)));
  const chart = document.createElement("div");
  chart.className = "sensitivity";
  chart.setAttribute("role", "img");
  chart.setAttribute("aria-label", "Step time of the winner with one choice changed");
  for (const s of rows) {
    const row = document.createElement("div");
    row.className = "sensitivity-row";
    row.title = `${s.change}: step ${seconds(s.step_s)}, ${(100 * s.delta).toFixed(1)} % vs the winner` +
                (s.note ? ` (${s.note})` : "");
    const label = document.createElement("span");
    label.className = "sensitivity-label";
    label.textContent = s.change;
    const track = document.createElement("span");
    track.className = "sensitivity-track";
    const bar = document.createElement("span");
    bar.className = `sensitivity-bar ${s.delta >= 0 ? "slower" : "faster"}`;
    bar.dataset.value = s.delta;
    bar.style.width = `${Math.max(0.5, 50 * Math.abs(s.delta) / widest)}%`;
    bar.style[s.delta >= 0 ? "left" : "right"] = "50%";
    const amount = document.createElement("span");
    amount.className = "sensitivity-amount";
    amount.textContent = `${s.delta >= 0 ? "+" : ""}${(100 * s.delta).toFixed(1)} %`;
    track.append(bar);
    row.append(label, track, amount);
    chart.append(row);
  }
  return chart;
}

// GPUs in a row with the NICs below, each under the GPUs it sits nearest to. NVLink through NVSwitch (every pair
// the same NV# code) is drawn as one switch bar; other links as arcs between GPU pairs, as wide as their rate.
export function topologyDrawing(topo) {
  const n = topo.gpus.length, width = 560, spacing = (width - 40) / Math.max(1, n);
  const gpuY = 150, nicY = 260, height = 300;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart topology",
                             "aria-label": "GPUs, NICs and links of the pasted topology" });
  const gx = (i) => 20 + spacing * (i + 0.5);
  const pairs = [];
  for (let i = 0; i < n; ++i) for (let j = i + 1; j < n; ++j) pairs.push([i, j]);
  const codes = new Set(pairs.map(([i, j]) => topo.links[i][j]));
  const switched = n > 2 && codes.size === 1 && [...codes][0].startsWith("NV");
  if (switched) {
    const code = [...codes][0], rate = topo.bandwidth_GBps[0][1];
    chart.append(titled(svg("rect", { x: gx(0) - 22, y: 40, width: gx(n - 1) - gx(0) + 44, height: 26, class: "switch" }),
                        `NVSwitch: every GPU pair ${code}, ${rate} GB/s per direction`));
    chart.append(svg("text", { x: width / 2, y: 58, "text-anchor": "middle" }, `NVSwitch: ${code} per GPU, ${rate} GB/s`));
    for (let i = 0; i < n; ++i) chart.append(svg("line", { x1: gx(i), x2: gx(i), y1: 66, y2: gpuY - 14, class: "link nvlink",
                                                          "stroke-width": 3 }));
  } else {
    for (const [i, j] of pairs) {
      const rate = topo.bandwidth_GBps[i][j];
      if (rate <= 0) continue;
      const lift = 14 + 12 * (j - i);
      const arc = svg("path", { d: `M ${gx(i)} ${gpuY - 14} Q ${(gx(i) + gx(j)) / 2} ${gpuY - 14 - lift} ${gx(j)} ${gpuY - 14}`,
                                class: `link ${topo.links[i][j].startsWith("NV") ? "nvlink" : "pcie"}`,
                                "stroke-width": Math.max(1, Math.log2(rate) - 2) });
      chart.append(titled(arc, `GPU ${i} - GPU ${j}: ${topo.links[i][j]}, ${rate} GB/s per direction`));
    }
  }
  topo.gpus.forEach((gpu, i) => {
    chart.append(titled(svg("rect", { x: gx(i) - 22, y: gpuY - 14, width: 44, height: 28, class: "gpu" }),
                        `GPU ${gpu.index}: NUMA ${gpu.numa_node ?? "?"}, nearest NIC ${gpu.nearest_nic ?? "none"}`));
    chart.append(svg("text", { x: gx(i), y: gpuY + 5, "text-anchor": "middle" }, `GPU${gpu.index}`));
  });
  const placed = new Map();   // NICs under the same GPU are stacked side by side
  topo.nics.forEach((nic) => {
    const near = nic.nearest_gpus.length ? nic.nearest_gpus : null;
    const anchor = near ? near.reduce((sum, g) => sum + gx(g), 0) / near.length : width - 30;
    const slot = placed.get(anchor) ?? 0;
    placed.set(anchor, slot + 1);
    const x = anchor + (slot % 2 ? 1 : -1) * Math.ceil(slot / 2) * 22, y = nicY + (near ? 0 : 24 * slot) - (near ? 0 : 100);
    if (near) chart.append(svg("line", { x1: x, y1: y - 10, x2: gx(near[0]), y2: gpuY + 14, class: "nic-link" }));
    chart.append(titled(svg("rect", { x: x - 18, y: y - 10, width: 36, height: 20, class: "nic" }),
                        `${nic.name ?? nic.label}: ${near ? `nearest GPUs ${near.join(", ")}` : "far from every GPU"}, ` +
                        `${topo.nic_GBps} GB/s`));
    chart.append(svg("text", { x, y: y + 4, "text-anchor": "middle", class: "small" }, nic.label));
  });
  return chart;
}
