// The admin section: the allowlist (when each admin was added and their last
// action; add, revoke after a confirmation) and the audit log (an action
// picker, an actor, a date range, older pages by the API's limit, a CSV of
// what was read). Every signed action goes through `act` (one wallet prompt
// at a time) and is checked before the wallet is asked.
"use strict";

// ---- allowlist ---------------------------------------------------------------------
async function loadAllowlist() {
  const res = await api("GET", "/api/admin/allowlist");
  if (!res.ok) throw failure(res);
  const table = $("#allowlist");
  const rows = res.data.admins.map((a) => {
    const tr = tableRow(table, [
      (td) => addressCell(td, a.pubkey),
      a.role,
      a.label ?? "",
      (td) => { td.textContent = when(new Date(a.created_at)); td.title = `added by ${a.added_by}`; },
      "…",
      (td) => {
        if (state.role === "super_admin" && a.pubkey !== state.account.address) {
          const button = document.createElement("button");
          button.className = "secondary revoke";
          button.textContent = "Revoke";
          button.setAttribute("aria-label", `Revoke ${a.pubkey}`);
          button.onclick = () => revoke(a.pubkey, a.role);
          td.append(button);
        }
      },
    ]);
    tr.dataset.pubkey = a.pubkey;
    return tr;
  });
  fillRows(table, rows, "No active admins.");
  // Each admin's last action, from the audit log (one read each: admins are few).
  await Promise.all(res.data.admins.map(async (a, i) => {
    const last = await api("GET", `/api/admin/audit?actor=${a.pubkey}&limit=1`, null, state.auditHeaders);
    const cell = rows[i].cells[4];
    const entry = last.ok ? last.data.entries[0] : null;
    cell.textContent = entry ? `${entry.action}, ${when(new Date(entry.created_at))}` : last.ok ? "none yet" : "—";
  }));
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

// ---- audit ---------------------------------------------------------------------------
/** What an entry's details say, as `key=value` (what it would repeat is left out). */
function details(d) {
  if (!d || typeof d !== "object") return "";
  return Object.entries(d)
    .filter(([k, v]) => v !== null && !["slot", "init_signature", "token_mint"].includes(k))
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

/** The entries read so far (the CSV holds these), and where the next page starts. */
const audit = { entries: [], before: null };

function auditQuery(before) {
  const form = new FormData($("#audit-filter"));
  const query = new URLSearchParams({ limit: "200" });
  for (const key of ["actor", "action"]) {
    const value = String(form.get(key) ?? "").trim();
    if (value) query.set(key, value);
  }
  // Dates are whole UTC days: `to` includes its day.
  const from = String(form.get("from") ?? "");
  const to = String(form.get("to") ?? "");
  if (from) query.set("from", `${from}T00:00:00Z`);
  if (to) query.set("to", new Date(Date.parse(`${to}T00:00:00Z`) + 86400000).toISOString());
  if (before) query.set("before", String(before));
  return query;
}

async function loadAudit(headers, { more = false } = {}) {
  if (headers) state.auditHeaders = headers;
  const path = `/api/admin/audit?${auditQuery(more ? audit.before : null)}`;
  let res = await api("GET", path, null, state.auditHeaders);
  if (res.status === 403) {
    // This cluster signs audit reads (mainnet): one more handshake.
    const auth = await signed("read_audit");
    state.auditHeaders = { "x-actor": auth.actor, "x-nonce": auth.nonce, "x-signature": auth.signature };
    res = await api("GET", path, null, state.auditHeaders);
  }
  if (!res.ok) throw failure(res);
  const entries = res.data.entries;
  audit.entries = more ? audit.entries.concat(entries) : entries;
  audit.before = entries.length === 200 ? entries[entries.length - 1].id : null;
  const table = $("#audit");
  const rows = audit.entries.map((e) => tableRow(table, [
    when(new Date(e.created_at)),
    (td) => addressCell(td, e.actor, { full: false }),
    e.action,
    (td) => addressCell(td, e.target, { full: false }),
    (td) => { td.className = "details"; td.textContent = details(e.details); },
  ]));
  fillRows(table, rows, "No entries.");
  $("#audit-more").hidden = audit.before === null;
}
$("#audit-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target;
  const [from, to] = [form.from.value, form.to.value];
  if (from && to && from > to) return fieldError(form, "The range ends before it starts.", form.to);
  fieldError(form, null);
  loadAudit().catch((e) => fieldError(form, `The audit log cannot be read: ${e.message}`));
});
$("#audit-more").addEventListener("click", () => {
  loadAudit(undefined, { more: true }).catch((e) => fieldError($("#audit-filter"), e.message));
});

/** A CSV cell: quoted, its quotes doubled. */
const csvCell = (value) => `"${String(value ?? "").replaceAll('"', '""')}"`;
$("#audit-csv").addEventListener("click", () => {
  // created_at as the service wrote it (UTC, for machines), then in the page's clock.
  const head = ["id", "created_at", "actor", "action", "target", "details", `time (${zoneName()})`];
  const lines = [head.map((h) => (h.includes(" ") ? csvCell(h) : h)).join(",")].concat(audit.entries.map((e) =>
    [e.id, e.created_at, e.actor, e.action, e.target, JSON.stringify(e.details ?? {}), when(new Date(e.created_at))].map(csvCell).join(",")));
  const blob = new Blob([`${lines.join("\r\n")}\r\n`], { type: "text/csv" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = `lendex-audit-${new Date().toISOString().slice(0, 10)}.csv`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});

views.set("admin", () => {});
