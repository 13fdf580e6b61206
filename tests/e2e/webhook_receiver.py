"""A webhook receiver for nightjar's notification tests (127.0.0.1 only).

Verifies each request's Standard Webhooks signature (HMAC-SHA256 over
"{webhook-id}.{webhook-timestamp}.{body}", base64, header `v1,<sig>`) with the
secret in argv[2], checks that Idempotency-Key equals webhook-id, and appends
one JSON line per request to the file argv[1]: {"key", "kind", "task",
"valid", "status", "title", "text"}. While the file `<argv[1]>.fail` exists it
answers with the status written in it (e.g. 503 or 400) instead of 204, and
while `<argv[1]>.hold` exists it holds its answer (after logging).
Prints its port on the first line of stdout.
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

LOG, SECRET = sys.argv[1], sys.argv[2].encode()


class Hook(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        wid = self.headers.get("webhook-id", "")
        ts = self.headers.get("webhook-timestamp", "")
        sig = self.headers.get("webhook-signature", "")
        want = base64.b64encode(
            hmac.new(SECRET, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()
        ).decode()
        valid = sig == f"v1,{want}" and self.headers.get("Idempotency-Key") == wid
        status = 204
        try:
            with open(LOG + ".fail") as f:
                status = int(f.read().strip() or "503")
        except FileNotFoundError:
            pass
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        with open(LOG, "a") as f:
            f.write(json.dumps({
                "key": wid, "kind": event.get("kind"), "task": event.get("task"),
                "valid": valid, "status": status, "schema": event.get("schema"),
                "title": event.get("title"), "text": event.get("text"),
                "fields": event.get("fields"),
            }) + "\n")
        # While `<log>.hold` exists, the answer waits (a send in flight).
        while os.path.exists(LOG + ".hold"):
            time.sleep(0.05)
        self.send_response(status)
        self.end_headers()
        if status != 204:
            self.wfile.write(b'{"error": "refused by the test"}')


server = HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Hook)
print(server.server_address[1], flush=True)
server.serve_forever()
