"""How a request reaches the daemon: its Unix socket (newline-delimited JSON,
``{"v":2,"req":{"verb":...}}``), or its HTTP API (``POST /api/v2/{verb}``
with a token). Both answer with the same reply line."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .errors import Invalid, NightjarError, NotRunning, from_reply

try:  # Python 3.11 and later
    import tomllib
except ImportError:  # pragma: no cover - older Pythons read the two keys alone
    tomllib = None

#: The protocol version this client speaks.
PROTOCOL = 2

#: The socket of a root daemon with the default state dir (the lab-wide one).
SYSTEM_SOCKET = "/run/nightjar/nightjar.sock"
SYSTEM_STATE_DIR = "/var/lib/nightjar"

#: Longest config file read (as the CLI: 1 MiB).
MAX_CONFIG = 1 << 20

#: Longest reply read (a sweep's `show` can be large, a log chunk is 64 KiB).
MAX_REPLY = 256 * 1024 * 1024


def _default_state_dir() -> Path:
    if os.geteuid() == 0:
        return Path(SYSTEM_STATE_DIR)
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg) / "nightjar"
    return Path(os.environ.get("HOME", "/tmp")) / ".local/state/nightjar"


def _default_socket(state_dir: Path) -> Path:
    if state_dir == _default_state_dir():
        if os.geteuid() == 0:
            return Path(SYSTEM_SOCKET)
        run = os.environ.get("XDG_RUNTIME_DIR")
        if run:
            return Path(run) / "nightjar.sock"
    return state_dir / "nightjar.sock"


def find_socket(config: str | os.PathLike | None = None,
                state_dir: str | os.PathLike | None = None) -> tuple[Path, bool]:
    """The socket the ``nightjar`` CLI would connect to, and whether the
    lab-wide daemon's is the fallback: ``NIGHTJAR_SOCKET``; else the one of
    the config file's ``state_dir``/``socket`` keys and ``state_dir``
    (``NIGHTJAR_CONFIG``, ``NIGHTJAR_STATE_DIR``); else the user's own
    default daemon's."""
    named = os.environ.get("NIGHTJAR_SOCKET")
    if named:
        return Path(named), False
    config = config or os.environ.get("NIGHTJAR_CONFIG") or None
    state_dir = state_dir or os.environ.get("NIGHTJAR_STATE_DIR") or None
    file_dir = file_socket = None
    if config:
        path = Path(config)
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_CONFIG + 1)
            if len(raw) > MAX_CONFIG:
                raise ValueError(f"larger than {MAX_CONFIG >> 20} MiB: is it the right file?")
            table = _keys(raw.decode("utf-8"))
        except (OSError, ValueError) as e:
            raise NightjarError(f"config file {path}: {e}", "invalid") from e
        # As the CLI: the file's own folder, symbolic links not followed.
        base = path.absolute().parent
        for key in ("state_dir", "socket"):
            value = table.get(key)
            if value is not None and not isinstance(value, str):
                raise NightjarError(
                    f"config file {path}: key `{key}` must be a path in quotes", "invalid")
        if table.get("state_dir") is not None:
            file_dir = base / table["state_dir"] if table["state_dir"] else Path("")
        if table.get("socket") is not None:
            file_socket = base / table["socket"] if table["socket"] else Path("")
    dir_ = file_dir or _default_state_dir()
    sock = file_socket or _default_socket(dir_)
    if state_dir:
        if sock == _default_socket(dir_):
            sock = Path(state_dir) / "nightjar.sock"
    defaults = config is None and state_dir is None
    return sock, defaults and sock != Path(SYSTEM_SOCKET)


def _keys(text: str) -> dict:
    """The config file's top-level keys (tomllib), or where it is missing
    (before Python 3.11) its quoted `state_dir` and `socket` alone."""
    if tomllib is not None:
        return tomllib.loads(text)
    top = re.split(r"^\s*\[", text, maxsplit=1, flags=re.M)[0]
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r'^\s*(state_dir|socket)\s*=\s*"([^"]*)"', top, flags=re.M)
    }


def _reply(line: bytes, verb: str) -> Any:
    try:
        reply = json.loads(line)
    except ValueError as e:
        raise NightjarError(f"the daemon's reply to `{verb}` is not JSON: {e}") from e
    if not isinstance(reply, dict):
        raise NightjarError(f"the daemon's reply to `{verb}` is not an object")
    if "error" in reply:
        kind = reply.get("kind")
        raise from_reply(str(reply["error"]), kind if isinstance(kind, str) else None)
    if "ok" not in reply:
        raise NightjarError(f"the daemon's reply to `{verb}` has neither `ok` nor `error`")
    return reply["ok"]


class SocketTransport:
    """One connection per request to the daemon's Unix socket."""

    def __init__(self, path: Path, fallback: bool = False, timeout: float = 30.0):
        self.path = Path(path)
        self.fallback = fallback
        self.timeout = timeout

    def _connect(self) -> socket.socket:
        tried = [self.path]
        for p in [self.path] + ([Path(SYSTEM_SOCKET)] if self.fallback else []):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(p))
                return s
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                if p not in tried:
                    tried.append(p)
            except OSError as e:
                s.close()
                raise NotRunning(f"cannot reach the daemon at {p}: {e}") from e
        raise NotRunning(
            "no nightjar daemon answers at " + " or ".join(str(p) for p in tried)
            + ": start one with `nightjar daemon` (or name its socket: NIGHTJAR_SOCKET)")

    def call(self, verb: str, fields: dict, timeout: float | None = -1) -> Any:
        """Sends ``verb`` with ``fields``; its ``ok`` value, or raises.
        ``timeout`` bounds the wait for the reply (None: no bound; -1: the
        transport's own)."""
        line = json.dumps({"v": PROTOCOL, "req": {"verb": verb, **fields}}).encode() + b"\n"
        s = self._connect()
        try:
            s.settimeout(self.timeout if timeout == -1 else timeout)
            s.sendall(line)
            buf = bytearray()
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > MAX_REPLY:
                    raise NightjarError(f"the daemon's reply to `{verb}` is over {MAX_REPLY} bytes")
        except (TimeoutError, socket.timeout) as e:
            raise NightjarError(f"the daemon did not answer `{verb}` in time", "unavailable") from e
        except OSError as e:
            raise NightjarError(f"the connection to the daemon broke during `{verb}`: {e}", "unavailable") from e
        finally:
            s.close()
        if not buf:
            raise NightjarError(f"the daemon closed the connection without answering `{verb}`")
        return _reply(bytes(buf), verb)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: one would carry the token to another host (or
    from https to http)."""

    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class HttpTransport:
    """The daemon's HTTP API: ``POST {url}/api/v2/{verb}`` with a bearer token."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, verb: str, fields: dict, timeout: float | None = -1) -> Any:
        try:
            req = urllib.request.Request(
                f"{self.url}/api/v2/{verb}",
                data=json.dumps(fields).encode(),
                method="POST",
                headers={"Content-Type": "application/json"},
            )
            if self.token:
                req.add_header("Authorization", f"Bearer {self.token}")
        except ValueError as e:
            raise Invalid(f"{self.url}: {e}") from e
        limit = self.timeout if timeout == -1 else timeout
        status = 200
        try:
            with _OPENER.open(req, timeout=limit) as r:
                body = r.read(MAX_REPLY + 1)
        except urllib.error.HTTPError as e:
            status = e.code
            if 300 <= e.code < 400:
                raise NightjarError(
                    f"HTTP {e.code} from {self.url} for `{verb}`: redirects are not followed "
                    "(they would carry the token elsewhere); give the daemon's own URL") from e
            body = e.read(MAX_REPLY + 1)
            if not body:
                raise NightjarError(f"HTTP {e.code} from {self.url} for `{verb}`") from e
        except (ValueError, http.client.InvalidURL) as e:
            raise Invalid(f"{self.url}: {e}") from e
        except urllib.error.URLError as e:
            raise NotRunning(f"no nightjar daemon answers at {self.url}: {e.reason}") from e
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            raise NightjarError(f"{self.url} did not answer `{verb}`: {e}", "unavailable") from e
        if len(body) > MAX_REPLY:
            raise NightjarError(f"the reply from {self.url} to `{verb}` is over {MAX_REPLY} bytes")
        try:
            json.loads(body)
        except ValueError:
            raise NightjarError(
                f"HTTP {status} from {self.url} for `{verb}` is not a nightjar reply (is it the daemon's URL?)") from None
        return _reply(body, verb)
