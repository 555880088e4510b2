// Follows Lendex's liquidation feed (GET /api/positions/unhealthy/stream, SSE)
// and prints one line per event: the owner, its account health factor and,
// for candidates, the best liquidation quote.
//
//   LENDEX_URL=http://127.0.0.1:8080 node feed.mjs [max events]
//
// The feed survives drops: every event has an id, and a reconnect that sends
// the last one (`Last-Event-ID`) gets exactly the events it missed. When the
// service cannot replay them (it restarted, another replica answered, too much
// was missed) it sends `reset` first and then every owner under water again: a
// client that keeps a list starts it over there. `resync` (this client read
// too slowly) ends the stream; reconnecting the same way resumes or resets.
const api = process.env.LENDEX_URL ?? "http://127.0.0.1:8080";
const maxEvents = Number(process.argv[2] ?? Infinity);
const RECONNECT_AFTER_MS = 500;
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

/** The stream's events as {id, event, data}, from after `lastEventId`. */
async function* events(lastEventId) {
  const headers = { accept: "text/event-stream" };
  if (lastEventId) headers["last-event-id"] = lastEventId;
  const res = await fetch(`${api}/api/positions/unhealthy/stream`, { headers });
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null;
      let event = "message";
      let data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith("id: ")) id = line.slice(4);
        else if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) yield { id, event, data: JSON.parse(data) };
      // The feed's position alone (no event): resume from there.
      else if (id) yield { id, event: null, data: null };
      // else a comment or keep-alive
    }
  }
}

let lastEventId = null;
let seen = 0;
for (;;) {
  try {
    for await (const { id, event, data } of events(lastEventId)) {
      if (event === null) {
        lastEventId = id;
        continue;
      }
      if (event === "reset") {
        // What was missed is not replayed: the snapshot follows.
        console.error(`reset ${data.reason}`);
        continue;
      }
      if (event === "resync") {
        console.error(`resync ${data.reason}`);
        break;
      }
      show(event, data);
      if (id) lastEventId = id;
      if (++seen >= maxEvents) process.exit(0);
    }
  } catch (error) {
    console.error(`feed unreachable (${error.cause?.code ?? error.message})`);
  }
  console.error(`reconnecting after ${lastEventId}`);
  await new Promise((resolve) => setTimeout(resolve, RECONNECT_AFTER_MS));
}
