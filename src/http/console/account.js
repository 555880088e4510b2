// An account at a glance, above its history (docs/design.md §4, §8, §10):
// the account health factor as a number with when it was read and the
// chain's slot, each position (deposits, debt with its interest, APYs), each
// asset's liquidation price and how far it is, and the best quote on it.
"use strict";

/** Quotes read to find the account's (the route's most). */
const QUOTES_READ = 200;

/** How far an asset's price is from its liquidation price: liquidatable
 *  while the price is below it (a collateral) or above it (a debt). */
function distance(lp) {
  const passed = lp.direction === "below" ? lp.distance_bps >= 0 : lp.distance_bps <= 0;
  if (passed) return `passed: liquidatable while ${lp.direction} it`;
  return `at a ${lp.direction === "below" ? "fall" : "rise"} of ${percent(Math.abs(lp.distance_bps) / 10000, 1)}`;
}

/** What the account panel shows of `owner`, the row of `position` (a
 *  position account a search named) marked; errors in its own line. */
async function loadAccount(owner, position = "") {
  const panel = $("#account-panel");
  panel.hidden = !owner;
  if (!owner) return;
  const [detail, quotes, held] = await Promise.all([
    api("GET", `/api/positions/${owner}/detail`),
    api("GET", `/api/liquidations?limit=${QUOTES_READ}`),
    api("GET", `/api/positions/${owner}`),
  ]);
  // Each position's own account, for its explorer link.
  const accounts = new Map(held.ok ? held.data.positions.map((p) => [p.pool_address, p.position_address]) : []);
  const note = $("#account-note");
  if (!detail.ok) {
    stateText(note, "error", `The account cannot be read: ${failure(detail).message}.`);
    return;
  }
  const positions = detail.data.positions;
  if (!positions.length) {
    stateText(note, "empty", "This wallet holds no position in the index.");
    $("#account-hf").textContent = "—";
    $("#account-positions").tBodies[0].replaceChildren();
    $("#account-quote").textContent = "";
    return;
  }
  stateText(note, "", "");
  addressCell($("#account-owner"), owner, { link: true, full: true });
  // The account-level health factor is on every position; u128 max is no debt.
  const hf = positions[0].health_factor_wad;
  const none = BigInt(hf) >= 10n ** 30n;
  const el = $("#account-hf");
  el.textContent = none ? "no debt" : wad(hf);
  el.classList.toggle("under", !none && BigInt(hf) < 10n ** 18n);
  // As of when, the slot linked to the explorer.
  const asof = $("#account-asof");
  const slot = chainSlot();
  asof.replaceChildren(`As of ${clock(new Date())}${slot ? ", slot " : "."}`);
  if (slot) {
    const a = document.createElement("a");
    a.href = explorerSlot(slot);
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = count(slot);
    asof.append(a, ".");
  }
  const table = $("#account-positions");
  fillRows(table, positions.map((p) => {
    const lp = p.liquidation_price;
    const tr = tableRow(table, [
      (td) => {
        const name = document.createElement("strong");
        name.textContent = p.symbol || short(p.pool_address);
        td.append(name, " ");
        addressCell(td.appendChild(document.createElement("span")), p.pool_address, { link: true, full: false });
        const position = accounts.get(p.pool_address);
        if (position) {
          const small = document.createElement("small");
          small.append("position ");
          addressCell(small.appendChild(document.createElement("span")), position, { link: true, full: false });
          td.append(small);
        }
      },
      stacked(`${tokens(p.deposit_tokens, p.pool_address)} · ${tokenValue(p.deposit_tokens, p.pool_address)}`,
        `supply APY ${percent(p.supply_apy)}`),
      stacked(`${tokens(p.borrow_debt, p.pool_address)} · ${tokenValue(p.borrow_debt, p.pool_address)}`,
        `principal ${tokens(p.borrow_principal, p.pool_address)}, interest ` +
        `${tokens((BigInt(p.borrow_debt) - BigInt(p.borrow_principal)).toString(), p.pool_address)}, APY ${percent(p.borrow_apy)}`),
      lp ? stacked(oraclePrice(lp.price, lp.expo, null), distance(lp)) : "—",
    ]);
    tr.dataset.pool = p.pool_address;
    tr.dataset.position = accounts.get(p.pool_address) ?? "";
    if (position && tr.dataset.position === position) tr.classList.add("found");
    return tr;
  }), "No position.");
  if (position && ![...accounts.values()].includes(position)) {
    stateText(note, "empty", `The position ${short(position)} is no longer held by this wallet.`);
  }
  // The quotes route lists the most profitable first, at most 200 of them:
  // an owner missing from a full list may have a smaller one.
  const listed = quotes.ok ? quotes.data.liquidations : [];
  const quote = listed.find((q) => q.owner === owner);
  const afloat = none || BigInt(hf) >= 10n ** 18n;
  $("#account-quote").textContent = quote
    ? `Best quote: repay ${tokens(quote.repay_amount, quote.debt_pool)} (${usd(quote.repay_value_wad)}), ` +
      `seize ${tokens(quote.seize_amount, quote.collateral_pool)} (${usd(quote.seize_value_wad)}), profit ${usd(quote.profit_value_wad)}.`
    : afloat ? "Not liquidatable: the account health factor is at or above 1."
      : !quotes.ok ? "Under water; the quotes cannot be read now."
        : listed.length >= QUOTES_READ ? `Under water; its quote is not among the ${QUOTES_READ} most profitable.`
          : "Under water, but no pair qualifies for a quote.";
}
