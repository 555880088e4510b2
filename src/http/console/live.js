// How fresh each figure on the page is, said everywhere: every source (the
// health check, the pools, the overview's reads, the feed, a history read)
// records when it last answered and since when it fails; each `.age` counts
// up in the browser, and turns to "stale since …" when its source stops
// answering. The link to the service is checked every 3 s with a 4 s
// deadline, so a paused or unreachable service shows within 10 s, in the
// header and in a banner. The overview (the figures over the tabs) lives here.
"use strict";

/** name → { at: Date of the last answer, failedSince: Date, error, every: ms expected between answers } */
const sources = new Map();

function source(name, every = 5000) {
  if (!sources.has(name)) sources.set(name, { at: null, failedSince: null, error: null, every });
  return sources.get(name);
}
function answered(name) {
  const s = source(name);
  s.at = new Date();
  s.failedSince = null;
  s.error = null;
  tickAges();
}
function unanswered(name, error) {
  const s = source(name);
  s.failedSince ??= new Date();
  s.error = error;
  tickAges();
}
/** Runs `load` and records its outcome under `name`; rethrows a failure. */
async function tracked(name, load) {
  try {
    const value = await load();
    answered(name);
    return value;
  } catch (e) {
    unanswered(name, e.message);
    throw e;
  }
}
/** Whether what `name` shows is stale: it fails, or has not answered in twice its period. */
function isStale(name) {
  const s = source(name);
  if (link.down) return s.at !== null;
  if (s.failedSince) return true;
  return s.at !== null && Date.now() - s.at > 2 * s.every + 5000;
}
function ageText(name) {
  const s = source(name);
  if (s.at === null) return s.failedSince ? `unavailable: ${s.error}` : "loading…";
  const seconds = (Date.now() - s.at) / 1000;
  if (isStale(name)) {
    const since = link.down ? link.since : s.failedSince ?? s.at;
    return `stale since ${clock(since)} · as of ${ago(seconds)}`;
  }
  return `updated ${ago(seconds)}`;
}
function tickAges() {
  for (const el of document.querySelectorAll(".age[data-age]")) {
    el.textContent = ageText(el.dataset.age);
    el.classList.toggle("stale", isStale(el.dataset.age));
    // Relative on the page, absolute on hover.
    const at = source(el.dataset.age).at;
    el.title = at ? `last answer ${when(at)}` : "";
  }
  const overview = $("#overview-age");
  overview.textContent = `Overview ${ageText("overview")}`;
  overview.classList.toggle("stale", isStale("overview"));
  $("#overview").classList.toggle("stale", isStale("overview"));
  if (typeof tickFeed === "function") tickFeed();
}
setInterval(tickAges, 1000);

// ---- the link to the service -----------------------------------------------------------
const link = { down: false, since: null, health: null };
async function checkLink() {
  const res = await api("GET", "/api/health", null, {}, 4000);
  const badge = $("#link-state");
  const banner = $("#banner");
  if (!res.data || !res.data.checks) {
    // Down since its last good answer, not since this failed check.
    if (!link.down) Object.assign(link, { down: true, since: source("health").at ?? new Date() });
    badge.textContent = `unreachable since ${clock(link.since)}`;
    badge.className = "badge stale";
    banner.textContent = `The service cannot be reached since ${clock(link.since)} (${res.data?.error ?? "no answer"}). ` +
      "Every figure below is as of its last answer; retrying every 3 s.";
    banner.className = "error";
    banner.hidden = false;
    tickAges();
    return;
  }
  link.down = false;
  link.health = res.data;
  answered("health");
  const checks = res.data.checks;
  const failing = ["database", "rpc", "sync", "cache"].filter((c) => checks[c] && checks[c].ok === false);
  if (res.data.status === "draining") {
    badge.textContent = "draining";
    badge.className = "badge stale";
    banner.textContent = "This replica is stopping; behind a load balancer the page's next requests go to another one.";
    banner.className = "warn";
    banner.hidden = false;
  } else if (failing.length) {
    badge.textContent = `degraded: ${failing.join(", ")}`;
    badge.className = "badge stale";
    banner.textContent = `The service is degraded (${failing.join(", ")} failing): what it serves from memory goes on, but may fall behind the chain.`;
    banner.className = "warn";
    banner.hidden = false;
  } else {
    badge.textContent = "live";
    badge.className = "badge live";
    banner.hidden = true;
  }
  $("#cluster").textContent = checks.sync.cluster;
  if (typeof showChainState === "function") showChainState(checks.sync);
  // The lag is the service's own figure (lendex_sync_lag_slots), not the tip
  // minus the last refresh's slot: the live source keeps the index at the tip
  // between refreshes, so that difference only counts the seconds since one.
  const stream = checks.sync.stream;
  setCard("chain", checks.rpc.ok ? count(checks.rpc.slot) : "—",
    checks.sync.role === "leader" && checks.sync.lagSlots !== null && checks.sync.lagSlots !== undefined
      ? `lag ${count(checks.sync.lagSlots)} ${checks.sync.lagSlots === 1 ? "slot" : "slots"} · ${stream.source}${stream.connected ? "" : " down"}`
      : checks.sync.role,
    String(checks.rpc.slot));
  tickAges();
}
checkLink();
setInterval(checkLink, 3000);

// ---- the overview ------------------------------------------------------------------------
/** A card's figure as shown, its exact value (the API's, for copying and
 *  checking) and a note under it. */
function setCard(name, value, note, exact = "") {
  const dd = document.querySelector(`[data-card="${name}"] dd`);
  dd.dataset.value = exact;
  const figure = document.createElement("span");
  figure.className = "figure";
  figure.append(value);
  // The trend stays until drawTrends redraws it: the overview's other reads
  // come between, and a card must not lose its movement meanwhile.
  const trend = dd.querySelector(".trend");
  dd.replaceChildren(figure);
  if (note) {
    const small = document.createElement("small");
    small.textContent = note;
    dd.append(small);
  }
  if (trend) dd.append(trend);
}
/** The overview: the pools' totals, what is under water now (a shock of 0),
 *  the accounts at risk, every 5 s. Each card's title says where it comes from. */
async function loadOverview() {
  try {
    await tracked("overview", async () => {
      const status = await loadTokens();
      const sum = (field) => status.pools.reduce((acc, p) => acc + BigInt(p[field]), 0n).toString();
      setCard("deposits", usd(sum("deposits_value_wad"), { compact: true }), `${status.pools.length} pools`, sum("deposits_value_wad"));
      setCard("borrows", usd(sum("borrows_value_wad"), { compact: true }), "", sum("borrows_value_wad"));
      const priced = status.pools.find((p) => p.oracle_price !== null);
      if (priced) {
        const res = await api("GET", `/api/risk/shock?shock=${priced.pool_address}:0&limit=1`);
        if (!res.ok) throw failure(res);
        const book = res.data;
        setCard("under", count(book.liquidatable_before), `of ${count(book.owners)} accounts`, String(book.liquidatable_before));
        setCard("debt-under", usd(book.debt_value_wad_liquidatable_after, { compact: true }), "", book.debt_value_wad_liquidatable_after);
        setCard("bad-debt", usd(book.bad_debt_value_wad_after, { compact: true }), "", book.bad_debt_value_wad_after);
        setCard("profit", usd(book.profit_value_wad_after, { compact: true }), "", book.profit_value_wad_after);
      } else {
        for (const card of ["under", "debt-under", "bad-debt", "profit"]) setCard(card, card === "under" ? "0" : "$0.00", "no priced pool", "0");
      }
      const risk = await api("GET", "/api/positions/at-risk?below=1100000000000000000&limit=200");
      if (!risk.ok) throw failure(risk);
      const n = risk.data.accounts.length;
      setCard("at-risk", n >= 200 ? "200+" : count(n), "", String(n));
      // Bad debt in the colour of trouble, from the first cent.
      $('[data-card="bad-debt"]').classList.toggle("trouble", BigInt($('[data-card="bad-debt"] dd').dataset.value || "0") > 0n);
      drawTrends();
    });
  } catch (_) {
    // Shown by the overview's age ("stale since …"); the cards keep their last values.
  }
}
for (const [card, from] of [
  ["deposits", "sum of every pool's deposits at its oracle price (GET /api/pools/status)"],
  ["borrows", "sum of every pool's borrows at its oracle price (GET /api/pools/status)"],
  ["under", "accounts below 1.0 now (GET /api/risk/shock, a change of 0)"],
  ["debt-under", "the debt of the accounts below 1.0 (GET /api/risk/shock)"],
  ["at-risk", "accounts at or above 1.0 and below 1.1 (GET /api/positions/at-risk)"],
  ["bad-debt", "debt no collateral covers, summed over accounts (GET /api/risk/shock)"],
  ["profit", "what liquidating every account under water pays, after the protocol's fee (GET /api/risk/shock)"],
  ["chain", "the RPC's slot; the index's lag behind the tip (lendex_sync_lag_slots) and its live source (GET /api/health)"],
]) document.querySelector(`[data-card="${card}"]`).title = from;
loadOverview();

// ---- the overview's movement ----------------------------------------------------------
/** The overview's history: how each card read over the last 24 h (GET
 *  /api/history/market, read once a minute). `of` reads a sample or a bucket;
 *  null where it was recorded before the market recorded that figure. */
const wadOrNull = (v) => (v === null || v === undefined ? null : dollars(v));
const TRENDS = {
  deposits: { of: (b) => wadOrNull(b.deposits_value_wad), now: dollars, say: usdCompactNumber },
  borrows: { of: (b) => wadOrNull(b.borrows_value_wad), now: dollars, say: usdCompactNumber },
  under: { of: (b) => b.owners_under_water_max ?? b.owners_under_water, now: Number, say: (d) => count(d) },
  "at-risk": { of: (b) => b.owners_at_risk, now: Number, say: (d) => count(d) },
  "debt-under": { of: (b) => dollars(b.debt_value_wad_under_water), now: dollars, say: usdNumber },
  "bad-debt": { of: (b) => dollars(b.bad_debt_value_wad), now: dollars, say: usdNumber },
};
let trend = null;
async function loadTrend() {
  const to = Date.now();
  const range = `from=${to - 86400e3}&to=${to}`;
  // Hourly buckets draw the sparkline; the change is measured from the
  // day's first sample (or the last one before the day, when history is
  // older): a bucket holds its last sample, so with less than a day of
  // history the first bucket's value may be seconds old.
  const [hours, first] = await Promise.all([
    api("GET", `/api/history/market?${range}&resolution=1h&limit=48`),
    api("GET", `/api/history/market?${range}&limit=1`),
  ]);
  if (!hours.ok || !first.ok) return;
  const base = first.data.initial ? { at: to - 86400e3, point: first.data.initial }
    : first.data.points[0] ? { at: Date.parse(first.data.points[0].at), point: first.data.points[0] } : null;
  trend = { base, buckets: hours.data.points };
  drawTrends();
}
/** A span of time as a trend says it: minutes under an hour, else hours. */
function span(ms) {
  const minutes = Math.max(1, Math.round(ms / 60000));
  return minutes < 60 ? `${minutes} min` : `${Math.min(24, Math.round(minutes / 60))} h`;
}
/** Each card's change since the day's first value it has (a figure recorded
 *  later than the day's first sample starts at the first bucket holding it)
 *  and a sparkline through the hours, under its value. */
function drawTrends() {
  for (const [card, t] of Object.entries(TRENDS)) {
    const dd = $(`[data-card="${card}"] dd`);
    dd.querySelector(".trend")?.remove();
    if (!trend?.base || dd.dataset.value === undefined || dd.dataset.value === "") continue;
    const known = [[trend.base.at, t.of(trend.base.point)], ...trend.buckets.map((b) => [Date.parse(b.start), t.of(b)])]
      .filter(([, v]) => v !== null);
    if (known.length < 1) continue;
    const values = known.map(([, v]) => v).concat(t.now(dd.dataset.value));
    const change = values[values.length - 1] - values[0];
    const el = document.createElement("small");
    el.className = `trend ${change > 0 ? "up" : change < 0 ? "down" : ""}`;
    // Two pieces that never break inside: the change, and its span.
    const figure = document.createElement("span");
    figure.className = "figure";
    figure.textContent = `${change > 0 ? "+" : change < 0 ? "−" : "±"}${t.say(Math.abs(change))}`;
    const over = document.createElement("span");
    over.className = "figure";
    over.textContent = `in ${span(Date.now() - known[0][0])}`;
    el.append(figure, " ", over);
    el.title = `since ${when(new Date(known[0][0]))}`;
    const [lo, hi] = [Math.min(...values), Math.max(...values)];
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 60 14");
    svg.setAttribute("aria-hidden", "true");
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", values.map((v, i) => `${(i * 60) / Math.max(values.length - 1, 1)},${13 - ((v - lo) / (hi - lo || 1)) * 12}`).join(" "));
    svg.append(line);
    el.prepend(svg, " ");
    dd.append(el);
  }
}
loadTrend();
setInterval(loadTrend, 60000);
setInterval(loadOverview, 5000);
