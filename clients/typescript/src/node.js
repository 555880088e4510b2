// Node only: a signer from a Solana CLI keypair file (a JSON array of 64 bytes).
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";

import { RefusedError } from "./errors.js";
import { keypairSigner } from "./signing.js";

/** Where the Solana CLI keeps its default keypair. */
export function defaultKeypairPath() {
  return join(homedir(), ".config", "solana", "id.json");
}

/** `~` or `~/...` as the shell reads it (the Solana CLI's paths are written so). */
function expandHome(path) {
  return path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(2)) : path;
}

/** A signer over the keypair file at `path` (`~/` is the home folder). */
export async function keypairFile(path = defaultKeypairPath()) {
  path = expandHome(path);
  let bytes;
  try {
    bytes = JSON.parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new RefusedError(`${path} is not a keypair file (${cause.message})`);
  }
  if (!Array.isArray(bytes) || bytes.length !== 64 || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256)) {
    throw new RefusedError(`${path} is not a keypair file (a JSON array of 64 bytes)`);
  }
  return keypairSigner(Uint8Array.from(bytes));
}
