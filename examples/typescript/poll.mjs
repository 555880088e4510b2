// Follows Lendex's liquidation quotes by long polls: the package sends the
// ETag it holds with `wait_ms`, the service holds the request until the
// answer changes (a 304 costs no body), and each new answer is one line.
//
//   LENDEX_URL=http://127.0.0.1:8080 node poll.mjs [max answers]
import { LendexClient, formatWad } from "@lendex/client";

const client = new LendexClient(process.env.LENDEX_URL ?? "http://127.0.0.1:8080");
const maxAnswers = Number(process.argv[2] ?? Infinity);

let answers = 0;
for await (const { etag, body } of client.watch("liquidations", { limit: 50 })) {
  const best = body.liquidations[0];
  const tail = best ? `, best ${best.owner} profit $${formatWad(best.profit_value_wad)} at slot ${best.slot}` : "";
  console.log(`${body.liquidations.length} quotes, etag ${etag}${tail}`);
  if (++answers >= maxAnswers) break;
}
