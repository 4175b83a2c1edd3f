// Numbers as the page shows them: decimal GB with binary GiB in the tooltip, seconds, percentages.
// Past 1,000 GB in TB, as the command line prints them.
export function gb(bytes) {
  if (Math.abs(bytes) >= 1e12) return `${(bytes / 1e12).toFixed(2)} TB`;
  return `${(bytes / 1e9).toFixed(1)} GB`;
}

export function gib(bytes) {
  if (Math.abs(bytes) >= 2 ** 40) return `${(bytes / 2 ** 40).toFixed(2)} TiB`;
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

export function seconds(s) {
  if (s >= 100) return `${s.toFixed(0)} s`;
  if (s >= 1) return `${s.toFixed(2)} s`;
  return `${(s * 1000).toFixed(1)} ms`;
}

export function percent(fraction) {
  return `${(100 * fraction).toFixed(1)} %`;
}

export function count(n) {
  if (n >= 1e12) return `${(n / 1e12).toFixed(2)} T`;
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} K`;
  return `${Math.round(n)}`;
}

// An element with text, optional attributes and children.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A number the tests read back: shown rounded, its exact value in data-value.
export function value(text, exact, attributes = {}) {
  return el("span", { class: "value", "data-value": exact, ...attributes }, text);
}
