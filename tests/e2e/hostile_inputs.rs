//! The hidden-case habit: hostile and careless inputs (task files, CLI flags,
//! raw API requests over the socket, misbehaving clients). Each one gets a
//! clear error naming the problem, leaves the queue byte-for-byte as it was
//! (`ls --json --all` before and after) and the daemon answering pings.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::Nj;

/// A daemon with `output_roots` set and one held task in the queue.
pub(crate) fn world() -> Nj {
    let mut nj = Nj::new("");
    let results = nj.path("results");
    let text = std::fs::read_to_string(&nj.config).unwrap();
    std::fs::write(
        &nj.config,
        format!("output_roots = [\"{}\"]\n{text}", results.display()),
    )
    .unwrap();
    nj.start();
    nj.submit(&["--hold", "--name", "keep", "--", "true"]);
    nj
}

/// The whole queue as the CLI prints it.
pub(crate) fn queue(nj: &Nj) -> String {
    nj.ok(&["--json", "ls", "--all"])
}

/// A raw connection to the daemon's socket.
pub(crate) fn connect(nj: &Nj) -> UnixStream {
    let s = UnixStream::connect(nj.state.join("nightjar.sock")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

/// Sends raw bytes (a newline is added) and returns the reply line.
pub(crate) fn raw(nj: &Nj, line: &[u8]) -> String {
    let mut s = connect(nj);
    // The daemon may refuse before reading everything: a failed write is fine.
    let _ = s.write_all(line).and_then(|_| s.write_all(b"\n"));
    let mut reply = String::new();
    BufReader::new(s).read_line(&mut reply).expect("reply");
    reply
}

/// The daemon answers a ping.
pub(crate) fn assert_alive(nj: &Nj) {
    let reply = raw(nj, &crate::harness::raw_request(json!({"verb": "ping"})));
    assert!(reply.contains("\"pid\""), "no pong: {reply}");
}

/// The CLI refuses `args` with an error containing `expect`; nothing changed.
fn refused_cli(nj: &Nj, args: &[&str], expect: &str) {
    let before = queue(nj);
    let out = nj.cli(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(
        err.contains(expect),
        "{args:?}: expected `{expect}` in: {err}"
    );
    assert_eq!(queue(nj), before, "{args:?} changed the queue");
    assert_alive(nj);
}

/// The daemon refuses the raw request with an error containing `expect`.
pub(crate) fn refused_raw(nj: &Nj, line: &[u8], expect: &str) {
    let before = queue(nj);
    let reply = raw(nj, line);
    let v: Value = serde_json::from_str(&reply).expect("a JSON reply");
    let err = v["error"].as_str().unwrap_or_default();
    assert!(
        err.contains(expect),
        "expected `{expect}` in the error, got: {reply}"
    );
    assert!(v.get("ok").is_none(), "{reply}");
    assert_eq!(queue(nj), before, "request changed the queue: {reply}");
    assert_alive(nj);
}

/// A valid one-task submission the raw cases break in one place each.
pub(crate) fn entry(nj: &Nj, name: &str) -> Value {
    json!({
        "name": name, "project": "default", "is_sweep": false, "schedule": null,
        "deps": [], "held": true,
        "members": [{
            "name": name, "project": "default",
            "command": {"argv": ["echo", "hi"]},
            "workdir": nj.path("work"), "env": {}, "inputs": [], "output": null,
            "priority": "normal", "resources": {}, "retry": {}, "params": {}
        }]
    })
}

pub(crate) fn submit(entries: Vec<Value>) -> Vec<u8> {
    crate::harness::raw_request(json!({"verb": "submit", "entries": entries}))
}

#[test]
fn hostile_task_files_and_flags_are_refused_with_the_problem_named() {
    let nj = world();
    let work = nj.path("work");
    let file = |name: &str, text: &str| {
        std::fs::write(work.join(name), text).unwrap();
        name.to_string()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![file(
                "escape.toml",
                "command = \"true\"\noutput = \"../../../../etc/nightjar-pwned\"\n",
            )],
            "outside output_roots",
        ),
        (
            vec![
                "--output".into(),
                "/srv/elsewhere".into(),
                "--".into(),
                "true".into(),
            ],
            "resolves to /srv/elsewhere, outside output_roots",
        ),
        (
            vec![
                "--name".into(),
                "../../etc/x".into(),
                "--".into(),
                "true".into(),
            ],
            "name `../../etc/x` contains `/`",
        ),
        (
            vec![
                "--project".into(),
                "../../x".into(),
                "--".into(),
                "true".into(),
            ],
            "project `../../x` contains `/`",
        ),
        (
            vec![
                "--name".into(),
                "\u{1b}[31mred".into(),
                "--".into(),
                "true".into(),
            ],
            "contains `\\u{1b}`",
        ),
        (
            vec!["--name".into(), "n".repeat(129), "--".into(), "true".into()],
            "129 bytes long",
        ),
        (
            vec![
                "--project".into(),
                ".hidden".into(),
                "--".into(),
                "true".into(),
            ],
            "project `.hidden` starts with a dot",
        ),
        (
            vec![file(
                "big.toml",
                &format!("command = \"echo {}\"\n", "x".repeat(200_000)),
            )],
            "the limit is 128 KiB in all",
        ),
        (
            vec![file(
                "bigenv.toml",
                &format!(
                    "command = \"true\"\nenv = {{ BLOB = \"{}\" }}\n",
                    "y".repeat(200_000)
                ),
            )],
            "the limit is 128 KiB in all",
        ),
        (vec![file("laughs.yaml", &laughs())], "expands to more than"),
        (
            vec![file(
                "cycle.toml",
                "[[task]]\nname = \"a\"\ncommand = \"true\"\nafter = [\"b\"]\n[[task]]\nname = \"b\"\ncommand = \"true\"\nafter = [\"a\"]\n",
            )],
            "dependency cycle: a -> b -> a",
        ),
        (
            vec![file(
                "self.toml",
                "[[task]]\nname = \"a\"\ncommand = \"true\"\nafter = [\"a\"]\n",
            )],
            "depends on itself",
        ),
        (
            vec![file(
                "zero.toml",
                "command = \"true\"\n[retry]\nmax_attempts = 0\n",
            )],
            "retry.max_attempts must be at least 1",
        ),
        (
            vec!["--attempts".into(), "0".into(), "--".into(), "true".into()],
            "retry.max_attempts must be at least 1",
        ),
        (
            vec![file("nul.toml", "command = \"echo a\\u0000b\"\n")],
            "command contains a NUL byte",
        ),
        (
            vec![file("var.toml", "command = \"echo ${HOME}\"\n")],
            "unknown variable `${HOME}`",
        ),
        (
            vec![
                "-e".into(),
                "NIGHTJAR_TASK_ID=7".into(),
                "--".into(),
                "true".into(),
            ],
            "NIGHTJAR_* variables are set by the host",
        ),
        (
            vec!["-e".into(), "NOEQUALS".into(), "--".into(), "true".into()],
            "--env `NOEQUALS`: write it as KEY=VALUE",
        ),
    ];
    for (args, expect) in &cases {
        let mut a = vec!["submit"];
        a.extend(args.iter().map(String::as_str));
        refused_cli(&nj, &a, expect);
    }
    assert!(!std::path::Path::new("/etc/nightjar-pwned").exists());
}

/// 20 KB of YAML whose nested aliases expand to 10^30 values.
fn laughs() -> String {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..30 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    text.push_str("command: echo\n");
    text
}

#[test]
fn hostile_raw_api_requests_are_refused_by_the_daemon_itself() {
    let nj = world();
    let ok = entry(&nj, "fine");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut e = ok.clone();
        f(&mut e);
        submit(vec![e])
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            with(&|e| e["members"][0]["command"] = json!({"argv": []})),
            "command is empty",
        ),
        (
            with(&|e| e["members"][0]["command"] = json!({"argv": [""]})),
            "command is empty",
        ),
        (
            with(&|e| e["members"][0]["command"] = json!({"shell": "  "})),
            "command is empty",
        ),
        (
            with(&|e| e["members"][0]["env"] = json!({"A": "x\u{0}y"})),
            "env value of `A` contains a NUL byte",
        ),
        (
            with(&|e| e["members"][0]["command"] = json!({"argv": ["echo", "a\u{0}"]})),
            "command contains a NUL byte",
        ),
        (
            with(&|e| e["members"][0]["retry"] = json!({"max_attempts": 0})),
            "max_attempts",
        ),
        (
            with(&|e| e["deps"] = json!([[{"local": 0}, "after-ok"]])),
            "depends on itself",
        ),
        (
            with(&|e| e["deps"] = json!([[{"local": 5}, "after-ok"]])),
            "dependency on entry 5",
        ),
        (
            with(&|e| e["deps"] = json!([[{"existing": 999}, "after-ok"]])),
            "999",
        ),
        (
            with(&|e| {
                e["name"] = json!("../x");
                e["members"][0]["name"] = json!("../x");
            }),
            "name `../x` contains `/`",
        ),
        (
            with(&|e| e["members"][0]["name"] = json!("other")),
            "differs from the task's name",
        ),
        (
            with(&|e| e["members"][0]["command"] = json!({"shell": "x".repeat(200_000)})),
            "the limit is 128 KiB in all",
        ),
        (
            with(&|e| e["members"][0]["output"] = json!("../../../../etc/nightjar-pwned")),
            "outside output_roots",
        ),
        (
            with(&|e| e["members"][0]["workdir"] = json!("relative")),
            "is not absolute",
        ),
        (
            with(&|e| e["members"][0]["command"] = json!({"shell": "echo ${NOPE}"})),
            "unknown variable `${NOPE}`",
        ),
        (
            with(&|e| {
                let m = e["members"][0].clone();
                e["members"] = json!([m.clone(), m]);
            }),
            "has 2 members but is not a sweep",
        ),
        (
            with(&|e| e["members"][0]["params"] = json!({"a b": "1"})),
            "sweep parameter `a b`",
        ),
        (
            with(&|e| e["schedule"] = json!("every full moon")),
            "every full moon",
        ),
        (submit(vec![]), "holds no task"),
        (
            {
                let mut a = entry(&nj, "a");
                let mut b = entry(&nj, "b");
                a["deps"] = json!([[{"local": 1}, "after-ok"]]);
                b["deps"] = json!([[{"local": 0}, "after-ok"]]);
                submit(vec![a, b])
            },
            "dependency cycle: a -> b -> a",
        ),
        (b"this is not json".to_vec(), "bad request"),
        (
            crate::harness::raw_request(json!({"verb": "format-disk"})),
            "bad request: unknown variant `format-disk`",
        ),
        (b"\xff\xfe{}".to_vec(), "bad request"),
        (
            [vec![b'['; 100_000], vec![b']'; 100_000]].concat(),
            "bad request",
        ),
        (
            crate::harness::raw_request(json!({"verb": "show", "id": -1})),
            "-1",
        ),
        (br#"{"verb":"ping"}"#.to_vec(), "protocol 1 (nightjar 0.1)"),
        (
            br#"{"v":99,"req":{"verb":"ping"}}"#.to_vec(),
            "speaks protocol 99",
        ),
    ];
    for (line, expect) in &cases {
        refused_raw(&nj, line, expect);
    }
    // A 2 MiB line is refused once it passes 1 MiB, and the connection closed.
    let before = queue(&nj);
    let mut s = connect(&nj);
    let big = vec![b'x'; 2 * 1024 * 1024];
    let _ = s.write_all(&big);
    let mut reply = String::new();
    let mut r = BufReader::new(s);
    r.read_line(&mut reply).unwrap();
    assert!(reply.contains("request line longer than 1 MiB"), "{reply}");
    let mut rest = Vec::new();
    assert_eq!(
        r.read_to_end(&mut rest).unwrap_or(0),
        0,
        "connection closed"
    );
    assert_eq!(queue(&nj), before);
    assert_alive(&nj);
}
