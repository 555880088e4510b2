// The risk lens (docs/design.md §10): a pool's liquidation curve drawn from the
// server's exact figures (a click on a point shocks the pool there), and a
// price shock with the accounts it sinks. Each form checks its fields before
// asking, and shows its own errors beside it.
"use strict";

/** Priced pools by address, with their oracle's freshness (the pools'
 *  status, read by loadTokens with the tokens every section uses). */
let riskPools = new Map();
async function loadRiskPools() {
  let status;
  try {
    status = await loadTokens();
  } catch {
    return;
  }
  const priced = status.pools.filter((p) => p.oracle_price !== null);
  riskPools = new Map(priced.map((p) => [p.pool_address, p]));
  for (const select of document.querySelectorAll(".risk-pool")) {
    const chosen = select.value;
    select.replaceChildren(...priced.map(poolOption));
    if (chosen) select.value = chosen;
  }
  for (const form of [$("#curve-form"), $("#shock-form")]) {
    form.querySelector("button").disabled = priced.length === 0;
  }
  if (!priced.length) fieldError($("#curve-form"), "No pool has an oracle price yet: there is nothing to shock.");
  warnStale();
}

/** A stale oracle is warned beside the lens: moving a price the market has
 *  left says little about the market. */
function warnStale() {
  const stale = [...new Set([...document.querySelectorAll(".risk-pool")].map((s) => s.value))]
    .map((pool) => riskPools.get(pool))
    .filter((p) => p?.oracle_stale);
  const note = $("#risk-stale");
  note.hidden = stale.length === 0;
  note.textContent = stale.map((p) => `${p.symbol || short(p.pool_address)}'s oracle price is ` +
    `${p.oracle_age_seconds === null ? "of unknown age" : `${ago(p.oracle_age_seconds).replace(/ ago$/, "")} old`}, past the service's ` +
    `${state.maxOracleAge ?? "?"} s: the lens moves a price the market may have left.`).join(" ");
}
for (const select of document.querySelectorAll(".risk-pool")) select.addEventListener("change", warnStale);

let curveChart = null;
function drawCurve(curve) {
  $("#curve").hidden = false;
  const points = curve.points;
  const xs = points.map((p) => p.change_bps / 100);
  const spec = {
    x: { type: "number", label: "price change", format: (v) => `${v}%` },
    y: [
      { id: "count", label: "accounts", integer: true, format: (v) => count(Math.round(v)) },
      { id: "usd", label: "USD", format: (v) => `$${v.toLocaleString("en-US", { notation: "compact", maximumFractionDigits: 1 })}` },
    ],
    series: [
      { name: "accounts under water", axis: "count", color: "#3451b2", points: points.map((p, i) => [xs[i], p.liquidatable]) },
      { name: "their debt", axis: "usd", color: "#c4620a", format: usdNumber, points: points.map((p, i) => [xs[i], dollars(p.debt_value_wad_liquidatable)]) },
      { name: "bad debt", axis: "usd", color: "#b42318", format: usdNumber, dash: "5 3", points: points.map((p, i) => [xs[i], dollars(p.bad_debt_value_wad)]) },
    ],
    summary: `Liquidation curve of ${symbolOf(curve.pool)}: accounts under water and their debt for price changes from ${xs[0]}% to ${xs[xs.length - 1]}%.`,
    onPick: (x) => {
      const form = $("#shock-form");
      form.pool.value = curve.pool;
      form.percent.value = String(x);
      form.requestSubmit();
    },
  };
  if (curveChart) curveChart.update(spec); else curveChart = chart($("#curve"), spec);
  const last = points[points.length - 1];
  const caption = $("#curve-caption");
  caption.textContent = `${count(curve.owners)} accounts hold this pool (the curve counts only them). At ${last.change_bps / 100}%: ` +
    `${count(last.liquidatable)} under water, ${usd(last.debt_value_wad_liquidatable)} of their debt, ` +
    `${usd(last.bad_debt_value_wad)} of bad debt. ${asOf()} Hover or use the arrow keys for each point; click one to shock there.`;
  caption.hidden = false;
}

$("#curve-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const [from, to] = [form.from.value.trim(), form.to.value.trim()];
  if (!form.pool.value) return fieldError(form, "Pick a pool.", form.pool);
  if (from === "" || !Number.isFinite(Number(from)) || Number(from) < -100) return fieldError(form, "From: a percent of -100 or more.", form.from);
  if (to === "" || !Number.isFinite(Number(to)) || Number(to) > 1000) return fieldError(form, "To: a percent of at most 1000.", form.to);
  if (Number(from) >= Number(to)) return fieldError(form, "From must be below To.", form.to);
  fieldError(form, null);
  const [fromBps, toBps] = [Math.round(Number(from) * 100), Math.round(Number(to) * 100)];
  const res = await api("GET", `/api/risk/curve?pool=${form.pool.value}&from_bps=${fromBps}&to_bps=${toBps}&steps=50`);
  if (!res.ok) return fieldError(form, `The curve cannot be drawn: ${failure(res).message}.`);
  drawCurve(res.data);
});

$("#shock-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const text = form.percent.value.trim();
  if (!form.pool.value) return fieldError(form, "Pick a pool.", form.pool);
  if (text === "" || !Number.isFinite(Number(text))) return fieldError(form, "Enter a change in percent, e.g. -20.", form.percent);
  const bps = Math.round(Number(text) * 100);
  if (bps < -10000 || bps > 100000) return fieldError(form, "A change from -100% to +1000%.", form.percent);
  fieldError(form, null);
  // The pool's holders at 0% and at the shock, as the curve counts them, so
  // the two tell one story: holders, and every account.
  const [lo, hi] = bps === 0 ? [-1, 0] : [Math.min(0, bps), Math.max(0, bps)];
  const [res, holders] = await Promise.all([
    api("GET", `/api/risk/shock?shock=${form.pool.value}:${bps}&limit=50`),
    api("GET", `/api/risk/curve?pool=${form.pool.value}&from_bps=${lo}&to_bps=${hi}&steps=1`),
  ]);
  if (!res.ok) return fieldError(form, `The shock cannot be computed: ${failure(res).message}.`);
  if (!holders.ok) return fieldError(form, `The shock cannot be computed: ${failure(holders).message}.`);
  const s = res.data;
  const at = (change) => holders.data.points.find((p) => p.change_bps === change);
  const name = symbolOf(form.pool.value);
  $("#shock-summary").textContent = `${name} ${bps >= 0 ? "+" : ""}${bps / 100}%: ` +
    `${count(s.newly_liquidatable)} newly under water. Holders of ${name} under water: ` +
    `${count(at(0).liquidatable)} → ${count(at(bps).liquidatable)} of ${count(holders.data.owners)} (as the curve counts); ` +
    `all accounts: ${count(s.liquidatable_before)} → ${count(s.liquidatable_after)} of ${count(s.owners)}. ` +
    `${usd(s.debt_value_wad_liquidatable_after)} of debt liquidatable, ${usd(s.bad_debt_value_wad_after)} of bad debt, ` +
    `${usd(s.profit_value_wad_after)} of profit on offer. ${asOf()}`;
  $("#shock-summary").hidden = false;
  const table = $("#shock-accounts");
  const rows = s.accounts.map((a) => {
    const tr = tableRow(table, [
      (td) => {
        addressCell(td, a.owner, { link: true, full: false });
        // The account page here, beside the outside explorer.
        const page = document.createElement("a");
        page.href = `#/wallet?owner=${a.owner}`;
        page.className = "account-link";
        page.textContent = "account";
        page.setAttribute("aria-label", `Open the account of ${a.owner}`);
        td.append(" ", page);
      },
      wad(a.account_health_factor_wad),
      wad(a.shocked_health_factor_wad),
      a.liquidation ? usd(a.liquidation.profit_value_wad) : "—",
    ]);
    tr.cells[2].classList.add("hf");
    tr.className = "under";
    tr.dataset.owner = a.owner;
    return tr;
  });
  fillRows(table, rows, "No account goes under water at this price.");
  table.hidden = false;
});

views.set("risk", () => loadRiskPools());
