//! `nightjar token create [--name N] | ls | revoke ID`: API tokens for the
//! HTTP API and dashboard. The socket names the caller, so a user makes
//! tokens for themselves only; the token is shown once.

use anyhow::Result;
use nightjar_core::api::tokens::{TokenCreate, TokenList, TokenRevoke};
use nightjar_core::time::fmt_local;

use super::{Ctx, print_json, table::clean};

/// The `token` sub-verbs.
#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Make a token for yourself and print it (once: the daemon keeps only its hash).
    Create {
        /// What it is for (`laptop`, `dashboard`).
        #[arg(long)]
        name: Option<String>,
    },
    /// Your tokens (an administrator's: everyone's), without their secrets.
    Ls,
    /// Revoke a token: it is refused from the next request on.
    Revoke {
        /// The token's id (from `token ls`).
        id: i64,
    },
}

/// Runs a `token` sub-verb.
pub fn run(mut ctx: Ctx, cmd: Cmd) -> Result<i32> {
    match cmd {
        Cmd::Create { name } => {
            let t = ctx.client.call(TokenCreate { name })?;
            if ctx.json {
                print_json(&t)?;
            } else {
                println!("{}", t.token);
                eprintln!(
                    "token {}: shown this once; send it as `Authorization: Bearer <token>` (`nightjar token revoke {}` ends it)",
                    t.id, t.id
                );
            }
        }
        Cmd::Ls => {
            let rows = ctx.client.call(TokenList {})?;
            if ctx.json {
                print_json(&rows)?;
                return Ok(0);
            }
            if rows.is_empty() {
                println!("no tokens: `nightjar token create` makes one");
            }
            for r in &rows {
                let used = r
                    .used_at
                    .map_or_else(|| "never used".into(), |t| format!("used {}", fmt_local(t)));
                let revoked = r
                    .revoked_at
                    .map(|t| format!(", revoked {}", fmt_local(t)))
                    .unwrap_or_default();
                println!(
                    "{}  {}  {}  made {}, {used}{revoked}",
                    r.id,
                    clean(&r.user),
                    clean(&r.name),
                    fmt_local(r.created_at)
                );
            }
        }
        Cmd::Revoke { id } => {
            let r = ctx.client.call(TokenRevoke { id })?;
            if ctx.json {
                print_json(&r)?;
            } else if r.tasks == 0 {
                println!("token {id} was already revoked");
            } else {
                println!("token {id} revoked");
            }
        }
    }
    Ok(0)
}
