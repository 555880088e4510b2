// An account at a glance, above its history (docs/design.md §4, §8, §10):
// the account health factor as a number with when it was read and the
// chain's slot, each position (deposits, debt with its interest, APYs), each
// asset's liquidation price and how far it is, and the best quote on it with
// its own slot and the age of every oracle it prices. Live: the page holds a
// long poll on the owner's detail with its ETag (docs/design.md §11), so a
// change shows as the API has it, not at the next refresh.
"use strict";

/** Quotes read to find the account's (the route's most). */
const QUOTES_READ = 200;
/** How long the service holds the detail poll when nothing changes. */
const ACCOUNT_HOLD_MS = 25000;

/** The owner followed, and which follower is current (a newer one retires it). */
const accountFollow = { owner: "", position: "", generation: 0, running: false };

/** How far an asset's price is from its liquidation price: liquidatable
 *  while the price is below it (a collateral) or above it (a debt). */
function distance(lp) {
  const passed = lp.direction === "below" ? lp.distance_bps >= 0 : lp.distance_bps <= 0;
  if (passed) return `passed: liquidatable while ${lp.direction} it`;
  return `at a ${lp.direction === "below" ? "fall" : "rise"} of ${percent(Math.abs(lp.distance_bps) / 10000, 1)}`;
}

/** Shows `owner`'s account, `position` (a position account a search named)
 *  marked, and keeps it live while the wallet page shows that owner. */
function showAccount(owner, position = "") {
  $("#account-panel").hidden = !owner;
  const same = accountFollow.owner === owner && accountFollow.position === position;
  if (same && accountFollow.running) return;
  const generation = ++accountFollow.generation;
  Object.assign(accountFollow, { owner, position, running: Boolean(owner) });
  // The header names the wallet asked from the start, whatever it holds.
  if (owner) addressCell($("#account-owner"), owner, { link: true, full: true });
  else $("#account-owner").replaceChildren();
  if (owner) followAccount(owner, position, generation);
}

/** Held long polls on the owner's detail: each new answer is drawn; a 304 at
 *  the hold's end asks again at once; a failure says so and retries. */
async function followAccount(owner, position, generation) {
  const current = () => accountFollow.generation === generation && route().name === "wallet";
  let etag = null;
  let failures = 0;
  let held = null;
  try {
    while (current()) {
      const query = etag ? `?wait_ms=${ACCOUNT_HOLD_MS}` : "";
      const res = await api("GET", `/api/positions/${owner}/detail${query}`, null,
        etag ? { "if-none-match": etag } : {}, ACCOUNT_HOLD_MS + 5000);
      if (!current()) return;
      if (res.status === 304) continue;
      if (!res.ok) {
        stateText($("#account-note"), "error", `The account cannot be read: ${failure(res).message}. Retrying.`);
        failures += 1;
        await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** failures, 5000)));
        etag = null;
        continue;
      }
      failures = 0;
      etag = res.etag;
      // Each position's own account, for its explorer link: read once a follow.
      held ??= await api("GET", `/api/positions/${owner}`);
      if (!current()) return;
      await drawAccount(owner, position, res.data.positions, held);
    }
  } finally {
    if (accountFollow.generation === generation) accountFollow.running = false;
  }
}

/** Each pool's oracle as `SOL 3 s ago`, stale ones badged, from the pools'
 *  status (refreshed with the overview); the ages count up on the page. */
function oracleAges(pools) {
  const line = document.createElement("small");
  line.className = "account-oracles";
  line.append("Oracles: ");
  pools.forEach((pool, i) => {
    const p = state.tokens?.get(pool);
    if (i) line.append(" · ");
    line.append(`${symbolOf(pool)} `);
    if (!p || p.oracle_updated_at === null || p.oracle_updated_at === undefined) {
      line.append("no price");
      return;
    }
    const age = document.createElement("span");
    age.className = "oracle-age";
    age.dataset.updatedAt = String(p.oracle_updated_at);
    age.textContent = ago(Date.now() / 1000 - p.oracle_updated_at);
    line.append(age);
    if (p.oracle_stale) {
      const badge = document.createElement("span");
      badge.className = "badge stale";
      badge.textContent = "stale";
      badge.title = `older than ${state.maxOracleAge} s: quotes on it are flagged`;
      line.append(" ", badge);
    }
  });
  return line;
}

/** A slot as a link to the explorer's block. */
function slotLink(slot) {
  const a = document.createElement("a");
  a.href = explorerSlot(slot);
  a.target = "_blank";
  a.rel = "noopener";
  a.textContent = count(slot);
  return a;
}

/** Draws one answer of the owner's detail, with the best quote on it. */
async function drawAccount(owner, position, positions, held) {
  const quotes = await api("GET", `/api/liquidations?limit=${QUOTES_READ}`);
  const accounts = new Map(held.ok ? held.data.positions.map((p) => [p.pool_address, p.position_address]) : []);
  const note = $("#account-note");
  addressCell($("#account-owner"), owner, { link: true, full: true });
  if (!positions.length) {
    stateText(note, "empty", "This wallet holds no position in the index.");
    $("#account-hf").textContent = "—";
    $("#account-hf").classList.remove("under");
    $("#account-asof").replaceChildren();
    $("#account-positions").tBodies[0].replaceChildren();
    $("#account-quote").replaceChildren();
    return;
  }
  stateText(note, "", "");
  // The account-level health factor is on every position; u128 max is no debt.
  const hf = positions[0].health_factor_wad;
  const none = BigInt(hf) >= 10n ** 30n;
  const el = $("#account-hf");
  el.textContent = none ? "no debt" : wad(hf);
  el.classList.toggle("under", !none && BigInt(hf) < 10n ** 18n);
  // The quotes route lists the most profitable first, at most 200 of them:
  // an owner missing from a full list may have a smaller one.
  const listed = quotes.ok ? quotes.data.liquidations : [];
  const quote = listed.find((q) => q.owner === owner);
  // As of when: read now; the quote's own slot where there is one, and the chain's.
  const asof = $("#account-asof");
  const slot = chainSlot();
  asof.replaceChildren(`As of ${clock(new Date())}`);
  if (quote) asof.append(", quote at slot ", slotLink(quote.slot));
  if (slot) asof.append(quote ? " (chain " : ", slot ", slotLink(slot), quote ? ")" : "");
  asof.append(".");
  const table = $("#account-positions");
  fillRows(table, positions.map((p) => {
    const lp = p.liquidation_price;
    const tr = tableRow(table, [
      (td) => {
        const name = document.createElement("strong");
        name.textContent = p.symbol || short(p.pool_address);
        td.append(name, " ");
        addressCell(td.appendChild(document.createElement("span")), p.pool_address, { link: true, full: false });
        const account = accounts.get(p.pool_address);
        if (account) {
          const small = document.createElement("small");
          small.append("position ");
          addressCell(small.appendChild(document.createElement("span")), account, { link: true, full: false });
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
  const afloat = none || BigInt(hf) >= 10n ** 18n;
  const text = quote
    ? `Best quote: repay ${tokens(quote.repay_amount, quote.debt_pool)} (${usd(quote.repay_value_wad)}), ` +
      `seize ${tokens(quote.seize_amount, quote.collateral_pool)} (${usd(quote.seize_value_wad)}), profit ${usd(quote.profit_value_wad)}` +
      `${quote.oracle_stale ? " (on a stale oracle)" : ""}.`
    : afloat ? "Not liquidatable: the account health factor is at or above 1."
      : !quotes.ok ? "Under water; the quotes cannot be read now."
        : listed.length >= QUOTES_READ ? `Under water; its quote is not among the ${QUOTES_READ} most profitable.`
          : "Under water, but no pair qualifies for a quote.";
  $("#account-quote").replaceChildren(text, " ", oracleAges(positions.map((p) => p.pool_address)));
}
