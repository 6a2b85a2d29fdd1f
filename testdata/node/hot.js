// A hot loop for gprof's JIT tests: work() runs, JIT-compiled by V8,
// until the process has used the CPU seconds given as the first argument
// (process.cpuUsage, so that the work holds on a loaded machine).
function work(n) {
  let s = 0;
  for (let i = 0; i < n; i++) {
    s += Math.sqrt(i) * Math.sin(i);
  }
  return s;
}

const budget = Number(process.argv[2] || 1) * 1e6; // µs
let t = 0;
while (process.cpuUsage().user + process.cpuUsage().system < budget) {
  t += work(100000);
}
console.log(t > 0);
