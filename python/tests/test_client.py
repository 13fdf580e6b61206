"""The Python client against a real daemon: each verb, its dataclasses, its
errors, a sweep followed to its end and its members' outputs read; every
request and reply checked against the protocol's schema (conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

import nightjar
from conftest import Daemon, check


def test_a_command_is_submitted_waited_for_shown_and_its_logs_read(nj, tmp_path):
    tid = nj.submit(["sh", "-c", "echo hello; echo oops >&2"], name="greet",
                    project="py", workdir=tmp_path)
    assert isinstance(tid, int)
    [r] = nj.wait(tid)
    assert (r.id, r.state, r.outcome, r.exit_code, r.ok) == (tid, "succeeded", "ok", 0, True)
    d = nj.show(tid)
    assert (d.task.name, d.task.project, d.task.state) == ("greet", "py", "succeeded")
    assert d.spec["workdir"] == str(tmp_path.resolve())
    assert d.last_run is not None and d.last_run.outcome == "ok"
    assert nj.logs(tid) == "hello\n"
    assert nj.logs(tid, stderr=True) == "oops\n"
    assert nj.logs(tid, tail=3) == "lo\n"
    assert tid in [t.id for t in nj.ls(all=True)]
    assert [t.id for t in nj.ls(state="succeeded", project="py")] == [tid]


def test_a_failure_its_exit_code_and_why(nj):
    tid = nj.submit("exit 3", name="three", timeout=60)
    [r] = nj.wait(tid, timeout=60)
    assert (r.state, r.outcome, r.exit_code, r.ok) == ("failed", "app-error", 3, False)
    w = nj.why(tid)
    assert (w.id, w.name, w.state) == (tid, "three", "failed")
    assert w.run is not None


def test_errors_carry_the_daemons_kind(nj):
    with pytest.raises(nightjar.NotFound) as e:
        nj.show(987654321)
    assert e.value.kind == "not-found" and "987654321" in e.value.message
    tid = nj.submit(["true"])
    nj.wait(tid)
    with pytest.raises(nightjar.Invalid) as e:
        nj.cancel(tid)
    assert e.value.kind == "invalid"
    with pytest.raises(nightjar.Invalid):
        nj.submit([])
    with pytest.raises(nightjar.Invalid) as e:
        nj.submit(["true"], project="no spaces allowed")
    assert "project" in e.value.message


def test_a_sweep_is_followed_to_its_end_and_each_members_metrics_read(nj, tmp_path):
    out = tmp_path / "out-${lr}"
    sid = nj.submit(
        ["sh", "-c", 'mkdir -p "$OUT" && echo "{\\"lr\\": ${lr}, \\"loss\\": 0.5}" > "$OUT/metrics.json"'],
        name="sweep", sweep={"lr": [0.1, 0.01, 0.001]}, env={"OUT": str(out)}, output=str(out))
    results = nj.wait(sid, timeout=120, progress=True)
    assert len(results) == 3 and all(r.ok for r in results)
    assert nj.progress(sid).ended == 3
    d = nj.show(sid)
    assert d.task.kind == "sweep" and len(d.members) == 3
    losses = {}
    for m in d.members:
        run = nj.show(m.id).last_run
        files = {f["path"]: f for f in run.output_files}
        assert "metrics.json" in files, run.outputs
        metrics = json.loads((Path(run.output_folder) / "metrics.json").read_text())
        losses[metrics["lr"]] = metrics["loss"]
    assert losses == {0.1: 0.5, 0.01: 0.5, 0.001: 0.5}


def test_a_wait_past_its_timeout_says_how_far_the_tasks_got(nj):
    tid = nj.submit(["sleep", "30"])
    with pytest.raises(nightjar.WaitTimeout) as e:
        nj.wait(tid, timeout=0.5)
    assert (e.value.ended, e.value.total) == (0, 1)
    nj.cancel(tid)
    [r] = nj.wait(tid, timeout=60)
    assert r.state == "cancelled"


def test_the_socket_is_found_as_the_cli_finds_it(daemon, monkeypatch):
    monkeypatch.delenv("NIGHTJAR_SOCKET", raising=False)
    # A config file naming a relative state dir (relative to the file).
    assert nightjar.Client(config=str(daemon.config)).ping()["protocol"] == nightjar.PROTOCOL
    monkeypatch.setenv("NIGHTJAR_CONFIG", str(daemon.config))
    assert nightjar.Client().ping()["pid"] == daemon.proc.pid, "`nightjar daemon` execs the daemon"
    monkeypatch.setenv("NIGHTJAR_SOCKET", str(daemon.socket))
    assert nightjar.Client().ping()["protocol"] == nightjar.PROTOCOL
    monkeypatch.setenv("NIGHTJAR_SOCKET", str(daemon.dir / "nowhere.sock"))
    with pytest.raises(nightjar.NotRunning) as e:
        nightjar.Client().ping()
    assert "nowhere.sock" in str(e.value)


def test_a_task_file_is_submitted_through_the_cli(nj, daemon, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{daemon.bin.parent}{os.pathsep}{os.environ['PATH']}")
    f = tmp_path / "t.toml"
    f.write_text('name = "from-file"\ncommand = "true"\n[sweep]\nn = [1, 2]\n')
    [sid] = nj.submit(file=f)
    assert all(r.ok for r in nj.wait(sid, timeout=60))
    assert nj.show(sid).task.name == "from-file"


def test_the_http_api_with_a_token_and_without_one():
    d = Daemon('[http]\nlisten = "127.0.0.1:0"')
    try:
        addr = (d.state / "http.addr").read_text().strip()
        token = json.loads(d.cli("--json", "token", "create", "--name", "py"))["token"]
        c = nightjar.Client(f"http://{addr}", token=token)
        tid = c.submit(["echo", "over http"])
        [r] = c.wait(tid, timeout=60)
        assert r.ok and c.logs(tid) == "over http\n"
        assert c.show(tid).task.id == tid
        with pytest.raises(nightjar.NotFound):
            c.show(987654321)
        with pytest.raises(nightjar.Forbidden):
            nightjar.Client(f"http://{addr}").ls()
    finally:
        d.stop()


def test_the_schema_check_fails_on_a_request_the_daemon_would_refuse(schema):
    bad = [("show", {"v": 2, "req": {"verb": "show", "id": "twelve"}}, {"v": 2, "ok": None})]
    with pytest.raises(AssertionError):
        check(schema, bad)
    assert set(schema["replies"]) >= {"submit", "task-list", "show", "wait", "why", "logs", "cancel", "wait-progress"}


def test_the_dataclasses_read_only_fields_the_protocol_has(schema):
    defs = schema["$defs"]
    import dataclasses
    for cls, name, renamed in [
        (nightjar.Task, "TaskRow", {}),
        (nightjar.Run, "RunRow", {"outcome": "class"}),
        (nightjar.WaitResult, "WaitResult", {"outcome": "class"}),
        (nightjar.Why, "WhyReport", {}),
    ]:
        props = defs[name]["properties"]
        for f in dataclasses.fields(cls):
            if f.name != "raw":
                key = renamed.get(f.name, f.name)
                assert key in props, f"{cls.__name__}.{f.name} reads `{key}`, which {name} does not have"


def test_pip_installs_the_package_from_the_repository(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # A copy: pip's in-tree build writes build/ and *.egg-info beside the sources.
    repo_python = tmp_path / "python"
    shutil.copytree(Path(__file__).resolve().parents[1], repo_python,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    # As the README says: `pip install ./python` (its build backend,
    # setuptools, comes from PyPI into pip's isolated build environment).
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(repo_python)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(py), "-c", "import nightjar, sys; print(nightjar.__version__, nightjar.Client)"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("0.2.0"), r.stderr


def test_bad_arguments_are_refused_before_anything_is_sent(tmp_path):
    c = nightjar.Client(socket=str(tmp_path / "no-daemon.sock"))
    for ids in ["135", True, [1, "2"], b"1"]:
        with pytest.raises(nightjar.Invalid):
            c.progress(ids)
    for kwargs in [
        {"timeout": float("nan")},
        {"timeout": float("inf")},
        {"timeout": 0.2},
        {"sweep": {"lr": "abc"}},
        {"sweep": {}},
        {"sweep": {"lr": []}},
        {"sweep": {"lr": [True]}},
        {"env": {"X": None}},
        {"inputs": [str(tmp_path / "missing")]},
        {"inputs": [None]},
        {"after": ["3"]},
        {"after": 5.0},
        {"gpus": "abc"},
        {"gpus": 1.7},
        {"attempts": 0},
        {"env": [("A", "1")]},
        {"sweep": [1, 2]},
        {"sweep": {"TASK_ID": [1]}},
        {"workdir": str(tmp_path / "no-such-folder")},
        {"workdir": 123},
    ]:
        with pytest.raises(nightjar.Invalid):
            c.submit(["true"], **kwargs)
    for command in [123, [None], [], "  "]:
        with pytest.raises(nightjar.Invalid):
            c.submit(command)
    for timeout in [float("nan"), "5", -1]:
        with pytest.raises(nightjar.Invalid):
            c.wait(1, timeout=timeout)
    with pytest.raises(nightjar.Invalid):
        c.logs(1, tail="x")


def test_a_reply_of_another_shape_is_a_nightjar_error(tmp_path):
    import socket as so
    import threading

    path = tmp_path / "odd.sock"
    srv = so.socket(so.AF_UNIX)
    srv.bind(str(path))
    srv.listen(8)
    replies = [b'{"v":2}\n', b'{"v":2,"error":"x","kind":["x"]}\n',
               b'{"v":2,"ok":[{"state":"queued","count":"NaN"}]}\n', b'{"v":2,"ok":{}}\n']

    def serve():
        for r in replies:
            conn, _ = srv.accept()
            conn.recv(65536)
            conn.sendall(r)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    c = nightjar.Client(socket=str(path))
    with pytest.raises(nightjar.NightjarError, match="neither"):
        c.submit(["true"])
    with pytest.raises(nightjar.NightjarError) as e:
        c.ping()
    assert e.value.kind == "other"
    with pytest.raises(nightjar.NightjarError, match="not what this client reads"):
        c.progress(1)
    with pytest.raises(nightjar.NightjarError, match="not what this client reads"):
        c.show(1)
    srv.close()


def test_a_symlinked_config_finds_the_socket_the_cli_finds(tmp_path, monkeypatch):
    from nightjar.transport import find_socket

    monkeypatch.delenv("NIGHTJAR_SOCKET", raising=False)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").mkdir()
    (tmp_path / "real" / "nj.toml").write_text('state_dir = "st"\n')
    (tmp_path / "link" / "nj.toml").symlink_to(tmp_path / "real" / "nj.toml")
    sock, _ = find_socket(tmp_path / "link" / "nj.toml")
    # The file's own folder, the link not followed (Rust's std::path::absolute).
    assert sock == tmp_path / "link" / "st" / "nightjar.sock"
    # Past 1 MiB (`--config /dev/zero`, a wrong file): refused, as the CLI does.
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    for config in [big, "/dev/zero"]:
        with pytest.raises(nightjar.NightjarError, match="1 MiB"):
            find_socket(config)


def test_a_default_name_is_made_as_the_cli_makes_it(nj, tmp_path):
    script = tmp_path / "my script!.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    script.chmod(0o755)
    tid = nj.submit([str(script)])
    assert nj.show(tid).task.name == "my_script_.sh"
    assert nj.show(nj.submit("FOO=1 true")).task.name == "FOO_1"


def test_http_follows_no_redirect_and_file_needs_the_socket(tmp_path):
    import http.server
    import threading

    stolen = []

    class Capture(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            stolen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *a):
            pass

    capture = http.server.HTTPServer(("127.0.0.1", 0), Capture)
    target = f"http://127.0.0.1:{capture.server_port}/steal"

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(307)
            self.send_header("Location", target)
            self.end_headers()

        def log_message(self, *a):
            pass

    redirect = http.server.HTTPServer(("127.0.0.1", 0), Redirect)
    for srv in (capture, redirect):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        c = nightjar.Client(f"http://127.0.0.1:{redirect.server_port}", token="nj_SECRET")
        with pytest.raises(nightjar.NightjarError, match="redirects are not followed"):
            c.ping()
        assert stolen == [], "the token went to the redirect's target"
        f = tmp_path / "t.toml"
        f.write_text('command = "true"\n')
        with pytest.raises(nightjar.Invalid, match="socket"):
            c.submit(file=f)
    finally:
        capture.shutdown()
        redirect.shutdown()
