// Lendex console: plain JavaScript, no build step, no CDN (served from the
// binary). This file: helpers, the one money format, messages, HTTP with a
// deadline, the sections and their bookmarkable URLs, the wallet (found
// through the Wallet Standard events), sign-in and sign-out, and the signed
// nonce handshake of docs/design.md §5 (solana:signMessage) with one prompt at a time.
// chart.js draws; live.js keeps every figure's freshness and the overview;
// pools.js, feed.js, risk.js, history.js and admin.js are the sections.
// The page holds no key and no session of its own.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = {
  wallets: [], wallet: null, account: null, role: null, busy: false,
  cluster: null, explorerQuery: "", tokens: new Map(), pools: new Map(),
};

// ---- base58 (Bitcoin alphabet, as Solana) ------------------------------------
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
function base58(bytes) {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const digits = [];
  for (const byte of bytes) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i] << 8;
      digits[i] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry) { digits.push(carry % 58); carry = (carry / 58) | 0; }
  }
  return "1".repeat(zeros) + digits.reverse().map((d) => ALPHABET[d]).join("");
}
/** The bytes of a base58 text, or null when it is not base58. */
function unbase58(text) {
  const bytes = [];
  for (const ch of text) {
    let carry = ALPHABET.indexOf(ch);
    if (carry < 0) return null;
    for (let i = 0; i < bytes.length; i++) {
      carry += bytes[i] * 58;
      bytes[i] = carry & 0xff;
      carry >>= 8;
    }
    while (carry) { bytes.push(carry & 0xff); carry >>= 8; }
  }
  for (const ch of text) { if (ch !== "1") break; bytes.push(0); }
  return Uint8Array.from(bytes.reverse());
}
/** A Solana address: base58 of exactly 32 bytes. */
const isPubkey = (text) => /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(text) && unbase58(text)?.length === 32;

// ---- messages ----------------------------------------------------------------
/** The page's status line: ok, error, info (not a failure), pending. A
 *  success or a note goes away after a while; an error stays until the next. */
let statusTimer = null;
function show(text, kind) {
  const el = $("#status");
  el.textContent = text;
  el.className = kind;
  el.hidden = false;
  clearTimeout(statusTimer);
  if (kind === "ok" || kind === "info") statusTimer = setTimeout(clearStatus, 10000);
}
function clearStatus() { $("#status").hidden = true; }
/** An error shown under its form's fields (cleared with null). */
function fieldError(form, text, input) {
  const el = form.querySelector(".field-error");
  el.textContent = text ?? "";
  el.hidden = !text;
  for (const field of form.querySelectorAll("input")) field.removeAttribute("aria-invalid");
  if (text && input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
}
const WAD = 10n ** 18n;
/** A WAD decimal string, cut (never rounded) to `places`. */
function wad(text, places = 4) {
  if (text === null || text === undefined) return "";
  const v = BigInt(text);
  if (v >= 10n ** 30n) return "∞";
  return `${v / WAD}.${(v % WAD).toString().padStart(18, "0").slice(0, places)}`;
}
const short = (key) => (key && key.length > 12 ? `${key.slice(0, 4)}…${key.slice(-4)}` : key ?? "");

// ---- the one money format ------------------------------------------------------
/** A WAD USD value (a decimal string) as a Number of dollars, for drawing only. */
const dollars = (text) => (text === null || text === undefined ? 0 : Number(BigInt(text) / 10n ** 12n) / 1e6);
/** A WAD USD value as `$1,234.56` (cut to cents, never rounded up); `compact`
 *  from a million as `$1.23M`: two decimals either way, so cards side by side
 *  read alike ($9.70M beside $10.03M, not $9.7M). */
function usd(text, { compact = false } = {}) {
  if (text === null || text === undefined) return "—";
  const v = BigInt(text);
  if (compact && v >= 10n ** 24n) return usdCompactNumber(dollars(text));
  const cents = v / 10n ** 16n;
  const whole = (cents / 100n).toLocaleString("en-US");
  return `$${whole}.${(cents % 100n).toString().padStart(2, "0")}`;
}
/** Dollars (a Number) in the same format. */
const usdNumber = (v) => `$${v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
/** The same, from a million as `$1.23M`. */
const usdCompactNumber = (v) => (Math.abs(v) < 1e6 ? usdNumber(v)
  : `$${v.toLocaleString("en-US", { notation: "compact", minimumFractionDigits: 2, maximumFractionDigits: 2 })}`);
/** A count with thousands separators. */
const count = (n) => Number(n).toLocaleString("en-US");
/** A fraction as a percent: 0.0512 → 5.12%. */
const percent = (f, places = 2) => `${(f * 100).toFixed(places)}%`;
/** A health factor (WAD string) as a Number for charts; no debt (u128 max) is Infinity. */
const hfNumber = (text) => (BigInt(text) >= 10n ** 30n ? Infinity : Number(BigInt(text) / 10n ** 9n) / 1e9);
/** An oracle price (i64 text) at its exponent, with its confidence: `$1.0002 ± 0.0001`. */
function oraclePrice(price, expo, conf) {
  if (price === null || price === undefined || expo === null || expo === undefined) return "—";
  const v = Number(price) * 10 ** expo;
  const text = `$${v.toLocaleString("en-US", { maximumSignificantDigits: 6 })}`;
  if (!conf || conf === "0") return text;
  return `${text} ± ${(Number(conf) * 10 ** expo).toLocaleString("en-US", { maximumSignificantDigits: 3 })}`;
}
// ---- one clock ---------------------------------------------------------------------------
/** Every time on the page (tables, charts, tooltips, the audit CSV) is in one
 *  zone: UTC by default (what chains, logs and other operators use), or the
 *  browser's, switched in the header and remembered. */
const CLOCK_KEY = "lendex.clock";
const clockZone = () => (localStorage.getItem(CLOCK_KEY) === "local" ? undefined : "UTC");
/** The zone's short name: "UTC", "GMT-5", "CET", ... */
const zoneName = () => new Intl.DateTimeFormat(undefined, { timeZone: clockZone(), timeZoneName: "short" })
  .formatToParts(new Date()).find((p) => p.type === "timeZoneName")?.value ?? "UTC";
/** A time with its zone, in the reader's locale. */
const when = (date) => date.toLocaleString(undefined, { timeZone: clockZone(), timeZoneName: "short" });
/** A time of day for "since …" (with seconds). */
const clock = (date) => date.toLocaleTimeString(undefined, { hour12: false, timeZone: clockZone() });
/** The time axis's label. */
const timeAxisLabel = () => `time (${zoneName()})`;
function showClock() {
  const button = document.getElementById("clock");
  button.textContent = `Times: ${zoneName()}`;
  button.setAttribute("aria-pressed", String(clockZone() === undefined));
  button.title = clockZone() ? "Times are in UTC: switch to this browser's zone" : "Times are in this browser's zone: switch to UTC";
}
document.getElementById("clock").addEventListener("click", () => {
  localStorage.setItem(CLOCK_KEY, clockZone() ? "local" : "utc");
  showClock();
  // Drawn again in the new zone: the section shown, and the ages.
  showView();
  tickAges();
});
showClock();
/** "12 s ago", "3 min ago", ... */
function ago(seconds) {
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} days ago`;
}

/** A value with a second one under it. */
function stacked(top, below) {
  return (td) => {
    const small = document.createElement("small");
    small.textContent = below;
    td.append(top, small);
  };
}

/** When an answer was read, and the chain's slot then: prices move. */
function asOf() {
  const slot = chainSlot();
  return `As of ${clock(new Date())}${slot ? `, slot ${count(slot)}` : ""}.`;
}
/** The chain's slot as the overview shows it (the RPC's, from /api/health), or null. */
function chainSlot() {
  const rpc = link.health?.checks?.rpc;
  return rpc?.ok ? rpc.slot : null;
}

/** A cell holding a full address that can be copied (and, with `link`, opened in the explorer). */
function addressCell(td, address, { link = false, full = true } = {}) {
  td.className = "key";
  const text = document.createElement(link ? "a" : "code");
  text.textContent = full ? address : short(address);
  text.title = address;
  if (link) {
    text.href = explorer(address);
    text.target = "_blank";
    text.rel = "noopener noreferrer";
    text.setAttribute("aria-label", `${address} in the Solana explorer`);
  }
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "copy";
  copy.textContent = "copy";
  copy.setAttribute("aria-label", `Copy ${address}`);
  copy.onclick = async () => {
    try { await navigator.clipboard.writeText(address); copy.textContent = "copied"; }
    catch (_) { copy.textContent = "select it"; }
    setTimeout(() => { copy.textContent = "copy"; }, 1500);
  };
  td.replaceChildren(text, copy);
  return td;
}
/** The explorer's page of an address on this service's cluster (a local
 *  chain through its customUrl, as the service says). */
/** A slot on the explorer, on the cluster this service indexes. */
const explorerSlot = (slot) => `https://explorer.solana.com/block/${slot}${state.explorerQuery}`;
function explorer(address) {
  return `https://explorer.solana.com/address/${address}${state.explorerQuery}`;
}
/** A table's one row saying what it holds instead of rows: `loading`,
 *  `empty` or `error` (each looks different and says which). */
function stateRow(table, kind, text) {
  const tr = document.createElement("tr");
  tr.className = `state-row ${kind}`;
  const td = tr.insertCell();
  td.colSpan = table.tHead.rows[0].cells.length;
  td.textContent = text;
  return tr;
}
const emptyRow = (table, text) => stateRow(table, "empty", text);
/** Shows `rows`, or the table's state when there are none. */
function fillRows(table, rows, emptyText) {
  table.tBodies[0].replaceChildren(...(rows.length ? rows : [emptyRow(table, emptyText)]));
}
/** A row of cells, each labelled with its column (the narrow layout shows the label). */
function tableRow(table, cells) {
  const tr = document.createElement("tr");
  const heads = [...table.tHead.rows[0].cells];
  cells.forEach((cell, i) => {
    const td = tr.insertCell();
    // A header's second line (its <small>) joins the label after a comma.
    const head = heads[i];
    td.dataset.label = head ? [...head.childNodes].map((n) => n.textContent.trim()).filter(Boolean).join(", ") : "";
    if (heads[i]?.classList.contains("num")) td.classList.add("num");
    if (typeof cell === "function") cell(td);
    else if (cell instanceof Node) td.append(cell);
    else td.textContent = cell ?? "";
  });
  return tr;
}

// ---- HTTP --------------------------------------------------------------------
/** A request with a deadline (a paused server must not leave the page
 *  waiting): never rejects; an unreachable service is status 0. */
async function api(method, path, body, headers = {}, deadlineMs = 8000) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), deadlineMs);
  try {
    const res = await fetch(path, {
      method,
      headers: body ? { "content-type": "application/json", ...headers } : headers,
      body: body ? JSON.stringify(body) : undefined,
      signal: abort.signal,
    });
    let data = null;
    try { data = await res.json(); } catch (_) { /* empty body (a 304) */ }
    return { ok: res.ok, status: res.status, data, etag: res.headers.get("etag") };
  } catch (e) {
    const timedOut = e.name === "AbortError";
    return { ok: false, status: 0, data: { error: timedOut ? "no answer in time" : "the service cannot be reached" } };
  } finally {
    clearTimeout(timer);
  }
}
function failure(res) {
  return new Error(res.data && res.data.error ? res.data.error : `HTTP ${res.status}`);
}

// ---- sections and their URLs ---------------------------------------------------------
/** Each section's show function (registered by its file), called when shown. */
const views = new Map();
/** The section and parameters the URL names: `#/wallet?owner=…&range=7d`. */
function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const name = views.has(path) ? path : "market";
  return { name, params: new URLSearchParams(query ?? "") };
}
function showView() {
  const { name, params } = route();
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${name}`;
  for (const tab of document.querySelectorAll("#tabs a")) {
    if (tab.dataset.view === name) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  views.get(name)?.(params);
}
/** Rewrites the URL's parameters of the section shown (bookmarkable), without a reload. */
function setParams(params) {
  const { name } = route();
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined)).toString();
  history.replaceState(null, "", `#/${name}${query ? `?${query}` : ""}`);
}
window.addEventListener("hashchange", showView);
// The skip link moves focus past the header and tabs; the hash is the route,
// so it must not change.
document.querySelector(".skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  document.getElementById("main").focus();
});

// ---- one wallet prompt at a time -------------------------------------------------
/** While a wallet prompt is open every action button is disabled. */
function setBusy(on) {
  state.busy = on;
  for (const button of document.querySelectorAll("main button, header button")) {
    if (on) {
      button.dataset.wasDisabled = String(button.disabled);
      button.disabled = true;
    } else if (button.dataset.wasDisabled !== undefined) {
      button.disabled = button.dataset.wasDisabled === "true";
      delete button.dataset.wasDisabled;
    }
  }
}
/** Runs an action that asks the wallet to sign; a second click meanwhile does nothing. */
async function act(label, run) {
  if (state.busy) return false;
  setBusy(true);
  try {
    await run();
    show(`${label}: done.`, "ok");
    // An error shown before is over once something succeeds.
    for (const form of document.querySelectorAll("form:has(.field-error)")) fieldError(form, null);
    return true;
  } catch (e) {
    show(`${label} failed: ${e.message}`, "error");
    return false;
  } finally {
    setBusy(false);
  }
}

/** Steps 1-2 of the handshake: a nonce for `action`, signed by the wallet. */
async function signed(action) {
  const actor = state.account.address;
  const issued = await api("POST", "/api/auth/nonce", { pubkey: actor, action });
  if (!issued.ok) throw failure(issued);
  const { nonce, message } = issued.data;
  // Sign only the canonical message for what we asked (never what a server says).
  const expected = `Service admin auth\nAction: ${action}\nNonce: ${nonce}`;
  if (message !== expected) throw new Error("the server's message is not the canonical one; not signing");
  const feature = state.wallet.features["solana:signMessage"];
  show("Approve in your wallet…", "pending");
  const [out] = await feature.signMessage({ account: state.account, message: new TextEncoder().encode(expected) });
  show("Sent; waiting for the service…", "pending");
  return { actor, nonce, signature: base58(out.signature) };
}

// ---- Wallet Standard discovery -------------------------------------------------
function usable(wallet) {
  return wallet.features && wallet.features["standard:connect"] && wallet.features["solana:signMessage"];
}
function register(...wallets) {
  for (const wallet of wallets) {
    if (usable(wallet) && !state.wallets.includes(wallet)) state.wallets.push(wallet);
  }
  const list = $("#wallet-list");
  list.replaceChildren(...state.wallets.map((w, i) => new Option(w.name, String(i))));
  if (!state.wallets.length) list.append(new Option("No wallet found", ""));
  // Which wallets work, on hover and for screen readers beside the greyed button.
  const help = state.wallets.length ? "" : "Sign-in needs a browser wallet that signs messages through the Wallet Standard (Phantom, Solflare, Backpack).";
  list.title = help;
  $("#connect").title = help;
  $("#connect").disabled = !state.wallets.length || state.busy;
  return () => {};
}
window.addEventListener("wallet-standard:register-wallet", (event) => event.detail({ register }));
window.dispatchEvent(new CustomEvent("wallet-standard:app-ready", { detail: { register } }));

// ---- sign-in and sign-out ------------------------------------------------------------
/** Back to a signed-out page: no account, no role, no admin sections. */
function signedOut() {
  Object.assign(state, { wallet: null, account: null, role: null });
  $("#account").hidden = true;
  $("#role").hidden = true;
  $("#sign-out").hidden = true;
  $("#connect").textContent = "Sign in";
  for (const id of ["#allowlist-section", "#audit-section"]) $(id).hidden = true;
  $("#intro").hidden = false;
  for (const el of document.querySelectorAll(".super-only, .admin-only")) el.hidden = true;
  if (typeof renderUnregistered === "function") renderUnregistered();
  $("#allowlist tbody").replaceChildren();
  $("#audit tbody").replaceChildren();
}
async function signIn() {
  if (state.busy) return;
  setBusy(true);
  try {
    state.wallet = state.wallets[Number($("#wallet-list").value || 0)];
    show("Approve the connection in your wallet…", "pending");
    const { accounts } = await state.wallet.features["standard:connect"].connect();
    if (!accounts.length) throw new Error("the wallet shared no account");
    state.account = accounts[0];
    const me = await api("GET", `/api/admin/me?pubkey=${state.account.address}`);
    if (!me.ok) throw failure(me);
    state.role = me.data.role;
    const admin = state.role === "super_admin" || state.role === "pool_admin";
    if (admin) {
      // The sign-in is a handshake: the wallet signs a read of the audit log.
      const auth = await signed("read_audit");
      await loadAudit({ "x-actor": auth.actor, "x-nonce": auth.nonce, "x-signature": auth.signature });
      await loadAllowlist();
    }
    $("#account").textContent = short(state.account.address);
    $("#account").title = state.account.address;
    $("#account").hidden = false;
    $("#role").textContent = state.role ?? "not an admin";
    $("#role").hidden = false;
    $("#connect").textContent = "Switch wallet";
    $("#sign-out").hidden = false;
    for (const id of ["#allowlist-section", "#audit-section"]) $(id).hidden = !admin;
    $("#intro").hidden = admin;
    for (const el of document.querySelectorAll(".admin-only")) el.hidden = !admin;
    for (const el of document.querySelectorAll(".super-only")) el.hidden = state.role !== "super_admin";
    renderUnregistered();
    if (admin) show(`Signed in as ${state.role}.`, "ok");
    else show("This wallet is not an active admin: everything but the admin section is shown.", "info");
  } catch (e) {
    signedOut();
    show(`Sign-in failed: ${e.message}`, "error");
  } finally {
    setBusy(false);
  }
}
$("#connect").addEventListener("click", signIn);
$("#sign-out").addEventListener("click", () => { signedOut(); show("Signed out.", "info"); });

// ---- the cluster and the pools' tokens (symbols and decimals) ---------------------------
async function loadTokens() {
  const res = await api("GET", "/api/pools/status");
  if (!res.ok) throw failure(res);
  state.tokens = new Map(res.data.pools.map((p) => [p.pool_address, p]));
  state.maxOracleAge = res.data.max_oracle_age_seconds;
  state.cluster = res.data.cluster;
  state.explorerQuery = res.data.explorer_query;
  $("#cluster").textContent = res.data.cluster;
  for (const select of document.querySelectorAll(".pool-filter, #feed-controls select[name=pool]")) {
    // What was chosen, or what the URL asked for before the list came.
    const chosen = select.value || select.dataset.wanted || "";
    select.replaceChildren(new Option("any", ""), ...[...state.tokens.values()].map(poolOption));
    select.value = chosen;
    if (select.value === chosen) delete select.dataset.wanted;
  }
  return res.data;
}
/** A pool as a picker's option (a pool status row): a pool whose oracle is
 *  stale is offered marked, wherever it is offered. */
function poolOption(p) {
  const name = p.symbol || short(p.pool_address);
  return new Option(p.oracle_stale ? `${name} (oracle stale)` : name, p.pool_address);
}
/** A token amount in base units as `1,234.5678 SOL`, cut to 4 places. */
function tokens(amount, pool) {
  const token = state.tokens.get(pool);
  if (!token) return `${amount} · ${short(pool)}`;
  const digits = BigInt(amount).toString().padStart(token.decimals + 1, "0");
  const whole = digits.slice(0, digits.length - token.decimals) || "0";
  const frac = digits.slice(digits.length - token.decimals).slice(0, 4).replace(/0+$/, "");
  return `${BigInt(whole).toLocaleString("en-US")}${frac ? `.${frac}` : ""} ${token.symbol ?? short(pool)}`;
}
const symbolOf = (pool) => state.tokens.get(pool)?.symbol ?? short(pool);
/** A token amount's value at its pool's oracle price, in the one money format
 *  (a display figure: the service's exact values are WAD sums). */
function tokenValue(amount, pool) {
  const token = state.tokens.get(pool);
  if (!token || token.oracle_price === null) return "—";
  return usdNumber((Number(amount) / 10 ** token.decimals) * Number(token.oracle_price) * 10 ** token.oracle_expo);
}
