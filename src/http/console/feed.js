// The live liquidation feed: every owner under water with its quote, token
// amounts with their symbols, an oracle-stale badge, the row count and the
// time of the last event; a row that changes is highlighted. The browser
// reconnects with the last event's id and the service replays what was
// missed; only a `reset` (it could not) clears the rows before its snapshot.
"use strict";

const feedRows = new Map();
let feedUpdated = null;

function feedRow(data) {
  let tr = feedRows.get(data.owner);
  if (!tr) {
    tr = document.createElement("tr");
    tr.className = "under";
    tr.dataset.owner = data.owner;
    // Labelled for the narrow layout, where each row is a card.
    for (const label of ["Owner", "Health factor", "Repay", "Seize", "Profit (USD)", "Oracle"]) {
      tr.insertCell().dataset.label = label;
    }
    addressCell(tr.cells[0], data.owner, { link: true, full: false });
    tr.cells[1].className = "hf num";
    tr.cells[4].className = "num";
    feedRows.set(data.owner, tr);
  }
  tr.cells[1].textContent = wad(data.account_health_factor_wad);
  const q = data.liquidation;
  tr.cells[2].textContent = q ? tokens(q.repay_amount, q.debt_pool) : "";
  tr.cells[2].title = q ? `repay in the ${symbolOf(q.debt_pool)} pool ${q.debt_pool}` : "";
  tr.cells[3].textContent = q ? tokens(q.seize_amount, q.collateral_pool) : "";
  tr.cells[3].title = q ? `seize from the ${symbolOf(q.collateral_pool)} pool ${q.collateral_pool}` : "";
  tr.cells[4].textContent = q ? wad(q.profit_value_wad, 2) : "";
  const stale = (q && q.oracle_stale) || data.positions.some((p) => p.oracle_stale);
  const badge = document.createElement("span");
  badge.className = `badge ${stale ? "stale" : "fresh"}`;
  badge.textContent = stale ? "stale" : "fresh";
  badge.title = stale ? "a pool's oracle is older than the service's limit: refresh it before liquidating" : "";
  tr.cells[5].replaceChildren(badge);
  // Highlighted for a moment (the animation restarts on each change).
  tr.classList.remove("changed");
  void tr.offsetWidth;
  tr.classList.add("changed");
  return tr;
}
function renderFeed() {
  const rows = [...feedRows.values()].sort((a, b) => {
    const [x, y] = [a.cells[1].textContent, b.cells[1].textContent].map(Number);
    return x - y;
  });
  $("#feed tbody").replaceChildren(...rows);
  $("#feed-empty").hidden = rows.length > 0;
  $("#feed-count").textContent = `${rows.length} ${rows.length === 1 ? "account" : "accounts"} under water`;
  $("#feed-updated").textContent = feedUpdated ? `last event ${when(feedUpdated)}` : "no event yet";
}
let pending = false;
function schedule() {
  // A price move can bring thousands of events: render once per frame.
  if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; renderFeed(); }); }
}
function openFeed() {
  feedRows.clear();
  const source = new EventSource("/api/positions/unhealthy/stream");
  const seen = (event) => {
    // Stamped by the service when it published the event.
    const data = JSON.parse(event.data);
    feedUpdated = new Date(data.published_at_ms);
    return data;
  };
  const update = (event) => { feedRow(seen(event)); schedule(); };
  source.addEventListener("candidate_start", update);
  source.addEventListener("candidate_update", update);
  source.addEventListener("candidate_stop", (event) => { feedRows.delete(seen(event).owner); schedule(); });
  // The browser reconnects on its own with the last event's id: the service
  // replays what was missed, so the rows stay. Only when it cannot (it
  // restarted, another replica answered, too much was missed) does `reset`
  // come first, and the snapshot after it rebuilds the rows.
  source.addEventListener("reset", () => { feedRows.clear(); schedule(); });
  // Fell behind: the stream ends and the reconnect resumes (or resets).
  source.addEventListener("resync", () => { $("#feed-state").textContent = "catching up"; });
  source.onopen = () => {
    $("#feed-state").textContent = "live";
    $("#feed-state").className = "badge live";
  };
  source.onerror = () => {
    $("#feed-state").textContent = "reconnecting";
    $("#feed-state").className = "badge stale";
    // Refused (429 past the stream caps, 503 while loading): the browser gives
    // this source up, so start over (a snapshot) a little later.
    if (source.readyState === EventSource.CLOSED) setTimeout(openFeed, 2000);
  };
}

// Symbols and decimals first, so the first rows already show token amounts.
loadTokens().finally(() => { openFeed(); renderFeed(); });
