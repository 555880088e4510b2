"""Adds an admin to Lendex's allowlist with the signed nonce handshake: the
package asks for a nonce, checks the message is the canonical one, signs it
with the keypair and sends the call.

    LENDEX_URL=http://127.0.0.1:8080 KEYPAIR=~/.config/solana/id.json \\
        python add_admin.py <wallet> <pool_admin|super_admin> [label]

KEYPAIR is a Solana CLI keypair file (a JSON array of 64 bytes) of a super-admin.
"""

import json
import os
import sys

from lendex_client import Client, LendexError, keypair_file

if len(sys.argv) < 3:
    print("usage: python add_admin.py <wallet> <pool_admin|super_admin> [label]", file=sys.stderr)
    sys.exit(2)
wallet, role = sys.argv[1], sys.argv[2]
label = sys.argv[3] if len(sys.argv) > 3 else None

client = Client(os.environ.get("LENDEX_URL", "http://127.0.0.1:8080"))
signer = keypair_file(os.environ.get("KEYPAIR"))
try:
    print(json.dumps(client.add_admin(signer, wallet, role, label), separators=(",", ":")))
except LendexError as error:
    print(json.dumps({"error": error.error}, separators=(",", ":")), file=sys.stderr)
    sys.exit(1)
