// The risk lens (decisions §10): a pool's liquidation curve drawn from the
// server's exact figures, and a price shock with the accounts it sinks.
"use strict";

// ---- risk lens ---------------------------------------------------------------------
// USD of a WAD value, for drawing and reading only (the server's sums are exact).
const usd = (text) => Number(BigInt(text) / 10n ** 14n) / 1e4;
const money = (text) => usd(text).toLocaleString("en-US", { maximumFractionDigits: 2 });

async function loadRiskPools() {
  const res = await api("GET", "/api/pools");
  if (!res.ok) return;
  const priced = res.data.pools.filter((p) => p.oracle_price !== null);
  for (const select of document.querySelectorAll(".risk-pool")) {
    select.replaceChildren(...priced.map((p) => new Option(p.symbol || short(p.pool_address), p.pool_address)));
  }
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The curve: price change across; accounts under water (left axis), their
 *  debt and the bad debt in USD (right axis), each its own line. */
let lastCurve = null;
function drawCurve(curve) {
  lastCurve = curve;
  $("#curve").hidden = false;
  const chart = $("#curve-chart");
  // Drawn at the width it is shown at, so its text keeps its size on a phone.
  const W = Math.max(300, Math.round(chart.getBoundingClientRect().width) || 640);
  const narrow = W < 560;
  const [H, L, R, T, B] = [narrow ? 300 : 280, 44, 64, narrow ? 64 : 30, 36];
  chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const points = curve.points;
  const xs = points.map((p) => p.change_bps / 100);
  const [x0, x1] = [xs[0], xs[xs.length - 1]];
  const counts = points.map((p) => p.liquidatable);
  const debts = points.map((p) => usd(p.debt_value_wad_liquidatable));
  const bads = points.map((p) => usd(p.bad_debt_value_wad));
  const cMax = Math.max(1, ...counts);
  const vMax = Math.max(1, ...debts, ...bads);
  const x = (v) => L + ((v - x0) / (x1 - x0 || 1)) * (W - L - R);
  const yc = (v) => H - B - (v / cMax) * (H - T - B);
  const yv = (v) => H - B - (v / vMax) * (H - T - B);
  const line = (ys, y, cls) => svg("polyline", {
    class: cls, fill: "none", "stroke-width": 2,
    points: ys.map((v, i) => `${x(xs[i]).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
  });
  const parts = [
    svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#dfe3ea" }),
    svg("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#dfe3ea" }),
    svg("line", { x1: W - R, y1: T, x2: W - R, y2: H - B, stroke: "#dfe3ea" }),
    svg("text", { x: L, y: H - B + 16, "text-anchor": "middle" }, `${x0}%`),
    svg("text", { x: W - R, y: H - B + 16, "text-anchor": "middle" }, `${x1}%`),
    svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, "price change"),
    svg("text", { x: L - 6, y: T + 4, "text-anchor": "end" }, String(cMax)),
    svg("text", { x: L - 6, y: (T + H - B) / 2, "text-anchor": "end" }, "#"),
    svg("text", { x: L - 6, y: H - B, "text-anchor": "end" }, "0"),
    svg("text", { x: W - R + 6, y: T + 4 }, `$${vMax.toLocaleString("en-US", { maximumFractionDigits: 0 })}`),
    svg("text", { x: W - R + 6, y: H - B }, "$0"),
    line(counts, yc, "count"),
    line(debts, yv, "debt"),
    line(bads, yv, "bad-debt"),
  ];
  if (x0 < 0 && x1 > 0) parts.push(svg("line", { x1: x(0), y1: T, x2: x(0), y2: H - B, stroke: "#9aa4b2", "stroke-dasharray": "3 3" }));
  const legend = [["count", "#3451b2", "accounts under water"], ["debt", "#c4620a", "their debt (USD)"], ["bad-debt", "#b42318", "bad debt (USD)"]];
  legend.forEach(([cls, color, label], i) => {
    // In a row above the plot, or stacked when narrow.
    const [lx, ly] = narrow ? [L, 12 + i * 17] : [L + i * 180, 12];
    parts.push(svg("line", { x1: lx, y1: ly, x2: lx + 20, y2: ly, stroke: color, "stroke-width": 2 }));
    parts.push(svg("text", { x: lx + 24, y: ly + 4 }, label));
  });
  chart.replaceChildren(...parts);
  for (const [cls, color] of legend) chart.querySelector(`polyline.${cls}`).setAttribute("stroke", color);
  const last = points[points.length - 1];
  $("#curve-caption").textContent = `${curve.owners} accounts hold this pool. At ${last.change_bps / 100}%: ` +
    `${last.liquidatable} under water, $${money(last.debt_value_wad_liquidatable)} of their debt, ` +
    `$${money(last.bad_debt_value_wad)} of bad debt.`;
}
window.addEventListener("resize", () => { if (lastCurve) drawCurve(lastCurve); });

$("#curve-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const f = new FormData(event.target);
  const [from, to] = [Math.round(Number(f.get("from")) * 100), Math.round(Number(f.get("to")) * 100)];
  const res = await api("GET", `/api/risk/curve?pool=${f.get("pool")}&from_bps=${from}&to_bps=${to}&steps=50`);
  if (!res.ok) return show(`Curve: ${failure(res).message}`, "error");
  drawCurve(res.data);
});

$("#shock-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const f = new FormData(event.target);
  const bps = Math.round(Number(f.get("percent")) * 100);
  const res = await api("GET", `/api/risk/shock?shock=${f.get("pool")}:${bps}&limit=50`);
  if (!res.ok) return show(`Shock: ${failure(res).message}`, "error");
  const s = res.data;
  $("#shock-summary").textContent = `${s.newly_liquidatable} newly under water (${s.liquidatable_before} → ${s.liquidatable_after} of ${s.owners}); ` +
    `$${money(s.debt_value_wad_liquidatable_after)} of debt liquidatable, $${money(s.bad_debt_value_wad_after)} of bad debt, ` +
    `$${money(s.profit_value_wad_after)} of profit on offer.`;
  $("#shock-summary").hidden = false;
  const rows = s.accounts.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.owner = a.owner;
    const cells = [[a.owner, "key"], [wad(a.account_health_factor_wad)], [wad(a.shocked_health_factor_wad), "hf"],
      [a.liquidation ? money(a.liquidation.profit_value_wad) : "—"]];
    for (const [text, cls] of cells) {
      const td = tr.insertCell();
      td.textContent = text;
      if (cls) td.className = cls;
    }
    tr.className = "under";
    return tr;
  });
  $("#shock-accounts tbody").replaceChildren(...rows);
  $("#shock-accounts").hidden = rows.length === 0;
});


loadRiskPools();
