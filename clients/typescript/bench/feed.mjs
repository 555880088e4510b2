// Follows the liquidation feed and reports, per burst of events (a price
// move), the CPU this process spent and the time from the burst's first event
// to its last: with the package's iterator, or reading the raw stream with
// fetch and parsing it by hand (decode, split frames, JSON.parse: the least a
// reader does), the baseline. scripts/load-test-clients runs both at once.
//
//   node bench/feed.mjs <package|raw> <api> <events per burst> <bursts>
import { LendexClient } from "../src/index.js";

const [mode, api, perBurst, bursts] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
const QUIET_MS = 1000;

/** The same from fetch, by hand. */
async function* viaRaw() {
  const response = await fetch(`${api}/api/positions/unhealthy/stream`);
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = null;
      let data = null;
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data = JSON.parse(line.slice(6));
      }
      if (event) yield { event, data };
    }
  }
}

const events = mode === "package" ? new LendexClient(api).unhealthyStream() : viaRaw();
// The snapshot first: everything until the feed is quiet.
let lastAt = performance.now();
let quiet = setInterval(() => {
  if (performance.now() - lastAt > QUIET_MS) {
    clearInterval(quiet);
    quiet = null;
    console.log("ready");
  }
}, 100);
let inBurst = 0;
let started = null;
let cpu = null;
let done = 0;
const results = [];
let check = 0;
for await (const { data } of events) {
  lastAt = performance.now();
  if (quiet !== null) continue;
  if (inBurst === 0) {
    started = performance.now();
    cpu = process.cpuUsage();
  }
  check += data.owner.length; // touch the parsed value, as a reader would
  if (++inBurst === perBurst) {
    const used = process.cpuUsage(cpu);
    results.push({ cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - started });
    inBurst = 0;
    if (++done === bursts) break;
  }
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `${mode}: ${bursts} bursts of ${perBurst} events, median cpu ${median(results.map((r) => r.cpuMs)).toFixed(1)} ms, ` +
    `median first-to-last ${median(results.map((r) => r.wallMs)).toFixed(1)} ms (${check > 0 ? "read" : "empty"})`,
);
process.exit(0);
