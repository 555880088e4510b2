// Follows Lendex's liquidation feed (GET /api/positions/unhealthy/stream, SSE)
// and prints one line per event: the owner, its account health factor and,
// for candidates, the best liquidation quote.
//
//   LENDEX_URL=http://127.0.0.1:8080 node feed.mjs [max events]
//
// On `resync` (this client fell behind) re-read /api/positions/unhealthy and
// reconnect: the new stream starts with every owner under water.
const api = process.env.LENDEX_URL ?? "http://127.0.0.1:8080";
const maxEvents = Number(process.argv[2] ?? Infinity);
const WAD = 10n ** 18n;

/** A WAD decimal string as a short decimal, exactly (no float rounding). */
function wad(text) {
  const v = BigInt(text);
  const frac = (v % WAD).toString().padStart(18, "0").slice(0, 4);
  return `${v / WAD}.${frac}`;
}

function show(event, data) {
  const hf = wad(data.account_health_factor_wad);
  const q = data.liquidation;
  const quote = q
    ? ` repay ${q.repay_amount} in ${q.debt_pool}, seize ${q.seize_amount} of ${q.collateral_pool}, profit $${wad(q.profit_value_wad)}`
    : "";
  console.log(`${event} ${data.owner} hf ${hf}${quote}`);
}

const res = await fetch(`${api}/api/positions/unhealthy/stream`, { headers: { accept: "text/event-stream" } });
if (!res.ok) {
  console.error(await res.text());
  process.exit(1);
}
const decoder = new TextDecoder();
let buffer = "";
let seen = 0;
for await (const chunk of res.body) {
  buffer += decoder.decode(chunk, { stream: true });
  let end;
  while ((end = buffer.indexOf("\n\n")) >= 0) {
    const frame = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    let event = "message";
    let data = "";
    for (const line of frame.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (event === "resync") {
      console.log(`resync ${data}`);
      process.exit(0);
    }
    if (!data) continue; // comments and keep-alives
    show(event, JSON.parse(data));
    if (++seen >= maxEvents) process.exit(0);
  }
}
