"""Adds an admin to Lendex's allowlist with the signed nonce handshake (docs/design.md §5):
ask for a nonce for the action, check the message is the canonical one, sign its
UTF-8 bytes (ed25519, detached, base58), send the call.

    LENDEX_URL=http://127.0.0.1:8080 KEYPAIR=~/.config/solana/id.json \\
        python add_admin.py <wallet> <pool_admin|super_admin> [label]

KEYPAIR is a Solana CLI keypair file (a JSON array of 64 bytes) of a super-admin.
"""

import json
import os
import sys
import urllib.error
import urllib.request

import base58
from nacl.signing import SigningKey

API = os.environ.get("LENDEX_URL", "http://127.0.0.1:8080")
KEYPAIR = os.path.expanduser(os.environ.get("KEYPAIR", "~/.config/solana/id.json"))


def call(method, path, body):
    request = urllib.request.Request(
        API + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        print(error.read().decode(), file=sys.stderr)
        sys.exit(1)


def signed(key, action):
    """A nonce for `action` and the signature of its message."""
    actor = base58.b58encode(bytes(key.verify_key)).decode()
    issued = call("POST", "/api/auth/nonce", {"pubkey": actor, "action": action})
    # Sign only what we asked for: the three canonical lines.
    expected = f"Service admin auth\nAction: {action}\nNonce: {issued['nonce']}"
    if issued["message"] != expected:
        raise SystemExit(f"refusing to sign an unexpected message: {issued['message']!r}")
    signature = key.sign(expected.encode()).signature
    return {"actor": actor, "nonce": issued["nonce"], "signature": base58.b58encode(signature).decode()}


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: python add_admin.py <wallet> <pool_admin|super_admin> [label]")
    wallet, role = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else None
    with open(KEYPAIR) as f:
        secret = bytes(json.load(f))
    # The file holds the 32-byte seed then the public key.
    key = SigningKey(secret[:32])
    if bytes(key.verify_key) != secret[32:]:
        sys.exit("the keypair's public key does not match its secret key")
    auth = signed(key, f"add_admin:{wallet}:{role}")
    answer = call("POST", "/api/admin/allowlist", {**auth, "pubkey": wallet, "role": role, "label": label})
    print(json.dumps(answer, separators=(",", ":")))


if __name__ == "__main__":
    main()
