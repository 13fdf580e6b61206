"""A real SMTP server (aiosmtpd) for nightjar's mail tests, on 127.0.0.1 only.

argv: LOG USER PASSWORD [CERT KEY]
- Requires AUTH (PLAIN or LOGIN) as USER with PASSWORD; a wrong login is
  refused with 535 (a permanent failure).
- With CERT and KEY (PEM), offers STARTTLS and refuses mail before it.
- Appends one JSON line per accepted message to LOG: {"from", "to",
  "auth", "tls", "subject", "message_id", "text", "html", "attachments",
  "bare_line_ends"}.
- While the file `<LOG>.fail` exists, answers DATA with the SMTP reply
  written in it (e.g. `451 4.3.0 try later` or `550 5.1.1 no such user`).
Prints its port on the first line of stdout, then serves until killed.
"""

import email
import logging
import re
import warnings
import email.policy
import json
import socket
import ssl
import sys
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

LOG, USER, PASSWORD = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
CERT = sys.argv[4] if len(sys.argv) > 5 else None
KEY = sys.argv[5] if len(sys.argv) > 5 else None


def authenticate(server, session, envelope, mechanism, auth_data):
    ok = (
        isinstance(auth_data, LoginPassword)
        and auth_data.login == USER
        and auth_data.password == PASSWORD
    )
    return AuthResult(success=ok, auth_data=auth_data if ok else None)


class Handler:
    async def handle_DATA(self, server, session, envelope):
        try:
            with open(LOG + ".fail") as f:
                return f.read().strip()
        except FileNotFoundError:
            pass
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        text = msg.get_body(preferencelist=("plain",))
        html = msg.get_body(preferencelist=("html",))
        record = {
            "from": msg.get("From"),
            "envelope_from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "auth": (session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None),
            "tls": session.ssl is not None,
            "subject": msg.get("Subject"),
            "message_id": msg.get("Message-ID"),
            "text": text.get_content() if text else None,
            "html": html.get_content() if html else None,
            "attachments": [a.get_filename() for a in msg.iter_attachments()],
            # A CR or LF not in a CRLF, as received (a server that ends DATA
            # at <CR>.<CR> or <LF>.<CRLF> would be open to SMTP smuggling).
            "bare_line_ends": len(re.findall(rb"\r(?!\n)|(?<!\r)\n", envelope.original_content)),
        }
        with open(LOG, "a") as f:
            f.write(json.dumps(record) + "\n")
        return "250 OK"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# The tests read answers, not aiosmtpd's warnings and session tracebacks.
warnings.filterwarnings("ignore")
logging.getLogger("mail.log").setLevel(logging.CRITICAL)
kwargs = {}
if CERT:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(CERT, KEY)
    kwargs = {"tls_context": ctx, "require_starttls": True}
port = free_port()
controller = Controller(
    Handler(),
    hostname="127.0.0.1",
    port=port,
    authenticator=authenticate,
    auth_required=True,
    auth_require_tls=bool(CERT),
    **kwargs,
)
controller.start()
print(port, flush=True)
while True:
    time.sleep(3600)
