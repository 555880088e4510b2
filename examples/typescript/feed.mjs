// Follows Lendex's liquidation feed and prints one line per event: the owner,
// its account health factor and, for candidates, the best liquidation quote.
//
//   LENDEX_URL=http://127.0.0.1:8080 node feed.mjs [max events]
//
// The package's feed survives drops: it reconnects with the id of the last
// event (Last-Event-ID) and gets exactly what it missed. When the service
// cannot replay it (restarted, too much missed) it sends `reset`, then every
// owner under water again: a bot that keeps a list starts it over there.
import { LendexClient, formatWad } from "@lendex/client";

const client = new LendexClient(process.env.LENDEX_URL ?? "http://127.0.0.1:8080");
const maxEvents = Number(process.argv[2] ?? Infinity);

const feed = client.unhealthyStream({
  onReconnect: ({ lastEventId }) => console.error(`reconnecting after ${lastEventId}`),
});
let seen = 0;
for await (const { event, data } of feed) {
  if (event === "reset" || event === "resync") {
    console.error(`${event} ${data.reason}`);
    continue;
  }
  const q = data.liquidation;
  const quote = q
    ? ` repay ${q.repay_amount} in ${q.debt_pool}, seize ${q.seize_amount} of ${q.collateral_pool}, profit $${formatWad(q.profit_value_wad)}`
    : "";
  console.log(`${event} ${data.owner} hf ${formatWad(data.account_health_factor_wad)}${quote}`);
  if (++seen >= maxEvents) break;
}
