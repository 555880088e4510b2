// The pools section: every registered pool (deposits and borrows in tokens
// and USD, utilization, APYs, LTV, liquidation threshold, oracle price with
// its confidence and age), the chain's state, and the pools on chain that are
// not registered, with a one-click registration signed by their authority.
"use strict";

const percentOfWad = (text, places = 1) => percent(Number(BigInt(text) / 10n ** 12n) / 1e6, places);

/** Token amount and its USD value, stacked. */
function amountCell(amount, pool, valueWad) {
  return (td) => {
    td.append(tokens(amount, pool));
    const small = document.createElement("small");
    small.textContent = usd(valueWad);
    td.append(small);
  };
}

/** A pool's Pyth feed (docs/design.md §17): its price, age and distance from
 *  the pool's own price, or what is wrong with it. */
function feedCell(td, feed) {
  state.feedsRead = feed != null;
  if (!feed) { td.textContent = "—"; td.title = "this service does not read feeds"; return; }
  if (feed.status === "unset") { td.textContent = "none named"; return; }
  if (feed.price != null) td.append(oraclePrice(feed.price, feed.exponent, feed.conf));
  const small = document.createElement("small");
  if (feed.publish_time != null) {
    const age = document.createElement("span");
    age.className = "oracle-age";
    age.dataset.updatedAt = String(feed.publish_time);
    age.textContent = ago(Date.now() / 1000 - feed.publish_time);
    small.append(age, " ");
  }
  const badge = document.createElement("span");
  if (feed.status !== "ok") {
    badge.className = "badge stale";
    badge.textContent = feed.status.replaceAll("_", " ");
    badge.title = "not usable: the pool is valued at its own price in both views";
  } else {
    badge.className = `badge ${feed.differs ? "stale" : "fresh"}`;
    const bps = feed.deviation_bps ?? 0;
    badge.textContent = feed.differs ? `${bps > 0 ? "+" : ""}${(bps / 100).toFixed(2)} %` : "cranked";
    badge.title = feed.differs
      ? "the pool's price lags its feed: crank UpdateOraclePrice (the feed view values it at the feed)"
      : "the pool's price is its feed's";
  }
  small.append(badge);
  td.append(small);
}

async function loadPools() {
  const table = $("#pools");
  if (!sources.get("pools")?.at) table.tBodies[0].replaceChildren(stateRow(table, "loading", "Loading pools…"));
  try {
    await tracked("pools", async () => {
      const [status, listed] = await Promise.all([loadTokens(), api("GET", "/api/pools")]);
      if (!listed.ok) throw failure(listed);
      state.pools = new Map(listed.data.pools.map((p) => [p.pool_address, p]));
      const rows = status.pools.map((p) => {
        const row = state.pools.get(p.pool_address) ?? {};
        const tr = tableRow(table, [
          (td) => {
            const name = document.createElement("strong");
            name.textContent = p.symbol ?? "—";
            td.append(name, " ");
            addressCell(td.appendChild(document.createElement("span")), p.pool_address, { link: true, full: false });
          },
          // The oracle second, its age and freshness under the price: whether
          // a pool can be trusted stays in view however wide the rest gets.
          (td) => {
            td.append(oraclePrice(p.oracle_price, p.oracle_expo, p.oracle_conf));
            const badge = document.createElement("span");
            badge.className = `badge ${p.oracle_stale ? "stale" : "fresh"}`;
            badge.textContent = p.oracle_stale ? "stale" : "fresh";
            badge.title = p.oracle_stale ? `older than ${state.maxOracleAge} s: quotes on it are flagged` : "";
            // Counted up in the browser from the on-chain update time.
            const age = document.createElement("span");
            age.className = "oracle-age";
            age.dataset.updatedAt = String(p.oracle_updated_at);
            age.textContent = ago(Date.now() / 1000 - p.oracle_updated_at);
            const small = document.createElement("small");
            small.append(age, " ", badge);
            td.append(small);
          },
          (td) => feedCell(td, p.feed),
          amountCell(p.total_deposits, p.pool_address, p.deposits_value_wad),
          amountCell(p.total_borrows, p.pool_address, p.borrows_value_wad),
          percentOfWad(p.utilization_wad),
          stacked(percent(p.supply_apy), `borrow ${percent(p.borrow_apy)}`),
          stacked(row.ltv_wad ? percentOfWad(row.ltv_wad, 0) : "—", `liq. ${percentOfWad(p.liquidation_threshold_wad, 0)}`),
        ]);
        tr.dataset.pool = p.pool_address;
        return tr;
      });
      fillRows(table, rows, "No pools registered yet: register one below, or with `lendex remote register-pool`.");
      // The pool a search named: marked, and focused once.
      const found = state.found && rows.find((tr) => tr.dataset.pool === state.found.pool);
      if (found) {
        found.classList.add("found");
        found.tabIndex = -1;
        if (state.found.focus) {
          state.found.focus = false;
          found.focus();
        }
      }
    });
  } catch (e) {
    if (!sources.get("pools")?.at) table.tBodies[0].replaceChildren(stateRow(table, "error", `Pools cannot be read: ${e.message}. Retrying.`));
  }
}
setInterval(() => {
  for (const el of document.querySelectorAll(".oracle-age")) el.textContent = ago(Date.now() / 1000 - Number(el.dataset.updatedAt));
}, 1000);

/** The chain's state, from /api/health (live.js reads it every 3 s). */
function showChainState(sync) {
  const badge = $("#chain-state");
  let text;
  let kind;
  if (!sync.enabled) [text, kind] = ["chain sync off", "off"];
  else if (sync.role !== "leader") [text, kind] = ["follower: another replica syncs", ""];
  else if (sync.stream.connected) [text, kind] = ["streaming from the chain", "live"];
  else [text, kind] = ["polling the chain (websocket down)", "stale"];
  const last = sync.lastRefreshAt ? `; last reconcile ${when(new Date(sync.lastRefreshAt))}` : "";
  badge.textContent = text;
  badge.title = `${text}${last}`;
  badge.className = `badge ${kind}`;
}

// ---- pools on chain, not registered ------------------------------------------------------
let unregistered = null;
async function loadUnregistered() {
  const table = $("#unregistered");
  const res = await api("GET", "/api/pools/unregistered");
  if (!res.ok) {
    table.tBodies[0].replaceChildren(stateRow(table, "error", `The chain cannot be read: ${failure(res).message}.`));
    return;
  }
  unregistered = res.data.pools;
  renderUnregistered();
}
/** The wallets sign-in works with, as said wherever sign-in is asked for. */
const WALLETS_THAT_WORK = "a browser wallet that signs messages through the Wallet Standard: Phantom, Solflare, Backpack";
function renderUnregistered() {
  const table = $("#unregistered");
  if (unregistered === null) return;
  const admin = state.role === "super_admin" || state.role === "pool_admin";
  const rows = unregistered.map((p) => tableRow(table, [
    (td) => addressCell(td, p.pool_address, { link: true, full: false }),
    (td) => addressCell(td, p.token_mint, { link: true, full: false }),
    (td) => addressCell(td, p.authority, { full: false }),
    oraclePrice(p.oracle_price, p.oracle_expo, null),
    (td) => {
      if (!admin) {
        // Two ways, both said: the authority's wallet here, or its keypair file.
        const line = document.createElement("code");
        line.textContent = `lendex remote --keypair <authority keypair> register-pool ${p.pool_address}`;
        td.append(`Its authority may register it: sign in with that wallet (${WALLETS_THAT_WORK}), or run `, line, ".");
        return;
      }
      if (p.authority !== state.account.address) {
        td.textContent = "another wallet's pool";
        return;
      }
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Register";
      button.setAttribute("aria-label", `Register ${p.pool_address}`);
      // Its symbol (and the init signature, when the chain cannot tell it) asked first.
      button.onclick = () => register(p.pool_address, "", undefined);
      td.append(button);
    },
  ]));
  fillRows(table, rows, "Every pool on chain is registered.");
}

/** Asks for what registering `pool` needs that the chain does not say: its
 *  symbol (optional) and, when `needSignature`, the init transaction's
 *  signature. Resolves {signature, symbol}, or null when cancelled. */
function askDetails(pool, needSignature) {
  const dialog = $("#ask-signature");
  const form = $("#ask-signature-form");
  $("#ask-signature-text").textContent = needSignature
    ? `The chain does not say which transaction created ${pool}. Its signature:`
    : `Register ${pool}.`;
  form.signature.value = "";
  form.symbol.value = "";
  form.signature.hidden = !needSignature;
  fieldError(form, null);
  return new Promise((resolve) => {
    const done = (value) => {
      form.onsubmit = $("#ask-signature-cancel").onclick = dialog.oncancel = null;
      dialog.close();
      resolve(value);
    };
    form.onsubmit = (event) => {
      event.preventDefault();
      const signature = form.signature.value.trim();
      if (needSignature && !/^[\x21-\x7e]{1,128}$/.test(signature)) {
        return fieldError(form, "Enter the transaction's signature.", form.signature);
      }
      const symbol = form.symbol.value.trim();
      if ([...symbol].length > 32 || /[\u0000-\u001f\u007f-\u009f]/.test(symbol)) {
        return fieldError(form, "A symbol is at most 32 characters, none of them control characters.", form.symbol);
      }
      done({ signature, symbol: symbol || null });
    };
    $("#ask-signature-cancel").onclick = () => done(null);
    dialog.oncancel = () => done(null);
    dialog.showModal();
    (needSignature ? form.signature : form.symbol).focus();
  });
}

/** Registers `pool`: the rest is read from the chain as the service reads
 *  it, and checked, before the wallet is asked to sign. Errors go to `form`. */
async function register(pool, initSignature, symbol, form = $("#register-pool")) {
  const read = await api("GET", `/api/pools/${pool}/chain`);
  if (!read.ok) return fieldError(form, `The pool cannot be read: ${failure(read).message}.`, form.pool_address);
  const onChain = read.data;
  if (onChain.authority !== state.account.address) {
    return fieldError(form, `Its on-chain authority is ${onChain.authority}, not this wallet.`, form.pool_address);
  }
  let signature = initSignature || onChain.init_signature;
  // From the unregistered list (symbol not asked yet), or a signature the chain lacks.
  if (symbol === undefined || !signature) {
    const details = await askDetails(pool, !signature);
    if (details === null) return;
    signature ||= details.signature;
    symbol = symbol ?? details.symbol;
  }
  if (!signature) return;
  const done = await act(`Register ${symbol ?? short(pool)}`, async () => {
    const auth = await signed(`init_pool:${onChain.token_mint}`);
    const res = await api("POST", "/api/pools/init", {
      ...auth, pool_address: pool, token_mint: onChain.token_mint, symbol, authority: onChain.authority,
      vault: onChain.vault, pool_bump: onChain.pool_bump, authority_bump: onChain.authority_bump,
      vault_bump: onChain.vault_bump, init_signature: signature,
    });
    if (!res.ok) throw failure(res);
    form.reset();
    await Promise.all([loadPools(), loadUnregistered()]);
    if (!$("#audit-section").hidden) await loadAudit();
  });
  if (!done) fieldError(form, $("#status").textContent);
}

$("#register-pool").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const pool = form.pool_address.value.trim();
  const initSignature = form.init_signature.value.trim();
  const symbol = form.symbol.value.trim() || null;
  if (!isPubkey(pool)) return fieldError(form, "Enter the pool's address (base58, 32 bytes).", form.pool_address);
  if (initSignature && !/^[\x21-\x7e]{1,128}$/.test(initSignature)) {
    return fieldError(form, "Enter the signature of the transaction that initialised the pool.", form.init_signature);
  }
  fieldError(form, null);
  await register(pool, initSignature, symbol, form);
});

views.set("pools", () => { loadPools(); loadUnregistered(); });
setInterval(() => { if (route().name === "pools") loadPools(); }, 10000);
