import type { Signer } from "./index.js";

/** Where the Solana CLI keeps its default keypair (~/.config/solana/id.json). */
export function defaultKeypairPath(): string;
/** A signer over a Solana CLI keypair file (a JSON array of 64 bytes); `~/` is the home folder. */
export function keypairFile(path?: string): Promise<Signer>;
