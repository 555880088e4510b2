// The admin sections: the allowlist (add, revoke after a confirmation), the
// pools panel (each pool's oracle, the chain's state, registration from two
// fields) and the audit log. Every signed action goes through `act` (one
// wallet prompt at a time) and is checked before the wallet is asked.
"use strict";

// ---- allowlist ---------------------------------------------------------------------
async function loadAllowlist() {
  const res = await api("GET", "/api/admin/allowlist");
  if (!res.ok) throw failure(res);
  const table = $("#allowlist");
  const rows = res.data.admins.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.pubkey = a.pubkey;
    addressCell(tr.insertCell(), a.pubkey);
    tr.insertCell().textContent = a.role;
    tr.insertCell().textContent = a.label ?? "";
    addressCell(tr.insertCell(), a.added_by, { full: false });
    const cell = tr.insertCell();
    if (state.role === "super_admin" && a.pubkey !== state.account.address) {
      const button = document.createElement("button");
      button.className = "secondary revoke";
      button.textContent = "Revoke";
      button.setAttribute("aria-label", `Revoke ${a.pubkey}`);
      button.onclick = () => revoke(a.pubkey, a.role);
      cell.append(button);
    }
    return tr;
  });
  $("#allowlist tbody").replaceChildren(...(rows.length ? rows : [emptyRow(table, "No active admins.")]));
}

/** Asks before a revoke; resolves true when confirmed. */
function confirmRevoke(pubkey, role) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = `Revoke ${pubkey} (${role})? It can no longer sign admin actions.`;
  return new Promise((resolve) => {
    const done = (answer) => {
      $("#confirm-ok").onclick = $("#confirm-cancel").onclick = dialog.oncancel = null;
      dialog.close();
      resolve(answer);
    };
    $("#confirm-ok").onclick = () => done(true);
    $("#confirm-cancel").onclick = () => done(false);
    dialog.oncancel = () => done(false);
    dialog.showModal();
  });
}

async function revoke(pubkey, role) {
  if (state.busy || !(await confirmRevoke(pubkey, role))) return;
  await act(`Revoke ${short(pubkey)}`, async () => {
    const auth = await signed(`revoke_admin:${pubkey}`);
    const res = await api("DELETE", "/api/admin/allowlist", { ...auth, pubkey });
    if (!res.ok) throw failure(res);
    await loadAllowlist();
    await loadAudit();
  });
}

$("#add-admin").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const pubkey = form.pubkey.value.trim();
  const role = form.role.value;
  const label = form.label.value.trim() || null;
  // Checked here first: the wallet is never asked to sign a call that must fail.
  if (!isPubkey(pubkey)) return fieldError(form, "Enter a wallet address (base58, 32 bytes).", form.pubkey);
  if (label && label.length > 256) return fieldError(form, "A label is at most 256 characters.", form.label);
  fieldError(form, null);
  const done = await act(`Add ${short(pubkey)} as ${role}`, async () => {
    const auth = await signed(`add_admin:${pubkey}:${role}`);
    const res = await api("POST", "/api/admin/allowlist", { ...auth, pubkey, role, label });
    if (!res.ok) throw failure(res);
    form.reset();
    await loadAllowlist();
    await loadAudit();
  });
  if (!done) fieldError(form, $("#status").textContent);
});

// ---- pools -----------------------------------------------------------------------------
/** "12 s ago", "3 min ago", ... */
function age(seconds) {
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} days ago`;
}
/** A price of `text` at `expo` as USD for reading. */
function price(text, expo) {
  if (text === null || expo === null) return "—";
  const v = Number(text) * 10 ** expo;
  return v.toLocaleString("en-US", { maximumSignificantDigits: 6 });
}

async function loadPools() {
  await loadTokens();
  const table = $("#pools");
  const rows = [...state.tokens.values()].map((p) => {
    const tr = document.createElement("tr");
    tr.dataset.pool = p.pool_address;
    tr.insertCell().textContent = p.symbol ?? "—";
    addressCell(tr.insertCell(), p.pool_address, { link: true, full: false });
    const priceCell = tr.insertCell();
    priceCell.className = "num";
    priceCell.textContent = price(p.oracle_price, p.oracle_expo);
    const updated = tr.insertCell();
    const badge = document.createElement("span");
    badge.className = `badge ${p.oracle_stale ? "stale" : "fresh"}`;
    badge.textContent = p.oracle_stale ? "stale" : "fresh";
    updated.append(`${age(p.oracle_age_seconds)} `, badge);
    return tr;
  });
  $("#pools tbody").replaceChildren(...(rows.length ? rows : [emptyRow(table, "No pools registered.")]));
  await loadChainState();
}

/** The chain's state, from /api/health: streaming, polling or off. */
async function loadChainState() {
  const res = await api("GET", "/api/health");
  if (!res.data || !res.data.checks) return;
  const sync = res.data.checks.sync;
  state.cluster = sync.cluster;
  const badge = $("#chain-state");
  let text;
  let kind;
  if (!sync.enabled) [text, kind] = ["chain sync off", "off"];
  else if (sync.role !== "leader") [text, kind] = ["follower: another replica syncs", ""];
  else if (sync.stream.connected) [text, kind] = ["streaming from the chain", "live"];
  else [text, kind] = ["polling the chain (websocket down)", "stale"];
  const last = sync.lastRefreshAt ? `; last reconcile ${when(new Date(sync.lastRefreshAt))}` : "";
  badge.textContent = `${sync.cluster}: ${text}`;
  badge.title = `${text}${last}`;
  badge.className = `badge ${kind}`;
}

$("#register-pool").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const pool = form.pool_address.value.trim();
  const initSignature = form.init_signature.value.trim();
  const symbol = form.symbol.value.trim() || null;
  if (!isPubkey(pool)) return fieldError(form, "Enter the pool's address (base58, 32 bytes).", form.pool_address);
  if (!/^[\x21-\x7e]{1,128}$/.test(initSignature)) {
    return fieldError(form, "Enter the signature of the transaction that initialised the pool.", form.init_signature);
  }
  fieldError(form, null);
  // The rest comes from the chain, as the service reads it, before any signature.
  const read = await api("GET", `/api/pools/${pool}/chain`);
  if (!read.ok) return fieldError(form, `The pool cannot be read: ${failure(read).message}.`, form.pool_address);
  const onChain = read.data;
  if (onChain.authority !== state.account.address) {
    return fieldError(form, `Its on-chain authority is ${onChain.authority}, not this wallet.`, form.pool_address);
  }
  const done = await act(`Register ${symbol ?? short(pool)}`, async () => {
    const auth = await signed(`init_pool:${onChain.token_mint}`);
    const res = await api("POST", "/api/pools/init", {
      ...auth, pool_address: pool, token_mint: onChain.token_mint, symbol, authority: onChain.authority,
      vault: onChain.vault, pool_bump: onChain.pool_bump, authority_bump: onChain.authority_bump,
      vault_bump: onChain.vault_bump, init_signature: initSignature,
    });
    if (!res.ok) throw failure(res);
    form.reset();
    await loadPools();
    await loadAudit();
  });
  if (!done) fieldError(form, $("#status").textContent);
});

// ---- audit ---------------------------------------------------------------------------
/** What an entry's details say, as `key=value` (what it would repeat is left out). */
function details(d) {
  if (!d || typeof d !== "object") return "";
  return Object.entries(d)
    .filter(([k, v]) => v !== null && !["slot", "init_signature", "token_mint"].includes(k))
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

async function loadAudit(headers) {
  const form = new FormData($("#audit-filter"));
  const query = new URLSearchParams();
  for (const key of ["actor", "action", "limit"]) {
    const value = String(form.get(key) ?? "").trim();
    if (value) query.set(key, value);
  }
  const path = `/api/admin/audit?${query}`;
  let res = await api("GET", path, null, headers);
  if (res.status === 403 && !headers) {
    // This cluster signs audit reads (mainnet): one more handshake.
    const auth = await signed("read_audit");
    res = await api("GET", path, null, { "x-actor": auth.actor, "x-nonce": auth.nonce, "x-signature": auth.signature });
  }
  if (!res.ok) throw failure(res);
  const table = $("#audit");
  const rows = res.data.entries.map((e) => {
    const tr = document.createElement("tr");
    tr.insertCell().textContent = when(new Date(e.created_at));
    // Short, so the details fit; the whole address is its title and copies.
    addressCell(tr.insertCell(), e.actor, { full: false });
    tr.insertCell().textContent = e.action;
    addressCell(tr.insertCell(), e.target, { full: false });
    const d = tr.insertCell();
    d.className = "details";
    d.textContent = details(e.details);
    return tr;
  });
  $("#audit tbody").replaceChildren(...(rows.length ? rows : [emptyRow(table, "No entries.")]));
}
$("#audit-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  loadAudit().then(clearStatus, (e) => show(`Audit read failed: ${e.message}`, "error"));
});

loadPools();
setInterval(loadPools, 15000);
