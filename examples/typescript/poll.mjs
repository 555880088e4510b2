// Polls Lendex's liquidation quotes the cheap way: a long poll that sends the
// ETag of the answer it holds. While nothing changes the service holds the
// request (up to `wait_ms`) and then answers 304 with no body; the moment the
// answer changes it answers 200 with the new one. One line per new answer.
//
//   LENDEX_URL=http://127.0.0.1:8080 node poll.mjs [max answers]
const api = process.env.LENDEX_URL ?? "http://127.0.0.1:8080";
const maxAnswers = Number(process.argv[2] ?? Infinity);
const WAIT_MS = 25000;
const WAD = 10n ** 18n;

function wad(text) {
  const v = BigInt(text);
  return `${v / WAD}.${(v % WAD).toString().padStart(18, "0").slice(0, 4)}`;
}

let etag = null;
let answers = 0;
while (answers < maxAnswers) {
  let res;
  try {
    res = await fetch(`${api}/api/liquidations?limit=50&wait_ms=${WAIT_MS}`, {
      headers: etag ? { "if-none-match": etag } : {},
    });
  } catch (error) {
    console.error(`unreachable (${error.cause?.code ?? error.message})`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    continue;
  }
  if (res.status === 304) continue; // nothing new within the wait: ask again
  if (!res.ok) {
    console.error(`${res.status} ${await res.text()}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    continue;
  }
  etag = res.headers.get("etag");
  const quotes = (await res.json()).liquidations;
  answers += 1;
  const best = quotes[0];
  const tail = best ? `, best ${best.owner} profit $${wad(best.profit_value_wad)} at slot ${best.slot}` : "";
  console.log(`${quotes.length} quotes, etag ${etag}${tail}`);
}
