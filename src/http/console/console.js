// Lendex admin console: plain JavaScript, no build step, no CDN (served from the
// binary). Wallets are found through the Wallet Standard events; every admin
// action is the signed nonce handshake of spec §5, signed by the wallet
// (solana:signMessage). The page holds no key and no session of its own.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { wallets: [], wallet: null, account: null, role: null };

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

// ---- messages ----------------------------------------------------------------
function show(text, kind) {
  const el = $("#status");
  el.textContent = text;
  el.className = kind;
  el.hidden = false;
}
const WAD = 10n ** 18n;
function wad(text, places = 4) {
  if (text === null || text === undefined) return "";
  const v = BigInt(text);
  if (v >= 10n ** 30n) return "∞";
  return `${v / WAD}.${(v % WAD).toString().padStart(18, "0").slice(0, places)}`;
}
const short = (key) => (key && key.length > 12 ? `${key.slice(0, 4)}…${key.slice(-4)}` : key ?? "");

// ---- HTTP --------------------------------------------------------------------
async function api(method, path, body, headers = {}) {
  const res = await fetch(path, {
    method,
    headers: body ? { "content-type": "application/json", ...headers } : headers,
    body: body ? JSON.stringify(body) : undefined,
  });
  let data = null;
  try { data = await res.json(); } catch (_) { /* empty body */ }
  return { ok: res.ok, status: res.status, data };
}
function failure(res) {
  return new Error(res.data && res.data.error ? res.data.error : `HTTP ${res.status}`);
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
  const [out] = await feature.signMessage({ account: state.account, message: new TextEncoder().encode(expected) });
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
  $("#connect").disabled = !state.wallets.length;
  return () => {};
}
window.addEventListener("wallet-standard:register-wallet", (event) => event.detail({ register }));
window.dispatchEvent(new CustomEvent("wallet-standard:app-ready", { detail: { register } }));

// ---- sign-in -------------------------------------------------------------------
async function signIn() {
  try {
    state.wallet = state.wallets[Number($("#wallet-list").value || 0)];
    const { accounts } = await state.wallet.features["standard:connect"].connect();
    if (!accounts.length) throw new Error("the wallet shared no account");
    state.account = accounts[0];
    const me = await api("GET", `/api/admin/me?pubkey=${state.account.address}`);
    if (!me.ok) throw failure(me);
    state.role = me.data.role;
    $("#account").textContent = short(state.account.address);
    $("#account").title = state.account.address;
    $("#account").hidden = false;
    $("#role").textContent = state.role ?? "not an admin";
    $("#role").hidden = false;
    $("#connect").textContent = "Switch wallet";
    const admin = state.role === "super_admin" || state.role === "pool_admin";
    for (const id of ["#allowlist-section", "#pool-section", "#audit-section"]) $(id).hidden = !admin;
    for (const el of document.querySelectorAll(".super-only")) el.hidden = state.role !== "super_admin";
    if (!admin) {
      show("This wallet is not an active admin: only the live feed is shown.", "error");
      return;
    }
    // The sign-in is a handshake: the wallet signs a read of the audit log.
    const auth = await signed("read_audit");
    await loadAudit({ "x-actor": auth.actor, "x-nonce": auth.nonce, "x-signature": auth.signature });
    await loadAllowlist();
    show(`Signed in as ${state.role}.`, "ok");
  } catch (e) {
    show(`Sign-in failed: ${e.message}`, "error");
  }
}

// ---- allowlist ---------------------------------------------------------------------
async function loadAllowlist() {
  const res = await api("GET", "/api/admin/allowlist");
  if (!res.ok) throw failure(res);
  const rows = res.data.admins.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.pubkey = a.pubkey;
    for (const [text, cls] of [[a.pubkey, "key"], [a.role], [a.label ?? ""], [short(a.added_by), "key"]]) {
      const td = tr.insertCell();
      td.textContent = text;
      if (cls) td.className = cls;
    }
    const cell = tr.insertCell();
    if (state.role === "super_admin" && a.pubkey !== state.account.address) {
      const button = document.createElement("button");
      button.className = "secondary revoke";
      button.textContent = "Revoke";
      button.onclick = () => revoke(a.pubkey);
      cell.append(button);
    }
    return tr;
  });
  $("#allowlist tbody").replaceChildren(...rows);
}

async function act(label, run) {
  try {
    await run();
    show(`${label}: done.`, "ok");
  } catch (e) {
    show(`${label} failed: ${e.message}`, "error");
  }
}

function revoke(pubkey) {
  return act(`Revoke ${short(pubkey)}`, async () => {
    const auth = await signed(`revoke_admin:${pubkey}`);
    const res = await api("DELETE", "/api/admin/allowlist", { ...auth, pubkey });
    if (!res.ok) throw failure(res);
    await loadAllowlist();
    await loadAudit();
  });
}

$("#add-admin").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const pubkey = form.get("pubkey").trim();
  const role = form.get("role");
  const label = form.get("label").trim() || null;
  act(`Add ${short(pubkey)}`, async () => {
    const auth = await signed(`add_admin:${pubkey}:${role}`);
    const res = await api("POST", "/api/admin/allowlist", { ...auth, pubkey, role, label });
    if (!res.ok) throw failure(res);
    event.target.reset();
    await loadAllowlist();
    await loadAudit();
  });
});

// ---- pools ---------------------------------------------------------------------------
$("#register-pool").addEventListener("submit", (event) => {
  event.preventDefault();
  const f = Object.fromEntries(new FormData(event.target));
  const body = {
    pool_address: f.pool_address.trim(), token_mint: f.token_mint.trim(), symbol: f.symbol.trim() || null,
    authority: state.account.address, vault: f.vault.trim(), pool_bump: Number(f.pool_bump),
    authority_bump: Number(f.authority_bump), vault_bump: Number(f.vault_bump), init_signature: f.init_signature.trim(),
  };
  act(`Register ${short(body.pool_address)}`, async () => {
    const auth = await signed(`init_pool:${body.token_mint}`);
    const res = await api("POST", "/api/pools/init", { ...auth, ...body });
    if (!res.ok) throw failure(res);
    await loadAudit();
  });
});

// ---- audit ---------------------------------------------------------------------------
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
  const rows = res.data.entries.map((e) => {
    const tr = document.createElement("tr");
    for (const [text, cls] of [[new Date(e.created_at).toLocaleString()], [short(e.actor), "key"], [e.action], [e.target, "key"]]) {
      const td = tr.insertCell();
      td.textContent = text;
      if (cls) td.className = cls;
    }
    return tr;
  });
  $("#audit tbody").replaceChildren(...rows);
}
$("#audit-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  loadAudit().catch((e) => show(`Audit read failed: ${e.message}`, "error"));
});

// ---- live feed ----------------------------------------------------------------------
const feedRows = new Map();
function feedRow(data) {
  let tr = feedRows.get(data.owner);
  if (!tr) {
    tr = document.createElement("tr");
    tr.className = "under";
    tr.dataset.owner = data.owner;
    for (let i = 0; i < 5; i++) tr.insertCell();
    tr.cells[0].className = "key";
    tr.cells[0].textContent = data.owner;
    tr.cells[1].className = "hf";
    feedRows.set(data.owner, tr);
  }
  tr.cells[1].textContent = wad(data.account_health_factor_wad);
  const q = data.liquidation;
  tr.cells[2].textContent = q ? `${q.repay_amount} · ${short(q.debt_pool)}` : "";
  tr.cells[3].textContent = q ? `${q.seize_amount} · ${short(q.collateral_pool)}` : "";
  tr.cells[4].textContent = q ? wad(q.profit_value_wad, 2) : "";
  return tr;
}
function renderFeed() {
  const rows = [...feedRows.values()].sort((a, b) => {
    const [x, y] = [a.cells[1].textContent, b.cells[1].textContent].map(Number);
    return x - y;
  });
  $("#feed tbody").replaceChildren(...rows);
  $("#feed-empty").hidden = rows.length > 0;
}
let pending = false;
function schedule() {
  // A price move can bring thousands of events: render once per frame.
  if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; renderFeed(); }); }
}
function openFeed() {
  feedRows.clear();
  const source = new EventSource("/api/positions/unhealthy/stream");
  const update = (event) => { feedRow(JSON.parse(event.data)); schedule(); };
  source.addEventListener("candidate_start", update);
  source.addEventListener("candidate_update", update);
  source.addEventListener("candidate_stop", (event) => { feedRows.delete(JSON.parse(event.data).owner); schedule(); });
  // The browser reconnects on its own with the last event's id: the service
  // replays what was missed, so the rows stay. Only when it cannot (it
  // restarted, another replica answered, too much was missed) does `reset`
  // come first, and the snapshot after it rebuilds the rows.
  source.addEventListener("reset", () => { feedRows.clear(); schedule(); });
  // Fell behind: the stream ends and the reconnect resumes (or resets).
  source.addEventListener("resync", () => { $("#feed-state").textContent = "catching up"; });
  source.onopen = () => { $("#feed-state").textContent = "live"; };
  source.onerror = () => {
    $("#feed-state").textContent = "reconnecting";
    // Refused (429 past the stream caps, 503 while loading): the browser gives
    // this source up, so start over (a snapshot) a little later.
    if (source.readyState === EventSource.CLOSED) setTimeout(openFeed, 2000);
  };
}

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

$("#connect").addEventListener("click", signIn);
loadRiskPools();
openFeed();
renderFeed();
