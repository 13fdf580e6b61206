//! `nightjar-supervise RUN_DIR`: the per-run supervisor as a binary of its
//! own. It links only the sandbox code, so it starts in a fraction of the
//! time of `nightjard` (which also accepts `nightjard supervise RUN_DIR` and
//! is used when this one is missing).

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: nightjar-supervise RUN_DIR (started by the nightjar daemon)");
        std::process::exit(2);
    };
    match nightjar::sandbox::supervisor::main(std::path::Path::new(&dir)) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("nightjar-supervise: {e:#}");
            std::process::exit(1);
        }
    }
}
