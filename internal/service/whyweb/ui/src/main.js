// sonde why --web: the findings of one run, ranked; the chosen finding's
// stack, chain (as a graph: the waiting threads, each thread that woke the
// one before, the root), flame graph and wait lengths; every target
// thread's wall time as a bar split by state, and its state over time. Everything comes from /api/why, the document
// `why --json` writes; names are data, so they go in as text only.

import { h, clear, fmtCount, fmtNS } from "../../../web/ui/src/dom.js";

// The parts of a thread's wall time, in the order the bars show them.
const parts = [
  ["on_cpu", "on CPU"], ["irq", "interrupts"], ["runnable", "runnable"], ["throttled", "throttled"],
  ["disk", "blocked: disk"], ["net", "blocked: net"], ["lock", "blocked: lock"], ["sleep", "blocked: sleep"],
  ["fault", "blocked: fault"], ["pipe", "blocked: pipe"], ["other", "blocked: other"],
];

// pct is how the page writes a share (0–1): one decimal, as the text does.
function pct(x) {
  return (x * 100).toFixed(1) + "%";
}

// split is a budget (a thread's, or the sum) as [part, ns] in bar order;
// blocked time no reason claims is "other".
function split(b) {
  const by = b.blocked_by_reason_ns || {};
  const out = [["on_cpu", b.on_cpu_ns], ["irq", b.irq_ns], ["runnable", b.runnable_ns], ["throttled", b.throttled_ns]];
  for (const [k] of parts.slice(4)) {
    out.push([k, (by[k] || 0) + (k === "other" ? Math.max(0, b.blocked_ns - sumValues(by)) : 0)]);
  }
  return out.filter(([, v]) => v > 0);
}

function sumValues(o) {
  return Object.values(o).reduce((a, b) => a + b, 0);
}

const label = Object.fromEntries(parts);

// bar draws a budget as one stacked bar of wall_ns.
function bar(b) {
  const el = h("div", { class: "bar" });
  for (const [k, v] of split(b)) {
    const share = b.wall_ns ? v / b.wall_ns : 0;
    el.append(h("span", {
      class: "seg p-" + k, dataset: { part: k, ns: String(v) },
      style: `width:${(100 * share).toFixed(3)}%`, title: `${label[k]} ${pct(share)} (${fmtNS(v)})`,
    }));
  }
  return el;
}

function legend() {
  return h("div", { class: "legend" }, parts.map(([k, l]) => h("span", {}, h("i", { class: "seg p-" + k }), l)));
}

function header(rep) {
  const errs = Object.entries(rep.bpf_errors || {}).filter(([, v]) => v > 0);
  clear(document.getElementById("bar")).append(h("div", {}, h("strong", {}, "sonde why"), " ",
    h("span", { class: "meta" }, `${rep.target}, ${fmtNS(rep.duration_ns)}, ${rep.threads.length} threads, ` +
      `${fmtNS(rep.budget.wall_ns)} of thread time`),
    rep.cgroup ? h("div", { class: "meta" }, `cgroup ${rep.cgroup.path}: ${rep.cgroup.nr_throttled} of ${rep.cgroup.nr_periods} periods throttled (${fmtNS(rep.cgroup.throttled_ns)})`) : null,
    errs.length ? h("div", { class: "warn" }, "the kernel side lost data: " + errs.map(([k, v]) => `${k} ${fmtCount(v)}`).join(", ")) : null,
    (rep.warnings || []).map((w) => h("div", { class: "warn" }, w))));
  clear(document.getElementById("budget")).append(h("div", { class: "meta" }, "The target threads' wall time, summed:"), bar(rep.budget), legend());
}

function findings(rep, chosen) {
  const list = clear(document.getElementById("findings"));
  if (!rep.findings || rep.findings.length === 0) {
    list.append(h("li", { class: "note" }, "no findings: the target's threads were not seen"));
    return;
  }
  rep.findings.forEach((f, i) => {
    list.append(h("li", {
      class: "finding" + (i === chosen ? " on" : ""), dataset: { rank: String(i + 1), kind: f.kind },
      onclick: () => show(rep, i),
    },
    h("span", { class: "share" }, pct(f.share)),
    h("span", { class: "sharebar" }, h("span", { class: "seg p-" + partOf(f.kind), style: `width:${(100 * f.share).toFixed(3)}%` })),
    h("span", { class: "kind" }, f.kind),
    h("span", { class: "text" }, f.text)));
  });
}

// partOf is the bar part a finding's kind is drawn as.
function partOf(kind) {
  return { cpu: "on_cpu", runqueue: "runnable" }[kind] || kind;
}

function frames(fs) {
  return h("ol", { class: "frames" }, (fs || []).map((f) =>
    h("li", { class: f.kernel ? "k" : "u" }, h("span", { class: "sym" }, f.sym), f.dso ? h("span", { class: "dso" }, " " + f.dso) : null)));
}

// userLeaf is the innermost user frame of a stack, else its first frame.
function userLeaf(fs) {
  const u = (fs || []).find((f) => !f.kernel);
  return u ? u.sym : fs && fs.length ? fs[0].sym : "";
}

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const k of kids) el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return el;
}

// chainNodes are a finding's chain as graph nodes: its waiting threads,
// each link, and the root.
function chainNodes(f) {
  const comms = [...new Set((f.threads || []).map((t) => t.comm))];
  const nodes = [{
    role: "waiters", title: (f.threads || []).length > 1 ? `${f.threads.length} threads (${comms.join(", ")})` : comms.length ? `${comms[0]} (tid ${f.threads[0].tid})` : "the target",
    sub: `${f.kind}${f.call ? " in " + f.call : ""}${f.function ? " under " + f.function : ""}`, tid: "",
  }];
  for (const l of f.chain || []) {
    nodes.push({
      role: "link", title: `${l.comm} (tid ${l.tid})`, tid: String(l.tid), comm: l.comm, share: l.share,
      sub: l.interrupt ? `from an interrupt (${l.interrupt})` : userLeaf(l.frames) ? `woke it in ${userLeaf(l.frames)}` : "woke it",
      sub2: l.wait_ns ? `had waited ${fmtNS(l.wait_ns)} (${l.reason}) in ${userLeaf(l.wait_frames)}` : l.reason,
    });
  }
  if (f.root) nodes.push({ role: "root", title: `root: ${f.root}`, sub: "", tid: "" });
  return nodes;
}

// chainGraph draws the nodes left to right; an edge says who woke whom
// and what share of the waits it ended.
function chainGraph(f) {
  const nodes = chainNodes(f);
  const W = 230, H = 64, GAP = 104, PAD = 8;
  const svg = s("svg", { class: "chain", width: nodes.length * (W + GAP) - GAP + 2 * PAD, height: H + 2 * PAD + 14, role: "img" });
  svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
    s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#555" }))));
  nodes.forEach((n, i) => {
    const x = PAD + i * (W + GAP), y = PAD + 14;
    const g = s("g", { class: "node " + n.role, "data-role": n.role, "data-tid": n.tid, "data-comm": n.comm || "" },
      s("title", {}, [n.title, n.sub, n.sub2].filter(Boolean).join("\n")),
      s("rect", { x, y, width: W, height: H, rx: 6 }),
      s("text", { x: x + 8, y: y + 18, class: "title" }, clip(n.title, 32)),
      s("text", { x: x + 8, y: y + 36 }, clip(n.sub || "", 36)),
      s("text", { x: x + 8, y: y + 53 }, clip(n.sub2 || "", 36)));
    svg.append(g);
    if (i > 0) {
      const x0 = x - GAP, y0 = y + H / 2;
      svg.append(s("line", { x1: x0 + 2, y1: y0, x2: x - 2, y2: y0, class: "edge", "marker-end": "url(#arrow)" }));
      const what = n.role === "root" ? "ends at" : `woken by, ${pct(n.share)}`;
      svg.append(s("text", { x: x0 + 4, y: y0 - 6, class: "edgelabel" }, what));
    }
  });
  return h("div", { class: "chainwrap" }, svg);
}

function clip(t, n) {
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

function latency(f) {
  const bs = f.latency || [];
  if (bs.length === 0) return null;
  const most = Math.max(...bs.map((b) => b.count));
  return h("table", { class: "hist" }, bs.map((b) => h("tr", {},
    h("td", { class: "num" }, `${fmtNS(b.low_ns)} – ${fmtNS(b.high_ns)}`),
    h("td", { class: "num" }, fmtCount(b.count)),
    h("td", {}, h("span", { class: "histbar", style: `width:${(100 * b.count / most).toFixed(1)}%` })))));
}

function show(rep, i) {
  findings(rep, i);
  const f = rep.findings[i];
  const d = clear(document.getElementById("detail"));
  d.dataset.rank = String(i + 1);
  // h flattens the optional parts (arrays, nulls); append would print them.
  d.append(h("div", {}, h("h3", {}, `Finding ${i + 1}: ${pct(f.share)} (${fmtNS(f.duration_ns)}${f.count ? `, ${fmtCount(f.count)} waits` : ""})`),
    h("p", { class: "text" }, f.text),
    f.chain && f.chain.length || f.root ? [h("h4", {}, "Chain: who ended the waits, to the root"), chainGraph(f)] : null,
    f.frames && f.frames.length ? [h("h4", {}, "Stack (leaf first)"), frames(f.frames)] : null,
    (f.chain || []).map((l, j) => h("details", { class: "link" }, h("summary", {}, `link ${j + 1}: ${l.comm} (tid ${l.tid}), ${pct(l.share)} of these waits`),
      h("div", { class: "meta" }, "woke it from:"), frames(l.frames),
      l.wait_frames ? [h("div", { class: "meta" }, `having waited (${l.reason}) in:`), frames(l.wait_frames)] : null)),
    latency(f) ? [h("h4", {}, "Wait lengths"), latency(f)] : null,
    h("h4", {}, "Flame graph: its stacks under each thread's name, as wide as the time charged to them"),
    flame(i + 1)));
}

// flame is finding n's flame graph, drawn by the server from the same
// report (an interactive SVG: click to zoom, search), sized to its height
// once drawn.
function flame(n) {
  return h("iframe", {
    class: "flame", src: `api/flame/${n}.svg`, title: `flame graph of finding ${n}`, dataset: { rank: String(n) },
    onload: (e) => {
      const d = e.target.contentDocument;
      const svg = d && d.documentElement;
      if (svg && svg.getAttribute("height")) e.target.style.height = `${Number(svg.getAttribute("height")) + 4}px`;
      e.target.dataset.loaded = "1";
    },
  });
}

// The states of the timeline, in the order of its slices' stacks.
const states = [["on_cpu", "on CPU", "p-on_cpu"], ["runnable", "runnable", "p-runnable"], ["throttled", "throttled", "p-throttled"], ["blocked", "blocked", "p-blocked"]];

// timeline draws each thread's row of slices, each slice a column split
// by state, as wide as its share of the window.
function timeline(rep) {
  const box = clear(document.getElementById("timeline"));
  const tl = rep.timeline;
  if (!tl || !tl.threads || tl.threads.length === 0) {
    box.append(h("p", { class: "note" }, "no timeline in this report"));
    return;
  }
  const edges = tl.edges_ns, total = edges[edges.length - 1] || 1;
  const rows = tl.threads.map((t) => h("tr", { dataset: { tid: String(t.tid), comm: t.comm } },
    h("td", { class: "num" }, String(t.tid)), h("td", {}, t.comm),
    h("td", { class: "tlcell" }, h("div", { class: "tl" }, edges.slice(1).map((end, i) => {
      const len = end - edges[i];
      const vals = states.map(([k]) => t[k + "_ns"][i]);
      const lived = vals.reduce((a, b) => a + b, 0);
      return h("span", {
        class: "slice", style: `width:${(100 * len / total).toFixed(4)}%`,
        title: `${fmtNS(edges[i])} – ${fmtNS(end)}: ` + states.map(([, l], j) => `${l} ${pct(lived ? vals[j] / lived : 0)}`).join(", "),
      }, states.map(([k, , c], j) => vals[j] > 0 ? h("span", {
        class: "seg " + c, dataset: { state: k, ns: String(vals[j]) }, style: `height:${(100 * vals[j] / len).toFixed(3)}%`,
      }) : null));
    })))));
  box.append(h("div", { class: "meta" }, `${edges.length - 1} slices of ${fmtNS(total / (edges.length - 1))} on average, from 0 to ${fmtNS(total)}`),
    h("table", { class: "threads timeline" },
      h("thead", {}, h("tr", {}, h("th", {}, "tid"), h("th", {}, "comm"), h("th", {}, "state over time: on CPU, runnable, throttled, blocked"))),
      h("tbody", {}, rows)),
    h("div", { class: "legend" }, states.map(([, l, c]) => h("span", {}, h("i", { class: "seg " + c }), l))));
}

// processes lists a system-wide run's busiest processes with their budgets.
function processes(rep) {
  const box = clear(document.getElementById("processes"));
  if (!rep.processes || rep.processes.length === 0) return;
  const top = rep.processes.slice(0, 20);
  box.append(h("h2", {}, `Processes, by time on or waiting for a CPU (${top.length} of ${rep.processes.length})`),
    h("table", { class: "threads processes" },
      h("thead", {}, h("tr", {}, h("th", {}, "pid"), h("th", {}, "comm"), h("th", {}, "threads"), h("th", {}, "wall"), h("th", {}, "on CPU, runnable, throttled, blocked by reason"))),
      h("tbody", {}, top.map((p) => h("tr", { dataset: { pid: String(p.pid) } },
        h("td", { class: "num" }, String(p.pid)), h("td", {}, p.comm), h("td", { class: "num" }, String(p.nr_threads)),
        h("td", { class: "num" }, fmtNS(p.wall_ns)), h("td", { class: "barcell" }, bar(p)))))));
}

function threads(rep) {
  const box = clear(document.getElementById("threads"));
  const rows = rep.threads.map((t) => h("tr", { dataset: { tid: String(t.tid) } },
    h("td", { class: "num" }, String(t.tid)), h("td", {}, t.comm + (t.exited ? " (exited)" : "")),
    h("td", { class: "num" }, fmtNS(t.wall_ns)), h("td", { class: "barcell" }, bar(t))));
  box.append(h("table", { class: "threads" },
    h("thead", {}, h("tr", {}, h("th", {}, "tid"), h("th", {}, "comm"), h("th", {}, "wall"), h("th", {}, "on CPU, runnable, throttled, blocked by reason"))),
    h("tbody", {}, rows)), legend());
}

async function main() {
  let rep;
  try {
    const res = await fetch("api/why");
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
    rep = await res.json();
  } catch (e) {
    document.getElementById("bar").append(h("div", { class: "error" }, "could not read the findings: " + e.message));
    return;
  }
  header(rep);
  processes(rep);
  threads(rep);
  timeline(rep);
  findings(rep, 0);
  if (rep.findings && rep.findings.length) show(rep, 0);
  document.body.dataset.ready = "1";
}

main().catch((e) => {
  document.getElementById("bar").append(h("div", { class: "error" }, "the page failed: " + e.message));
  throw e;
});
