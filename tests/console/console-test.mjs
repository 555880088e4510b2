// The admin console in a real browser: Debian's chromium, driven by
// playwright-core, with a test wallet registered through the Wallet Standard
// before the page loads (it signs with a real ed25519 key, tweetnacl).
// Run by tests/api/console_browser.rs, which starts the service and the chain:
//   LENDEX_URL, ROOT_SECRET (JSON array of the super-admin's 64-byte key),
//   CHROMIUM (executable), SHOTS (screenshot folder), OWNER (who will sink).
// It prints READY_FOR_PRICE, waits for a line on stdin (the price change has
// been made), then READY_FOR_DROP, waits again (the harness cut the page's
// connections, changed the price while the page was cut off, and let it
// reconnect), and prints OK when every step passed.
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

// The wallet, as a browser extension would register it (Wallet Standard). It
// runs in the page (addInitScript), where base58 is injected as __base58.
function testWallet(secret) {
  const base58 = window.__base58;
  const keys = window.nacl.sign.keyPair.fromSecretKey(Uint8Array.from(secret));
  const other = window.nacl.sign.keyPair();
  const account = {
    address: base58(keys.publicKey), publicKey: keys.publicKey,
    chains: ["solana:localnet"], features: ["solana:signMessage"],
  };
  window.__testWallet = { brokenSignatures: false, signed: 0 };
  const wallet = {
    version: "1.0.0", name: "Test Wallet", icon: "data:image/svg+xml;base64,PHN2Zy8+",
    chains: ["solana:localnet"], accounts: [account],
    features: {
      "standard:connect": { version: "1.0.0", connect: async () => ({ accounts: [account] }) },
      "solana:signMessage": {
        version: "1.0.0",
        signMessage: async (...inputs) => inputs.map(({ message }) => {
          window.__testWallet.signed++;
          // Broken: a signature by another key, as a wrong or tampered wallet would give.
          const key = window.__testWallet.brokenSignatures ? other.secretKey : keys.secretKey;
          return { signedMessage: message, signature: window.nacl.sign.detached(message, key) };
        }),
      },
    },
  };
  const callback = ({ register }) => register(wallet);
  window.addEventListener("wallet-standard:app-ready", (event) => callback(event.detail));
  window.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: callback }));
}

async function step(name, page, run) {
  try {
    await run();
    await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
    console.log(`step ${name}: ok`);
  } catch (e) {
    await page.screenshot({ path: `${shots}/${name}-failed.png`, fullPage: true }).catch(() => {});
    const status = await page.locator("#status").textContent().catch(() => "");
    throw new Error(`step ${name}: ${e.message} (status: ${status})`);
  }
}

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
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
  // Script errors fail the test; refused requests (the rejected signature's 401)
  // are the page's expected traffic, shown to the user as errors.
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) pageErrors.push(m.text());
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
  await page.addInitScript(testWallet, JSON.parse(env("ROOT_SECRET")));
  await page.goto(`${api}/console`);
  const wallet = base58(nacl.sign.keyPair().publicKey);

  await step("01-signed-in", page, async () => {
    await page.locator("#wallet-list").selectOption({ label: "Test Wallet" });
    await page.click("#connect");
    await page.locator("#role").filter({ hasText: "super_admin" }).waitFor();
    await page.locator("#status.ok").waitFor();
    await page.locator("#allowlist tbody tr").first().waitFor();
    await page.locator("#audit tbody tr").first().waitFor();
  });

  await step("02-admin-added", page, async () => {
    await page.fill('#add-admin input[name="pubkey"]', wallet);
    await page.selectOption('#add-admin select[name="role"]', "pool_admin");
    await page.fill('#add-admin input[name="label"]', "added in the browser");
    await page.click('#add-admin button[type="submit"]');
    const row = page.locator(`#allowlist tr[data-pubkey="${wallet}"]`);
    await row.waitFor();
    if (!(await row.textContent()).includes("added in the browser")) throw new Error("label not shown");
    await page.locator("#audit tbody tr", { hasText: "add_admin" }).first().waitFor();
  });

  await step("03-admin-revoked", page, async () => {
    await page.locator(`#allowlist tr[data-pubkey="${wallet}"] button.revoke`).click();
    await page.locator(`#allowlist tr[data-pubkey="${wallet}"]`).waitFor({ state: "detached" });
    await page.locator("#status.ok").waitFor();
  });

  await step("04-rejected-signature", page, async () => {
    await page.evaluate(() => { window.__testWallet.brokenSignatures = true; });
    await page.fill('#add-admin input[name="pubkey"]', wallet);
    await page.click('#add-admin button[type="submit"]');
    await page.locator("#status.error", { hasText: "bad signature" }).waitFor();
    await page.evaluate(() => { window.__testWallet.brokenSignatures = false; });
    if (await page.locator(`#allowlist tr[data-pubkey="${wallet}"]`).count()) throw new Error("added anyway");
  });

  // The live view: the harness makes the owner sink by a price change on chain.
  const owner = env("OWNER");
  if (await page.locator(`#feed tr[data-owner="${owner}"]`).count()) throw new Error("under water too early");
  console.log("READY_FOR_PRICE");
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once("line", resolve));
  const row = page.locator(`#feed tr[data-owner="${owner}"]`);
  await step("05-live-feed", page, async () => {
    await row.waitFor({ timeout: 15000 });
    await page.locator("#feed-state", { hasText: "live" }).waitFor();
  });

  // The page loses its connection while the owner sinks further: the browser
  // reconnects with the last event's id, and the feed resumes (the row is
  // updated in place, not rebuilt from a snapshot after a reset).
  const before = await row.locator("td.hf").textContent();
  await row.evaluate((tr) => { tr.dataset.kept = "1"; });
  const eventsBefore = await page.evaluate(() => window.__feedEvents.length);
  console.log("READY_FOR_DROP");
  await new Promise((resolve) => lines.once("line", resolve));
  await step("06-feed-resumed", page, async () => {
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
  });

  // The risk lens: SOL's curve from -50% to +100%, drawn with the server's values.
  const sol = env("SOL");
  await step("07-risk-curve", page, async () => {
    await page.selectOption("#curve-form select", sol);
    await page.fill('#curve-form input[name="from"]', "-50");
    await page.fill('#curve-form input[name="to"]', "100");
    await page.click('#curve-form button[type="submit"]');
    await page.locator("#curve:not([hidden])").waitFor();
    const expected = await (await fetch(`${api}/api/risk/curve?pool=${sol}&from_bps=-5000&to_bps=10000&steps=50`)).json();
    const lines = await page.locator("#curve-chart polyline").evaluateAll((ls) => ls.map((l) => l.getAttribute("points").split(" ").length));
    if (lines.join() !== "51,51,51") throw new Error(`curve lines: ${lines}`);
    const caption = await page.locator("#curve-caption").textContent();
    const last = expected.points[expected.points.length - 1];
    if (!caption.startsWith(`${expected.owners} accounts hold this pool`) || !caption.includes(`${last.liquidatable} under water`)) {
      throw new Error(`caption "${caption}" for ${JSON.stringify(last)}`);
    }
  });
  // A shock of SOL by +200%: the second account goes under, and is listed.
  await step("08-risk-shock", page, async () => {
    await page.selectOption("#shock-form select", sol);
    await page.fill('#shock-form input[name="percent"]', "200");
    await page.click('#shock-form button[type="submit"]');
    await page.locator(`#shock-accounts tr[data-owner="${env("SHOCKED")}"]`).waitFor();
    const summary = await page.locator("#shock-summary").textContent();
    if (!summary.startsWith("1 newly under water")) throw new Error(`summary "${summary}"`);
  });
  await step("09-risk-375", page, async () => {
    await page.setViewportSize({ width: 375, height: 900 });
    await page.locator("#risk-section").scrollIntoViewIfNeeded();
    await page.locator("#curve-chart").waitFor();
  });
  if (pageErrors.length) throw new Error(`errors in the page: ${pageErrors.join("; ")}`);
  console.log("OK");
} finally {
  await browser.close();
}
process.exit(0);
