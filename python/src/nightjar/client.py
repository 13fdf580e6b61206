"""``Client``: the daemon's verbs from Python."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Union

from .errors import Invalid, NightjarError, WaitTimeout
from .transport import HttpTransport, SocketTransport, find_socket
from .types import Progress, Task, TaskDetail, WaitResult, Why

Ids = Union[int, Iterable[int]]

#: The retry classes the daemon retries by default (as `nightjar submit` sends them).
DEFAULT_RETRY_ON = ["network", "lost", "preempted", "gpu-oom"]


def _id(i: object) -> int:
    """A task id: an int (not a bool, not a string of digits)."""
    if isinstance(i, bool) or not isinstance(i, int):
        raise Invalid(f"task ids are ints, not {i!r}")
    return i


def _ids(ids: Ids) -> list:
    if isinstance(ids, (str, bytes)):
        raise Invalid(f"task ids are ints, not {ids!r}")
    if isinstance(ids, int):
        return [_id(ids)]
    try:
        return [_id(i) for i in ids]
    except TypeError:
        raise Invalid(f"task ids are an int or a list of ints, not {ids!r}") from None


def _span(seconds: Optional[float]) -> Optional[str]:
    """A duration as the daemon reads it (`90s`): whole seconds, at least 1."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise Invalid(f"a duration is a finite number of seconds, not {seconds!r}")
    if seconds < 1:
        raise Invalid(f"a timeout must be at least 1 s ({seconds} s)")
    return f"{int(round(seconds))}s"


#: The variables a sweep parameter must not shadow (the daemon's built-ins).
BUILTINS = {"INPUT_PATH", "INPUTS", "OUTPUT_PATH", "TASK_ID", "RUN_ID", "SCRATCH",
            "WORKDIR", "TASK_NAME", "PROJECT"}


def _count(what: str, v: object, least: int = 0) -> int:
    """A whole number of at least ``least`` (not a bool, not a float)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise Invalid(f"{what}: {v!r} is not a whole number of at least {least}")
    return v


def sanitize_name(raw: str) -> str:
    """A default task name as the CLI makes it from a program's file name."""
    s = re.sub(r"[^A-Za-z0-9._-]", "_", raw.lstrip("."))[:120]
    return s or "task"


def _text(what: str, v: object) -> str:
    """A value the daemon takes as text: a string, or a number (not a bool, not None)."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or v is None or not isinstance(v, (int, float)):
        raise Invalid(f"{what}: {v!r} is not a string or a number")
    return repr(v) if isinstance(v, float) else str(v)


def _read(verb: str, make, value):
    """``make(value)``: a reply read into its dataclass; a reply of another
    shape (a daemon too new or broken) is a NightjarError, not a TypeError."""
    try:
        return make(value)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise NightjarError(f"the daemon's reply to `{verb}` is not what this client reads: {e!r}") from e


class Client:
    """A connection to a nightjar daemon.

    ``Client()`` finds the daemon's socket as the ``nightjar`` CLI does
    (``NIGHTJAR_SOCKET``; the ``config``/``state_dir`` given, or
    ``NIGHTJAR_CONFIG``/``NIGHTJAR_STATE_DIR``; else the user's own daemon,
    then the lab-wide one). ``Client("http://host:8421", token="nj_...")``
    uses the daemon's HTTP API instead. Every call raises a
    :class:`nightjar.NightjarError` carrying the daemon's error kind.
    """

    def __init__(self, url: Optional[str] = None, *, token: Optional[str] = None,
                 config: Optional[str] = None, state_dir: Optional[str] = None,
                 socket: Optional[str] = None, timeout: float = 30.0):
        if url is not None:
            if not url.startswith(("http://", "https://")):
                raise Invalid(f"`{url}` is not an http:// or https:// URL (give `socket=` for a socket)")
            self._t = HttpTransport(url, token or os.environ.get("NIGHTJAR_TOKEN"), timeout)
        else:
            if socket is not None:
                path, fallback = Path(socket), False
            else:
                path, fallback = find_socket(config, state_dir)
            self._t = SocketTransport(path, fallback, timeout)
        self._config = config
        self._state_dir = state_dir

    # The protocol's verbs ------------------------------------------------

    def call(self, verb: str, timeout: Optional[float] = -1, **fields) -> object:
        """Any verb of the protocol (``nightjard protocol-schema`` lists
        them), its ``ok`` value as plain data."""
        return self._t.call(verb, fields, timeout)

    def ping(self) -> dict:
        """The daemon's pid, release and protocol version."""
        return self.call("ping")

    def submit(self, command: Union[Sequence[str], str, None] = None, *,
               file: Union[str, os.PathLike, None] = None, name: Optional[str] = None,
               project: str = "default", gpus: int = 0, gpu_mem: Optional[str] = None,
               cpus: Optional[int] = None, mem: Optional[str] = None,
               timeout: Optional[float] = None, priority: str = "normal",
               env: Optional[Mapping[str, str]] = None, workdir: Union[str, os.PathLike, None] = None,
               output: Optional[str] = None, inputs: Sequence[str] = (),
               sweep: Optional[Mapping[str, Sequence[object]]] = None,
               after: Sequence[int] = (), after_any: Sequence[int] = (),
               attempts: int = 1, hold: bool = False, preemptible: bool = False):
        """Queues a task and returns its id (a sweep's id, with ``sweep``).

        ``command`` is a list (run directly) or a string (run by ``/bin/sh
        -c``); ``sweep={"lr": [0.1, 0.01]}`` makes one member per value, each
        with ``${lr}`` replaced in the command, name, env and output.
        ``file=`` queues a task file (TOML or YAML) instead, through the
        ``nightjar`` CLI (its parser is the daemon's own), and returns the
        list of ids it made.
        """
        if file is not None:
            if command is not None:
                raise Invalid("give `command` or `file`, not both")
            return self._submit_file(Path(os.fspath(file)), hold)
        if command is None:
            raise Invalid("give `command` (a list, or a shell line) or `file`")
        if isinstance(command, str):
            if not command.strip():
                raise Invalid("`command` is empty")
            cmd = {"shell": command}
            default_name = Path(command.split()[0]).name
        elif isinstance(command, (list, tuple)):
            if not command or not all(isinstance(a, (str, os.PathLike)) for a in command):
                raise Invalid("`command` is a non-empty list of strings (or one shell line)")
            argv = [os.fspath(a) for a in command]
            cmd = {"argv": argv}
            default_name = Path(argv[0]).name
        else:
            raise Invalid(f"`command` is a list of strings or a shell line, not {command!r}")
        if env is not None and not isinstance(env, Mapping):
            raise Invalid("`env` is a mapping of names to values")
        if sweep is not None and not isinstance(sweep, Mapping):
            raise Invalid("`sweep` is a mapping of parameters to lists of values")
        if not isinstance(workdir, (str, os.PathLike, type(None))):
            raise Invalid(f"`workdir` is a path, not {workdir!r}")
        # As the CLI: made absolute without resolving symbolic links.
        wd = os.path.abspath(os.fspath(workdir) if workdir is not None else os.getcwd())
        if not os.path.isdir(wd):
            raise Invalid(f"workdir {wd} does not exist (or is not a folder)")
        name = name or sanitize_name(default_name)
        resources = {
            "gpus": _count("gpus", gpus),
            "gpu_mem": gpu_mem,
            "cpus": None if cpus is None else _count("cpus", cpus, 1),
            "mem": mem,
        }
        if timeout is not None:
            resources["timeout"] = _span(timeout)
        spec = {
            "name": name,
            "project": project,
            "command": cmd,
            "workdir": wd,
            "env": {str(k): _text(f"env {k}", v) for k, v in (env or {}).items()},
            "inputs": [_input(i, wd) for i in inputs],
            "output": output,
            "priority": priority,
            "resources": resources,
            "retry": {
                "max_attempts": _count("attempts", attempts, 1),
                "on": list(DEFAULT_RETRY_ON),
                "backoff": "10s",
                "backoff_max": "1h",
            },
            "params": {},
            "preemptible": bool(preemptible),
            "umask": _umask(),
        }
        deps = [[{"existing": i}, "after-ok"] for i in _ids(after)]
        deps += [[{"existing": i}, "after-any"] for i in _ids(after_any)]
        entry = {
            "name": name,
            "project": project,
            "members": [] if sweep is not None else [spec],
            "is_sweep": sweep is not None,
            "schedule": None,
            "deps": deps,
            "held": bool(hold),
        }
        if sweep is not None:
            values = {}
            for k, vs in dict(sweep).items():
                if str(k) in BUILTINS:
                    raise Invalid(f"sweep parameter `{k}` shadows a built-in variable; rename it")
                if isinstance(vs, (str, bytes)) or not isinstance(vs, (list, tuple)):
                    raise Invalid(f"sweep `{k}`: its values are a list, not {vs!r}")
                values[str(k)] = [_text(f"sweep `{k}`", v) for v in vs]
            if not values or any(not vs for vs in values.values()):
                raise Invalid("`sweep` needs at least one parameter with at least one value")
            entry["grid"] = {"template": spec, "values": values}
        ids = self.call("submit", entries=[entry], verify=False)
        return _read("submit", lambda i: _id(i[0]), ids)

    def _submit_file(self, path: Path, hold: bool) -> list:
        if not isinstance(self._t, SocketTransport):
            raise Invalid("`file=` goes through the local `nightjar` CLI and its socket: use a socket client (Client()), or `submit(command, ...)` over HTTP")
        cli = shutil.which("nightjar")
        if cli is None:
            raise NightjarError("a task file is read by the `nightjar` CLI, which is not on PATH", "other")
        args = [cli, "--json"]
        if self._config:
            args += ["--config", str(self._config)]
        if self._state_dir:
            args += ["--state-dir", str(self._state_dir)]
        args += ["submit"] + (["--hold"] if hold else []) + [str(path)]
        env = dict(os.environ)
        if isinstance(self._t, SocketTransport):
            env["NIGHTJAR_SOCKET"] = str(self._t.path)
        r = subprocess.run(args, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise Invalid(r.stderr.strip() or f"nightjar submit exited {r.returncode}")
        return [int(e["id"]) for e in json.loads(r.stdout)]

    def ls(self, *, state: Optional[str] = None, project: Optional[str] = None,
           all: bool = False, user: Optional[str] = None, limit: Optional[int] = None) -> list:
        """Tasks as ``nightjar ls`` lists them (sweeps as one row)."""
        rows = self.call("task-list", filter={
            "state": state, "project": project, "all": all, "since": 0,
            **({"user": user} if user else {}),
        }, limit=limit)
        return _read("task-list", lambda rs: [Task.from_wire(r) for r in rs], rows)

    def show(self, id: int) -> TaskDetail:
        """Everything about one task: spec, runs, members, events."""
        return _read("show", TaskDetail.from_wire, self.call("show", id=_id(id)))

    def why(self, id: int) -> Why:
        """Why a task waits, or where and why it started."""
        return _read("why", Why.from_wire, self.call("why", id=_id(id)))

    def cancel(self, id: int) -> dict:
        """Cancels a task, a sweep (its members) or a recurring template."""
        return self.call("cancel", id=_id(id))

    def progress(self, ids: Ids) -> Progress:
        """How far the tasks are: ended, failed, running, waiting."""
        return _read("wait-progress", Progress.from_counts, self.call("wait-progress", ids=_ids(ids)))

    def wait(self, ids: Ids, timeout: Optional[float] = None, *, progress: bool = False,
             poll: float = 1.0) -> list:
        """Waits until every task named (a sweep's id: its members) has ended
        or is blocked, and returns a :class:`WaitResult` per task.

        ``timeout`` (seconds) raises :class:`nightjar.WaitTimeout` when it
        passes first; ``progress=True`` draws a bar with ``tqdm`` where it is
        installed.
        """
        ids = _ids(ids)
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout < 0:
                raise Invalid(f"a wait's timeout is a finite number of seconds, not {timeout!r}")
        if timeout is None and not progress:
            return _read("wait", lambda rs: [WaitResult.from_wire(r) for r in rs],
                         self.call("wait", timeout=None, ids=ids))
        bar = _bar() if progress else None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                p = self.progress(ids)
                if bar is not None:
                    bar.total = p.total
                    bar.n = p.ended
                    bar.set_postfix(failed=p.failed, running=p.running, waiting=p.waiting, refresh=False)
                    bar.refresh()
                if p.ended >= p.total:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    raise WaitTimeout(
                        f"{p.ended} of {p.total} tasks ended within {timeout} s",
                        p.ended, p.total)
                left = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
                time.sleep(left)
        finally:
            if bar is not None:
                bar.close()
        return _read("wait", lambda rs: [WaitResult.from_wire(r) for r in rs], self.call("wait", ids=ids))

    def logs(self, id: int, *, stderr: bool = False, attempt: Optional[int] = None,
             tail: Optional[int] = None) -> str:
        """A run's output as text (the newest run's, or ``attempt``'s):
        everything written so far, or its last ``tail`` bytes."""
        return self.log_bytes(id, stderr=stderr, attempt=attempt, tail=tail).decode("utf-8", "replace")

    def log_bytes(self, id: int, *, stderr: bool = False, attempt: Optional[int] = None,
                  tail: Optional[int] = None) -> bytes:
        """As :meth:`logs`, the bytes as written."""
        out = bytearray()
        cursor = None
        while True:
            fields = {"id": _id(id), "attempt": attempt, "stderr": stderr, "cursor": cursor}
            if tail is not None and cursor is None:
                fields["tail"] = _count("tail", tail)
            chunk = self.call("logs", **fields)
            data = _read("logs", lambda c: base64.b64decode(c.get("data", ""), validate=True), chunk)
            out += data
            cursor = chunk.get("cursor")
            if attempt is None:
                attempt = chunk.get("attempt")
            if not data:
                return bytes(out)


def _input(path: object, workdir: str) -> str:
    """An input as `nightjar submit` takes it: an existing file or folder,
    relative to the workdir, sent absolute (the daemon hashes it at start)."""
    if not isinstance(path, (str, os.PathLike)):
        raise Invalid(f"an input is a path, not {path!r}")
    p = Path(os.fspath(path))
    if not p.is_absolute():
        p = Path(workdir) / p
    if not p.exists():
        raise Invalid(f"input {path}: must exist (relative inputs start at the workdir)")
    return str(p.absolute())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _bar():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=0, unit="task", desc="nightjar")
