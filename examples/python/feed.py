"""Follows Lendex's liquidation feed (GET /api/positions/unhealthy/stream, SSE)
and prints one line per event: the owner, its account health factor and, for
candidates, the best liquidation quote.

    LENDEX_URL=http://127.0.0.1:8080 python feed.py [max events]

The feed survives drops: every event has an id, and a reconnect that sends the
last one (`Last-Event-ID`) gets exactly the events it missed. When the service
cannot replay them (it restarted, another replica answered, too much was
missed) it sends `reset` first and then every owner under water again: a client
that keeps a list starts it over there. `resync` (this client read too slowly)
ends the stream; reconnecting the same way resumes or resets.
"""

import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from decimal import ROUND_DOWN, Decimal

API = os.environ.get("LENDEX_URL", "http://127.0.0.1:8080")
WAD = Decimal(10) ** 18
RECONNECT_AFTER_SECONDS = 0.5


def wad(text):
    """A WAD decimal string to 4 places, cut (as the WAD math floors), never rounded up."""
    return str((Decimal(text) / WAD).quantize(Decimal("0.0001"), rounding=ROUND_DOWN))


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


def events(last_event_id):
    """The stream's events as (id, name, data), from after `last_event_id`."""
    headers = {"accept": "text/event-stream"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    request = urllib.request.Request(API + "/api/positions/unhealthy/stream", headers=headers)
    with urllib.request.urlopen(request) as stream:
        event_id, event, data = None, "message", ""
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
            elif line == "":
                if data:
                    yield event_id, event, json.loads(data)
                elif event_id:
                    # The feed's position alone (no event): resume from there.
                    yield event_id, None, None
                event_id, event, data = None, "message", ""


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    last_event_id = None
    seen = 0
    while True:
        try:
            for event_id, event, data in events(last_event_id):
                if event is None:
                    last_event_id = event_id
                    continue
                if event == "reset":
                    # What was missed is not replayed: the snapshot follows.
                    print(f"reset {data['reason']}", file=sys.stderr, flush=True)
                    continue
                if event == "resync":
                    print(f"resync {data['reason']}", file=sys.stderr, flush=True)
                    break
                show(event, data)
                if event_id:
                    last_event_id = event_id
                seen += 1
                if limit is not None and seen >= limit:
                    return
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            print(f"feed unreachable ({error})", file=sys.stderr, flush=True)
        print(f"reconnecting after {last_event_id}", file=sys.stderr, flush=True)
        time.sleep(RECONNECT_AFTER_SECONDS)


if __name__ == "__main__":
    main()
