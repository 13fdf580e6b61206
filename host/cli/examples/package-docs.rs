//! Writes the man pages and shell completions the package installs, from
//! the CLI definition itself (clap), so they never drift from the code:
//!
//! ```sh
//! cargo run -p nightjar-cli --example package-docs -- OUT
//! ```
//!
//! - `OUT/man/nightjar.1` and one page per verb, as git has them
//!   (`nightjar-submit.1`, `nightjar-plugins-new.1`, ...), and `nightjard.1`
//!   with a page per verb of its own;
//! - `OUT/completions/nightjar.bash`, `_nightjar` (zsh), `nightjar.fish`.
//!
//! `scripts/package` runs it before `cargo deb`.

use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::Shell;

fn main() -> std::io::Result<()> {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: package-docs OUT (writes OUT/man and OUT/completions)");
        std::process::exit(2);
    };
    let man = out.join("man");
    let completions = out.join("completions");
    std::fs::create_dir_all(&man)?;
    std::fs::create_dir_all(&completions)?;

    let nightjar = nightjar_cli::Cli::command();
    // nightjar.1, then nightjar-VERB.1 for every verb and sub-verb.
    clap_mangen::generate_to(nightjar.clone(), &man)?;
    // nightjard.1, nightjard-daemon.1, nightjard-plugins-check.1, ...
    clap_mangen::generate_to(nightjar_cli::daemon_command(), &man)?;

    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut nightjar.clone(), "nightjar", &completions)?;
    }
    Ok(())
}
