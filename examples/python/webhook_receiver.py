"""Receives Lendex's webhooks: each delivery verified with the
`standardwebhooks` package against the secret shown when the webhook was
created, a repeat (the same webhook-id) skipped, and each event printed as a
line. Answers fast: Lendex waits for the answer, not for your work.

    WEBHOOK_SECRET=whsec_... PORT=8787 python webhook_receiver.py
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

hook = Webhook(os.environ["WEBHOOK_SECRET"])
port = int(os.environ.get("PORT", "8787"))
seen = set()  # webhook-ids handled (keep them in your database in production)
MAX_BODY = 4 * 1024 * 1024


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            return self.answer(413)
        body = self.rfile.read(length)
        try:
            # The exact bytes received, before any parsing.
            delivery = hook.verify(body, dict(self.headers))
        except WebhookVerificationError as e:
            print(f"refused: {e}", flush=True)
            return self.answer(401)
        delivery_id = self.headers["webhook-id"]
        if delivery_id in seen:
            print(f"duplicate {delivery_id}", flush=True)
            return self.answer(200)
        seen.add(delivery_id)
        for event in delivery["events"]:
            print(
                f"{event['type']} {event['owner']} {event['account_health_factor_wad']} "
                f"below {event['below_wad']} change {event['change_id']}",
                flush=True,
            )
        self.answer(204)

    def answer(self, status):
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
print(f"listening on {port}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
