"""A WeChat Work group-bot server for nightjar's tests (127.0.0.1 only).

POST /cgi-bin/webhook/send?key=K: checks the key (argv[2]), the body's shape
(msgtype markdown or text, content within 4096 or 2048 bytes), answers
errcode 45009 (rate limit) to the first message and 0 after, and appends one
JSON line per request to argv[1]: {"ok", "errcode", "events", "bytes",
"msgtype", "content"}, where events is N for a summary ("nightjar (N)" at its
start) and 1 otherwise. Prints its port on the first line of stdout.
"""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

LOG, KEY = sys.argv[1], sys.argv[2]
seen = {"n": 0}


class Bot(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        url = urlparse(self.path)
        problem = None
        if url.path != "/cgi-bin/webhook/send" or parse_qs(url.query).get("key") != [KEY]:
            problem = "wrong path or key"
        try:
            msg = json.loads(body)
        except ValueError:
            msg, problem = {}, "not JSON"
        kind = msg.get("msgtype")
        content = (msg.get(kind) or {}).get("content", "") if kind else ""
        limit = {"markdown": 4096, "text": 2048}.get(kind)
        size = len(content.encode())
        if limit is None:
            problem = problem or f"msgtype {kind!r}"
        elif size > limit:
            problem = problem or f"content of {size} bytes over {limit}"
        seen["n"] += 1
        errcode = 40008 if problem else (45009 if seen["n"] == 1 else 0)
        m = re.match(r"(?:\*\*)?nightjar(?:\*\*)? \((\d+)\)", content)
        with open(LOG, "a") as f:
            f.write(json.dumps({
                "ok": errcode == 0, "errcode": errcode, "problem": problem,
                "events": int(m.group(1)) if m else 1, "bytes": size,
                "msgtype": kind, "content": content,
            }, ensure_ascii=False) + "\n")
        answer = json.dumps({"errcode": errcode, "errmsg": problem or "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = HTTPServer(("127.0.0.1", 0), Bot)
print(server.server_address[1], flush=True)
server.serve_forever()
