"""Follows Lendex's liquidation quotes by long polls: the package sends the ETag
it holds with `wait_ms`, the service holds the request until the answer changes
(a 304 costs no body), and each new answer is one line.

    LENDEX_URL=http://127.0.0.1:8080 python poll.py [max answers]
"""

import os
import sys

from lendex_client import Client, format_wad

client = Client(os.environ.get("LENDEX_URL", "http://127.0.0.1:8080"), timeout=40)
max_answers = int(sys.argv[1]) if len(sys.argv) > 1 else None

answers = 0
for answer in client.watch("liquidations", {"limit": 50}):
    quotes = answer.body["liquidations"]
    best = quotes[0] if quotes else None
    tail = f", best {best['owner']} profit ${format_wad(best['profit_value_wad'])} at slot {best['slot']}" if best else ""
    print(f"{len(quotes)} quotes, etag {answer.etag}{tail}", flush=True)
    answers += 1
    if max_answers is not None and answers >= max_answers:
        break
