"""Follows Lendex's liquidation feed and prints one line per event: the owner,
its account health factor and, for candidates, the best liquidation quote.

    LENDEX_URL=http://127.0.0.1:8080 python feed.py [max events]

The package's feed survives drops: it reconnects with the id of the last event
(Last-Event-ID) and gets exactly what it missed. When the service cannot replay
it (restarted, too much missed) it sends `reset`, then every owner under water
again: a bot that keeps a list starts it over there.
"""

import os
import sys

from lendex_client import Client, format_wad

client = Client(os.environ.get("LENDEX_URL", "http://127.0.0.1:8080"))
max_events = int(sys.argv[1]) if len(sys.argv) > 1 else None


def reconnecting(last_event_id, failures):
    print(f"reconnecting after {last_event_id}", file=sys.stderr, flush=True)


seen = 0
for event in client.unhealthy_stream(on_reconnect=reconnecting):
    if event.event in ("reset", "resync"):
        print(f"{event.event} {event.data['reason']}", file=sys.stderr, flush=True)
        continue
    data, q = event.data, event.data.get("liquidation")
    quote = (
        f" repay {q['repay_amount']} in {q['debt_pool']}, seize {q['seize_amount']} of {q['collateral_pool']},"
        f" profit ${format_wad(q['profit_value_wad'])}"
        if q
        else ""
    )
    print(f"{event.event} {data['owner']} hf {format_wad(data['account_health_factor_wad'])}{quote}", flush=True)
    seen += 1
    if max_events is not None and seen >= max_events:
        break
