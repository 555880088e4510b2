// Adds an admin to Lendex's allowlist with the signed nonce handshake (docs/design.md §5):
// 1. ask for a nonce for the action, 2. check the message is the canonical one
// and sign its UTF-8 bytes (ed25519, detached, base58), 3. send the call.
//
//   LENDEX_URL=http://127.0.0.1:8080 KEYPAIR=~/.config/solana/id.json \
//     node add-admin.mjs <wallet> <pool_admin|super_admin> [label]
//
// KEYPAIR is a Solana CLI keypair file (a JSON array of 64 bytes) of a super-admin.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import bs58 from "bs58";
import nacl from "tweetnacl";

const api = process.env.LENDEX_URL ?? "http://127.0.0.1:8080";
const keyPath = (process.env.KEYPAIR ?? `${homedir()}/.config/solana/id.json`).replace(/^~/, homedir());
const [wallet, role, label] = process.argv.slice(2);
if (!wallet || !role) {
  console.error("usage: node add-admin.mjs <wallet> <pool_admin|super_admin> [label]");
  process.exit(2);
}

// The 64-byte secret key of tweetnacl is the Solana CLI file as is.
const keypair = nacl.sign.keyPair.fromSecretKey(Uint8Array.from(JSON.parse(readFileSync(keyPath, "utf8"))));
const actor = bs58.encode(keypair.publicKey);

async function call(method, path, body) {
  const res = await fetch(`${api}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) {
    console.error(text);
    process.exit(1);
  }
  return JSON.parse(text);
}

/** A nonce for `action` and the signature of its message. */
async function signed(action) {
  const { nonce, message } = await call("POST", "/api/auth/nonce", { pubkey: actor, action });
  // Sign only what we asked for: the three canonical lines.
  const expected = `Service admin auth\nAction: ${action}\nNonce: ${nonce}`;
  if (message !== expected) throw new Error(`refusing to sign an unexpected message: ${message}`);
  const signature = bs58.encode(nacl.sign.detached(new TextEncoder().encode(message), keypair.secretKey));
  return { actor, nonce, signature };
}

const auth = await signed(`add_admin:${wallet}:${role}`);
const answer = await call("POST", "/api/admin/allowlist", { ...auth, pubkey: wallet, role, label: label ?? null });
console.log(JSON.stringify(answer));
