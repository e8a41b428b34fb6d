// sonde's web view: a header naming the recording, tabs for the views, a
// filter bar, and the chosen view; all of it follows the URL hash.

import { h, clear, fmtCount, fmtNS, layout, resetLayout } from "./dom.js";
import { get, isExport } from "./api.js";
import * as state from "./state.js";
import * as views from "./views.js";

const tabs = [
  ["flame", "flame graph"], ["icicle", "icicle"], ["top", "top"], ["sandwich", "sandwich"], ["time", "time"],
  ["source", "source"], ["diff", "diff"], ["hist", "histograms"], ["fields", "fields"],
];

let meta = null;

function header(s) {
  const bar = clear(document.getElementById("bar"));
  const inp = meta.inputs[Number(s.f)] || meta.inputs[0], rec = inp.recording;
  const sel = h("select", { id: "input", onchange: (e) => state.set({ f: e.target.value, z: "" }) },
    meta.inputs.map((x, i) => h("option", { value: String(i), selected: String(i) === s.f }, x.name)));
  bar.append(h("strong", {}, "sonde"), " ", sel, " ",
    h("span", { class: "meta" }, `${rec.event || "samples"}, ${fmtCount(inp.samples)} samples` +
      // Folded stacks carry no times: no duration rather than "over 0 ns".
      (rec.duration_ns ? ` over ${fmtNS(rec.duration_ns)}` : "") +
      (rec.argv ? `: ${rec.argv.join(" ")}` : rec.target ? `, ${rec.target}` : "") + (rec.hostname ? ` on ${rec.hostname}` : "") +
      (isExport ? " (export: unfiltered views only)" : "")));
}

function tabBar(s) {
  const nav = clear(document.getElementById("tabs"));
  for (const [v, label] of tabs) {
    nav.append(h("button", { class: "tab" + (v === s.v ? " on" : ""), dataset: { view: v }, onclick: () => state.set({ v }) }, label));
  }
}

function filterBar(s) {
  const box = clear(document.getElementById("filters"));
  const inp = meta.inputs[Number(s.f)] || meta.inputs[0];
  const text = (key, label, hint) => h("label", {}, label, h("input", {
    type: "text", name: key, value: s[key] || "", placeholder: hint, size: 10,
    onchange: (e) => state.set({ [key]: e.target.value.trim(), z: "" }),
  }));
  const choose = (key, label, opts) => h("label", {}, label, h("select", { name: key, onchange: (e) => state.set({ [key]: e.target.value, z: "" }) },
    opts.map(([v, t]) => h("option", { value: v, selected: (s[key] || "") === v }, t))));
  box.append(
    text("comm", "comm ", "a,b"), text("pid", "pid ", "1,2"), text("tid", "tid ", ""), text("cpu", "cpu ", "0,1"),
    choose("event", "event ", [["", "all"], ...inp.events.map((e) => [e, e])]),
    choose("frames", "frames ", [["", "all"], ["user", "user"], ["kernel", "kernel"]]),
    text("focus", "focus ", "function"), text("merge", "merge ", "f,g"),
    choose("hide", "hide library ", [["", "none"], ...inp.dsos.map((d) => [d, d])]),
  );
  if (s.t1) {
    box.append(h("span", { class: "chip", id: "timerange" }, `time ${fmtNS(Number(s.t0))} – ${fmtNS(Number(s.t1))} `,
      h("button", { onclick: () => state.set({ t0: "", t1: "" }) }, "×")));
  }
}

let seq = 0;

async function render() {
  const s = state.read();
  const my = ++seq;
  // The view's data and the recording's description load side by side:
  // the first paint waits for the slower, not for both in turn.
  const metaP = meta ? Promise.resolve(meta) : get("meta", {});
  const main = h("main", { id: "main" });
  resetLayout();
  const viewP = (async () => {
    switch (s.v) {
      case "icicle": return views.flame(main, s, metaP, true);
      case "top": return views.top(main, s);
      case "sandwich": return views.sandwich(main, s);
      case "time": return views.time(main, s);
      case "source": return views.source(main, s);
      case "diff": return views.diff(main, s, await metaP);
      case "hist": return views.hist(main, s);
      case "fields": return views.fields(main, s);
      default: return views.flame(main, s, metaP, false);
    }
  })().catch((e) => main.append(h("p", { class: "error" }, String(e.message || e))));
  meta = await metaP;
  await viewP;
  if (my !== seq) return; // a newer render owns the page
  header(s);
  tabBar(s);
  filterBar(s);
  document.getElementById("main").replaceWith(main);
  layout(); // canvases size themselves from the placed page
  document.body.dataset.ready = location.hash;
}

window.addEventListener("hashchange", render);
window.addEventListener("resize", layout);
render();
