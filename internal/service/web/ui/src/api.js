// Answers from the server, or from the data an export inlined.

const exported = (() => {
  const el = document.getElementById("sonde-export");
  return el ? JSON.parse(el.textContent) : null;
})();

export const isExport = exported !== null;

// key is how an export files an answer (internal/service/web/export.go builds the
// same): the view and its query, keys sorted, values unescaped.
function key(view, params) {
  const ks = Object.keys(params).sort();
  return view + (ks.length ? "?" + ks.map((k) => k + "=" + params[k]).join("&") : "");
}

const cache = new Map();

export async function get(view, params) {
  const p = {};
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== "") p[k] = String(v);
  const k = key(view, p);
  if (cache.has(k)) return cache.get(k);
  let v;
  if (exported) {
    if (!(k in exported)) throw new Error("this export holds the unfiltered views only: run sonde serve for " + view + " with these settings");
    v = exported[k];
  } else {
    const r = await fetch("api/" + view + "?" + new URLSearchParams(p).toString());
    if (!r.ok) throw new Error((await r.text()).trim() || r.statusText);
    v = await r.json();
  }
  if (cache.size > 64) cache.delete(cache.keys().next().value);
  cache.set(k, v);
  return v;
}
