// History (docs/design.md §12): the market over time (accounts under water, their
// debt and the bad debt), a wallet's page (its health as a step line on a
// log scale with the 1.0 line, time under water shaded, its events marked,
// its collateral and debt beneath, over 1 h, 24 h, 7 d or 30 d), and the
// events with filters, a page at a time.
"use strict";

const RANGES = { "1h": 3600e3, "24h": 86400e3, "7d": 7 * 86400e3, "30d": 30 * 86400e3 };
const EVENT_COLORS = { under: "#b42318", recovered: "#1a7f37", liquidated: "#6941c6", bad_debt: "#000" };
const EVENT_NAMES = { under: "went under water", recovered: "recovered", liquidated: "liquidated", bad_debt: "bad debt" };

/** The range buttons of `group`: the chosen one pressed; `pick` called on a change. */
function rangeButtons(group, chosen, pick) {
  for (const button of document.querySelectorAll(`.range[data-range="${group}"] button`)) {
    button.setAttribute("aria-pressed", String(button.dataset.range === chosen));
    button.onclick = () => pick(button.dataset.range);
  }
}

/** Every page of a history listing, oldest first (at most `pages`). */
async function allPages(path, key, pages = 4) {
  let out = [];
  let first = null;
  let cursor = null;
  for (let i = 0; i < pages; i++) {
    const res = await api("GET", cursor ? `${path}&cursor=${cursor}` : path);
    if (!res.ok) throw failure(res);
    first ??= res.data;
    out = out.concat(res.data[key]);
    cursor = res.data.next_cursor;
    if (!cursor) break;
  }
  return { first, rows: out, complete: !cursor };
}

function stateText(el, kind, text) {
  el.className = `state ${kind}`;
  el.textContent = text;
  el.hidden = !text;
}

/** Where a chart's time axis starts: at `from`, or at the first point when
 *  the history is shorter than the range asked (said in `box`, not drawn as
 *  an empty stretch that squeezes the data to one edge). */
function axisStart(box, firstAt, from, range) {
  if (firstAt <= from) {
    stateText(box, "", "");
    return from;
  }
  stateText(box, "short", `History starts at ${when(new Date(firstAt))}, within the ${range} asked: the axis starts there.`);
  return firstAt;
}

// ---- the market -------------------------------------------------------------------------
let marketChart = null;
const market = { range: "24h" };
async function loadMarket() {
  rangeButtons("market", market.range, (r) => { market.range = r; setParams({ range: r }); loadMarket(); });
  const to = Date.now();
  const from = to - RANGES[market.range];
  // Raw samples up to a day; hourly buckets (the most under water in each) beyond.
  const resolution = market.range === "1h" || market.range === "24h" ? "raw" : "1h";
  const box = $("#market-state");
  if (!marketChart) stateText(box, "loading", "Loading the market's history…");
  try {
    await tracked("market", async () => {
      const { first, rows } = await allPages(`/api/history/market?from=${from}&to=${to}&resolution=${resolution}&limit=5000`, "points", 2);
      const at = (p) => Date.parse(p.at ?? p.start);
      const points = (first.initial ? [{ ...first.initial, at: new Date(from).toISOString() }] : []).concat(rows);
      if (!points.length) {
        stateText(box, "empty", "No market sample in this range yet: the leader samples the market every history.market_interval_seconds.");
        $("#market-chart").hidden = true;
        return;
      }
      $("#market-chart").hidden = false;
      const start = axisStart(box, Math.min(...points.map(at)), from, market.range);
      const spec = {
        x: { type: "time", label: timeAxisLabel(), min: start, max: to },
        y: [
          { id: "count", label: "accounts", integer: true, format: (v) => count(Math.round(v)) },
          { id: "usd", label: "USD", format: (v) => `$${v.toLocaleString("en-US", { notation: "compact", maximumFractionDigits: 1 })}` },
        ],
        series: [
          { name: "under water", axis: "count", color: "#b42318", step: true,
            points: points.map((p) => [at(p), p.owners_under_water_max ?? p.owners_under_water]) },
          { name: "at risk", axis: "count", color: "#c4620a", step: true, dash: "2 3", points: points.map((p) => [at(p), p.owners_at_risk]) },
          { name: "debt under water", axis: "usd", color: "#3451b2", step: true, format: usdNumber,
            points: points.map((p) => [at(p), dollars(p.debt_value_wad_under_water)]) },
          { name: "bad debt", axis: "usd", color: "#000", step: true, dash: "5 3", format: usdNumber,
            points: points.map((p) => [at(p), dollars(p.bad_debt_value_wad)]) },
        ],
        summary: `The market over the last ${market.range}: accounts under water and at risk, debt under water and bad debt.`,
      };
      if (marketChart) marketChart.update(spec); else marketChart = chart($("#market-chart"), spec);
    });
  } catch (e) {
    stateText(box, "error", `The market's history cannot be read: ${e.message}. Retrying.`);
  }
  await loadLatestEvents();
}

/** An event's details: what a liquidation repaid and seized. */
function eventDetails(e) {
  if (e.kind !== "liquidated") return `slot ${count(e.slot)}`;
  return `repaid ${tokens(e.repaid, e.debt_pool)}, seized ${tokens(e.seized, e.collateral_pool)} · slot ${count(e.slot)}`;
}
function eventRow(table, e, withOwner) {
  const cells = [
    when(new Date(e.at)),
    (td) => {
      const badge = document.createElement("span");
      badge.className = `badge event ${e.kind}`;
      badge.textContent = EVENT_NAMES[e.kind] ?? e.kind;
      td.append(badge);
    },
  ];
  if (withOwner) {
    cells.push((td) => {
      addressCell(td, e.owner, { link: true, full: false });
      const history = document.createElement("a");
      history.href = `#/wallet?owner=${e.owner}`;
      history.textContent = "history";
      td.append(" ", history);
    });
  }
  cells.push(wad(e.health_factor_before_wad), wad(e.health_factor_after_wad), eventDetails(e));
  return tableRow(table, cells);
}

async function loadLatestEvents() {
  const table = $("#latest-events");
  const res = await api("GET", "/api/history/events?limit=10");
  if (!res.ok) return table.tBodies[0].replaceChildren(stateRow(table, "error", `Events cannot be read: ${failure(res).message}.`));
  const rows = res.data.events.map((e) => eventRow(table, e, true));
  fillRows(table, rows, "No event in the last 24 hours.");
}
views.set("market", (params) => { market.range = RANGES[params.get("range")] ? params.get("range") : market.range; loadMarket(); });
setInterval(() => { if (route().name === "market") loadMarket(); }, 15000);

// ---- a wallet's page ------------------------------------------------------------------------
// `position`: the position account a search named, marked in the account's table.
const walletView = { owner: "", position: "", range: "24h", health: null, values: null };
const UNDER = 1;
async function loadWallet() {
  const form = $("#wallet-form");
  form.owner.value = walletView.owner;
  rangeButtons("wallet", walletView.range, (r) => { walletView.range = r; setParams({ owner: walletView.owner, position: walletView.position, range: r }); loadWallet(); });
  const box = $("#wallet-state");
  const owner = walletView.owner;
  if (!owner) {
    showAccount("");
    stateText(box, "empty", "Enter a wallet, or open one from the feed, the events or the risk lens.");
    for (const id of ["#wallet-health", "#wallet-values"]) $(id).hidden = true;
    $("#wallet-events").tBodies[0].replaceChildren();
    return;
  }
  showAccount(owner, walletView.position);
  const to = Date.now();
  const from = to - RANGES[walletView.range];
  if (!walletView.health) stateText(box, "loading", "Loading the wallet's history…");
  try {
    await tracked("wallet", async () => {
      let read = await allPages(`/api/positions/${owner}/history?from=${from}&to=${to}&limit=5000`, "points", 2);
      let points = read.rows.map((p) => ({ at: Date.parse(p.at), hf: p.health_factor_wad, c: p.collateral_value_wad, d: p.debt_value_wad }));
      if (!read.complete) {
        // Too many points to draw one by one: hourly buckets (each bucket's last value).
        read = await allPages(`/api/positions/${owner}/history?from=${from}&to=${to}&resolution=1h&limit=1000`, "points", 1);
        points = read.rows.map((b) => ({ at: Date.parse(b.start), hf: b.last, c: b.collateral_value_wad, d: b.debt_value_wad, min: b.min, under: b.under_water }));
      }
      const initial = read.first.initial;
      if (initial) points.unshift({ at: from, hf: initial.health_factor_wad, c: initial.collateral_value_wad, d: initial.debt_value_wad });
      const events = await api("GET", `/api/history/events?owner=${owner}&from=${from}&to=${to}&limit=500`);
      if (!events.ok) throw failure(events);
      const table = $("#wallet-events");
      fillRows(table, events.data.events.map((e) => eventRow(table, e, false)), "No event in this range.");
      if (!points.length) {
        stateText(box, "empty", "No history for this wallet in this range (history starts when the leader first sees it).");
        for (const id of ["#wallet-health", "#wallet-values"]) $(id).hidden = true;
        return;
      }
      for (const id of ["#wallet-health", "#wallet-values"]) $(id).hidden = false;
      drawWallet(owner, points, events.data.events, axisStart(box, points[0].at, from, walletView.range), to);
    });
  } catch (e) {
    stateText(box, "error", `The wallet's history cannot be read: ${e.message}.`);
  }
}

function drawWallet(owner, points, events, from, to) {
  // No debt (u128 max) is drawn at the top of the axis, as "no debt".
  const finite = points.map((p) => hfNumber(p.hf)).filter((v) => Number.isFinite(v) && v > 0);
  // Fitted to the values with the 1.0 line always in view, padded by a tenth
  // of the span; linear while the values stay within a factor of 3 (real
  // swings between 0.93 and 1.0 stay visible), log beyond.
  const [lo, hi] = [Math.min(1, ...finite), Math.max(1, ...finite)];
  const log = hi / lo > 3;
  const pad = log ? (hi / lo) ** 0.1 : (hi - lo) * 0.1 || 0.05;
  const noDebt = points.some((p) => !Number.isFinite(hfNumber(p.hf)));
  const top = log ? hi * pad ** (noDebt ? 2 : 1) : hi + pad * (noDebt ? 2 : 1);
  const bottom = log ? Math.max(0.001, lo / pad) : Math.max(0, lo - pad);
  const y = (text) => { const v = hfNumber(text); return Number.isFinite(v) ? Math.max(v, bottom) : top; };
  // Time under water: from each point below 1 until the next at or above it.
  const bands = [];
  points.forEach((p, i) => {
    const under = p.under ?? hfNumber(p.hf) < UNDER;
    if (!under) return;
    const end = points.slice(i + 1).find((q) => !(q.under ?? hfNumber(q.hf) < UNDER));
    const last = bands[bands.length - 1];
    const band = { from: p.at, to: end ? end.at : to, color: "rgb(180 35 24 / .12)", label: "under water" };
    if (last && last.to >= band.from) last.to = Math.max(last.to, band.to); else bands.push(band);
  });
  const health = {
    group: "wallet",
    x: { type: "time", label: timeAxisLabel(), min: from, max: to },
    y: [{ id: "hf", label: log ? "health factor (log)" : "health factor", log, min: bottom, max: top,
      format: (v) => (v >= top / 1.01 ? "no debt" : v.toLocaleString("en-US", { maximumSignificantDigits: 3 })) }],
    series: [{ name: "health factor", axis: "hf", color: "#3451b2", step: true,
      format: (v) => (v >= top / 1.01 ? "no debt" : v.toLocaleString("en-US", { maximumFractionDigits: 4 })),
      points: points.map((p) => [p.at, y(p.hf)]) }],
    rules: [{ axis: "hf", y: 1, label: "1.0", color: "#b42318" }],
    bands,
    markers: events.map((e) => ({ x: Date.parse(e.at), label: `${EVENT_NAMES[e.kind]} at ${wad(e.health_factor_after_wad)}`, color: EVENT_COLORS[e.kind] })),
    summary: `Health factor of ${owner} over the last ${walletView.range}, on a ${log ? "log" : "linear"} scale fitted to its values with the 1.0 line; time under water shaded; ${events.length} events marked.`,
  };
  const values = {
    group: "wallet",
    x: { type: "time", label: timeAxisLabel(), min: from, max: to },
    y: [{ id: "usd", label: "USD", format: (v) => `$${v.toLocaleString("en-US", { notation: "compact", maximumFractionDigits: 1 })}` }],
    series: [
      { name: "collateral", axis: "usd", color: "#1a7f37", step: true, format: usdNumber, points: points.map((p) => [p.at, dollars(p.c)]) },
      { name: "debt", axis: "usd", color: "#c4620a", step: true, format: usdNumber, points: points.map((p) => [p.at, dollars(p.d)]) },
    ],
    height: 200,
    summary: `Collateral and debt of ${owner} in USD over the last ${walletView.range}.`,
  };
  if (walletView.health) walletView.health.update(health); else walletView.health = chart($("#wallet-health"), health);
  if (walletView.values) walletView.values.update(values); else walletView.values = chart($("#wallet-values"), values);
}

// One search box (in the header, on every tab) for a wallet, a pool or a
// position account: the service
// says which (GET /api/addresses/{address}); unreachable, a listed pool is
// still known here, and anything else opens as a wallet.
$("#wallet-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const address = form.owner.value.trim();
  if (!isPubkey(address)) return fieldError(form, "Enter a wallet, pool or position address (base58, 32 bytes).", form.owner);
  fieldError(form, null);
  const res = await api("GET", `/api/addresses/${address}`);
  const kind = res.ok ? res.data.kind : state.tokens?.has(address) ? "pool" : "wallet";
  // A pool's address opens the pools, its row found and focused.
  if (kind === "pool") {
    state.found = { pool: address, focus: true };
    location.hash = "#/pools";
    return;
  }
  // A position's opens its owner's account, the position's row marked; from
  // whatever tab the box was used on.
  const position = kind === "position" ? address : "";
  const owner = kind === "position" ? res.data.owner : address;
  Object.assign(walletView, { owner, position });
  if (route().name === "wallet") {
    setParams({ owner, position, range: walletView.range });
    loadWallet();
  } else {
    const query = new URLSearchParams(Object.entries({ owner, position, range: walletView.range }).filter(([, v]) => v));
    location.hash = `#/wallet?${query}`;
  }
});
views.set("wallet", (params) => {
  const owner = params.get("owner") ?? walletView.owner;
  walletView.owner = isPubkey(owner) ? owner : "";
  const position = params.get("position") ?? "";
  walletView.position = walletView.owner && isPubkey(position) ? position : "";
  if (RANGES[params.get("range")]) walletView.range = params.get("range");
  loadWallet();
});
setInterval(() => { if (route().name === "wallet" && walletView.owner) loadWallet(); }, 15000);

// ---- events -----------------------------------------------------------------------------------
const eventsView = { cursor: null, rows: [] };
async function loadEvents({ more = false } = {}) {
  const form = $("#events-filter");
  const table = $("#events");
  const query = new URLSearchParams({ limit: "100", from: String(Date.now() - 30 * 86400e3) });
  for (const key of ["kind", "pool", "owner"]) {
    const value = form[key].value.trim();
    if (value) query.set(key, value);
  }
  if (more && eventsView.cursor) query.set("cursor", eventsView.cursor);
  if (!more) table.tBodies[0].replaceChildren(stateRow(table, "loading", "Loading events…"));
  try {
    await tracked("events", async () => {
      const res = await api("GET", `/api/history/events?${query}`);
      if (!res.ok) throw failure(res);
      eventsView.cursor = res.data.next_cursor;
      const rows = res.data.events.map((e) => eventRow(table, e, true));
      eventsView.rows = more ? eventsView.rows.concat(rows) : rows;
      fillRows(table, eventsView.rows, "No event matches (the last 30 days).");
      $("#events-more").hidden = !eventsView.cursor;
    });
  } catch (e) {
    table.tBodies[0].replaceChildren(stateRow(table, "error", `Events cannot be read: ${e.message}.`));
  }
}
$("#events-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target;
  const owner = form.owner.value.trim();
  if (owner && !isPubkey(owner)) return fieldError(form, "Enter a wallet address (base58, 32 bytes), or nothing.", form.owner);
  fieldError(form, null);
  setParams({ kind: form.kind.value, pool: form.pool.value, owner });
  loadEvents();
});
$("#events-more").addEventListener("click", () => loadEvents({ more: true }));
views.set("events", (params) => {
  const form = $("#events-filter");
  for (const key of ["kind", "pool", "owner"]) if (params.has(key)) form[key].value = params.get(key);
  loadEvents();
});

// The section the URL names, once every section is registered.
showView();
