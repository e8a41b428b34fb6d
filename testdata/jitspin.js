// jitspin.js: spins in spinJs (optimized by V8's JIT) for the seconds
// given, so a profile's samples land in JIT code named by node's perf map
// (--perf-basic-prof).
function spinJs(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    x += (i * 7) ^ (x >>> 3);
  }
  return x;
}

const secs = Number(process.argv[2] || 1);
const end = Date.now() + secs * 1000;
let sink = 0;
while (Date.now() < end) {
  sink += spinJs(1000000);
}
console.log(sink & 1);
