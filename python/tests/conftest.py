"""A real daemon for the Python client's tests, and a client whose every
request and reply is checked against the daemon's own protocol schema
(``nightjar protocol-schema``) after each test.

``NIGHTJAR_BIN`` names the ``nightjar`` binary (its ``nightjard`` beside
it); without it, the repository's ``target/debug/nightjar``. Neither there:
the tests fail, saying so (build first: ``cargo build -p nightjar --bins``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import nightjar  # noqa: E402
from nightjar.transport import SocketTransport  # noqa: E402


def binary() -> Path:
    named = os.environ.get("NIGHTJAR_BIN")
    path = Path(named) if named else HERE.parents[1] / "target" / "debug" / "nightjar"
    if not path.is_file():
        pytest.fail(f"no nightjar binary at {path}: build it (`cargo build -p nightjar --bins`) or set NIGHTJAR_BIN")
    return path


class Daemon:
    """A daemon on a temporary state dir, stopped at the end."""

    def __init__(self, extra: str = ""):
        self.dir = Path(tempfile.mkdtemp(prefix="nightjar-py-"))
        self.state = self.dir / "state"
        self.config = self.dir / "nightjar.toml"
        self.config.write_text(
            f'state_dir = "state"\nslots = 4\n{extra}\n[sandbox]\ngrace = "1s"\n')
        self.bin = binary()
        self.log = open(self.dir / "daemon.log", "wb")
        self.proc = subprocess.Popen(
            [str(self.bin), "--config", str(self.config), "daemon"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            cwd=self.dir)
        self.socket = self.state / "nightjar.sock"
        deadline = time.monotonic() + 90
        while True:
            try:
                nightjar.Client(socket=str(self.socket)).ping()
                break
            except nightjar.NotRunning:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the daemon did not come up: " + self.log_text())
                time.sleep(0.05)

    def log_text(self) -> str:
        return (self.dir / "daemon.log").read_text(errors="replace")

    def cli(self, *args: str) -> str:
        r = subprocess.run([str(self.bin), "--config", str(self.config), *args],
                           capture_output=True, text=True, cwd=self.dir)
        assert r.returncode == 0, f"nightjar {args}: {r.stderr}"
        return r.stdout

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


class Recording(SocketTransport):
    """A socket transport that keeps every request line sent and every
    reply received, for the schema check."""

    def __init__(self, inner: SocketTransport, seen: list):
        super().__init__(inner.path, inner.fallback, inner.timeout)
        self.seen = seen

    def call(self, verb, fields, timeout=-1):
        line = {"v": nightjar.PROTOCOL, "req": {"verb": verb, **fields}}
        try:
            ok = super().call(verb, fields, timeout)
        except nightjar.NightjarError as e:
            self.seen.append((verb, line, {"v": nightjar.PROTOCOL, "error": e.message, "kind": e.kind}))
            raise
        self.seen.append((verb, line, {"v": nightjar.PROTOCOL, "ok": ok}))
        return ok


@pytest.fixture(scope="session")
def schema(daemon) -> dict:
    return json.loads(daemon.cli("protocol-schema"))


def check(schema: dict, seen: list) -> None:
    """Every request line against `request`, every reply against its verb's."""
    defs = schema["$defs"]
    cls = jsonschema.Draft202012Validator
    req = cls({"$defs": defs, **schema["request"]})
    for verb, line, reply in seen:
        errors = [e.message for e in req.iter_errors(line)]
        assert not errors, f"request {line} does not match the protocol schema: {errors[:3]}"
        if reply.get("kind") in ("not-running", "timeout"):
            continue
        rep = cls({"$defs": defs, **schema["replies"][verb]})
        errors = [e.message for e in rep.iter_errors(reply)]
        assert not errors, f"the reply to {verb} does not match the schema: {errors[:3]}"


@pytest.fixture(scope="session")
def daemon():
    d = Daemon()
    yield d
    d.stop()


@pytest.fixture
def nj(daemon, schema):
    c = nightjar.Client(socket=str(daemon.socket))
    seen: list = []
    c._t = Recording(c._t, seen)
    yield c
    check(schema, seen)
