// The console's steps, in order (console-test.mjs runs them): each is checked
// and shot at 1280 px, then at 375 px with no horizontal scroll.
import {
  accountFollowsTheApi, chainCardShowsTheServicesLag, feedFiltersShareAsALink, feedHoldsOnlyUnderTheReader, figuresStayWhole,
  healthLineStaysInItsLabels, trendsStayThroughARefresh,
} from "./console-checks.mjs";

/** Opens a section by its tab, and waits for it. */
async function go(page, view) {
  await page.click(`#tabs a[data-view="${view}"]`);
  await page.locator(`#view-${view}`).waitFor({ state: "visible" });
  if (!page.url().includes(`#/${view}`)) throw new Error(`the URL ${page.url()} does not name ${view}`);
}
const json = async (url) => (await fetch(url)).json();
const sum = (rows, field) => rows.reduce((acc, r) => acc + BigInt(r[field]), 0n).toString();

export async function steps({ page, context, api, env, step, steer, signedCount, pageErrors, feedResumes, root, base58, nacl, ask, NARROW, WIDE }) {
  await page.goto(`${api}/console`);
  const wallet = base58(nacl.sign.keyPair().publicKey);
  const signIn = async (name) => {
    await page.locator("#wallet-list").selectOption({ label: name });
    await page.click("#connect");
  };
  const card = (name) => page.locator(`[data-card="${name}"] dd`);

  await step("01-overview-and-pools", page, async () => {
    // The overview, against what the API says.
    await page.waitForFunction(() => document.querySelector('[data-card="at-risk"] dd').dataset.value !== undefined);
    const status = await json(`${api}/api/pools/status`);
    const priced = status.pools.find((p) => p.oracle_price !== null);
    const book = await json(`${api}/api/risk/shock?shock=${priced.pool_address}:0&limit=1`);
    const expected = {
      deposits: sum(status.pools, "deposits_value_wad"), borrows: sum(status.pools, "borrows_value_wad"),
      under: String(book.liquidatable_before), "debt-under": book.debt_value_wad_liquidatable_after,
      "bad-debt": book.bad_debt_value_wad_after, profit: book.profit_value_wad_after,
    };
    for (const [name, value] of Object.entries(expected)) {
      const shown = await card(name).getAttribute("data-value");
      if (shown !== value) throw new Error(`overview ${name}: ${shown}, the API says ${value}`);
    }
    if (!(await card("deposits").textContent()).startsWith("$")) throw new Error("deposits not in dollars");
    const atRisk = await json(`${api}/api/positions/at-risk?below=1100000000000000000&limit=200`);
    if ((await card("at-risk").getAttribute("data-value")) !== String(atRisk.accounts.length)) throw new Error("at risk");
    await page.locator('[data-card="chain"] dd').filter({ hasText: /\d/ }).waitFor();
    await chainCardShowsTheServicesLag(context, api);
    await page.locator("#link-state", { hasText: "live" }).waitFor();
    // The market is the first section; the pools are a tab away, with their own URL.
    await page.locator("#view-market").waitFor();
    await go(page, "pools");
    await page.locator("#pools tbody tr[data-pool]").nth(1).waitFor();
    const first = await page.locator("#pools tbody tr[data-pool]").first().textContent();
    if (!/%/.test(first) || !/\$/.test(first)) throw new Error(`a pool row without APY or dollars: ${first}`);
    await page.locator("#pools .badge.fresh, #pools .badge.stale").first().waitFor();
    await page.locator(`#unregistered tr:has([title="${env("UNREGISTERED")}"])`).waitFor();
    // Signed out, the row says both ways to register it: which wallets sign
    // in, and the command line with this pool's address.
    const how = await page.locator(`#unregistered tr:has([title="${env("UNREGISTERED")}"])`).textContent();
    if (!how.includes("Wallet Standard") || !how.includes(`lendex remote --keypair <authority keypair> register-pool ${env("UNREGISTERED")}`)) {
      throw new Error(`the unregistered pool's row: ${how}`);
    }
    for (const hidden of ["#role", "#sign-out", "#register-pool"]) {
      if (await page.locator(hidden).isVisible()) throw new Error(`${hidden} shown while signed out`);
    }
    const link = await page.locator("#pools tbody tr[data-pool] a").first().getAttribute("href");
    if (!link.includes("cluster=custom&customUrl=http%3A%2F%2F127")) throw new Error(`explorer link ${link}`);
    // Unclipped at 1280 px with a mainnet pool's widths (a copy of the first
    // row with long figures): nothing to scroll sideways, and the oracle's
    // age and freshness in the second column.
    const clipped = await page.evaluate(() => {
      const table = document.querySelector("#pools");
      const row = table.tBodies[0].rows[0].cloneNode(true);
      const long = ["", "$143,271.552 ± 0.0432", "9,703,112,553.123456 SOL", "8,123,554,110.654321 SOL", "83.7%", "12.34%", "80%"];
      [...row.cells].forEach((td, i) => { if (long[i]) td.firstChild.textContent = long[i]; });
      table.tBodies[0].append(row);
      const box = table.parentElement;
      const widths = [box.scrollWidth, box.clientWidth];
      row.remove();
      return widths;
    });
    if (clipped[0] > clipped[1]) throw new Error(`the pools table is ${clipped[0]} px in ${clipped[1]} px`);
    const oracle = await page.locator("#pools tbody tr[data-pool]").first().locator("td").nth(1);
    await oracle.locator(".oracle-age").waitFor();
    await oracle.locator(".badge.fresh, .badge.stale").waitFor();
  }, "#pools tbody tr[data-pool]");

  await step("02-failed-sign-in", page, async () => {
    await go(page, "admin");
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
    if (await page.locator("#allowlist button.revoke").count()) throw new Error("a pool_admin sees Revoke");
    await go(page, "pools");
    if (!(await page.locator("#register-pool").isVisible())) throw new Error("a pool_admin cannot register pools");
    // Not this wallet's pool: no register button.
    await page.locator("#unregistered", { hasText: "another wallet's pool" }).waitFor();
  }, "#role");

  await step("04-signed-out-again", page, async () => {
    await page.click("#sign-out");
    await page.locator("#status.info", { hasText: "Signed out" }).waitFor();
    await go(page, "admin");
    if (await page.locator("#allowlist-section").isVisible()) throw new Error("admin sections left after sign-out");
  }, "#connect");

  await step("05-signed-in", page, async () => {
    await signIn("Test Wallet");
    await page.locator("#role").filter({ hasText: "super_admin" }).waitFor();
    await page.locator("#status.ok").waitFor();
    await page.locator("#allowlist tbody tr[data-pubkey]").first().waitFor();
    await page.locator("#audit tbody tr").first().waitFor();
    // When each admin was added, and their last action.
    const bootstrap = page.locator(`#allowlist tr[data-pubkey="${root}"]`);
    await bootstrap.locator("td").nth(4).filter({ hasText: /add_admin|init_pool|none yet/ }).waitFor();
    if (!/UTC/.test(await bootstrap.locator("td").nth(3).textContent())) throw new Error("no added time");
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
    // The action picker and today's date range.
    await page.selectOption('#audit-filter select[name="action"]', "add_admin");
    const today = new Date().toISOString().slice(0, 10);
    await page.fill('#audit-filter input[name="from"]', today);
    await page.fill('#audit-filter input[name="to"]', today);
    await page.click('#audit-filter button[type="submit"]');
    await page.waitForFunction(() => [...document.querySelectorAll("#audit tbody tr")].every((tr) => tr.cells[2]?.textContent === "add_admin"));
    // Yesterday only: nothing.
    const yesterday = new Date(Date.now() - 86400e3).toISOString().slice(0, 10);
    await page.fill('#audit-filter input[name="from"]', yesterday);
    await page.fill('#audit-filter input[name="to"]', yesterday);
    await page.click('#audit-filter button[type="submit"]');
    await page.locator("#audit tr.state-row.empty", { hasText: "No entries" }).waitFor();
    await page.fill('#audit-filter input[name="from"]', "");
    await page.fill('#audit-filter input[name="to"]', "");
    await page.selectOption('#audit-filter select[name="action"]', "");
    await page.fill('#audit-filter input[name="actor"]', root);
    await page.click('#audit-filter button[type="submit"]');
    await page.waitForFunction((r) => [...document.querySelectorAll("#audit tbody tr")].every((tr) => tr.cells[1]?.querySelector("[title]")?.title === r), root);
    await page.fill('#audit-filter input[name="actor"]', "");
    await page.click('#audit-filter button[type="submit"]');
    await page.locator("#audit tbody tr", { hasText: "add_admin" }).first().waitFor();
    // The CSV of what was read.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#audit-csv")]);
    const csv = await (await download.createReadStream()).toArray().then((parts) => Buffer.concat(parts).toString("utf8"));
    if (!csv.startsWith('id,created_at,actor,action,target,details,"time (UTC)"') || !csv.includes(wallet) || !csv.includes('"add_admin"')) {
      throw new Error(`csv: ${csv.slice(0, 300)}`);
    }
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

  const pool = env("UNREGISTERED");
  await step("11-unregistered-pool-registered", page, async () => {
    await go(page, "pools");
    const row = page.locator(`#unregistered tr:has([title="${pool}"])`);
    await row.getByRole("button", { name: `Register ${pool}` }).click();
    // The local chain has no transaction for it: the signature is asked for.
    await page.locator("#ask-signature").waitFor({ state: "visible" });
    await page.fill('#ask-signature input[name="signature"]', "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UaKdiSkoQ");
    // Its symbol is asked with it, so the pool is not listed as "—".
    await page.fill('#ask-signature input[name="symbol"]', "NEWT");
    await page.click('#ask-signature button[type="submit"]');
    await page.locator(`#pools tr[data-pool="${pool}"]`, { hasText: "NEWT" }).waitFor();
    await page.locator("#status.ok").waitFor();
    await row.waitFor({ state: "detached" });
    for (const error of ["#register-pool-error", "#add-admin-error"]) {
      if (await page.locator(error).isVisible()) throw new Error(`${error} stayed after a success`);
    }
  }, `#pools tr[data-pool="${pool}"]`);

  // The live feed: the harness makes the owner sink by a price change on chain.
  const owner = env("OWNER");
  await go(page, "feed");
  await page.locator("#feed-state", { hasText: "live" }).waitFor();
  if (await page.locator(`#feed tr[data-owner="${owner}"]`).count()) throw new Error("under water too early");
  await ask("READY_FOR_PRICE");
  const row = page.locator(`#feed tr[data-owner="${owner}"]`);
  await step("12-live-feed", page, async () => {
    await row.waitFor({ timeout: 15000 });
    const text = await row.textContent();
    // Amounts in tokens with their symbols and in dollars, not base units; the oracle flagged.
    if (!/\d TKN/.test(text) || !/\$\d/.test(text) || /\d{9,}/.test(text)) throw new Error(`row "${text}"`);
    await row.locator(".badge.stale").waitFor();
    const link = await row.locator("a").first().getAttribute("href");
    if (!link.includes(`/address/${owner}`) || !link.includes("customUrl=")) throw new Error(`explorer link ${link}`);
    if (!/1 shown of 1 under water · repay \$[\d,]+\.\d\d · profit \$/.test(await page.locator("#feed-totals").textContent())) {
      throw new Error(`totals "${await page.locator("#feed-totals").textContent()}"`);
    }
    // Sorted by profit, filtered by a profit it does not reach, paused.
    await page.selectOption('#feed-controls select[name="sort"]', "profit");
    await page.fill('#feed-controls input[name="min_profit"]', "1000000");
    await page.locator("#feed-empty", { hasText: "matches the filters" }).waitFor();
    await page.fill('#feed-controls input[name="min_profit"]', "");
    await row.waitFor();
    await page.click("#feed-pause");
    await page.locator("#feed-state", { hasText: "paused" }).waitFor();
    await page.click("#feed-pause");
    await page.locator("#feed-state", { hasText: "live" }).waitFor();
    // This service reads at confirmed: the processed view is offered, not
    // selectable, and the rows are not marked tentative.
    const processed = page.locator('#feed-controls select[name="view"] option[value="processed"]');
    await page.waitForFunction(() => document.querySelector('#feed-controls select[name="view"] option[value="processed"]').title !== "");
    if (!(await processed.evaluate((o) => o.disabled))) throw new Error("processed selectable on a confirmed service");
    // And says so on the page, not only in the disabled option's tooltip.
    await page.locator("#feed-view-note", { hasText: "This service reads the chain at confirmed" }).waitFor();
    if (await row.locator(".view-mark").count()) throw new Error("a confirmed row marked");
    await feedHoldsOnlyUnderTheReader(page);
    await feedFiltersShareAsALink(page, context);
    await page.emulateMedia({ reducedMotion: "reduce" });
    const animation = await row.locator("td.hf").evaluate((td) => { td.classList.add("changed"); return getComputedStyle(td).animationName; });
    await page.emulateMedia({ reducedMotion: "no-preference" });
    if (animation !== "none") throw new Error(`with reduced motion a changed cell animates: ${animation}`);
  }, `#feed tr[data-owner="${owner}"]`);

  // The page loses its connection while the owner sinks further: the browser
  // reconnects with the last event's id, and the feed resumes (the row is
  // updated in place, not rebuilt from a snapshot after a reset).
  const before = await row.locator("td.hf").textContent();
  await row.evaluate((tr) => { tr.dataset.kept = "1"; });
  const eventsBefore = await page.evaluate(() => window.__feedEvents.length);
  await ask("READY_FOR_DROP");
  await step("13-feed-resumed", page, async () => {
    await page.waitForFunction(([o, hf]) => {
      const cell = document.querySelector(`#feed tr[data-owner="${o}"] td.hf`);
      return cell && cell.textContent !== hf;
    }, [owner, before], { timeout: 15000 });
    if ((await row.getAttribute("data-kept")) !== "1") throw new Error("the feed was rebuilt, not resumed");
    // Only what changed flashes.
    if (!(await row.locator("td.hf").getAttribute("class")).includes("changed")) throw new Error("the changed cell does not flash");
    await page.locator("#feed-state", { hasText: "live" }).waitFor();
    const sent = await Promise.all(feedResumes);
    const resumed = sent.filter((id) => id);
    if (!resumed.length || !/^[0-9]+\.[0-9]+$/.test(resumed[0])) throw new Error(`reconnects sent ${JSON.stringify(sent)}`);
    const after = await page.evaluate((n) => window.__feedEvents.slice(n), eventsBefore);
    if (after.join() !== "candidate_update") throw new Error(`events after the drop: ${after}`);
  }, `#feed tr[data-owner="${owner}"]`);

  const sol = env("SOL");
  await step("14-risk-curve", page, async () => {
    await go(page, "risk");
    await page.waitForFunction((s) => [...document.querySelectorAll("#curve-form select option")].some((o) => o.value === s), sol);
    // An empty percent is refused before any request.
    await page.fill('#curve-form input[name="from"]', "");
    await page.click('#curve-form button[type="submit"]');
    await page.locator("#curve-error", { hasText: "From" }).waitFor();
    await page.selectOption("#curve-form select", sol);
    await page.fill('#curve-form input[name="from"]', "-50");
    await page.fill('#curve-form input[name="to"]', "100");
    await page.click('#curve-form button[type="submit"]');
    await page.locator("#curve:not([hidden]) svg").waitFor();
    if (await page.locator("#curve-error").isVisible()) throw new Error("the error stayed after a success");
    const expected = await json(`${api}/api/risk/curve?pool=${sol}&from_bps=-5000&to_bps=10000&steps=50`);
    const ticks = await page.locator("#curve text.tick").count();
    if (ticks < 8) throw new Error(`${ticks} tick labels`);
    const paths = await page.locator("#curve path.series").count();
    if (paths !== 3) throw new Error(`${paths} lines`);
    // Hovering shows the values of the point under the pointer.
    const box = await page.locator("#curve svg").boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5);
    const tip = page.locator("#curve .chart-tip");
    await tip.waitFor({ state: "visible" });
    const tipText = await tip.textContent();
    if (!/accounts under water: \d/.test(tipText) || !/their debt: \$/.test(tipText)) throw new Error(`tooltip "${tipText}"`);
    const caption = await page.locator("#curve-caption").textContent();
    const last = expected.points[expected.points.length - 1];
    if (!caption.startsWith(`${expected.owners} accounts hold this pool`) || !caption.includes(`${last.liquidatable} under water`)) {
      throw new Error(`caption "${caption}" for ${JSON.stringify(last)}`);
    }
  }, "#curve svg");

  await step("15-risk-shock", page, async () => {
    // A click on the curve's last point (+100%) shocks SOL there.
    const box = await page.locator("#curve svg").boundingBox();
    await page.mouse.click(box.x + box.width - 70, box.y + box.height * 0.5);
    await page.locator("#shock-summary", { hasText: " +100%: " }).waitFor();
    // And +200% by hand: the second account goes under, and is listed.
    await page.selectOption("#shock-form select", sol);
    await page.fill('#shock-form input[name="percent"]', "200");
    await page.click('#shock-form button[type="submit"]');
    const shocked = page.locator(`#shock-accounts tr[data-owner="${env("SHOCKED")}"]`);
    await shocked.waitFor();
    // Each account opens its page here, not only in the outside explorer.
    await shocked.locator(`a.account-link[href="#/wallet?owner=${env("SHOCKED")}"]`).waitFor();
    const summary = await page.locator("#shock-summary").textContent();
    if (!summary.includes("1 newly under water")) throw new Error(`summary "${summary}"`);
    // One story with the curve: the holders as it counts them, then everyone, as of when.
    const holders = await json(`${api}/api/risk/curve?pool=${sol}&from_bps=0&to_bps=20000&steps=1`);
    const [now, after] = holders.points.map((p) => p.liquidatable);
    if (!summary.includes(`under water: ${now} → ${after} of ${holders.owners} (as the curve counts); all accounts: `)
      || !/As of \d\d:\d\d:\d\d, slot \d/.test(summary)) {
      throw new Error(`summary "${summary}" against the curve ${JSON.stringify(holders.points)}`);
    }
    if (!/…/.test(await shocked.locator("td").first().textContent())) throw new Error("the owner is not shortened");
    await shocked.getByRole("button", { name: `Copy ${env("SHOCKED")}` }).waitFor();
    const align = await shocked.locator("td.num").first().evaluate((td) => getComputedStyle(td).textAlign);
    if (align !== "right") throw new Error(`numbers aligned ${align}`);
    // Pools whose oracle is older than the service allows (here every one:
    // the market's oracles are from 2023) are offered marked, and the lens
    // warns of each chosen one, once.
    for (const select of ["#curve-form select", "#shock-form select"]) await page.selectOption(select, sol);
    const solName = await page.evaluate((pool) => riskPools.get(pool).symbol, sol);
    await page.locator("#risk-stale", { hasText: `${solName}'s oracle price is` }).waitFor();
    await page.selectOption("#shock-form select", env("UNREGISTERED"));
    await page.locator("#risk-stale", { hasText: "NEWT's oracle price is" }).waitFor();
    const warned = await page.locator("#risk-stale").textContent();
    if (warned.split("oracle price is").length !== 3) throw new Error(`each chosen stale pool once: "${warned}"`);
    const label = await page.locator(`#shock-form option[value="${env("UNREGISTERED")}"]`).textContent();
    if (label !== "NEWT (oracle stale)") throw new Error(`the stale pool is offered as "${label}"`);
    await page.selectOption("#shock-form select", sol);
    await page.locator("#risk-stale", { hasText: "NEWT" }).waitFor({ state: "detached" }).catch(() => {});
    if ((await page.locator("#risk-stale").textContent()).includes("NEWT")) throw new Error("NEWT still warned once unchosen");
  }, "#shock-summary");

  await step("16-wallet-history", page, async () => {
    await page.goto(`${api}/console#/wallet?owner=${owner}&range=1h`);
    await page.locator("#wallet-health svg").waitFor();
    await page.locator('#view-wallet .range button[data-range="1h"][aria-pressed="true"]').waitFor();
    // The 1.0 line, time under water shaded, the event marked.
    await page.locator("#wallet-health .rule-label", { hasText: "1.0" }).waitFor();
    await page.locator("#wallet-health rect.band").first().waitFor({ state: "attached" });
    await page.locator("#wallet-health path.marker").first().waitFor({ state: "attached" });
    await page.locator("#wallet-values path.series").nth(1).waitFor({ state: "attached" });
    await page.locator("#wallet-events tbody tr", { hasText: "went under water" }).waitFor();
    // The account at a glance, against the API: its health factor, a row per
    // position with its liquidation price, the best quote's repay amount.
    const detail = await json(`${api}/api/positions/${owner}/detail`);
    const quote = (await json(`${api}/api/liquidations?limit=200`)).liquidations.find((q) => q.owner === owner);
    const hf = BigInt(detail.positions[0].health_factor_wad);
    const shownHf = `${hf / 10n ** 18n}.${(hf % 10n ** 18n).toString().padStart(18, "0").slice(0, 4)}`;
    await page.locator("#account-hf.under", { hasText: shownHf }).waitFor();
    await page.locator("#account-asof", { hasText: /^As of .*slot/ }).waitFor();
    for (const href of await page.locator("#account-asof a").evaluateAll((links) => links.map((a) => a.href))) {
      if (!href.includes("/block/")) throw new Error("a slot is not linked");
    }
    await page.locator("#account-positions tbody", { hasText: /interest .* · \$/ }).waitFor().catch(() => {});
    if (!/· \$[\d,]+\.\d\d/.test(await page.locator("#account-positions tbody").textContent())) throw new Error("positions without their value");
    if ((await page.locator("#account-positions tbody tr[data-pool]").count()) !== detail.positions.length) throw new Error("account positions");
    const priced = detail.positions.find((p) => p.liquidation_price);
    if (priced) await page.locator(`#account-positions tr[data-pool="${priced.pool_address}"]`, { hasText: /at a (fall|rise) of|passed: liquidatable while (below|above) it/ }).waitFor();
    // This account is under water: each of its prices has passed its liquidation price.
    if (await page.locator("#account-positions", { hasText: /at a (fall|rise) of/ }).count()) throw new Error("an under-water account's price not yet passed");
    const listed = await json(`${api}/api/positions/${owner}`);
    for (const p of listed.positions) {
      await page.locator(`#account-positions tr[data-pool="${p.pool_address}"] [title="${p.position_address}"]`).first().waitFor();
    }
    const repay = await page.evaluate((q) => tokens(q.repay_amount, q.debt_pool), quote);
    await page.locator("#account-quote", { hasText: `Best quote: repay ${repay}` }).waitFor();
    // The quote's own slot beside the chain's, each of its pools' oracle age.
    const quoteSlot = await page.evaluate((slot) => count(slot), quote.slot);
    await page.locator("#account-asof", { hasText: `quote at slot ${quoteSlot}` }).waitFor();
    for (const p of detail.positions) {
      const symbol = await page.evaluate((pool) => symbolOf(pool), p.pool_address);
      await page.locator("#account-quote .account-oracles", { hasText: symbol }).waitFor();
    }
    await page.locator("#account-quote .account-oracles .oracle-age").first().waitFor();
    await accountFollowsTheApi({ page, api, owner, hf, ask, json });
    // Minutes of history in the hour asked: the axis starts at the first
    // point, and says so; the values stay within a factor of 3, so the
    // health factor's axis is linear, fitted to them with 1.0 in view.
    await page.locator("#wallet-state.short", { hasText: "History starts at" }).waitFor();
    const label = await page.locator("#wallet-health svg").getAttribute("aria-label");
    if (!label.includes("on a linear scale fitted to its values")) throw new Error(`the health axis: ${label}`);
    await healthLineStaysInItsLabels(page);
    await page.locator("#wallet-health text.legend", { hasText: "under water" }).waitFor({ state: "attached" });
    await page.click('#view-wallet .range button[data-range="24h"]');
    if (!page.url().includes("range=24h")) throw new Error(`the range is not in the URL: ${page.url()}`);
    // One crosshair across the page's charts; a drag zooms both, reset shows them whole.
    await page.locator("#wallet-values svg").scrollIntoViewIfNeeded();
    await page.locator("#wallet-health svg").scrollIntoViewIfNeeded();
    const healthBox = await page.locator("#wallet-health svg").boundingBox();
    const y = healthBox.y + healthBox.height / 2;
    await page.mouse.move(healthBox.x + healthBox.width * 0.5, y);
    if ((await page.locator("#wallet-values line.cursor").getAttribute("visibility")) !== "visible") throw new Error("no shared crosshair");
    await page.mouse.move(healthBox.x + healthBox.width * 0.3, y);
    await page.mouse.down();
    await page.mouse.move(healthBox.x + healthBox.width * 0.6, y, { steps: 5 });
    await page.mouse.up();
    for (const id of ["#wallet-health", "#wallet-values"]) await page.locator(`${id} .zoom-reset`).waitFor();
    await page.locator("#wallet-values .zoom-reset").click();
    for (const id of ["#wallet-health", "#wallet-values"]) await page.locator(`${id} .zoom-reset`).waitFor({ state: "hidden" });
    // Ages are relative, with the absolute time on hover.
    if (!/^last answer \d/.test(await page.locator('.age[data-age="wallet"]').getAttribute("title"))) throw new Error("an age without its time");
    // The search box takes a pool's address too: the pools open on its row.
    await page.fill('#wallet-form input[name="owner"]', sol);
    await page.click('#wallet-form button[type="submit"]');
    await page.locator(`#pools tr.found[data-pool="${sol}"]`).waitFor();
    if ((await page.evaluate(() => document.activeElement?.dataset.pool)) !== sol) throw new Error("the found pool is not focused");
    await page.goto(`${api}/console#/wallet?owner=${owner}&range=24h`);
    await page.locator("#wallet-health svg").waitFor();
    // And a position account's: its owner's account opens, that position's
    // row marked, the pair in the URL.
    const held = listed.positions[listed.positions.length - 1];
    await page.fill('#wallet-form input[name="owner"]', held.position_address);
    await page.click('#wallet-form button[type="submit"]');
    await page.locator(`#account-positions tr.found[data-position="${held.position_address}"]`).waitFor();
    if ((await page.locator("#account-positions tr.found").count()) !== 1) throw new Error("more than the position marked");
    if (!page.url().includes(`owner=${owner}`) || !page.url().includes(`position=${held.position_address}`)) {
      throw new Error(`the position's owner is not in the URL: ${page.url()}`);
    }
    if ((await page.inputValue('#wallet-form input[name="owner"]')) !== owner) throw new Error("the box does not show the owner found");
    // Every section opens from its URL alone (a bookmark, a shared link):
    // a fresh page on each, this account's with its position marked, no
    // script error (every script is loaded before the route is shown).
    const sections = await page.$$eval("a[data-view]", (links) => links.map((a) => a.getAttribute("href")));
    for (const href of sections.map((h) => (h === "#/wallet" ? new URL(page.url()).hash : h))) {
      const fresh = await context.newPage();
      const errors = [];
      fresh.on("pageerror", (e) => errors.push(e.message));
      try {
        await fresh.goto(`${api}/console${href}`);
        const name = href.slice(2).split("?")[0];
        await fresh.locator(`#view-${name}`).waitFor();
        if (name === "wallet") await fresh.locator(`#account-positions tr.found[data-position="${held.position_address}"]`).waitFor();
        await fresh.waitForTimeout(300);
      } finally {
        await fresh.close();
      }
      if (errors.length) throw new Error(`${href} opened alone: ${errors.join("; ")}`);
    }
    // A wallet with nothing after one with positions: the header names the one asked.
    const nobody = "11111111111111111111111111111111";
    await page.fill('#wallet-form input[name="owner"]', nobody);
    await page.click('#wallet-form button[type="submit"]');
    await page.locator("#account-note", { hasText: "This wallet holds no position" }).waitFor();
    await page.locator(`#account-owner [title="${nobody}"]`).first().waitFor({ state: "attached" });
    if (await page.locator(`#account-owner [title="${owner}"]`).count()) throw new Error("the empty wallet's header names the previous wallet");
    await page.goto(`${api}/console#/wallet?owner=${owner}&range=24h`);
  }, "#wallet-health svg");

  await step("17-events", page, async () => {
    await go(page, "events");
    // The search box is in the header on every tab: an owner found from here
    // opens its account page.
    await page.fill('#wallet-form input[name="owner"]', owner);
    await page.click('#wallet-form button[type="submit"]');
    await page.locator(`#account-owner [title="${owner}"]`).first().waitFor();
    if (!page.url().includes(`#/wallet?owner=${owner}`)) throw new Error(`the header's search opened ${page.url()}`);
    await go(page, "events");
    await page.selectOption('#events-filter select[name="kind"]', "under");
    await page.click('#events-filter button[type="submit"]');
    await page.locator(`#events tbody tr:has([title="${owner}"])`, { hasText: "went under water" }).waitFor();
    if (!page.url().includes("kind=under")) throw new Error("the filter is not in the URL");
    await page.selectOption('#events-filter select[name="kind"]', "bad_debt");
    await page.click('#events-filter button[type="submit"]');
    await page.locator("#events tr.state-row.empty").waitFor();
  }, "#events");

  await step("18-market", page, async () => {
    // One clock: a New York browser in German reads tables, the chart's
    // axis and its tooltips in UTC, then all in its own zone after the switch
    // (remembered on reload).
    const abroad = await context.browser().newContext({ timezoneId: "America/New_York", locale: "de-DE", viewport: WIDE });
    try {
      const p = await abroad.newPage();
      const errors = [];
      p.on("pageerror", (e) => errors.push(e.message));
      await p.goto(`${api}/console#/market`);
      await p.locator("#market-chart svg").waitFor();
      const cell = p.locator("#latest-events tbody tr td").first();
      await cell.filter({ hasText: /\d/ }).waitFor();
      const read = async () => ({ cell: await cell.textContent(), axis: await p.locator("#market-chart svg").textContent(),
        button: await p.locator("#clock").textContent() });
      const utc = await read();
      if (!utc.cell.includes("UTC") || !utc.axis.includes("time (UTC)") || utc.button !== "Times: UTC") throw new Error(`UTC: ${JSON.stringify(utc)}`);
      await p.click("#clock");
      await p.locator("#market-chart svg", { hasText: "time (GMT-5)" }).waitFor();
      await p.locator("#latest-events tbody tr td", { hasText: "GMT-5" }).first().waitFor();
      const local = await read();
      if (!local.cell.includes("GMT-5") || local.button !== "Times: GMT-5") throw new Error(`local: ${JSON.stringify(local)}`);
      await p.reload();
      await p.locator("#market-chart svg", { hasText: "time (GMT-5)" }).waitFor();
      await p.click("#clock");
      if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
    } finally {
      await abroad.close();
    }
    await go(page, "market");
    await page.locator("#market-chart svg").waitFor();
    await page.locator("#market-state.short", { hasText: "History starts at" }).waitFor();
    // The overview's movement: each market card's change over its history
    // and a sparkline of its hours (read once a minute: asked for now).
    await page.evaluate(() => loadTrend());
    // The test's history is minutes long: the change is since its first
    // sample and says so in minutes (not "in 1 h", a bucket's last value).
    const moved = page.locator('[data-card="under"] .trend');
    await moved.filter({ hasText: /[+−±]\d+ in \d+ min$/ }).waitFor();
    await moved.locator("polyline").waitFor({ state: "attached" });
    // Deposits and borrows too, recorded with every market sample.
    for (const card of ["deposits", "borrows"]) {
      await page.locator(`[data-card="${card}"] .trend`).filter({ hasText: /^ ?[+−±]\$[\d,.]+[KMB]? in \d+ min$/ }).waitFor();
    }
    await trendsStayThroughARefresh(page);
    await figuresStayWhole(page, [WIDE, NARROW]);
    await page.setViewportSize(WIDE);
    // Measured from the API's first sample of the day, against the card's value.
    const day = await json(`${api}/api/history/market?from=${Date.now() - 86400e3}&limit=1`);
    const base = day.initial ?? day.points[0];
    const [shown, expected] = await page.evaluate((base) => {
      const dd = $('[data-card="deposits"] dd');
      const change = dollars(dd.dataset.value) - dollars(base.deposits_value_wad);
      return [dd.querySelector(".trend").textContent.trim(), `${change > 0 ? "+" : change < 0 ? "−" : "±"}${usdCompactNumber(Math.abs(change))} in `];
    }, base);
    if (!shown.startsWith(expected)) throw new Error(`deposits moved "${shown}", from the first sample "${expected}"`);
    if (await page.locator('[data-card="bad-debt"].trouble').count()) throw new Error("no bad debt, in the colour of trouble");
    await page.locator("#latest-events tbody tr", { hasText: "went under water" }).first().waitFor();
  }, "#market-chart svg");

  // The service paused (its connections accepted, never answered): stale within 10 s.
  await ask("READY_FOR_PAUSE");
  await step("19-service-paused", page, async () => {
    await page.locator("#link-state", { hasText: "unreachable since" }).waitFor({ timeout: 10000 });
    // Since the last good answer, not since the check that failed.
    const since = await page.evaluate(() => [$("#link-state").textContent, `unreachable since ${clock(source("health").at)}`]);
    if (since[0] !== since[1]) throw new Error(`${since[0]}, the last answer: ${since[1]}`);
    await page.locator("#banner.error", { hasText: "cannot be reached" }).waitFor();
    await page.locator("#overview-age.stale").waitFor({ timeout: 10000 });
    await go(page, "feed");
    await page.locator("#feed-state", { hasText: "stale since" }).waitFor();
    await page.locator("#feed.stale").waitFor();
  }, "#banner");
  await ask("READY_FOR_RESUME");
  await page.locator("#link-state", { hasText: "live" }).waitFor({ timeout: 15000 });

  // The service down: its figures marked stale, errors, never "no pools" or
  // "nobody under water".
  await go(page, "pools");
  await page.locator("#pools tbody tr[data-pool]").first().waitFor();
  await ask("READY_FOR_DOWN");
  await step("20-service-down", page, async () => {
    await page.evaluate(() => loadPools());
    await page.locator("#link-state", { hasText: "unreachable" }).waitFor({ timeout: 10000 });
    await page.locator('.age[data-age="pools"].stale').waitFor({ timeout: 10000 });
    if (await page.locator("#pools", { hasText: "No pools registered" }).count()) throw new Error("no pools, says the page");
    await go(page, "feed");
    if (await page.locator("#feed-empty", { hasText: "No account is under water" }).isVisible()) throw new Error("nobody under water, says the page");
  }, "#banner");
  await ask("READY_FOR_UP");
  await page.locator("#link-state", { hasText: "live" }).waitFor({ timeout: 15000 });

  const empty = await context.newPage();
  empty.on("pageerror", (e) => pageErrors.push(e.message));
  await step("21-empty-market", empty, async () => {
    await empty.goto(`${env("EMPTY_URL")}/console#/pools`);
    await empty.locator("#pools tr.state-row.empty", { hasText: "No pools registered yet" }).waitFor();
    await empty.locator('[data-card="deposits"] dd', { hasText: "$0.00" }).waitFor();
    // One money format on the cards: two decimals, compact from a million.
    const money = await empty.evaluate(() => ["9700000", "10034000", "24640.18", "999999.99"]
      .map((d) => usd((BigInt(Math.round(Number(d) * 100)) * 10n ** 16n).toString(), { compact: true })));
    if (money.join(" ") !== "$9.70M $10.03M $24,640.18 $999,999.99") throw new Error(`cards read ${money.join(", ")}`);
    await empty.click('#tabs a[data-view="feed"]');
    await empty.locator("#feed-empty.empty", { hasText: "No account is under water" }).waitFor();
    await empty.click('#tabs a[data-view="market"]');
    await empty.locator("#latest-events tr.state-row.empty").waitFor();
    // Nobody to count: the market's samples are all zero, with whole-number ticks.
    await empty.locator("#market-chart svg").waitFor();
    const ticks = await empty.locator("#market-chart text.tick").allTextContents();
    if (new Set(ticks).size !== ticks.length) throw new Error(`ticks repeat: ${ticks}`);
  }, "#view-market");
  await empty.close();

  await step("22-long-errors", page, async () => {
    await go(page, "wallet");
    await page.fill('#wallet-form input[name="owner"]', "x".repeat(300));
    await page.click('#wallet-form button[type="submit"]');
    await page.locator("#wallet-error").waitFor();
    await page.evaluate(() => show(`A long error: ${"y".repeat(400)}`, "error"));
  }, "#status.error");

  await step("23-keyboard", page, async () => {
    // On a page just opened, the first Tab stop skips to the content and
    // keeps the section shown; focus rings and field edges stand out from
    // white (WCAG 1.4.11: 3:1): the next Tab stop's ring, a text field's edge.
    const fresh = await context.newPage();
    try {
      await fresh.goto(`${api}/console#/pools`);
      await fresh.locator("#view-pools").waitFor({ state: "visible" });
      await fresh.keyboard.press("Tab");
      if ((await fresh.evaluate(() => document.activeElement?.className)) !== "skip-link") {
        throw new Error("the first Tab stop is not the skip link");
      }
      await fresh.keyboard.press("Enter");
      if ((await fresh.evaluate(() => document.activeElement?.id)) !== "main") throw new Error("the skip link did not reach the content");
      if (!fresh.url().endsWith("#/pools") || !(await fresh.locator("#view-pools").isVisible())) {
        throw new Error(`the skip link changed the section: ${fresh.url()}`);
      }
      await fresh.keyboard.press("Tab");
      const contrast = await fresh.evaluate(() => {
        const rgb = (css) => css.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number);
        const lum = (c) => c.map((v) => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
          .reduce((acc, v, i) => acc + v * [0.2126, 0.7152, 0.0722][i], 0);
        const ratio = (css) => 1.05 / (lum(rgb(css)) + 0.05);
        const focused = getComputedStyle(document.activeElement);
        const field = getComputedStyle(document.querySelector('#wallet-form input[name="owner"]'));
        return { on: document.activeElement.tagName, ring: ratio(focused.outlineColor), style: focused.outlineStyle, edge: ratio(field.borderTopColor) };
      });
      if (!(contrast.ring >= 3 && contrast.style !== "none" && contrast.edge >= 3)) {
        throw new Error(`contrast against white: ${JSON.stringify(contrast)}`);
      }
      // At 375 px the section starts within the first screen's upper half:
      // the header, the overview (one row) and the tabs take less than 440 px.
      await fresh.setViewportSize(NARROW);
      const top = await fresh.evaluate(() => document.querySelector("#view-pools").getBoundingClientRect().top + scrollY);
      if (top > 440) throw new Error(`at 375 px the content starts ${Math.round(top)} px down`);
      const scroll = await fresh.evaluate(() => document.documentElement.scrollWidth);
      if (scroll > NARROW.width) throw new Error(`at 375 px the page is ${scroll} px wide`);
    } finally {
      await fresh.close();
    }
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
}
