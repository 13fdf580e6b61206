//! `nightjar gpus [--watch]`: every GPU with utilisation, memory (used,
//! reserved, free), temperature, power, health and the tasks on it.

use std::time::Duration;

use anyhow::Result;
use bytesize::ByteSize;

use super::{Ctx, table};
use nightjar_core::api::{self, views::GpuView};

/// Flags of `gpus`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Refresh every second until interrupted.
    #[arg(long, short = 'w')]
    pub watch: bool,
}

/// Prints the GPUs (once, or refreshed).
pub fn run(mut ctx: Ctx, a: Args) -> Result<i32> {
    loop {
        let views = ctx.client.call(api::GpuList {})?;
        if ctx.json {
            super::print_json(&views)?;
        } else {
            if a.watch {
                print!("\x1b[2J\x1b[H");
            }
            print_table(&views);
        }
        if !a.watch {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn size(b: u64) -> String {
    ByteSize::b(b).display().iec_short().to_string()
}

fn print_table(views: &[GpuView]) {
    if views.is_empty() {
        println!("no GPUs (gpu.backend finds none and `gpus` lists none)");
        return;
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows: Vec<Vec<String>> = views
        .iter()
        .map(|g| {
            let free = g.mem_free();
            let state = match (g.healthy, g.open) {
                (false, _) => "unhealthy".to_string(),
                (true, true) => "open".to_string(),
                (true, false) => "closed".to_string(),
            };
            vec![
                g.index.to_string(),
                g.name.clone(),
                opt(g.util.map(|u| format!("{u}%"))),
                opt(g.mem_used.map(size)),
                size(g.mem_reserved),
                opt(free.map(size)),
                opt(g.mem_total.map(size)),
                opt(g.temp_c.map(|t| format!("{t}C"))),
                opt(g.power_w.map(|p| format!("{p:.0}W"))),
                state,
                if g.tasks.is_empty() {
                    g.reason.clone().unwrap_or_default()
                } else {
                    format!(
                        "tasks {}",
                        g.tasks
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    )
                },
            ]
        })
        .collect();
    table::print(
        &[
            "GPU",
            "NAME",
            "UTIL",
            "USED",
            "RESERVED",
            "FREE",
            "TOTAL",
            "TEMP",
            "POWER",
            "STATE",
            "TASKS / WHY",
        ],
        &rows,
    );
}
