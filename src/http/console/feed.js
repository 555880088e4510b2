// The live liquidation feed: every owner under water with its quote (repay
// and seize in tokens and USD, profit), an oracle-stale badge; sorted by
// health factor, profit or repay value; filtered by pool and minimum profit;
// totals of what is shown. A row is updated in place; a cell flashes only on a
// move that matters (a new row, a health factor moving 1 %, a profit 5 %),
// never with reduced motion. The table is always in its order, except while
// the reader's pointer is over it or the keyboard's focus is in it: then rows
// hold their places (and say so), and re-sort the moment it leaves, or at once
// when the sort or filters change. Paused, events are kept and applied on resume. The browser
// reconnects with the last event's id and the service replays what was
// missed; only a `reset` (it could not) clears the rows before its snapshot.
// On a service reading the chain at processed, the view switch shows the
// processed feed: rows newer than the highest confirmed slot are marked
// tentative, and a row a dead or losing fork took back says so briefly.
// Where the service reads Pyth feeds, the price switch shows the feed view:
// pools at their feeds ahead of the cranks, each row with the pools to crank.
"use strict";

/** owner → the event's data (what the rows are drawn from). */
const feedData = new Map();
/** owner → its row. */
const feedRows = new Map();
const feed = { updated: null, paused: false, held: [], open: false, source: null, view: "confirmed", oracle: "pool",
  order: [], resort: false, pointerIn: false };
/** How long a row rolled back says so (a stop's row stays that long). */
const ROLLED_BACK_MS = 4000;

const profitOf = (d) => (d.liquidation ? BigInt(d.liquidation.profit_value_wad) : 0n);
const repayOf = (d) => (d.liquidation ? BigInt(d.liquidation.repay_value_wad) : 0n);

/** Whether the reader is on the table: rows must not move under a pointer
 *  or a keyboard focus. */
const feedEngaged = () => feed.pointerIn || $("#feed").contains(document.activeElement);

/** Whether `now` moved from `before` by at least `share` of it. */
const movedBy = (before, now, share) => before === undefined || before === 0n ||
  (now > before ? now - before : before - now) * 1000n >= before * BigInt(Math.round(share * 1000));

/** Sets a cell's text; flashes it when it changed and `flash` says it matters. */
function setCell(td, text, title, flash = true) {
  if (title !== undefined) td.title = title;
  if (td.textContent === text) return;
  const first = td.textContent === "";
  td.textContent = text;
  if (!first && flash) {
    td.classList.remove("changed");
    void td.offsetWidth;
    td.classList.add("changed");
  }
}

function feedRow(data) {
  let tr = feedRows.get(data.owner);
  const table = $("#feed");
  if (!tr) {
    tr = tableRow(table, [(td) => addressCell(td, data.owner, { link: true, full: false }), "", "", "", "", ""]);
    tr.className = "under";
    tr.dataset.owner = data.owner;
    tr.cells[1].classList.add("hf");
    // The owner's history is a click away.
    const history = document.createElement("a");
    history.href = `#/wallet?owner=${data.owner}`;
    history.textContent = "history";
    history.className = "history-link";
    tr.cells[0].append(" ", history);
    feedRows.set(data.owner, tr);
  }
  const hf = BigInt(data.account_health_factor_wad);
  setCell(tr.cells[1], wad(data.account_health_factor_wad), undefined, movedBy(tr.lastHf, hf, 0.01));
  tr.lastHf = hf;
  markView(tr, data);
  const q = data.liquidation;
  setCell(tr.cells[2], q ? `${tokens(q.repay_amount, q.debt_pool)} · ${usd(q.repay_value_wad)}` : "no pair qualifies",
    q ? `repay in the ${symbolOf(q.debt_pool)} pool ${q.debt_pool}` : "");
  setCell(tr.cells[3], q ? `${tokens(q.seize_amount, q.collateral_pool)} · ${usd(q.seize_value_wad)}` : "",
    q ? `seize from the ${symbolOf(q.collateral_pool)} pool ${q.collateral_pool}` : "");
  const profit = profitOf(data);
  setCell(tr.cells[4], q ? usd(q.profit_value_wad) : "", undefined, movedBy(tr.lastProfit, profit, 0.05));
  tr.lastProfit = profit;
  const stale = (q && q.oracle_stale) || data.positions.some((p) => p.oracle_stale);
  // In the feed view, the pools to crank in the liquidation's transaction.
  const crank = (data.crank ?? []).map(symbolOf);
  const text = `${stale ? "stale" : "fresh"}${crank.length ? ` crank ${crank.join(", ")}` : ""}`;
  if (tr.cells[5].textContent !== text) {
    const badge = document.createElement("span");
    badge.className = `badge ${stale ? "stale" : "fresh"}`;
    badge.textContent = stale ? "stale" : "fresh";
    badge.title = stale ? "a pool's oracle is older than the service's limit: refresh it before liquidating" : "";
    tr.cells[5].replaceChildren(badge);
    if (crank.length) {
      const cranks = document.createElement("span");
      cranks.className = "badge crank";
      cranks.textContent = `crank ${crank.join(", ")}`;
      cranks.title = `send UpdateOraclePrice for ${data.crank.join(", ")}, then Liquidate, in one transaction`;
      tr.cells[5].append(" ", cranks);
    }
  }
  return tr;
}

/** The processed view's marks: tentative (newer than the highest confirmed
 *  slot) and rolled back (a fork took its last change back). */
function markView(tr, data) {
  const confirmed = link.health?.checks?.sync?.stream?.confirmed_slot;
  const tentative = feed.view === "processed" && confirmed != null && data.slot > confirmed;
  tr.classList.toggle("tentative", tentative);
  let mark = tr.cells[1].querySelector(".view-mark");
  // A roll-back is said once, for a moment; tentative is judged again each second.
  const rolledBack = data.rolled_back === true && !data.rolledBackShown;
  if (rolledBack) data.rolledBackShown = true;
  const text = rolledBack ? "rolled back" : tentative ? "tentative" : "";
  if (!text) { mark?.remove(); return; }
  if (!mark) {
    mark = document.createElement("span");
    tr.cells[1].append(" ", mark);
  }
  mark.className = `badge view-mark ${rolledBack ? "stale" : ""}`;
  mark.textContent = text;
  mark.title = rolledBack
    ? "the slot of its last change was abandoned (dead, or a fork that lost): back to the chain's best state"
    : `from a slot above the highest confirmed one (${confirmed}): it may still be rolled back`;
  if (rolledBack) setTimeout(() => { if (mark.textContent === "rolled back") mark.remove(); }, ROLLED_BACK_MS);
}

function feedSettings() {
  const form = $("#feed-controls");
  const minProfit = Number(form.min_profit.value);
  return {
    sort: form.sort.value,
    pool: form.pool.value,
    // Cents, as a WAD: compared exactly with the quotes' profit.
    minProfit: form.min_profit.value && minProfit > 0 ? BigInt(Math.round(minProfit * 100)) * 10n ** 16n : 0n,
  };
}

/** The rows in `previous` order where they were already shown, each new one
 *  just before the shown row that follows it in `ideal`: in linear time, as
 *  a price move can bring thousands of rows in one render. */
function heldOrder(previous, ideal) {
  const shown = new Set(ideal);
  const kept = previous.filter((o) => shown.has(o));
  const isKept = new Set(kept);
  // Each new row's anchor: the next kept row after it in the sorted order
  // (read backwards, so each group comes out reversed).
  const before = new Map();
  const tail = [];
  let anchor = null;
  for (let i = ideal.length - 1; i >= 0; i -= 1) {
    const o = ideal[i];
    if (isKept.has(o)) { anchor = o; continue; }
    if (anchor === null) tail.push(o);
    else if (before.has(anchor)) before.get(anchor).push(o);
    else before.set(anchor, [o]);
  }
  return kept.flatMap((o) => [...(before.get(o) ?? []).reverse(), o]).concat(tail.reverse());
}

function renderFeed() {
  const { sort, pool, minProfit } = feedSettings();
  const shown = [...feedData.values()].filter((d) => {
    const q = d.liquidation;
    if (pool && !(q && (q.debt_pool === pool || q.collateral_pool === pool)) && !d.positions.some((p) => p.pool_address === pool)) return false;
    return profitOf(d) >= minProfit;
  });
  const hf = (d) => BigInt(d.account_health_factor_wad);
  const order = {
    hf: (a, b) => (hf(a) < hf(b) ? -1 : hf(a) > hf(b) ? 1 : a.owner.localeCompare(b.owner)),
    profit: (a, b) => (profitOf(b) > profitOf(a) ? 1 : profitOf(b) < profitOf(a) ? -1 : a.owner.localeCompare(b.owner)),
    repay: (a, b) => (repayOf(b) > repayOf(a) ? 1 : repayOf(b) < repayOf(a) ? -1 : a.owner.localeCompare(b.owner)),
  }[sort];
  shown.sort(order);
  const ideal = shown.map((d) => d.owner);
  // While the reader is on the table the rows keep their places; a new one
  // enters at its sorted place among them.
  let owners = ideal;
  if (!feed.resort && feedEngaged()) owners = heldOrder(feed.order, ideal);
  feed.resort = false;
  feed.order = owners;
  const outOfOrder = owners.filter((o, i) => o !== ideal[i]).length;
  const cue = $("#feed-order");
  cue.hidden = outOfOrder === 0;
  cue.textContent = `${count(outOfOrder)} ${outOfOrder === 1 ? "row" : "rows"} held in place while your pointer or keyboard ` +
    "is on the table; they re-sort when it leaves";
  const body = $("#feed tbody");
  const rows = owners.map((o) => feedRow(feedData.get(o)));
  // Moved only where the order changed: rows in place keep their state, and
  // a row that moves keeps the keyboard's focus.
  const focused = document.activeElement;
  rows.forEach((tr, i) => { if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] ?? null); });
  if (focused && focused !== document.activeElement && body.contains(focused)) focused.focus({ preventScroll: true });
  // What no longer shows goes; a row a fork took back lingers a moment.
  for (const tr of [...body.children].slice(rows.length)) {
    if (!tr.classList.contains("rolled-back")) tr.remove();
  }
  const total = (f) => shown.reduce((acc, d) => acc + f(d), 0n).toString();
  $("#feed-totals").textContent = `${count(shown.length)} shown of ${count(feedData.size)} under water · ` +
    `repay ${usd(total(repayOf))} · profit ${usd(total(profitOf))}`;
  const empty = $("#feed-empty");
  if (!feed.open && feedData.size === 0) {
    empty.textContent = "Connecting to the feed…";
    empty.className = "state loading";
  } else if (feedData.size === 0) {
    empty.textContent = "No account is under water.";
    empty.className = "state empty";
  } else if (shown.length === 0) {
    empty.textContent = "No account under water matches the filters.";
    empty.className = "state empty";
  }
  empty.hidden = shown.length > 0;
}

let feedPending = false;
function scheduleFeed() {
  // A price move can bring thousands of events: render once per frame.
  if (!feedPending) { feedPending = true; requestAnimationFrame(() => { feedPending = false; renderFeed(); }); }
}

/** Applies one event (or keeps it while paused). */
function feedEvent(name, data) {
  if (feed.paused && name !== "reset") {
    feed.held.push([name, data]);
    $("#feed-pause").textContent = `Resume (${count(feed.held.length)} updates waiting)`;
    return;
  }
  if (name === "reset") {
    clearFeed();
  } else if (name === "candidate_stop" && data.rolled_back) {
    // Taken back by a fork: say so for a moment, then go.
    const tr = feedRows.get(data.owner);
    feedData.delete(data.owner);
    feedRows.delete(data.owner);
    if (tr) {
      markView(tr, data);
      tr.classList.add("rolled-back");
      setTimeout(() => tr.remove(), ROLLED_BACK_MS);
    }
  } else if (name === "candidate_stop") {
    feedData.delete(data.owner);
    feedRows.get(data.owner)?.remove();
    feedRows.delete(data.owner);
  } else {
    feedData.set(data.owner, data);
  }
  scheduleFeed();
}

/** Every row goes (another view, or a reset). */
function clearFeed() {
  feedData.clear();
  for (const tr of feedRows.values()) tr.remove();
  feedRows.clear();
  feed.held = [];
}

function openFeed() {
  const source = new EventSource(`/api/positions/unhealthy/stream?commitment=${feed.view}&oracle=${feed.oracle}`);
  feed.source = source;
  const seen = (event) => {
    // Stamped by the service when it published the event.
    const data = JSON.parse(event.data);
    feed.updated = new Date(data.published_at_ms);
    answered("feed");
    return data;
  };
  for (const name of ["candidate_start", "candidate_update", "candidate_stop"]) {
    source.addEventListener(name, (event) => feedEvent(name, seen(event)));
  }
  source.addEventListener("reset", () => feedEvent("reset", null));
  // Fell behind: the stream ends and the reconnect resumes (or resets).
  source.addEventListener("resync", () => { $("#feed-state").textContent = "catching up"; });
  source.onopen = () => { feed.open = true; answered("feed"); tickFeed(); scheduleFeed(); };
  source.onerror = () => {
    feed.open = false;
    unanswered("feed", "the stream dropped; reconnecting");
    tickFeed();
    // Refused (429 past the stream caps, 503 while loading): the browser gives
    // this source up, so start over (a snapshot) a little later.
    if (source.readyState === EventSource.CLOSED && feed.source === source) setTimeout(openFeed, 2000);
  };
}

/** The processed view is offered where the service reads at processed, the
 *  feed view where it reads feeds (the pools status says). */
function offerViews() {
  const feedOption = $('#feed-controls select[name="oracle"] option[value="feed"]');
  if (feedOption && state.feedsRead !== undefined) {
    feedOption.disabled = !state.feedsRead;
    feedOption.title = state.feedsRead
      ? "every pool at its Pyth feed where the feed moved and the pool was not cranked yet: rows list the pools to crank"
      : "this service does not read feeds";
  }
  const option = $('#feed-controls select[name="view"] option[value="processed"]');
  const commitment = link.health?.checks?.sync?.stream?.commitment;
  if (!option || commitment === undefined) return;
  option.disabled = commitment !== "processed";
  option.title = option.disabled ? "this service reads the chain at confirmed" : "the best chain now: tentative, a second or two ahead";
  // Said on the page, not only in a tooltip on a disabled option.
  $("#feed-view-note").textContent = option.disabled
    ? "View: confirmed. This service reads the chain at confirmed, so the processed view (the best chain now, a second or two " +
      "ahead, rows tentative until confirmed) is not offered; a service run with rpc.commitment = \"processed\" over gRPC offers it."
    : feed.view === "processed"
      ? "View: processed, the best chain now, a second or two ahead of confirmed. Rows newer than the last confirmed slot are " +
        "marked tentative; a row a dead or losing fork took back says so."
      : "View: confirmed. The processed view shows the best chain a second or two sooner, its newest rows tentative.";
}

/** The feed's badge: live while the stream is open and the service answers;
 *  stale (since when) when either stops. Called every second by live.js. */
function tickFeed() {
  const badge = $("#feed-state");
  if (!badge) return;
  offerViews();
  if (feed.view === "processed") {
    for (const [owner, data] of feedData) {
      const tr = feedRows.get(owner);
      if (tr && !tr.querySelector(".view-mark.stale")) markView(tr, data);
    }
  }
  const s = source("feed", 1000);
  const quietFor = feed.updated ? ` · last event ${ago((Date.now() - feed.updated) / 1000)}` : "";
  // While the feed is stale its rows' "fresh" badges lose their green: they
  // say what the oracles were, not that the rows are current.
  $("#feed").classList.toggle("stale", !(feed.open && !link.down));
  if (feed.open && !link.down) {
    badge.textContent = feed.paused ? "paused" : "live";
    badge.className = `badge ${feed.paused ? "" : "live"}`;
  } else {
    const since = link.down ? link.since : s.failedSince ?? new Date();
    badge.textContent = `stale since ${clock(since)}`;
    badge.className = "badge stale";
  }
  const age = document.querySelector('.age[data-age="feed"]');
  if (age) age.textContent = quietFor.replace(/^ · /, "");
}

$("#feed-pause").addEventListener("click", () => {
  feed.paused = !feed.paused;
  const button = $("#feed-pause");
  button.setAttribute("aria-pressed", String(feed.paused));
  if (!feed.paused) {
    const held = feed.held;
    feed.held = [];
    for (const [name, data] of held) feedEvent(name, data);
    button.textContent = "Pause";
  } else {
    button.textContent = "Resume";
  }
  tickFeed();
});
$("#feed-controls").addEventListener("input", (event) => {
  const switched = (event.target.name === "view" && event.target.value !== feed.view) ||
    (event.target.name === "oracle" && event.target.value !== feed.oracle);
  if (switched) {
    feed[event.target.name] = event.target.value;
    feed.source?.close();
    feed.open = false;
    clearFeed();
    openFeed();
  }
  // Asked for: the new order at once.
  feed.resort = true;
  scheduleFeed();
  keepFeedFilters();
});

/** The feed's filters in the URL, so that a view can be shared. */
function keepFeedFilters() {
  const form = $("#feed-controls");
  setParams({ view: form.view.value === "confirmed" ? "" : form.view.value,
    oracle: form.oracle.value === "pool" ? "" : form.oracle.value, sort: form.sort.value === "hf" ? "" : form.sort.value,
    pool: form.pool.value, min_profit: form.min_profit.value });
}

/** The filters a URL names, set on the controls (a pool waits for the list). */
function applyFeedFilters(params) {
  const form = $("#feed-controls");
  const sort = params.get("sort") ?? "hf";
  if ([...form.sort.options].some((o) => o.value === sort)) form.sort.value = sort;
  const pool = params.get("pool") ?? "";
  form.pool.dataset.wanted = isPubkey(pool) ? pool : "";
  if ([...form.pool.options].some((o) => o.value === pool)) form.pool.value = pool;
  const minProfit = params.get("min_profit") ?? "";
  form.min_profit.value = /^\d+(\.\d{1,2})?$/.test(minProfit) ? minProfit : "";
  const view = params.get("view") ?? "confirmed";
  const option = [...form.view.options].find((o) => o.value === view);
  if (option && !option.disabled && view !== feed.view) {
    form.view.value = view;
    form.view.dispatchEvent(new Event("input", { bubbles: true }));
  }
  const oracle = params.get("oracle") ?? "pool";
  const priced = [...form.oracle.options].find((o) => o.value === oracle);
  if (priced && !priced.disabled && oracle !== feed.oracle) {
    form.oracle.value = oracle;
    form.oracle.dispatchEvent(new Event("input", { bubbles: true }));
  }
  feed.resort = true;
}
$("#feed-controls").addEventListener("submit", (event) => event.preventDefault());
// Leaving the table, by pointer or keyboard, lets the held rows re-sort.
$("#feed").addEventListener("pointerenter", () => { feed.pointerIn = true; });
$("#feed").addEventListener("pointerleave", () => { feed.pointerIn = false; scheduleFeed(); });
$("#feed").addEventListener("focusout", (event) => { if (!$("#feed").contains(event.relatedTarget)) scheduleFeed(); });

views.set("feed", (params) => {
  // A shared link sets the filters; the tab alone keeps the reader's.
  if ([...params.keys()].length) applyFeedFilters(params);
  else keepFeedFilters();
  scheduleFeed();
});
// Symbols and decimals first, so the first rows already show token amounts.
loadTokens().catch(() => {}).finally(() => { openFeed(); renderFeed(); });
