// Checks the console steps make that measure more than they narrate: each
// takes the page (and what it compares with) and throws on a difference.
// The steps (console-steps.mjs) say when each runs.

/** The chain card's lag is the service's (lendex_sync_lag_slots, in health
 *  as lagSlots) with its live source named: with the tip 25 slots past the
 *  last refresh and the live source at the tip, it says 1, not 25. */
export async function chainCardShowsTheServicesLag(context, api) {
  const probe = await context.newPage();
  try {
    await probe.route("**/api/health", async (route) => {
      const real = await route.fetch();
      const health = await real.json();
      health.checks.rpc = { ok: true, slot: 1000 };
      Object.assign(health.checks.sync, { role: "leader", enabled: true, slot: 975, lagSlots: 1 });
      Object.assign(health.checks.sync.stream, { source: "websocket", connected: true });
      await route.fulfill({ response: real, json: health });
    });
    await probe.goto(`${api}/console#/market`);
    await probe.locator('[data-card="chain"] dd small', { hasText: "lag 1 slot · websocket" }).waitFor();
  } finally {
    await probe.close();
  }
}

/** Live: a price moves on chain while the account page is open. The page
 *  holds a long poll on the owner's detail with its ETag, so the new health
 *  factor shows as soon as the API has it (a refresh every 15 s is no follow). */
export async function accountFollowsTheApi({ page, api, owner, hf, ask, json }) {
  const holds = [];
  const onRequest = (r) => {
    const url = new URL(r.url());
    if (url.pathname === `/api/positions/${owner}/detail` && url.searchParams.get("wait_ms") && r.headers()["if-none-match"]) holds.push(r);
  };
  page.on("request", onRequest);
  try {
    await ask("READY_FOR_NUDGE");
    let moved;
    const asked = Date.now();
    while (Date.now() - asked < 20000) {
      moved = BigInt((await json(`${api}/api/positions/${owner}/detail`)).positions[0].health_factor_wad);
      if (moved !== hf) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (moved === hf) throw new Error("the API never saw the price move");
    const changedAt = Date.now();
    const movedHf = `${moved / 10n ** 18n}.${(moved % 10n ** 18n).toString().padStart(18, "0").slice(0, 4)}`;
    // Within a second on a quiet machine; the bound leaves room for a slow day
    // and is still well short of the old 15 s refresh.
    await page.locator("#account-hf", { hasText: movedHf }).waitFor({ timeout: 5000 });
    console.error(`account page followed the API in ${Date.now() - changedAt} ms`);
    if (!holds.length) throw new Error("the account page does not hold a long poll with the detail's ETag");
  } finally {
    page.off("request", onRequest);
  }
}

/** The labelled range of the wallet's health chart holds its whole line,
 *  1.0 included ("no debt" sits on the top edge, above the numbers). */
export async function healthLineStaysInItsLabels(page) {
  const fit = await page.evaluate(() => {
    const svg = document.querySelector("#wallet-health svg");
    // The left axis's labels (the time axis's are centred under the plot).
    const yTicks = [...svg.querySelectorAll('text.tick[text-anchor="end"]')];
    const ticks = yTicks.map((t) => Number(t.getAttribute("y")) - 4);
    const line = svg.querySelector("path.series").getAttribute("d");
    // "No debt" is drawn on the plot's top edge, above the numbers, by design.
    const plotTop = Math.min(...[...svg.querySelectorAll("line.axis")].map((l) => Number(l.getAttribute("y1"))));
    const ys = [...line.matchAll(/M-?[\d.]+,(-?[\d.]+)|V(-?[\d.]+)/g)].map((m) => Number(m[1] ?? m[2]))
      .filter((y) => Math.abs(y - plotTop) > 0.6);
    const one = Number(svg.querySelector("line.rule").getAttribute("y1"));
    return { top: Math.min(...ticks), bottom: Math.max(...ticks), low: Math.max(...ys), high: Math.min(...ys), one, labels: yTicks.map((t) => t.textContent) };
  });
  if (fit.low > fit.bottom + 1 || fit.high < fit.top - 1 || fit.one > fit.bottom + 1 || fit.one < fit.top - 1) {
    throw new Error(`the health line leaves its labelled range: ${JSON.stringify(fit)}`);
  }
}

/** Two rows by the feed's own path. Away from the table the rows are always
 *  in their order; with the keyboard (or pointer) on it, they hold their
 *  places and say so, re-sorting at once when the sort changes and when the
 *  focus leaves; a tiny move does not flash. */
export async function feedHoldsOnlyUnderTheReader(page) {
  await page.mouse.move(0, 0);
  const steady = await page.evaluate(async () => {
    const mk = (owner, hf, profit) => ({ owner, account_health_factor_wad: hf, positions: [], slot: 1, commitment: "confirmed",
      published_at_ms: Date.now(), liquidation: null, profit });
    const [a, b] = ["ZZZZtestOwnerAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1", "ZZZZtestOwnerBBBBBBBBBBBBBBBBBBBBBBBBBBBBB2"];
    const order = () => [...document.querySelectorAll("#feed tbody tr")].map((tr) => tr.dataset.owner).filter((o) => o === a || o === b);
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    document.activeElement?.blur();
    $('#feed-controls select[name="sort"]').value = "hf";
    feed.resort = true;
    feedEvent("candidate_start", mk(a, "500000000000000000"));
    feedEvent("candidate_start", mk(b, "600000000000000000"));
    await frame();
    const first = order();
    // Nobody on the table: the new order at once, as many times as prices move.
    feedEvent("candidate_update", mk(a, "700000000000000000"));
    await frame();
    const settled = order();
    const noCue = $("#feed-order").hidden;
    // The keyboard on row B's history link: B moves to 0.8 and A now comes
    // first, but the rows hold still under the focus, and say so.
    const focusLink = document.querySelector(`#feed tr[data-owner="${b}"] a.history-link`);
    focusLink.focus();
    feedEvent("candidate_update", mk(b, "800000000000000000"));
    await frame();
    const held = order();
    const cue = $("#feed-order").hidden ? "" : $("#feed-order").textContent;
    // (The move to 0.8 flashed it; a tiny one after must not.)
    document.querySelector(`#feed tr[data-owner="${b}"] td.hf`).classList.remove("changed");
    feedEvent("candidate_update", mk(b, "800000000000000001"));
    await frame();
    const tiny = document.querySelector(`#feed tr[data-owner="${b}"] td.hf`).classList.contains("changed");
    // Asked for: a change of the sort re-sorts at once, the focus kept on its row.
    $('#feed-controls select[name="sort"]').dispatchEvent(new Event("input", { bubbles: true }));
    await frame();
    const resorted = order();
    const focusKept = document.activeElement === focusLink;
    // Held again, then the focus leaves the table: in order at once.
    feedEvent("candidate_update", mk(a, "900000000000000000"));
    await frame();
    const heldAgain = order();
    focusLink.blur();
    await frame();
    const released = order();
    for (const o of [a, b]) feedEvent("candidate_stop", mk(o, "1"));
    await frame();
    return { first, settled, noCue, held, cue, tiny, resorted, focusKept, heldAgain, released, left: order().length };
  });
  const [a, b] = ["ZZZZtestOwnerAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1", "ZZZZtestOwnerBBBBBBBBBBBBBBBBBBBBBBBBBBBBB2"];
  const ab = [a, b].join(), ba = [b, a].join();
  if (steady.first.join() !== ab || steady.settled.join() !== ba || !steady.noCue || steady.held.join() !== ba
    || !steady.cue.includes("held in place while your pointer or keyboard is on the table") || steady.tiny
    || steady.resorted.join() !== ab || !steady.focusKept || steady.heldAgain.join() !== ab || steady.released.join() !== ba
    || steady.left !== 0) {
    throw new Error(`a steady feed: ${JSON.stringify(steady)}`);
  }
}

/** The overview's refresh keeps each card's trend in place while it reads
 *  (the deposits card watched through one refresh). */
export async function trendsStayThroughARefresh(page) {
  const lost = await page.evaluate(async () => {
    const dd = $('[data-card="deposits"] dd');
    let lost = false;
    const watch = new MutationObserver(() => { lost ||= !dd.querySelector(".trend"); });
    watch.observe(dd, { childList: true });
    await loadOverview();
    watch.disconnect();
    return lost;
  });
  if (lost) throw new Error("the deposits card lost its trend while the overview refreshed");
}

/** No figure of the overview breaks inside itself ("−$274,71 / 6.15",
 *  "in 3 / min"), at each width: each number and each span, measured as laid
 *  out, sits on one line. */
export async function figuresStayWhole(page, viewports) {
  for (const viewport of viewports) {
    await page.setViewportSize(viewport);
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    const broken = await page.evaluate(() => {
      const out = [];
      const walker = document.createTreeWalker(document.querySelector("#overview .cards"), NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.data.matchAll(/[−+±]?\$?\d[\d,.]*[KMB]?|in \d+ (min|h)/g)) {
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
          if (lines.size > 1) out.push(m[0]);
        }
      }
      return out;
    });
    if (broken.length) throw new Error(`figures broken across lines at ${viewport.width} px: ${broken.join(", ")}`);
  }
}

/** The feed's filters are in the URL: a shared link opens the same view;
 *  the filters are put back after. */
export async function feedFiltersShareAsALink(page, context) {
  await page.selectOption('#feed-controls select[name="sort"]', "profit");
  await page.fill('#feed-controls input[name="min_profit"]', "0.5");
  await page.waitForFunction(() => location.hash.includes("sort=profit") && location.hash.includes("min_profit=0.5"));
  const shared = await context.newPage();
  try {
    await shared.goto(page.url());
    await shared.locator("#view-feed").waitFor();
    const got = await shared.evaluate(() => [$('#feed-controls select[name="sort"]').value, $('#feed-controls input[name="min_profit"]').value]);
    if (got.join() !== "profit,0.5") throw new Error(`a shared feed link opened with ${got}`);
  } finally {
    await shared.close();
  }
  await page.selectOption('#feed-controls select[name="sort"]', "hf");
  await page.fill('#feed-controls input[name="min_profit"]', "");
}
