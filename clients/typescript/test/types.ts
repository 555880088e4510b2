// Compiled by `npm run typecheck` (never run): what a bot author writes
// type-checks, and what the document forbids does not.
import { LendexClient, LendexError, formatWad, isCandidate, keypairSigner, type FeedEvent } from "../src/index.js";
import { keypairFile } from "../src/node.js";

async function bot(client: LendexClient): Promise<void> {
  const quotes = await client.liquidations({ limit: 10, commitment: "processed" });
  for (const quote of quotes.liquidations) {
    const repay: string = quote.repay_amount;
    const profit: string = formatWad(quote.profit_value_wad);
    void repay;
    void profit;
  }
  for await (const change of client.watch("detail", { user: "11111111111111111111111111111111" })) {
    for (const position of change.body.positions) {
      const hf: string = position.health_factor_wad;
      void hf;
    }
  }
  for await (const event of client.unhealthyStream({ commitment: "confirmed" })) {
    const e: FeedEvent = event;
    if (e.event === "candidate_start") {
      const owner: string = e.data.owner;
      void owner;
    }
  }
  for await (const e of client.unhealthyStream()) {
    // @ts-expect-error: reset and resync carry no owner; narrow first
    void e.data.owner;
    if (!isCandidate(e)) continue;
    const hf: string = e.data.account_health_factor_wad;
    void hf;
  }
  const signer = keypairSigner(new Uint8Array(64));
  await client.addAdmin(signer, "11111111111111111111111111111111", "pool_admin", { label: "bot" });
  await client.addAdmin(await keypairFile(), "11111111111111111111111111111111", "super_admin");
  try {
    await client.health();
  } catch (error) {
    if (error instanceof LendexError && error.error === "rate limited") return;
    if (error instanceof LendexError) {
      const field: string | null = error.field;
      // @ts-expect-error: a field is text or null, never a number
      const count: number = error.field;
      void [field, count];
    }
  }
  // @ts-expect-error: a role the document does not list
  await client.addAdmin(signer, "11111111111111111111111111111111", "owner");
  // @ts-expect-error: not a route that long-polls
  client.watch("transactions", {});
}
void bot;
