//! Compiling a component in a process of its own. Cranelift's memory grows
//! with the component (a 32 MB one took a daemon from 46 MB to 493 MB) and
//! a hostile component can ask for more; inside the daemon that memory is
//! the daemon's, and an allocation failure aborts it. So the daemon
//! compiles in a child (`nightjard compile`, never typed by a person): the
//! component on its stdin, the compiled code on its stdout, under
//! `RLIMIT_DATA` = `[plugins] compile_memory` and killed after the compile
//! deadline. The daemon only maps the finished code
//! (`Component::deserialize`), built by the same binary with the same
//! engine settings.
//!
//! The choice is the process's: [`use_child`] is called once by the daemon
//! at its start. Anything else (tests, the offline `plugins check`, which
//! runs as the person who typed it) compiles in its own process.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::policy::PluginError;

/// How this process's compiles run in a child.
#[derive(Debug, Clone)]
pub struct ChildCompiler {
    /// The `nightjard` binary.
    pub program: PathBuf,
    /// Bytes of data (heap, stacks) the compile may map: `RLIMIT_DATA`.
    pub memory: u64,
    /// Longest a compile may take; the child is killed after it.
    pub timeout: Duration,
}

static CHILD: OnceLock<ChildCompiler> = OnceLock::new();

/// Makes every later compile of this process run in a child as `c` says.
/// The first call wins (one daemon per process).
pub fn use_child(c: ChildCompiler) {
    let _ = CHILD.set(c);
}

/// The child compiler, when [`use_child`] was called.
pub fn child() -> Option<&'static ChildCompiler> {
    CHILD.get()
}

/// The verb `nightjard` runs a compile child under.
pub const VERB: &str = "compile";

/// The child's exit status when the compiler refused the component.
const INVALID: i32 = 3;

impl ChildCompiler {
    /// Compiles `wasm` in a child; the compiled code, or why not, for a
    /// person: [`PluginError::Compile`] when the compiler refused the
    /// component, [`PluginError::CompileLimit`] when the child ran out of
    /// memory (naming `compile_memory`) or time, or could not run.
    pub fn compile(&self, wasm: &[u8]) -> Result<Vec<u8>, PluginError> {
        self.run(wasm).map_err(PluginError::CompileLimit)?
    }

    fn run(&self, wasm: &[u8]) -> Result<Result<Vec<u8>, PluginError>, String> {
        let memory = self.memory;
        let mut cmd = Command::new(&self.program);
        cmd.arg(VERB)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe calls (`sys::set_rlimit`, `sys::cloexec_fds_from`)
        // between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                crate::sys::set_rlimit(libc::RLIMIT_DATA, memory, memory)?;
                crate::sys::set_rlimit(libc::RLIMIT_CORE, 0, 0)?;
                // Descriptors the daemon inherited without close-on-exec
                // do not reach the child (marked, not closed: std's own
                // exec-error pipe is among them).
                crate::sys::cloexec_fds_from(3);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start the compiler process {} {VERB}: {e}",
                self.program.display()
            )
        })?;
        let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the compiler process has no pipes".into());
        };
        let input = wasm.to_vec();
        let feed = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            stdout.read_to_end(&mut bytes).map(|_| bytes)
        });
        let err = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = (&mut stderr).take(64 << 10).read_to_end(&mut text);
            // The rest is read and dropped: a child writing more must not
            // die on a closed pipe (a refusal would read as a crash).
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            String::from_utf8_lossy(&text).trim().to_string()
        });
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("cannot wait for the compiler process: {e}")),
            }
        };
        let _ = feed.join();
        let bytes = out.join().ok().and_then(Result::ok);
        let said = err.join().unwrap_or_default();
        let Some(status) = status else {
            return Err(format!(
                "compiling took longer than {}; it was stopped",
                humantime::format_duration(self.timeout)
            ));
        };
        match bytes {
            Some(b) if status.success() => Ok(Ok(b)),
            _ if status.code() == Some(INVALID) => Ok(Err(PluginError::Compile(said))),
            _ => Err(self.failure(status, &said)),
        }
    }

    fn failure(&self, status: std::process::ExitStatus, said: &str) -> String {
        let out_of_memory = said.contains("memory allocation")
            || said.contains("out of memory")
            || said.contains("Cannot allocate memory")
            || status.signal() == Some(libc::SIGSEGV);
        if out_of_memory {
            return format!(
                "compiling it needed more memory than [plugins] compile_memory ({}); raise it if the component is really that large",
                bytesize::ByteSize::b(self.memory).display().iec_short()
            );
        }
        let how = match (status.code(), status.signal()) {
            (Some(c), _) => format!("exited with status {c}"),
            (_, Some(s)) => format!("was killed by signal {s}"),
            _ => "ended".into(),
        };
        let said = crate::plugins::limits::capped(said, 2000);
        format!("the compiler process {how}: {said}")
    }
}

/// `nightjard compile`: reads a component on stdin, writes its compiled
/// code on stdout (exit 0), or the compiler's refusal on stderr (exit 3);
/// anything else that goes wrong exits 1.
pub fn child_main() -> i32 {
    let mut wasm = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut wasm) {
        eprintln!("cannot read the component: {e}");
        return 1;
    }
    let engine = match wasmtime::Engine::new(&super::engine::config()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cannot create the wasm engine: {e}");
            return 1;
        }
    };
    let compiled = wasmtime::component::Component::new(&engine, &wasm).and_then(|c| c.serialize());
    match compiled {
        Ok(bytes) => match std::io::stdout().lock().write_all(&bytes) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("cannot write the compiled code: {e}");
                1
            }
        },
        Err(e) => {
            eprintln!("{e:?}");
            INVALID
        }
    }
}
