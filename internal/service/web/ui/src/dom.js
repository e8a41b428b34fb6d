// Building the page: names from recordings are data, so every string goes
// in as a text node or a property, never through innerHTML.

export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, String(v));
  }
  add(el, kids);
  return el;
}

function add(el, kids) {
  for (const k of kids) {
    if (k === undefined || k === null || k === false) continue;
    if (Array.isArray(k)) add(el, k);
    else if (k instanceof Node) el.appendChild(k);
    else el.appendChild(document.createTextNode(String(k)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function fmtCount(n) {
  return Math.round(n).toLocaleString("en-US");
}

export function fmtPct(x) {
  return (Math.round(x * 100) / 100).toFixed(2) + "%";
}

// fmtNS prints nanoseconds in the largest unit that keeps it above 1.
export function fmtNS(ns) {
  const units = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"]];
  for (const [d, u] of units) if (ns >= d) return (ns / d).toFixed(ns >= 100 * d ? 0 : 2) + " " + u;
  return Math.round(ns) + " ns";
}

// weight prints a tree weight: time for nanosecond units, else a count.
export function fmtWeight(v, unit) {
  return unit === "ns" ? fmtNS(v) : fmtCount(v);
}

// Views draw their canvases once the page holds them (sizes come from the
// layout) and again when the window changes size: onLayout registers a
// drawing for the view being built, layout runs them.
let layouts = [];
let keys = [];

export function onLayout(fn) {
  layouts.push(fn);
}

// onKey registers a key handler for the view being built.
export function onKey(fn) {
  keys.push(fn);
}

export function resetLayout() {
  layouts = [];
  keys = [];
}

document.addEventListener("keydown", (e) => {
  if (e.target instanceof HTMLInputElement) return;
  for (const fn of keys) fn(e);
});

export function layout() {
  for (const fn of layouts) fn();
}
