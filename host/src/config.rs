//! Daemon configuration: embedded defaults, overridden by one optional TOML file.
//!
//! Every key is documented by example in `examples/nightjar.toml`. Unknown keys
//! and wrong types are errors that name the file, line and key.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
#[cfg(test)]
use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

mod archive;
mod cache;
mod containers;
mod executor;
mod gpu;
mod host;
mod http;
mod mail;
mod manifest;
mod notify;
mod paths;
mod plugins;
mod quotas;
mod retention;
mod sandbox;
mod scheduler;
mod tariff;
mod users;
mod validators;

pub use archive::ArchiveConfig;
pub use cache::{CacheConfig, CacheOutputs};
pub use containers::ContainersConfig;
pub use executor::{ExecutorConfig, ExecutorKind, JobUser};
pub use gpu::{GpuConfig, VisibleDevices};
pub use host::{ApiConfig, REDACTED, redacted};
pub use http::HttpConfig;
pub use mail::{MailConfig, MailTls};
pub use manifest::{InputsChanged, ManifestConfig};
pub use notify::{Language, NotifierEntry, NotifyConfig};
pub use plugins::{OnFailure, PluginEntry, PluginsConfig};
pub use quotas::{QuotaLimits, QuotasConfig};
pub use retention::RetentionConfig;
pub use sandbox::{CgroupMode, SandboxConfig};
pub use scheduler::{Order, SchedulerConfig};
pub use tariff::{RaplMode, TariffConfig, WindowConfig};
pub use users::UsersConfig;
pub use validators::ValidatorsConfig;

/// The environment variables a run inherits from the daemon unless the config
/// names its own list. Everything else is cleared.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SHELL", "TMPDIR",
];

/// The whole daemon configuration, with defaults for every key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where the database, run folders and scratch space live.
    pub state_dir: PathBuf,
    /// The unix socket the CLI talks to (created with mode 0600).
    pub socket: PathBuf,
    /// IANA time zone for schedules (`daily@03:00` means 03:00 here).
    pub timezone: String,
    /// How many tasks may run at once.
    pub slots: u32,
    /// GPU indices tasks may be given (through `CUDA_VISIBLE_DEVICES`).
    pub gpus: Vec<u32>,
    /// CPU cores that tasks asking for `cpus` are pinned to; empty means all online cores.
    pub cpus: Vec<u32>,
    /// How runs are sandboxed.
    pub sandbox: SandboxConfig,
    /// GPU monitoring and placement.
    pub gpu: GpuConfig,
    /// `[scheduler]`: backfill and runtime estimates.
    pub scheduler: SchedulerConfig,
    /// The policy plugins and their limits.
    pub plugins: PluginsConfig,
    /// Per-plugin settings, by plugin name: `[plugin.priority]`.
    pub plugin: std::collections::BTreeMap<String, PluginEntry>,
    /// The file this came from and its text (none: the embedded defaults),
    /// so later errors can name the file and line.
    #[serde(skip)]
    pub origin: Option<(PathBuf, String)>,
    /// Folders task output may go to; empty means anywhere the task's user may write.
    pub output_roots: Vec<PathBuf>,
    /// Limits of the API socket.
    pub api: ApiConfig,
    /// The HTTP API and dashboard (off unless `listen` is set).
    pub http: HttpConfig,
    /// How long ended tasks are kept.
    pub retention: RetentionConfig,
    /// What marks a failed run's class in its output (`gpu-oom`, `disk-full`, `network`).
    pub classes: crate::sandbox::classify::ClassPatterns,
    /// Limits of result validators.
    pub validators: ValidatorsConfig,
    /// Validators every run of a project is judged by: project -> tables
    /// (`plugin` plus the validator's keys), as written.
    pub validate: std::collections::BTreeMap<String, Vec<toml::Table>>,
    /// How events are told: language, retry schedule, HTTP limits.
    pub notify: NotifyConfig,
    /// Each notifier: its plugin, subscription, allow-list and secrets.
    pub notifier: std::collections::BTreeMap<String, NotifierEntry>,
    /// The SMTP server notifiers' mail goes through (none: no mail).
    pub mail: Option<MailConfig>,
    /// What reproducibility manifests may cost and what a changed input means.
    pub manifest: ManifestConfig,
    /// Where succeeded runs are archived, and how failed tries are retried.
    pub archive: ArchiveConfig,
    /// The electricity tariff runs' energy is priced by.
    pub tariff: TariffConfig,
    /// Who may use a system daemon, who administers it, what users see of each other's tasks.
    pub users: UsersConfig,
    /// Per-user limits: tasks running, GPUs held, tasks waiting.
    pub quotas: QuotasConfig,
    /// How the result cache gives a cached completion its outputs.
    pub cache: CacheConfig,
    /// Container tasks: the default runtime and each runtime's flags.
    pub containers: ContainersConfig,
    /// Where runs are carried out: this machine, or a SLURM cluster.
    pub executor: ExecutorConfig,
    /// `validate`, resolved (paths absolute from the config file's folder).
    #[serde(skip)]
    pub project_validators:
        std::collections::BTreeMap<String, Vec<crate::task::model::ValidatorRef>>,
}

impl Default for Config {
    fn default() -> Self {
        let state_dir = default_state_dir();
        Config {
            socket: default_socket(&state_dir),
            state_dir,
            timezone: local_timezone(),
            slots: std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1),
            gpus: Vec::new(),
            cpus: Vec::new(),
            sandbox: SandboxConfig::default(),
            gpu: GpuConfig::default(),
            scheduler: SchedulerConfig::default(),
            plugins: PluginsConfig::default(),
            plugin: Default::default(),
            origin: None,
            output_roots: Vec::new(),
            api: ApiConfig::default(),
            http: HttpConfig::default(),
            retention: RetentionConfig::default(),
            classes: Default::default(),
            validators: Default::default(),
            validate: Default::default(),
            notify: Default::default(),
            notifier: Default::default(),
            mail: None,
            manifest: ManifestConfig::default(),
            archive: ArchiveConfig::default(),
            tariff: TariffConfig::default(),
            users: UsersConfig::default(),
            quotas: QuotasConfig::default(),
            cache: CacheConfig::default(),
            containers: ContainersConfig::default(),
            executor: ExecutorConfig::default(),
            project_validators: Default::default(),
        }
    }
}

impl Config {
    /// Loads the config: defaults, then `path` if given. `state_dir` given on the
    /// command line wins over the file (and moves the default socket with it).
    pub fn load(path: Option<&Path>, state_dir: Option<&Path>) -> Result<Config> {
        let mut cfg = match path {
            Some(p) => {
                let text = nightjar_core::paths::read_config(p).map_err(anyhow::Error::msg)?;
                Self::parse(&text, p)?
            }
            None => Config::default(),
        };
        // The same rule the client follows (`nightjar_core::paths`).
        (cfg.state_dir, cfg.socket) = nightjar_core::paths::locate(
            Some(cfg.state_dir.clone()),
            Some(cfg.socket.clone()),
            state_dir,
        );
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses config text; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Config> {
        let raw: toml::Table = toml::from_str(text)
            .map_err(|e| anyhow::anyhow!("config file {}: {e}", origin.display()))?;
        let mut cfg: Config = toml::from_str(text)
            .map_err(|e| anyhow::anyhow!("config file {}: {e}", origin.display()))?;
        // Relative paths start at the file's folder, as the client reads them.
        for p in [
            &mut cfg.state_dir,
            &mut cfg.socket,
            &mut cfg.plugins.dir,
            &mut cfg.gpu.sim_script,
            &mut cfg.executor.shared_dir,
        ] {
            *p = nightjar_core::paths::from_config(origin, p);
        }
        // A state_dir given in the file moves the socket too, unless the file names one.
        if raw.contains_key("state_dir") && !raw.contains_key("socket") {
            cfg.socket = default_socket(&cfg.state_dir);
        }
        cfg.validate()
            .with_context(|| format!("config file {}", origin.display()))?;
        let folder = origin.parent().unwrap_or(Path::new("."));
        cfg.project_validators = validators::resolve_projects(&cfg.validate, folder)
            .with_context(|| format!("config file {}", origin.display()))?;
        cfg.origin = Some((origin.to_path_buf(), text.to_string()));
        Ok(cfg)
    }

    fn validate(&self) -> Result<()> {
        if self.slots == 0 {
            bail!("key `slots` is 0: at least one slot is needed to run anything");
        }
        if self.timezone.parse::<chrono_tz::Tz>().is_err() {
            bail!(
                "key `timezone`: `{}` is not an IANA time zone name (for example `Europe/Berlin` or `UTC`)",
                self.timezone
            );
        }
        let unique: BTreeSet<_> = self.gpus.iter().collect();
        if unique.len() != self.gpus.len() {
            bail!("key `gpus` lists a GPU index twice: {:?}", self.gpus);
        }
        self.users.check()?;
        self.containers.validate()?;
        self.executor.validate()?;
        if let Err(e) = self.gpu.backend.parse::<crate::gpu::BackendSpec>() {
            bail!("key `gpu.backend`: {e}");
        }
        if let Some(name) = self.plugin.keys().find(|n| !self.plugins.chain.contains(n)) {
            bail!(
                "table `[plugin.{name}]` configures a plugin that is not in `plugins.chain`; add it to the chain or remove the table"
            );
        }
        let p = &self.plugins;
        if p.max_failures == 0 || p.failure_window < p.max_failures {
            bail!(
                "keys `plugins.max_failures` ({}) and `plugins.failure_window` ({}): need 1 <= max_failures <= failure_window",
                p.max_failures,
                p.failure_window
            );
        }
        if p.compile_memory.as_u64() < (64 << 20) {
            bail!(
                "key `plugins.compile_memory` ({}) must be at least 64 MiB: a compile needs that much for even a small component",
                p.compile_memory.display().iec_short()
            );
        }
        if p.min_pass_interval < Duration::from_millis(10) {
            bail!("key `plugins.min_pass_interval` must be at least 10ms");
        }
        if self.gpu.sample_period < Duration::from_millis(100) {
            bail!("key `gpu.sample_period` must be at least 100ms");
        }
        if self.gpu.stagger > Duration::from_secs(3600) {
            bail!(
                "key `gpu.stagger` ({:?}) is over an hour: it is the least time between two starts on one GPU, a few seconds",
                self.gpu.stagger
            );
        }
        if self.sandbox.log_cap.as_u64() < 4096 {
            bail!("key `sandbox.log_cap` must be at least 4 KiB");
        }
        self.http.validate()?;
        self.scheduler.validate()?;
        self.retention.validate()?;
        self.validators.validate()?;
        self.manifest.validate()?;
        self.archive.validate()?;
        self.tariff.resolve(self.tz())?;
        self.notify.validate(&self.notifier)?;
        if let Some(m) = &self.mail {
            m.validate()?;
        }
        host::validate(&self.api, &self.sandbox.redact_env, &self.output_roots)
    }

    /// Where `key` (under the table `[table]`, or at the top when `table` is
    /// empty) is set in the config file: "config file F, line N", or just the
    /// file, or "the embedded defaults".
    pub fn locate(&self, table: &str, key: &str) -> String {
        let Some((path, text)) = &self.origin else {
            return "the embedded defaults".into();
        };
        let mut in_table = table.is_empty();
        let header = format!("[{table}]");
        let mut table_line = None;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.starts_with('[') {
                in_table = l == header;
                if in_table {
                    table_line = Some(i + 1);
                }
                continue;
            }
            let k = l.split('=').next().unwrap_or("").trim().trim_matches('"');
            if in_table && !key.is_empty() && k == key {
                return format!("config file {}, line {}", path.display(), i + 1);
            }
        }
        match table_line {
            Some(n) => format!("config file {}, line {n}", path.display()),
            None => format!("config file {}", path.display()),
        }
    }

    /// The parsed time zone (validated at load).
    pub fn tz(&self) -> chrono_tz::Tz {
        self.timezone.parse().unwrap_or(chrono_tz::UTC)
    }

    /// The tariff, resolved in the configured zone (validated at load; the
    /// flat default if it somehow is not).
    pub fn tariff(&self) -> crate::tariff::Tariff {
        self.tariff
            .resolve(self.tz())
            .unwrap_or_else(|_| crate::tariff::Tariff {
                currency: self.tariff.currency.clone(),
                price: self.tariff.price,
                windows: Vec::new(),
                tz: self.tz(),
            })
    }
}

pub use nightjar_core::paths::{default_socket, default_state_dir};

/// The machine's time zone name when the zone database knows it, else `UTC`.
fn local_timezone() -> String {
    Some(nightjar_core::time::local_zone_name())
        .filter(|tz| tz.parse::<chrono_tz::Tz>().is_ok())
        .unwrap_or_else(|| "UTC".to_string())
}

pub use nightjar_core::humantime_serde_compat;

#[cfg(test)]
mod tests;
