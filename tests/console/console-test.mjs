// The console in a real browser: Debian's chromium, driven by playwright-core,
// with two test wallets registered through the Wallet Standard before the
// page loads (they sign with real ed25519 keys, tweetnacl). Run by
// tests/api/console_browser.rs, which starts the service and the chain:
//   LENDEX_URL, ROOT_SECRET and POOL_ADMIN_SECRET (JSON arrays of 64-byte keys),
//   CHROMIUM (executable), SHOTS (screenshot folder), OWNER (who will sink),
//   SHOCKED, SOL, UNREGISTERED (a pool on chain whose authority is the root),
//   EMPTY_URL (a service with nothing registered).
// It asks the harness for each change of the world with a line (READY_FOR_
// PRICE, DROP, PAUSE, RESUME, DOWN, UP) and waits for its answer, and prints
// OK when every step passed. Every step is checked and shot at 1280 px, then
// again at 375 px (no horizontal scroll, its subject visible). The steps are
// in console-steps.mjs.
import { readFileSync, mkdirSync } from "node:fs";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import nacl from "tweetnacl";
import { steps } from "./console-steps.mjs";

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
    // The charts redraw for the width from a ResizeObserver, before the next
    // paint: the next step measures them as drawn, not as they were at 375 px.
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
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
  const lines = createInterface({ input: process.stdin });
  /** Asks the harness for a change of the world and waits for it to be made. */
  const ask = async (cue) => {
    console.log(cue);
    await new Promise((resolve) => lines.once("line", resolve));
  };
  await steps({ page, context, api, env, step, steer, signedCount, pageErrors, feedResumes, root, base58, nacl, ask, NARROW, WIDE });
  if (pageErrors.length) throw new Error(`errors in the page: ${pageErrors.join("; ")}`);
  console.log("OK");
} finally {
  await browser.close();
}
process.exit(0);
