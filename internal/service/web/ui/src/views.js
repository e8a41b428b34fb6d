// The views: each renders the shared selection (state.filters) into main.

import { h, clear, fmtCount, fmtPct, fmtNS, onLayout, onKey } from "./dom.js";
import { get } from "./api.js";
import * as state from "./state.js";
import { Flame } from "./flame.js";

const tip = () => document.getElementById("tip");

function regexOf(q) {
  if (!q) return null;
  try { return new RegExp(q); } catch { return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); }
}

// graphView shows one tree with breadcrumbs and search; zoom and search
// are kept in the hash.
function graphView(main, doc, s, opts) {
  const crumbs = h("div", { class: "crumbs" });
  const pct = h("span", { class: "match", id: "match" });
  const search = h("input", { type: "search", id: "search", placeholder: "search (regex)", value: s.q || "" });
  const wrap = h("div", { class: "canvaswrap" });
  const note = doc.omitted ? h("p", { class: "note" }, `${fmtCount(doc.omitted)} frames too narrow to see were left out (their weight stays in their callers)`) : null;
  main.append(h("div", { class: "toolbar" }, search, pct,
    h("span", { class: "note" }, "click: zoom · Esc: back to all · double click: focus on the function")), crumbs, wrap);
  if (note) main.append(note);
  const fl = new Flame(doc, Object.assign({
    tip: tip(),
    onZoom: (names, i) => {
      state.set({ z: i ? JSON.stringify(names) : "" }, true);
      showCrumbs(names);
    },
    // A double click focuses on a function (not on a process name).
    onFocus: (name, kind) => { if (kind !== 3) state.set({ focus: name, z: "" }); },
  }, opts));
  onKey((e) => { if (e.key === "Escape" && fl.zoom) fl.zoomTo(0); });
  wrap.append(fl.canvas);
  const showCrumbs = (names) => {
    clear(crumbs);
    names.forEach((nm, k) => {
      crumbs.append(h("button", { class: "crumb", onclick: () => fl.zoomTo(fl.find(names.slice(0, k + 1))) }, nm));
    });
  };
  let z = 0;
  try { if (s.z) z = fl.find(JSON.parse(s.z)); } catch { /* a bad link zooms nowhere */ }
  fl.zoom = z;
  showCrumbs(fl.path(z).map((j) => fl.label(j)));
  const doSearch = () => {
    const p = fl.search(regexOf(search.value));
    pct.textContent = p === null ? "" : `matched ${fmtPct(p)} of all`;
    pct.dataset.percent = p === null ? "" : p.toFixed(4);
    state.set({ q: search.value }, true);
  };
  search.addEventListener("input", doSearch);
  if (s.q) doSearch();
  onLayout(() => fl.draw());
  return fl;
}

export async function flame(main, s, meta, inverted) {
  const doc = await get("flame", state.filters(s));
  summary(main, doc);
  graphView(main, doc, s, { inverted, role: inverted ? "icicle" : "flame" });
}

function summary(main, doc) {
  main.append(h("p", { class: "summary" }, `${fmtCount(doc.samples)} samples` +
    (doc.unit === "ns" ? `, ${fmtNS(doc.total_period)} blocked` : "") + " in the selection"));
}

const topCols = [
  ["name", "function"], ["self", "self"], ["total", "total"], ["self_samples", "self samples"], ["samples", "samples"],
];

export async function top(main, s) {
  const doc = await get("top", state.filters(s));
  summary(main, doc);
  const total = doc.total_period || 1;
  const filt = h("input", { type: "search", id: "topfilter", placeholder: "filter functions", value: s.tf || "" });
  const table = h("table", { class: "top", id: "top" });
  main.append(h("div", { class: "toolbar" }, filt), table);
  const sortKey = s.ts || "self";
  const val = (r, k) => ({ name: r.name, self: r.self_period, total: r.children_period, self_samples: r.self_samples, samples: r.samples }[k]);
  const render = () => {
    const q = filt.value.toLowerCase();
    const rows = doc.entries.filter((r) => !q || r.name.toLowerCase().includes(q));
    rows.sort((a, b) => sortKey === "name" ? a.name.localeCompare(b.name) : val(b, sortKey) - val(a, sortKey));
    clear(table);
    table.append(h("thead", {}, h("tr", {}, topCols.map(([k, label]) =>
      h("th", { class: k === sortKey ? "sorted" : "", onclick: () => state.set({ ts: k }) }, label)))));
    const body = h("tbody");
    for (const r of rows.slice(0, 2000)) {
      body.append(h("tr", { class: "k" + r.kind, onclick: () => state.set({ v: "sandwich", fn: r.name }) },
        h("td", { class: "name" }, r.name,
          h("button", { class: "src", title: "source", onclick: (e) => { e.stopPropagation(); state.set({ v: "source", fn: r.name }); } }, "src")),
        h("td", { class: "num" }, fmtPct((100 * r.self_period) / total)),
        h("td", { class: "num" }, fmtPct((100 * r.children_period) / total)),
        h("td", { class: "num" }, fmtCount(r.self_samples)),
        h("td", { class: "num" }, fmtCount(r.samples))));
    }
    table.append(body);
    if (rows.length > 2000) main.append(h("p", { class: "note" }, `first 2,000 of ${fmtCount(rows.length)} functions`));
  };
  filt.addEventListener("input", () => { state.set({ tf: filt.value }, true); render(); });
  render();
}

export async function sandwich(main, s) {
  if (!s.fn) {
    main.append(h("p", { class: "note" }, "Pick a function in the top table to see its callers and callees."));
    return;
  }
  const doc = await get("sandwich", Object.assign(state.filters(s), { fn: s.fn }));
  const all = doc.total_period || 1, fnTotal = doc.callers.total_period || 1;
  main.append(h("h2", {}, "sandwich: ", h("span", { class: "fname" }, doc.function), ` — ${fmtPct((100 * doc.callers.total_period) / all)} of all`));
  // Direct callers with their shares of the function's weight.
  const table = h("table", { class: "top", id: "callers" }, h("thead", {}, h("tr", {}, h("th", {}, "caller"), h("th", {}, "share of calls"), h("th", {}, "of all"))));
  const body = h("tbody");
  const kids = [];
  doc.callers.nodes.forEach((n, i) => { if (n[2] === 1) kids.push(n); });
  kids.sort((a, b) => b[3] - a[3]);
  for (const n of kids) {
    const nm = doc.callers.names[n[0]];
    body.append(h("tr", { onclick: () => state.set({ fn: nm }) }, h("td", { class: "name" }, nm),
      h("td", { class: "num", dataset: { percent: ((100 * n[3]) / fnTotal).toFixed(4) } }, fmtPct((100 * n[3]) / fnTotal)),
      h("td", { class: "num" }, fmtPct((100 * n[3]) / all))));
  }
  table.append(body);
  main.append(h("h3", {}, "callers"));
  const up = h("div", { class: "canvaswrap" });
  main.append(up, table, h("h3", {}, "callees"));
  const down = h("div", { class: "canvaswrap" });
  main.append(down);
  for (const [wrap, d, inverted, role] of [[up, doc.callers, false, "callers"], [down, doc.callees, true, "callees"]]) {
    const fl = new Flame(d, { inverted, role, tip: tip() });
    wrap.append(fl.canvas);
    onLayout(() => fl.draw());
  }
}

export async function time(main, s, meta) {
  const doc = await get("time", state.filters(s));
  if (!doc.lanes.length) { main.append(h("p", { class: "note" }, "No timed samples in the selection.")); return; }
  main.append(h("p", { class: "note" }, "Drag across the lanes to select a time range; every view then shows only that range."));
  const LANE = 16, LABEL = 220;
  const box = h("div", { class: "timebox", id: "timebox" });
  const labels = h("div", { class: "lanelabels" });
  const c = h("canvas", { class: "lanes", id: "lanes" });
  box.append(labels, c);
  main.append(box);
  let max = 1;
  for (const l of doc.lanes) for (const v of l.counts) max = Math.max(max, v);
  for (const l of doc.lanes) labels.append(h("div", { class: "lanelabel", title: `${l.comm} pid ${l.pid} tid ${l.tid}` }, `${l.comm} ${l.tid}`));
  const dur = doc.duration_ns;
  let w = 200;
  const H = doc.lanes.length * LANE + 20;
  const draw = (sel) => {
    const g = c.getContext("2d");
    g.clearRect(0, 0, w, H);
    const bw = w / doc.bins;
    doc.lanes.forEach((l, k) => {
      l.counts.forEach((v, b) => {
        if (!v) return;
        const a = 0.15 + 0.85 * (v / max);
        g.fillStyle = `rgba(214,80,20,${a})`;
        g.fillRect(b * bw, k * LANE, Math.max(bw, 1), LANE - 2);
      });
    });
    g.fillStyle = "#555"; g.font = "11px system-ui";
    for (let i = 0; i <= 4; i++) g.fillText(fmtNS((dur * i) / 4), Math.min(i * w / 4, w - 50), H - 5);
    if (sel) {
      g.fillStyle = "rgba(40,90,220,0.25)";
      g.fillRect(sel[0] * w, 0, (sel[1] - sel[0]) * w, H - 18);
    }
  };
  const cur = s.t1 ? [Number(s.t0) / dur, Number(s.t1) / dur] : null;
  onLayout(() => {
    w = Math.max(200, box.clientWidth - LABEL - 8);
    c.width = w; c.height = H; c.style.width = w + "px"; c.style.height = H + "px";
    draw(cur);
  });
  let start = null;
  const frac = (e) => Math.min(1, Math.max(0, (e.clientX - c.getBoundingClientRect().left) / c.clientWidth));
  c.addEventListener("mousedown", (e) => { start = frac(e); });
  c.addEventListener("mousemove", (e) => { if (start !== null) draw([Math.min(start, frac(e)), Math.max(start, frac(e))]); });
  c.addEventListener("mouseup", (e) => {
    if (start === null) return;
    const a = Math.min(start, frac(e)), b = Math.max(start, frac(e));
    start = null;
    if (b - a < 0.002) return;
    state.set({ t0: String(Math.floor(a * dur)), t1: String(Math.ceil(b * dur)) });
  });
  if (doc.omitted) main.append(h("p", { class: "note" }, `${doc.omitted} quieter threads not shown`));
}

export async function source(main, s) {
  if (!s.fn) { main.append(h("p", { class: "note" }, "Pick a function (the src button in the top table).")); return; }
  const d = await get("source", Object.assign(state.filters(s), { fn: s.fn }));
  if (d.reason) { main.append(h("p", { class: "note" }, d.reason)); return; }
  main.append(h("h2", {}, h("span", { class: "fname" }, d.function), ` in ${d.dso}: ${fmtCount(d.samples)} samples`));
  if (d.source && d.source.length) {
    const hottest = d.hot_lines && d.hot_lines.length ? d.hot_lines[0].line : -1;
    main.append(h("p", { class: "note" }, d.file));
    const t = h("table", { class: "src", id: "source" });
    for (const l of d.source) {
      t.append(h("tr", { class: l.line === hottest ? "hot" : "", dataset: { line: l.line } },
        h("td", { class: "num" }, l.samples ? fmtPct(l.percent) : ""),
        h("td", { class: "bar" }, h("div")),
        h("td", { class: "num lineno" }, l.line), h("td", { class: "code" }, l.text)));
      t.lastChild.children[1].firstChild.style.width = Math.round(l.percent) + "%";
    }
    main.append(t);
  } else if (d.hot_lines && d.hot_lines.length) {
    main.append(h("p", { class: "note" }, "source file not at hand; hottest lines:"));
    for (const l of d.hot_lines.slice(0, 10)) main.append(h("div", {}, `${l.file}:${l.line}  ${fmtPct(l.percent)}`));
  }
  const asm = h("table", { class: "src asm" });
  for (const i of d.instructions) {
    asm.append(h("tr", { class: i.samples ? "sampled" : "" }, h("td", { class: "num" }, i.samples ? fmtPct(i.percent) : ""),
      h("td", { class: "num" }, i.addr.toString(16)), h("td", { class: "code" }, i.asm)));
  }
  main.append(h("details", {}, h("summary", {}, `disassembly (${d.arch}, code from ${d.code_from})`), asm));
}

export async function diff(main, s, meta) {
  const n = meta.inputs.length;
  const base = s.base || (s.f === "0" ? "" : "0");
  const mode = s.dm || "diff";
  const pick = (key, cur) => h("select", { onchange: (e) => state.set({ [key]: e.target.value }) },
    meta.inputs.map((inp, i) => h("option", { value: String(i), selected: String(i) === cur }, inp.name)));
  const modes = ["base", "new", "diff"].map((m) => h("button", { class: "mode" + (m === mode ? " on" : ""), dataset: { mode: m }, onclick: () => state.set({ dm: m }) }, m));
  main.append(h("div", { class: "toolbar" }, "base ", pick("base", base), " new ", pick("f", s.f), " ", modes,
    h("span", { class: "note" }, " red grew, blue shrank (share of each selection's total)")));
  if (n < 2 || base === "" || base === s.f) { main.append(h("p", { class: "note" }, "Serve two inputs (sonde serve -i base.data -i new.data) and pick different ones.")); return; }
  if (mode === "base") return graphView(main, await get("flame", Object.assign(state.filters(s), { f: base })), s, { role: "base" });
  if (mode === "new") return graphView(main, await get("flame", state.filters(s)), s, { role: "new" });
  const doc = await get("diff", Object.assign(state.filters(s), { base }));
  graphView(main, doc, s, { delta: doc.delta_percent, role: "diff" });
}

export async function hist(main, s) {
  const doc = await get("hist", state.filters(s));
  if (!doc.histograms.length) { main.append(h("p", { class: "note" }, "This recording carries no distributions (off-CPU time or numeric tracepoint fields).")); return; }
  for (const hg of doc.histograms) {
    const max = Math.max(1, ...hg.buckets.map((b) => b.count));
    const t = h("table", { class: "hist" });
    for (const b of hg.buckets) {
      const lab = hg.unit === "ns" ? `${fmtNS(b.lo)} – ${fmtNS(b.hi)}` : `${fmtCount(b.lo)} – ${fmtCount(b.hi)}`;
      const bar = h("div", { class: "hbar" });
      bar.style.width = Math.max(1, (100 * b.count) / max) + "%";
      t.append(h("tr", {}, h("td", { class: "num" }, lab), h("td", { class: "num" }, fmtCount(b.count)), h("td", { class: "barcell" }, bar)));
    }
    main.append(h("h3", {}, hg.name), t);
  }
}

export async function fields(main, s) {
  const doc = await get("fields", state.filters(s));
  if (!doc.tables.length) { main.append(h("p", { class: "note" }, "No tracepoint fields in this recording.")); return; }
  for (const t of doc.tables) {
    main.append(h("h3", {}, t.event, ` — ${fmtCount(t.count)} events` + (t.count > t.rows.length ? `, first ${fmtCount(t.rows.length)} shown` : "")));
    main.append(h("table", { class: "top fields" }, h("thead", {}, h("tr", {}, t.columns.map((c) => h("th", {}, c)))),
      h("tbody", {}, t.rows.map((r) => h("tr", {}, r.map((v) => h("td", {}, v)))))));
  }
}
