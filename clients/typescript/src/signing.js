// The signed handshake's client side (docs: spec 5.2): the canonical message,
// and signers over a secret key or a wallet.
import bs58 from "bs58";
import nacl from "tweetnacl";

import { RefusedError } from "./errors.js";

export const MESSAGE_HEADER = "Service admin auth";

/** The exact three lines a wallet signs for `action` with `nonce`. */
export function canonicalMessage(action, nonce) {
  return `${MESSAGE_HEADER}\nAction: ${action}\nNonce: ${nonce}`;
}

export const actions = {
  addAdmin: (pubkey, role) => `add_admin:${pubkey}:${role}`,
  revokeAdmin: (pubkey) => `revoke_admin:${pubkey}`,
  initPool: (tokenMint) => `init_pool:${tokenMint}`,
  readAudit: () => "read_audit",
  createWebhook: () => "create_webhook",
  readWebhooks: () => "read_webhooks",
  deleteWebhook: (id) => `delete_webhook:${id}`,
  redeliverWebhook: (id, deliveryId) => `redeliver_webhook:${id}:${deliveryId}`,
};

/** A signer over a 64-byte ed25519 secret key (a Solana keypair's bytes). */
export function keypairSigner(secretKey) {
  const bytes = Uint8Array.from(secretKey);
  if (bytes.length !== 64) throw new RefusedError("a keypair is 64 bytes");
  // Its second half is the public key of its first (the seed): a file that
  // mixes two keys would sign with one and claim the other.
  const pair = nacl.sign.keyPair.fromSeed(bytes.slice(0, 32));
  if (!pair.publicKey.every((b, i) => b === bytes[32 + i])) {
    throw new RefusedError("the keypair's public half is not its secret's");
  }
  return {
    publicKey: bs58.encode(pair.publicKey),
    signMessage: async (message) => nacl.sign.detached(message, pair.secretKey),
  };
}

/**
 * A signer over a wallet: a Wallet-Standard wallet and one of its accounts
 * (the `solana:signMessage` feature), or an adapter-style wallet with
 * `publicKey` and `signMessage(bytes)`.
 */
export function walletSigner(wallet, account) {
  const feature = wallet?.features?.["solana:signMessage"];
  if (feature && account) {
    return {
      publicKey: account.address,
      signMessage: async (message) => {
        const [output] = await feature.signMessage({ account, message });
        return output.signature;
      },
    };
  }
  if (wallet?.publicKey && typeof wallet.signMessage === "function") {
    const key = wallet.publicKey;
    return {
      publicKey: typeof key === "string" ? key : key.toBase58(),
      signMessage: (message) => wallet.signMessage(message),
    };
  }
  throw new RefusedError("the wallet cannot sign messages");
}

/** Checks a signer's signature before it is sent: a wallet that signed
 *  something else (or with another key) is refused here. */
export function verifies(publicKey, message, signature) {
  try {
    return nacl.sign.detached.verify(message, signature, bs58.decode(publicKey));
  } catch {
    return false;
  }
}
