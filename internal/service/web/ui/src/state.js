// The UI's state lives in the URL hash, so a link shows the same view.

export const filterKeys = ["comm", "pid", "tid", "cpu", "event", "frames", "t0", "t1", "focus", "merge", "hide"];

export function read() {
  const s = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));
  s.v = s.v || "flame";
  s.f = s.f || "0";
  return s;
}

function write(s) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(s)) if (v !== undefined && v !== "") p.set(k, v);
  return "#" + p.toString();
}

// set changes the state: quiet ones (zoom, search typing) replace the
// history entry without re-rendering; others go through hashchange.
export function set(patch, quiet) {
  const s = Object.assign(read(), patch);
  const hash = write(s);
  if (quiet) history.replaceState(null, "", hash);
  else location.hash = hash;
}

// filters are the query parameters every view request carries.
export function filters(s) {
  const out = { f: s.f };
  for (const k of filterKeys) if (s[k]) out[k] = s[k];
  return out;
}
