"""Follows Lendex's liquidation feed (GET /api/positions/unhealthy/stream, SSE)
and prints one line per event: the owner, its account health factor and, for
candidates, the best liquidation quote.

    LENDEX_URL=http://127.0.0.1:8080 python feed.py [max events]

On `resync` (this client fell behind) re-read /api/positions/unhealthy and
reconnect: the new stream starts with every owner under water.
"""

import json
import os
import sys
import urllib.request
from decimal import Decimal

API = os.environ.get("LENDEX_URL", "http://127.0.0.1:8080")
WAD = Decimal(10) ** 18


def wad(text):
    """A WAD decimal string as a decimal, exactly."""
    return f"{(Decimal(text) / WAD):.4f}"


def show(event, data):
    line = f"{event} {data['owner']} hf {wad(data['account_health_factor_wad'])}"
    quote = data.get("liquidation")
    if quote:
        line += (
            f" repay {quote['repay_amount']} in {quote['debt_pool']},"
            f" seize {quote['seize_amount']} of {quote['collateral_pool']},"
            f" profit ${wad(quote['profit_value_wad'])}"
        )
    print(line, flush=True)


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    request = urllib.request.Request(API + "/api/positions/unhealthy/stream", headers={"accept": "text/event-stream"})
    seen = 0
    with urllib.request.urlopen(request) as stream:
        event, data = "message", ""
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
            elif line == "":
                if event == "resync":
                    print(f"resync {data}")
                    return
                if data:
                    show(event, json.loads(data))
                    seen += 1
                    if limit is not None and seen >= limit:
                        return
                event, data = "message", ""


if __name__ == "__main__":
    main()
