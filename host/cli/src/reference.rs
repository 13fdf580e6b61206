//! The book's CLI reference (`docs/src/reference/cli.md`), written from the
//! CLI definition itself (clap), as the man pages are: one section per verb
//! and sub-verb of `nightjar`, then `nightjard`, each with its full help.
//! A test compares the file with what this writes (`scripts/docs --bless`
//! writes it again), so the reference never drifts from the code.

use clap::{Command, CommandFactory};

use super::{Cli, daemon_command};

/// Where the reference lives, from the repository's root.
pub const PATH: &str = "docs/src/reference/cli.md";

/// Help text is wrapped to this width, whatever the terminal.
const WIDTH: usize = 90;

/// The reference, as Markdown.
pub fn cli_reference() -> String {
    let mut out = String::from(
        "# The CLI\n\n\
         <!-- Written by `scripts/docs --bless` from the CLI's definition (clap); \
         a test fails when it differs. Do not edit by hand. -->\n\n\
         Every verb of `nightjar` (the client) and of `nightjard` (the daemon \
         binary), with its full `--help`. The same text is in the man pages \
         (`man nightjar-submit`) and `nightjar VERB --help`. Exit statuses are \
         in [Using it: the CLI](../guide/using.md).\n",
    );
    for cmd in [Cli::command(), daemon_command()] {
        let mut cmd = cmd.term_width(WIDTH).max_term_width(WIDTH);
        cmd.build();
        section(&mut out, &cmd, cmd.get_name());
    }
    out
}

/// Appends `cmd`'s section and its sub-verbs' (hidden ones left out).
fn section(out: &mut String, cmd: &Command, path: &str) {
    // The environment's values are the reader's, not the reference's.
    let mut cmd = cmd.clone().mut_args(|a| a.hide_env_values(true));
    let help = cmd.render_long_help().to_string();
    out.push_str(&format!("\n## `{path}`\n\n```text\n"));
    for line in help.trim_end().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        section(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

/// The verbs the reference has a section for, as `nightjar VERB [SUB]`.
pub fn verbs() -> Vec<String> {
    fn walk(cmd: &Command, path: &str, into: &mut Vec<String>) {
        into.push(path.to_string());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() != "help" {
                walk(sub, &format!("{path} {}", sub.get_name()), into);
            }
        }
    }
    let mut all = Vec::new();
    for mut cmd in [Cli::command(), daemon_command()] {
        cmd.build();
        let name = cmd.get_name().to_string();
        walk(&cmd, &name, &mut all);
    }
    all
}

#[cfg(test)]
#[path = "reference_tests.rs"]
mod tests;
