// Starts surfpool (an offline, LiteSVM-based Solana RPC) on a free loopback port
// and prints `RPC_URL=<url>` and `WS_URL=<url>` (its websocket, on a port of
// its own) on stdout once it answers. Runs until it is
// sent SIGINT/SIGTERM or its stdin closes (so a test that dies takes it along).
const { Surfnet } = require("@solana/surfpool-linux-x64-gnu");

const surfnet = Surfnet.startWithConfig({ offline: true, blockProductionMode: "clock", slotTimeMs: 400 });
process.stdout.write(`RPC_URL=${surfnet.rpcUrl}\nWS_URL=${surfnet.wsUrl}\n`);

// surfpool's event queue must be drained or it stalls.
const drain = setInterval(() => {
  try { surfnet.drainEvents(); } catch (_) { /* nothing to drain */ }
}, 100);

function stop() {
  clearInterval(drain);
  try { surfnet.stop(); } catch (_) { /* already stopped */ }
  process.exit(0);
}
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
if (process.env.SURFPOOL_KEEP_ALIVE !== "1") {
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
  process.stdin.resume();
}
