// A flame graph (root at the bottom) or icicle (root on top) of a TreeDoc
// on a canvas: click zooms, search colours matches and gives their share,
// hovering shows a frame's numbers.

import { h, fmtWeight, fmtPct, fmtCount } from "./dom.js";

const ROW = 18;
const live = new Set(); // drawn graphs, for window.sondeFrames
let painted = false;

// sondeFrames lists the frames on screen in CSS pixels: tests click on
// them, and a user can read a graph from the console.
window.sondeFrames = () => {
  const out = [];
  for (const g of live) if (g.canvas.isConnected) out.push(...g.frames());
  return out;
};

function hash(s) {
  let x = 2166136261;
  for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 16777619);
  return (x >>> 0) / 4294967296;
}

export class Flame {
  // opts: inverted (icicle), delta (diff shares per node), role (a name for
  // tests), onZoom(names), tip (the tooltip element).
  constructor(doc, opts) {
    this.doc = doc;
    this.o = opts;
    const n = doc.nodes.length;
    this.n = n;
    const a = (T) => new T(n);
    this.name = a(Int32Array); this.kind = a(Uint8Array); this.depth = a(Int32Array);
    this.value = a(Float64Array); this.samples = a(Float64Array); this.self = a(Float64Array);
    this.x = a(Float64Array); this.end = a(Int32Array); this.parent = a(Int32Array);
    const open = [], cursor = [];
    let maxDepth = 0;
    for (let i = 0; i < n; i++) {
      const [nm, k, d, v, s, sf] = doc.nodes[i];
      this.name[i] = nm; this.kind[i] = k; this.depth[i] = d; this.value[i] = v; this.samples[i] = s; this.self[i] = sf;
      while (open.length > d) this.end[open.pop()] = i;
      if (d > 0) {
        const p = open[d - 1];
        this.parent[i] = p;
        this.x[i] = cursor[d - 1];
        cursor[d - 1] += v;
      } else this.parent[i] = -1;
      open.push(i);
      cursor[d] = this.x[i];
      maxDepth = Math.max(maxDepth, d);
    }
    while (open.length) this.end[open.pop()] = n;
    this.maxDepth = maxDepth;
    this.zoom = 0;
    this.matched = null;
    this.canvas = h("canvas", { class: "flame", dataset: { role: opts.role || "flame" } });
    this.canvas.addEventListener("click", (e) => this.click(e));
    this.canvas.addEventListener("dblclick", (e) => {
      const i = this.at(e);
      if (i > 0 && this.o.onFocus) this.o.onFocus(this.label(i), this.kind[i]);
    });
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => { if (this.o.tip) this.o.tip.hidden = true; });
    if (opts.delta) this.maxDelta = opts.delta.reduce((m, d) => Math.max(m, Math.abs(d)), 1e-9);
    live.add(this);
  }

  label(i) { return this.doc.names[this.name[i]]; }

  children(i) {
    const out = [];
    for (let j = i + 1; j < this.end[i]; j = this.end[j]) out.push(j);
    return out;
  }

  path(i) {
    const p = [];
    for (; i >= 0; i = this.parent[i]) p.unshift(i);
    return p;
  }

  // find is the node at a path of names from the root, or the deepest
  // node of the path that exists.
  find(names) {
    let i = 0;
    for (const nm of names.slice(1)) {
      const c = this.children(i).find((j) => this.label(j) === nm);
      if (c === undefined) break;
      i = c;
    }
    return i;
  }

  color(i) {
    if (this.matched && this.matched[i]) return "#d63af0";
    if (this.o.delta) {
      // Light to strong, never so dark that the name on it cannot be read.
      const d = this.o.delta[i], a = Math.min(1, Math.abs(d) / this.maxDelta);
      const r = (k) => Math.round(255 - k * a);
      return d > 0 ? `rgb(255,${r(190)},${r(190)})` : d < 0 ? `rgb(${r(180)},${r(140)},255)` : "rgb(235,235,235)";
    }
    const r = hash(this.label(i));
    switch (this.kind[i]) {
      case 1: return `hsl(${195 + 25 * r},55%,${62 + 10 * r}%)`; // kernel
      case 2: return `hsl(${95 + 30 * r},50%,${55 + 10 * r}%)`; // JIT
      case 3: return `hsl(0,0%,${72 + 10 * r}%)`; // process names, unknown
    }
    return `hsl(${10 + 40 * r},85%,${58 + 10 * r}%)`;
  }

  yOf(d) {
    return this.o.inverted ? d * ROW : (this.maxDepth - d) * ROW;
  }

  draw() {
    const c = this.canvas;
    const w = c.parentElement ? c.parentElement.clientWidth : 1200;
    const H = (this.maxDepth + 1) * ROW;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== w * dpr || c.height !== H * dpr) {
      c.width = w * dpr; c.height = H * dpr;
      c.style.width = w + "px"; c.style.height = H + "px";
    }
    this.W = w;
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, H);
    g.font = "12px system-ui, sans-serif";
    g.textBaseline = "middle";
    const z = this.zoom, zx = this.x[z], scale = w / Math.max(this.value[z], 1e-12);
    const drawn = (this.drawn = []);
    const rect = (i, px, pw) => {
      const y = this.yOf(this.depth[i]);
      g.fillStyle = this.color(i);
      g.fillRect(px, y, Math.max(pw - 1, 0.5), ROW - 1);
      drawn.push([i, px, pw]);
      if (pw > 28) {
        let t = this.label(i);
        const fit = Math.floor((pw - 6) / 6.5);
        if (t.length > fit) t = fit > 2 ? t.slice(0, fit - 1) + "…" : "";
        if (t) {
          g.fillStyle = "#111";
          g.fillText(t, px + 3, y + ROW / 2);
        }
      }
    };
    for (let p = this.parent[z]; p >= 0; p = this.parent[p]) rect(p, 0, w);
    for (let i = z; i < this.end[z]; ) {
      const pw = this.value[i] * scale;
      if (pw < 0.4) { i = this.end[i]; continue; }
      rect(i, (this.x[i] - zx) * scale, pw);
      i++;
    }
    if (!painted) {
      painted = true;
      performance.mark("sonde-first-paint");
    }
  }

  at(e) {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    for (const [i, px, pw] of this.drawn || []) {
      const fy = this.yOf(this.depth[i]);
      if (x >= px && x < px + pw && y >= fy && y < fy + ROW) return i;
    }
    return -1;
  }

  click(e) {
    const i = this.at(e);
    if (i < 0) return;
    const t0 = performance.now();
    this.zoomTo(i);
    performance.measure("sonde-zoom", { start: t0, end: performance.now() });
  }

  zoomTo(i) {
    this.zoom = i;
    this.draw();
    if (this.o.onZoom) this.o.onZoom(this.path(i).map((j) => this.label(j)), i);
  }

  hover(e) {
    const tip = this.o.tip;
    if (!tip) return;
    const i = this.at(e);
    if (i < 0) { tip.hidden = true; return; }
    const unit = this.doc.unit, total = this.value[0] || 1;
    const lines = [
      this.label(i),
      `${fmtCount(this.samples[i])} samples` + (unit === "ns" ? `, ${fmtWeight(this.value[i], unit)} blocked` : ""),
      `${fmtPct((100 * this.value[i]) / total)} of all` + (this.zoom ? `, ${fmtPct((100 * this.value[i]) / (this.value[this.zoom] || 1))} of zoomed` : ""),
      `self ${fmtPct((100 * this.self[i]) / total)}` + (unit === "ns" ? ` (${fmtWeight(this.self[i], unit)})` : ""),
    ];
    if (this.o.delta) lines.push(`change ${this.o.delta[i] >= 0 ? "+" : ""}${this.o.delta[i].toFixed(2)} points`);
    tip.replaceChildren(...lines.map((l, k) => h("div", { class: k ? "" : "tipname" }, l)));
    tip.hidden = false;
    tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 360) + "px";
    tip.style.top = e.clientY + 14 + "px";
  }

  // search colours frames whose name matches re and returns their share of
  // the whole (a frame inside a matched frame counts once).
  search(re) {
    if (!re) { this.matched = null; this.draw(); return null; }
    const m = (this.matched = new Uint8Array(this.n));
    let sum = 0, covered = 0;
    for (let i = 0; i < this.n; i++) {
      if (!re.test(this.label(i))) continue;
      m[i] = 1;
      if (i >= covered) { sum += this.value[i]; covered = this.end[i]; }
    }
    this.draw();
    return (100 * sum) / (this.value[0] || 1);
  }

  frames() {
    const r = this.canvas.getBoundingClientRect();
    return (this.drawn || []).map(([i, px, pw]) => ({
      graph: this.canvas.dataset.role, name: this.label(i), x: r.left + px, y: r.top + this.yOf(this.depth[i]), w: pw, h: ROW - 1,
    }));
  }
}
