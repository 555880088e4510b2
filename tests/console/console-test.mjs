// The admin console in a real browser: Debian's chromium, driven by
// playwright-core, with two test wallets registered through the Wallet
// Standard before the page loads (they sign with real ed25519 keys, tweetnacl).
// Run by tests/api/console_browser.rs, which starts the service and the chain:
//   LENDEX_URL, ROOT_SECRET and POOL_ADMIN_SECRET (JSON arrays of 64-byte keys),
//   CHROMIUM (executable), SHOTS (screenshot folder), OWNER (who will sink),
//   SHOCKED, SOL, UNREGISTERED (a pool on chain whose authority is the root).
// It prints READY_FOR_PRICE and waits for a line on stdin (the price change has
// been made), then READY_FOR_DROP and waits again (the harness cut the page's
// connections, changed the price while it was cut off, and let it reconnect),
// and prints OK when every step passed. Every step is checked and shot at
// 1280 px, then again at 375 px (no horizontal scroll, its subject visible).
import { readFileSync, mkdirSync } from "node:fs";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import nacl from "tweetnacl";

const require = createRequire(import.meta.url);
const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const api = env("LENDEX_URL");
const shots = env("SHOTS");
mkdirSync(shots, { recursive: true });
const naclSource = readFileSync(require.resolve("tweetnacl/nacl-fast.min.js"), "utf8");

function base58(bytes) {
  const A = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const d = [];
  for (const b of bytes) {
    let c = b;
    for (let i = 0; i < d.length; i++) { c += d[i] << 8; d[i] = c % 58; c = (c / 58) | 0; }
    while (c) { d.push(c % 58); c = (c / 58) | 0; }
  }
  return "1".repeat(zeros) + d.reverse().map((x) => A[x]).join("");
}
const pubkeyOf = (secret) => base58(nacl.sign.keyPair.fromSecretKey(Uint8Array.from(secret)).publicKey);

// The wallets, as browser extensions would register them (Wallet Standard).
// They run in the page (addInitScript), where base58 is injected as __base58.
// window.__testWallet steers them: broken signatures, a refused connection,
// a slow prompt; `signed` counts the signatures given.
function testWallets(list) {
  const base58 = window.__base58;
  window.__testWallet = { brokenSignatures: false, rejectConnect: false, delayMs: 0, signed: 0 };
  const other = window.nacl.sign.keyPair();
  const wallets = list.map(({ name, secret }) => {
    const keys = window.nacl.sign.keyPair.fromSecretKey(Uint8Array.from(secret));
    const account = {
      address: base58(keys.publicKey), publicKey: keys.publicKey,
      chains: ["solana:localnet"], features: ["solana:signMessage"],
    };
    const pause = () => new Promise((resolve) => setTimeout(resolve, window.__testWallet.delayMs));
    return {
      version: "1.0.0", name, icon: "data:image/svg+xml;base64,PHN2Zy8+",
      chains: ["solana:localnet"], accounts: [account],
      features: {
        "standard:connect": {
          version: "1.0.0",
          connect: async () => {
            await pause();
            if (window.__testWallet.rejectConnect) throw new Error("the user rejected the request");
            return { accounts: [account] };
          },
        },
        "solana:signMessage": {
          version: "1.0.0",
          signMessage: async (...inputs) => {
            await pause();
            return inputs.map(({ message }) => {
              window.__testWallet.signed++;
              // Broken: a signature by another key, as a wrong or tampered wallet would give.
              const key = window.__testWallet.brokenSignatures ? other.secretKey : keys.secretKey;
              return { signedMessage: message, signature: window.nacl.sign.detached(message, key) };
            });
          },
        },
      },
    };
  });
  const callback = ({ register }) => register(...wallets);
  window.addEventListener("wallet-standard:app-ready", (event) => callback(event.detail));
  window.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: callback }));
}

const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 375, height: 800 };

/** Runs a step at 1280 px and shoots it; then at 375 px: no horizontal
 *  scroll, `subject` (a selector) visible, shot; then back to 1280. */
async function step(name, page, run, subject) {
  try {
    await run();
    await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
    await page.setViewportSize(NARROW);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > NARROW.width) throw new Error(`at 375 px the page is ${width} px wide`);
    if (subject) await page.locator(subject).first().waitFor({ state: "visible", timeout: 5000 });
    await page.screenshot({ path: `${shots}/${name}-375.png`, fullPage: true });
    await page.setViewportSize(WIDE);
    console.log(`step ${name}: ok`);
  } catch (e) {
    await page.screenshot({ path: `${shots}/${name}-failed.png`, fullPage: true }).catch(() => {});
    const status = await page.locator("#status").textContent().catch(() => "");
    throw new Error(`step ${name}: ${e.message} (status: ${status})`);
  }
}
const signedCount = (page) => page.evaluate(() => window.__testWallet.signed);
const steer = (page, settings) => page.evaluate((s) => Object.assign(window.__testWallet, s), settings);

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const context = await browser.newContext({ viewport: WIDE, timezoneId: "UTC" });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // What each connection of the live feed resumed from (the browser adds the
  // header itself: only the full header list shows it).
  const feedResumes = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/positions/unhealthy/stream")) {
      feedResumes.push(r.allHeaders().then((h) => h["last-event-id"] ?? null));
    }
  });
  // Script errors fail the test; refused requests (the rejected signature's 401,
  // the feed cut by the harness) are the page's expected traffic.
  page.on("console", (m) => {
    const text = m.text();
    if (m.type() === "error" && !text.startsWith("Failed to load resource") && !text.includes("net::ERR_")) pageErrors.push(text);
  });
  await page.addInitScript(naclSource);
  await page.addInitScript(`window.__base58 = ${base58.toString()};`);
  // Every feed event the page receives, by name, in order.
  await page.addInitScript(() => {
    const Native = window.EventSource;
    window.__feedEvents = [];
    window.EventSource = class extends Native {
      constructor(...args) {
        super(...args);
        for (const name of ["candidate_start", "candidate_update", "candidate_stop", "reset"]) {
          super.addEventListener(name, () => window.__feedEvents.push(name));
        }
      }
    };
  });
  const rootSecret = JSON.parse(env("ROOT_SECRET"));
  const root = pubkeyOf(rootSecret);
  await page.addInitScript(testWallets, [
    { name: "Test Wallet", secret: rootSecret },
    { name: "Pool Admin Wallet", secret: JSON.parse(env("POOL_ADMIN_SECRET")) },
  ]);
  await page.goto(`${api}/console`);
  const wallet = base58(nacl.sign.keyPair().publicKey);
  const signIn = async (name) => {
    await page.locator("#wallet-list").selectOption({ label: name });
    await page.click("#connect");
  };

  await step("01-signed-out", page, async () => {
    await page.locator("#pools tbody tr[data-pool]").nth(1).waitFor();
    for (const hidden of ["#role", "#sign-out", "#allowlist-section", "#audit-section", "#register-pool"]) {
      if (await page.locator(hidden).isVisible()) throw new Error(`${hidden} shown while signed out`);
    }
    const badge = await page.locator("#chain-state").textContent();
    if (!badge.startsWith("localnet:")) throw new Error(`chain state "${badge}"`);
  }, "#connect");

  await step("02-failed-sign-in", page, async () => {
    await steer(page, { rejectConnect: true });
    await signIn("Test Wallet");
    await page.locator("#status.error", { hasText: "Sign-in failed: the user rejected" }).waitFor();
    for (const hidden of ["#role", "#account", "#sign-out", "#allowlist-section", "#audit-section"]) {
      if (await page.locator(hidden).isVisible()) throw new Error(`${hidden} left from a failed sign-in`);
    }
    if ((await page.locator("#connect").textContent()) !== "Sign in") throw new Error("not back to Sign in");
    await steer(page, { rejectConnect: false });
  }, "#status.error");

  await step("03-pool-admin", page, async () => {
    await signIn("Pool Admin Wallet");
    await page.locator("#role").filter({ hasText: "pool_admin" }).waitFor();
    await page.locator("#status.ok").waitFor();
    if (await page.locator("#add-admin").isVisible()) throw new Error("a pool_admin sees Add admin");
    if (!(await page.locator("#register-pool").isVisible())) throw new Error("a pool_admin cannot register pools");
    if (await page.locator("#allowlist button.revoke").count()) throw new Error("a pool_admin sees Revoke");
  }, "#role");

  await step("04-signed-out-again", page, async () => {
    await page.click("#sign-out");
    await page.locator("#status.info", { hasText: "Signed out" }).waitFor();
    if (await page.locator("#allowlist-section").isVisible()) throw new Error("admin sections left after sign-out");
  }, "#connect");

  await step("05-signed-in", page, async () => {
    await signIn("Test Wallet");
    await page.locator("#role").filter({ hasText: "super_admin" }).waitFor();
    await page.locator("#status.ok").waitFor();
    await page.locator("#allowlist tbody tr[data-pubkey]").first().waitFor();
    await page.locator("#audit tbody tr").first().waitFor();
  }, "#role");

  await step("06-checked-before-signing", page, async () => {
    const before = await signedCount(page);
    await page.fill('#add-admin input[name="pubkey"]', "not-a-wallet");
    await page.click('#add-admin button[type="submit"]');
    await page.locator("#add-admin-error", { hasText: "Enter a wallet address" }).waitFor();
    if ((await page.getAttribute('#add-admin input[name="pubkey"]', "aria-invalid")) !== "true") throw new Error("field not marked");
    if ((await signedCount(page)) !== before) throw new Error("the wallet was asked to sign an invalid call");
  }, "#add-admin-error");

  await step("07-one-prompt-at-a-time", page, async () => {
    const before = await signedCount(page);
    await steer(page, { delayMs: 800 });
    await page.fill('#add-admin input[name="pubkey"]', wallet);
    await page.selectOption('#add-admin select[name="role"]', "pool_admin");
    await page.fill('#add-admin input[name="label"]', "added in the browser");
    const submit = page.locator('#add-admin button[type="submit"]');
    await submit.click();
    await page.locator("#status.pending", { hasText: "Approve in your wallet" }).waitFor();
    if (!(await submit.isDisabled())) throw new Error("the button stays enabled while the wallet is open");
    await submit.click({ force: true }).catch(() => {});
    await page.locator(`#allowlist tr[data-pubkey="${wallet}"]`).waitFor();
    await page.locator("#status.ok").waitFor();
    await steer(page, { delayMs: 0 });
    if ((await signedCount(page)) !== before + 1) throw new Error(`${(await signedCount(page)) - before} signatures for one add`);
    if (await page.locator("#add-admin-error").isVisible()) throw new Error("the earlier field error stayed");
    const added = await page.locator(`#audit tbody tr:has([title="${wallet}"])`).count();
    if (added !== 1) throw new Error(`${added} audit entries for one add`);
  }, `#allowlist tr[data-pubkey="${wallet}"]`);

  await step("08-audit", page, async () => {
    const row = page.locator("#audit tbody tr", { hasText: "add_admin" }).first();
    const text = await row.textContent();
    if (!text.includes("role=pool_admin") || !text.includes("label=added in the browser")) throw new Error(`details: ${text}`);
    if (!/UTC/.test(await row.locator("td").first().textContent())) throw new Error("time without its zone");
    await row.getByRole("button", { name: `Copy ${wallet}` }).waitFor();
    await page.fill('#audit-filter input[name="actor"]', root);
    const cut = await page.$eval('#audit-filter input[name="actor"]', (i) => i.scrollWidth > i.clientWidth);
    if (cut) throw new Error("the actor box cuts an address off");
    await page.click('#audit-filter button[type="submit"]');
    await page.waitForFunction((r) => [...document.querySelectorAll("#audit tbody tr")].every((tr) => tr.cells[1].querySelector("[title]").title === r), root);
    await page.fill('#audit-filter input[name="actor"]', wallet);
    await page.click('#audit-filter button[type="submit"]');
    await page.locator("#audit td.empty", { hasText: "No entries" }).waitFor();
    await page.fill('#audit-filter input[name="actor"]', "");
    await page.click('#audit-filter button[type="submit"]');
    await page.locator("#audit tbody tr", { hasText: "add_admin" }).first().waitFor();
  }, "#audit");

  await step("09-revoke-confirmed", page, async () => {
    const before = await signedCount(page);
    const revoke = page.getByRole("button", { name: `Revoke ${wallet}` });
    await revoke.click();
    const dialog = page.locator("#confirm");
    await dialog.waitFor({ state: "visible" });
    if (!(await page.locator("#confirm-text").textContent()).includes(wallet)) throw new Error("the dialog does not name the wallet");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    if ((await signedCount(page)) !== before) throw new Error("cancelled, yet signed");
    if (!(await page.locator(`#allowlist tr[data-pubkey="${wallet}"]`).count())) throw new Error("cancelled, yet revoked");
    await revoke.click();
    await dialog.waitFor({ state: "visible" });
    await page.focus("#confirm-ok");
    await page.keyboard.press("Enter");
    await page.locator(`#allowlist tr[data-pubkey="${wallet}"]`).waitFor({ state: "detached" });
    await page.locator("#status.ok").waitFor();
  }, "#allowlist");

  await step("10-rejected-signature", page, async () => {
    await steer(page, { brokenSignatures: true });
    await page.fill('#add-admin input[name="pubkey"]', wallet);
    await page.click('#add-admin button[type="submit"]');
    await page.locator("#status.error", { hasText: "bad signature" }).waitFor();
    await page.locator("#add-admin-error", { hasText: "bad signature" }).waitFor();
    await steer(page, { brokenSignatures: false });
    if (await page.locator(`#allowlist tr[data-pubkey="${wallet}"]`).count()) throw new Error("added anyway");
  }, "#add-admin-error");

  await step("11-pool-registered", page, async () => {
    const pool = env("UNREGISTERED");
    await page.fill('#register-pool input[name="pool_address"]', pool);
    await page.fill('#register-pool input[name="init_signature"]', "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UaKdiSkoQ");
    await page.fill('#register-pool input[name="symbol"]', "UNR");
    await page.click('#register-pool button[type="submit"]');
    await page.locator(`#pools tr[data-pool="${pool}"]`, { hasText: "UNR" }).waitFor();
    await page.locator("#status.ok").waitFor();
    // The earlier errors are over once something succeeds.
    for (const error of ["#register-pool-error", "#add-admin-error"]) {
      if (await page.locator(error).isVisible()) throw new Error(`${error} stayed after a success`);
    }
  }, "#pools");

  // The live view: the harness makes the owner sink by a price change on chain.
  const owner = env("OWNER");
  if (await page.locator(`#feed tr[data-owner="${owner}"]`).count()) throw new Error("under water too early");
  console.log("READY_FOR_PRICE");
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once("line", resolve));
  const row = page.locator(`#feed tr[data-owner="${owner}"]`);
  await step("12-live-feed", page, async () => {
    await row.waitFor({ timeout: 15000 });
    await page.locator("#feed-state", { hasText: "live" }).waitFor();
    const text = await row.textContent();
    // Amounts in tokens with their symbols, not base units; the oracle flagged.
    if (!/\d TKN/.test(text) || /\d{9,}/.test(text)) throw new Error(`row "${text}"`);
    await row.locator(".badge.stale").waitFor();
    if (!(await row.getAttribute("class")).includes("changed")) throw new Error("a new row is not highlighted");
    const link = await row.locator("a").getAttribute("href");
    if (!link.includes(`/address/${owner}`) || !link.includes("cluster=custom")) throw new Error(`explorer link ${link}`);
    if ((await page.locator("#feed-count").textContent()) !== "1 account under water") throw new Error("row count");
    if (!/last event .*UTC/.test(await page.locator("#feed-updated").textContent())) throw new Error("no time of the last event");
  }, `#feed tr[data-owner="${owner}"]`);

  // The page loses its connection while the owner sinks further: the browser
  // reconnects with the last event's id, and the feed resumes (the row is
  // updated in place, not rebuilt from a snapshot after a reset).
  const before = await row.locator("td.hf").textContent();
  await row.evaluate((tr) => { tr.dataset.kept = "1"; });
  const eventsBefore = await page.evaluate(() => window.__feedEvents.length);
  console.log("READY_FOR_DROP");
  await new Promise((resolve) => lines.once("line", resolve));
  await step("13-feed-resumed", page, async () => {
    await page.waitForFunction(([o, hf]) => {
      const cell = document.querySelector(`#feed tr[data-owner="${o}"] td.hf`);
      return cell && cell.textContent !== hf;
    }, [owner, before], { timeout: 15000 });
    if ((await row.getAttribute("data-kept")) !== "1") throw new Error("the feed was rebuilt, not resumed");
    await page.locator("#feed-state", { hasText: "live" }).waitFor();
    const sent = await Promise.all(feedResumes);
    const resumed = sent.filter((id) => id);
    if (!resumed.length || !/^[0-9]+\.[0-9]+$/.test(resumed[0])) throw new Error(`reconnects sent ${JSON.stringify(sent)}`);
    // The missed update itself, with no reset and no snapshot.
    const after = await page.evaluate((n) => window.__feedEvents.slice(n), eventsBefore);
    if (after.join() !== "candidate_update") throw new Error(`events after the drop: ${after}`);
  }, `#feed tr[data-owner="${owner}"]`);

  // The risk lens: SOL's curve from -50% to +100%, drawn with the server's values.
  const sol = env("SOL");
  await step("14-risk-curve", page, async () => {
    await page.selectOption("#curve-form select", sol);
    await page.fill('#curve-form input[name="from"]', "-50");
    await page.fill('#curve-form input[name="to"]', "100");
    await page.click('#curve-form button[type="submit"]');
    await page.locator("#curve:not([hidden])").waitFor();
    const expected = await (await fetch(`${api}/api/risk/curve?pool=${sol}&from_bps=-5000&to_bps=10000&steps=50`)).json();
    const polylines = await page.locator("#curve-chart polyline").evaluateAll((ls) => ls.map((l) => l.getAttribute("points").split(" ").length));
    if (polylines.join() !== "51,51,51") throw new Error(`curve lines: ${polylines}`);
    const caption = await page.locator("#curve-caption").textContent();
    const last = expected.points[expected.points.length - 1];
    if (!caption.startsWith(`${expected.owners} accounts hold this pool`) || !caption.includes(`${last.liquidatable} under water`)) {
      throw new Error(`caption "${caption}" for ${JSON.stringify(last)}`);
    }
  }, "#curve-chart");
  // A shock of SOL by +200%: the second account goes under, and is listed.
  await step("15-risk-shock", page, async () => {
    await page.selectOption("#shock-form select", sol);
    await page.fill('#shock-form input[name="percent"]', "200");
    await page.click('#shock-form button[type="submit"]');
    await page.locator(`#shock-accounts tr[data-owner="${env("SHOCKED")}"]`).waitFor();
    const summary = await page.locator("#shock-summary").textContent();
    if (!summary.startsWith("1 newly under water")) throw new Error(`summary "${summary}"`);
  }, "#shock-summary");

  await step("16-nothing-clipped-at-1280", page, async () => {
    // Every table fits its section: no column (the feed's profit and oracle) cut off.
    for (const table of ["#feed", "#pools", "#allowlist", "#audit"]) {
      const [scroll, client] = await page.$eval(table, (t) => [t.parentElement.scrollWidth, t.parentElement.clientWidth]);
      if (scroll > client) throw new Error(`${table} is ${scroll - client} px too wide at 1280`);
    }
    const lastHeader = await page.locator("#feed th").last().boundingBox();
    const section = await page.locator("#feed-section").boundingBox();
    if (lastHeader.x + lastHeader.width > section.x + section.width) throw new Error("the feed's last column is cut off");
  }, "#feed");

  await step("16b-feed-cards-at-375", page, async () => {
    await page.setViewportSize(NARROW);
    // Each column of the feed shows within the screen, labelled.
    for (const cell of await row.locator("td").all()) {
      const box = await cell.boundingBox();
      if (box.x < 0 || box.x + box.width > NARROW.width) throw new Error(`${await cell.getAttribute("data-label")} off screen at 375`);
    }
    await page.setViewportSize(WIDE);
  }, `#feed tr[data-owner="${owner}"] td[data-label="Oracle"]`);

  await step("17-keyboard", page, async () => {
    // From the top of the page, Tab reaches Sign out; Enter signs out.
    await page.evaluate(() => document.activeElement?.blur());
    await page.locator("h1").click();
    let found = false;
    for (let i = 0; i < 12 && !found; i++) {
      await page.keyboard.press("Tab");
      found = await page.evaluate(() => document.activeElement?.id === "sign-out");
    }
    if (!found) throw new Error("Sign out cannot be reached by Tab");
    await page.keyboard.press("Enter");
    await page.locator("#status.info", { hasText: "Signed out" }).waitFor();
  }, "#connect");
  if (pageErrors.length) throw new Error(`errors in the page: ${pageErrors.join("; ")}`);
  console.log("OK");
} finally {
  await browser.close();
}
process.exit(0);
