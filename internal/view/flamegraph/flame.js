(function () {
  "use strict";
  // FG_DATA holds the drawn tree in pre-order as parallel arrays: n (name,
  // an index into N, the distinct names), k (kind: 0 user, 1 kernel, 2 JIT,
  // 3 other), d (depth), s (start, in samples from the left edge), v (value,
  // samples in the frame and below; frames too narrow to draw were left out
  // but their samples are still in their callers' values).
  var D = FG_DATA, C = FG_CFG;
  if (D.N) D.n = D.n.map(function (x) { return D.N[x]; });
  var NS = "http://www.w3.org/2000/svg";
  var svg = document.getElementById("flamegraph");
  var framesG = document.getElementById("frames");
  var details = document.getElementById("details");
  var matchedT = document.getElementById("matched");
  var resetB = document.getElementById("reset");
  var searchB = document.getElementById("search");
  var N = D.n.length, W = C.width, pad = 10, fh = 17, top = 56;
  var maxDepth = 0, i;
  for (i = 0; i < N; i++) if (D.d[i] > maxDepth) maxDepth = D.d[i];
  // The bottom margin holds the tooltip line and, when frames were left
  // out, the line that says so.
  var bottom = C.pruned ? 50 : 36;
  var H = top + (maxDepth + 1) * fh + bottom;
  svg.setAttribute("height", H);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  details.setAttribute("y", H - bottom + 24);
  matchedT.setAttribute("y", H - bottom + 24);
  document.getElementById("pruned").setAttribute("y", H - 8);
  var zoomId = 0, matched = new Uint8Array(N), searchTerm = "";

  function hash(s) {
    var h = 0;
    for (var j = 0; j < s.length; j++) h = (h * 31 + s.charCodeAt(j)) >>> 0;
    return (h % 1000) / 1000;
  }
  var maxDelta = 0;
  if (C.diff && D.dl) for (i = 0; i < N; i++) maxDelta = Math.max(maxDelta, Math.abs(D.dl[i]));
  function color(j) {
    if (matched[j]) return "rgb(230,0,230)";
    if (C.diff && D.dl) {
      // Red for growth, blue for shrinkage, stronger with the change.
      var d = D.dl[j], f = maxDelta > 0 ? Math.min(1, Math.abs(d) / maxDelta) : 0;
      var c = Math.round(220 - 160 * f);
      if (Math.abs(d) < 0.01) return "rgb(200,200,200)";
      return d > 0 ? "rgb(235," + c + "," + c + ")" : "rgb(" + c + "," + c + ",235)";
    }
    var v = hash(D.n[j]), w = hash(D.n[j] + "#");
    switch (D.k[j]) {
      case 1: return "rgb(" + Math.round(40 + 60 * v) + "," + Math.round(110 + 70 * w) + "," + Math.round(200 + 55 * v) + ")";
      case 2: return "rgb(" + Math.round(40 + 60 * v) + "," + Math.round(160 + 60 * w) + "," + Math.round(60 + 40 * v) + ")";
      case 3: return "rgb(" + Math.round(160 + 40 * v) + "," + Math.round(160 + 40 * v) + "," + Math.round(170 + 40 * v) + ")";
    }
    return "rgb(" + Math.round(205 + 50 * w) + "," + Math.round(60 + 170 * v) + "," + Math.round(30 * w) + ")";
  }
  function pct(v) { return (100 * v / D.v[0]).toFixed(2) + "%"; }
  function label(j) {
    var s = D.n[j] + " (" + D.v[j].toLocaleString() + " " + C.unit + ", " + pct(D.v[j]);
    if (C.diff && D.dl) s += ", " + (D.dl[j] >= 0 ? "+" : "") + D.dl[j].toFixed(2) + " points";
    return s + ")";
  }

  function render() {
    while (framesG.firstChild) framesG.removeChild(framesG.firstChild);
    var zs = D.s[zoomId], zv = D.v[zoomId], zd = D.d[zoomId];
    var scale = (W - 2 * pad) / zv;
    for (var j = 0; j < N; j++) {
      var s = D.s[j], v = D.v[j], d = D.d[j];
      var anc = d < zd && s <= zs && s + v >= zs + zv;
      var sub = d >= zd && s >= zs && s + v <= zs + zv;
      if (!anc && !sub) continue;
      var x = anc ? pad : pad + (s - zs) * scale;
      var w = anc ? W - 2 * pad : v * scale;
      if (w < 0.5) continue;
      var y = C.inverted ? top + d * fh : H - bottom - (d + 1) * fh;
      var g = document.createElementNS(NS, "g");
      g.setAttribute("class", anc ? "frame dim" : "frame");
      g.setAttribute("data-i", j);
      g.setAttribute("data-name", D.n[j]);
      var t = document.createElementNS(NS, "title");
      t.textContent = label(j);
      g.appendChild(t);
      var r = document.createElementNS(NS, "rect");
      r.setAttribute("x", x.toFixed(2));
      r.setAttribute("y", y);
      r.setAttribute("width", w.toFixed(2));
      r.setAttribute("height", fh - 1);
      r.setAttribute("fill", color(j));
      g.appendChild(r);
      var chars = Math.floor((w - 6) / 7);
      if (chars >= 3) {
        var tx = document.createElementNS(NS, "text");
        tx.setAttribute("x", (x + 3).toFixed(2));
        tx.setAttribute("y", y + fh - 5);
        tx.textContent = D.n[j].length <= chars ? D.n[j] : D.n[j].substring(0, chars - 2) + "..";
        g.appendChild(tx);
      }
      framesG.appendChild(g);
    }
    svg.setAttribute("data-zoom", D.n[zoomId]);
    resetB.setAttribute("visibility", zoomId === 0 ? "hidden" : "visible");
  }

  function zoom(j) { zoomId = j; render(); }
  function zoomName(name) {
    var best = -1;
    for (var j = 0; j < N; j++) if (D.n[j] === name && (best < 0 || D.v[j] > D.v[best])) best = j;
    if (best >= 0) zoom(best);
    return best;
  }
  function search(term) {
    searchTerm = term || "";
    matched = new Uint8Array(N);
    if (!searchTerm) {
      matchedT.textContent = "";
      render();
      return 0;
    }
    var re;
    try { re = new RegExp(searchTerm); } catch (e) { matchedT.textContent = "bad regex"; return 0; }
    var iv = [];
    for (var j = 1; j < N; j++) {
      if (re.test(D.n[j])) { matched[j] = 1; iv.push([D.s[j], D.s[j] + D.v[j]]); }
    }
    // Nested matches (recursion, a caller and its callee) count once.
    iv.sort(function (a, b) { return a[0] - b[0]; });
    var total = 0, cs = -1, ce = -1;
    for (var q = 0; q < iv.length; q++) {
      if (iv[q][0] >= ce) { total += ce - cs; cs = iv[q][0]; ce = iv[q][1]; }
      else if (iv[q][1] > ce) ce = iv[q][1];
    }
    total += ce - cs;
    var p = 100 * total / D.v[0];
    matchedT.textContent = "Matched: " + p.toFixed(1) + "%";
    matchedT.setAttribute("data-percent", p.toFixed(3));
    render();
    return p;
  }

  framesG.addEventListener("click", function (e) {
    var g = e.target.closest ? e.target.closest("g.frame") : e.target.parentNode;
    if (g && g.getAttribute("data-i") !== null) zoom(+g.getAttribute("data-i"));
  });
  framesG.addEventListener("mouseover", function (e) {
    var g = e.target.closest ? e.target.closest("g.frame") : e.target.parentNode;
    if (g && g.getAttribute("data-i") !== null) details.textContent = label(+g.getAttribute("data-i"));
  });
  framesG.addEventListener("mouseout", function () { details.textContent = " "; });
  resetB.addEventListener("click", function () { zoom(0); });
  searchB.addEventListener("click", function () {
    var term = prompt("Search frames (regular expression):", searchTerm);
    if (term !== null) search(term);
  });
  window.addEventListener("keydown", function (e) {
    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
      e.preventDefault();
      var term = prompt("Search frames (regular expression):", searchTerm);
      if (term !== null) search(term);
    } else if (e.keyCode === 27) {
      zoom(0);
    }
  });
  window.FG = { zoom: zoom, zoomName: zoomName, search: search };

  render();
  // Links can carry state: ?x=FRAME zooms, ?s=REGEX searches.
  var params = new URLSearchParams(window.location.search || window.location.hash.replace(/^#/, "?"));
  if (params.get("x")) zoomName(params.get("x"));
  if (params.get("s")) search(params.get("s"));
})();
