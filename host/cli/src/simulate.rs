//! `nightjar simulate TRACE`: the flags. The simulation itself needs the
//! plugin host, so `nightjard` runs it (as it runs `plugins check`).

use std::path::PathBuf;

/// What a job that does not fit means for the jobs behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    /// The head job blocks everything behind it until it starts.
    Strict,
    /// A job that does not fit is passed over; later jobs start in its place.
    FirstFit,
    /// EASY backfill, as the daemon does it: the head reserves its start and
    /// later jobs start only if they do not delay it.
    Backfill,
}

/// `nightjar simulate`'s arguments.
#[derive(Debug, Default, clap::Args)]
pub struct Args {
    /// The trace: CSV with a header; `id,arrival_s,gpus,duration_s` and
    /// optionally `name,project,user,priority,gpu_mem,estimate_s,power_w,preemptible,checkpoint_s,temp_c`.
    #[arg(required_unless_present = "history", conflicts_with = "history")]
    pub trace: Option<PathBuf>,
    /// Instead of a trace file: the daemon's own runs that became eligible
    /// in the last DURATION (`7d`, `30d`), one job per run, second 0 the
    /// period's start (what `nightjar report --trace` writes).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub history: Option<std::time::Duration>,
    /// How many GPUs the simulated machine has (default: the config's
    /// `gpus`, else its GPU backend's: `sim:8xA100-80GB` is 8, NVML counts them).
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Each simulated GPU's memory, for jobs that name `gpu_mem` (e.g. 80GiB).
    #[arg(long, value_name = "SIZE")]
    pub gpu_mem: Option<String>,
    /// What a job that does not fit means for the jobs behind it (default:
    /// the config's `[scheduler] order`, itself backfill by default).
    #[arg(long, value_enum)]
    pub order: Option<Order>,
    /// The wall-clock time of the trace's second 0, RFC 3339 (default: the
    /// trace's `# start:` line, else 2026-11-02T00:00:00 in the config's
    /// time zone, a Monday).
    #[arg(long, value_name = "TIME")]
    pub start: Option<String>,
    /// Write the schedule as CSV (`id,start_s,end_s,gpus,gpu_ids,preempted`).
    #[arg(long, value_name = "OUT.csv", conflicts_with = "compare")]
    pub schedule: Option<PathBuf>,
    /// Write a self-contained HTML page: the figures, a Gantt chart of the
    /// GPUs over time (cheaper electricity shaded) and the queue's length.
    #[arg(long, value_name = "OUT.html", conflicts_with = "compare")]
    pub html: Option<PathBuf>,
    /// Also simulate the trace under this config, and print the two side by
    /// side with their differences (flags apply to both; each config's own
    /// settings where a flag does not set them).
    #[arg(long, value_name = "OTHER.toml")]
    pub compare: Option<PathBuf>,
}
