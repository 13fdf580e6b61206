"""What the daemon answers, as dataclasses. Each keeps the reply's whole
object in ``raw``: a field a newer daemon adds is there before this client
names it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional


def _pick(cls, d: dict, **renamed) -> dict:
    """The fields of dataclass ``cls`` found in ``d`` (``renamed``: field ->
    key where they differ), the rest at their defaults."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.name == "raw":
            continue
        key = renamed.get(f.name, f.name)
        if key in d:
            out[f.name] = d[key]
    return out


@dataclass
class Task:
    """A task as ``ls`` lists it (a sweep is one row, with its members' counts)."""

    id: int
    name: str
    project: str
    state: str
    kind: str = "task"
    priority: str = "normal"
    parent_id: Optional[int] = None
    reason: Optional[str] = None
    submitted_at: int = 0
    finished_at: Optional[int] = None
    attempts: int = 0
    command: str = ""
    owner: Optional[str] = None
    counts: Optional[dict] = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, d: dict) -> "Task":
        return cls(**_pick(cls, d), raw=d)


@dataclass
class Run:
    """One attempt of a task: when it ran, how it ended, where its files are."""

    id: int
    task_id: int
    attempt: int
    state: str
    started_at: int
    finished_at: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    #: How it ended: ``ok``, ``app-error``, ``timeout``, ``gpu-oom``, ... (``class`` on the wire).
    outcome: Optional[str] = None
    message: Optional[str] = None
    gpus: Optional[str] = None
    run_dir: str = ""
    outputs: dict = field(default_factory=dict)
    energy: Optional[dict] = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, d: dict) -> "Run":
        return cls(**_pick(cls, d, outcome="class"), raw=d)

    @property
    def output_folder(self) -> Optional[str]:
        """The folder its outputs were hashed in, if it had one."""
        m = (self.outputs or {}).get("manifest")
        return m.get("folder") if m else None

    @property
    def output_files(self) -> list:
        """Its output files as the daemon hashed them: ``{path, size, sha256}``."""
        m = (self.outputs or {}).get("manifest")
        return list(m.get("files", [])) if m else []


@dataclass
class TaskDetail:
    """Everything about one task (``show``)."""

    task: Task
    runs: list
    members: list
    spec: dict
    events: list
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, d: dict) -> "TaskDetail":
        return cls(
            task=Task.from_wire(d["task"]),
            runs=[Run.from_wire(r) for r in d.get("runs", [])],
            members=[Task.from_wire(m) for m in d.get("members", [])],
            spec=d.get("spec", {}),
            events=d.get("events", []),
            raw=d,
        )

    @property
    def last_run(self) -> Optional[Run]:
        """The newest run, if it has one."""
        return self.runs[-1] if self.runs else None


@dataclass
class WaitResult:
    """How one waited-for task ended."""

    id: int
    state: str
    outcome: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, d: dict) -> "WaitResult":
        return cls(**_pick(cls, d, outcome="class"), raw=d)

    @property
    def ok(self) -> bool:
        return self.state == "succeeded"


@dataclass
class Why:
    """Why a task waits, or where and why it started (``why``): the
    policies' verdicts, what blocks it, and the run it started as."""

    id: int
    name: str
    state: str
    reason: Optional[str] = None
    verdicts: list = field(default_factory=list)
    waiting_for: list = field(default_factory=list)
    run: Optional[dict] = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, d: dict) -> "Why":
        return cls(**_pick(cls, d), raw=d)


@dataclass
class Progress:
    """How far the tasks a ``wait`` names are (``wait-progress``)."""

    succeeded: int = 0
    failed: int = 0
    blocked: int = 0
    running: int = 0
    waiting: int = 0

    @classmethod
    def from_counts(cls, counts: list) -> "Progress":
        p = cls()
        for c in counts:
            state, n = c.get("state"), c.get("count", 0)
            if isinstance(n, bool) or not isinstance(n, int):
                raise ValueError(f"a count is not a whole number: {n!r}")
            if state == "succeeded":
                p.succeeded += n
            elif state in ("failed", "cancelled"):
                p.failed += n
            elif state == "blocked":
                p.blocked += n
            elif state == "running":
                p.running += n
            else:
                p.waiting += n
        return p

    @property
    def ended(self) -> int:
        return self.succeeded + self.failed + self.blocked

    @property
    def total(self) -> int:
        return self.ended + self.running + self.waiting


def as_dict(value: Any) -> Any:
    """A dataclass (or list of them) as plain data, ``raw`` left out."""
    if isinstance(value, list):
        return [as_dict(v) for v in value]
    if dataclasses.is_dataclass(value):
        return {k: as_dict(v) for k, v in dataclasses.asdict(value).items() if k != "raw"}
    return value
