"""Polls Lendex's liquidation quotes the cheap way: a long poll that sends the
ETag of the answer it holds. While nothing changes the service holds the
request (up to `wait_ms`) and then answers 304 with no body; the moment the
answer changes it answers 200 with the new one. One line per new answer.

    LENDEX_URL=http://127.0.0.1:8080 python poll.py [max answers]
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
from decimal import ROUND_DOWN, Decimal

API = os.environ.get("LENDEX_URL", "http://127.0.0.1:8080")
WAD = Decimal(10) ** 18
WAIT_MS = 25000


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    etag = None
    answers = 0
    while limit is None or answers < limit:
        headers = {"If-None-Match": etag} if etag else {}
        url = f"{API}/api/liquidations?limit=50&wait_ms={WAIT_MS}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as res:
                etag = res.headers["ETag"]
                quotes = json.load(res)["liquidations"]
        except urllib.error.HTTPError as error:
            if error.code == 304:
                continue  # nothing new within the wait: ask again
            print(f"{error.code} {error.read().decode()}", file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        except (urllib.error.URLError, OSError) as error:
            print(f"unreachable ({error})", file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        answers += 1
        best = quotes[0] if quotes else None
        line = f"{len(quotes)} quotes, etag {etag}"
        if best:
            # Cut to 4 places, as the WAD math floors (never rounded up).
            profit = (Decimal(best["profit_value_wad"]) / WAD).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
            line += f", best {best['owner']} profit ${profit} at slot {best['slot']}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
