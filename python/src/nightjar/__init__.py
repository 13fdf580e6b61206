"""A Python client of the nightjar daemon: submit, list, wait for and read
tasks from scripts and notebooks, over the daemon's Unix socket (as the
``nightjar`` CLI) or its HTTP API. The standard library only."""

from .client import Client
from .errors import (
    BadRequest,
    Forbidden,
    Internal,
    Invalid,
    NightjarError,
    NotFound,
    NotRunning,
    ProtocolMismatch,
    Unavailable,
    WaitTimeout,
)
from .transport import PROTOCOL
from .types import Progress, Run, Task, TaskDetail, WaitResult, Why, as_dict

__version__ = "0.2.0"

__all__ = [
    "PROTOCOL",
    "BadRequest",
    "Client",
    "Forbidden",
    "Internal",
    "Invalid",
    "NightjarError",
    "NotFound",
    "NotRunning",
    "Progress",
    "ProtocolMismatch",
    "Run",
    "Task",
    "TaskDetail",
    "Unavailable",
    "WaitResult",
    "WaitTimeout",
    "Why",
    "as_dict",
]
