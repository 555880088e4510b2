// Adds an admin to Lendex's allowlist with the signed nonce handshake: the
// package asks for a nonce, checks the message is the canonical one, signs it
// with the keypair and sends the call.
//
//   LENDEX_URL=http://127.0.0.1:8080 KEYPAIR=~/.config/solana/id.json \
//     node add-admin.mjs <wallet> <pool_admin|super_admin> [label]
//
// KEYPAIR is a Solana CLI keypair file (a JSON array of 64 bytes) of a super-admin.
import { homedir } from "node:os";

import { LendexClient, LendexError } from "@lendex/client";
import { keypairFile } from "@lendex/client/node";

const [wallet, role, label] = process.argv.slice(2);
if (!wallet || !role) {
  console.error("usage: node add-admin.mjs <wallet> <pool_admin|super_admin> [label]");
  process.exit(2);
}
const client = new LendexClient(process.env.LENDEX_URL ?? "http://127.0.0.1:8080");
const signer = await keypairFile(process.env.KEYPAIR?.replace(/^~/, homedir()));
try {
  console.log(JSON.stringify(await client.addAdmin(signer, wallet, role, { label })));
} catch (error) {
  if (!(error instanceof LendexError)) throw error;
  console.error(JSON.stringify({ error: error.error }));
  process.exit(1);
}
