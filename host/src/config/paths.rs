//! Where the daemon keeps things, from its configuration: the database,
//! run folders, plugins and their compiled code, locks, scratch space, and
//! the cores tasks may be pinned to.

use std::path::PathBuf;

use super::{Config, ExecutorKind};

impl Config {
    /// Where compiled plugin code is cached: `NIGHTJAR_PLUGIN_CACHE` (the
    /// tests share one between state dirs), else `<state_dir>/plugin-cache`.
    pub fn plugin_cache_dir(&self) -> PathBuf {
        std::env::var_os("NIGHTJAR_PLUGIN_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| self.state_dir.join("plugin-cache"))
    }

    /// The SQLite database file.
    pub fn db_path(&self) -> PathBuf {
        self.state_dir.join("nightjar.db")
    }

    /// The folder holding one folder per run.
    pub fn runs_dir(&self) -> PathBuf {
        match self.executor.kind {
            // Run folders are where the nodes' supervisors write.
            ExecutorKind::Slurm => self.executor.shared_dir.join("runs"),
            ExecutorKind::Local => self.state_dir.join("runs"),
        }
    }

    /// The folder scanned for plugin files.
    pub fn plugin_dir(&self) -> PathBuf {
        if self.plugins.dir.as_os_str().is_empty() {
            self.state_dir.join("plugins")
        } else {
            self.plugins.dir.clone()
        }
    }

    /// The file whose byte N is run N's lock, held by its supervisor.
    pub fn run_lock_path(&self) -> PathBuf {
        self.state_dir.join("runs.lock")
    }

    /// The folder holding per-run scratch space.
    pub fn scratch_dir(&self) -> PathBuf {
        self.state_dir.join("scratch")
    }

    /// The cores tasks can be pinned to.
    pub fn cpu_pool(&self) -> Vec<u32> {
        if !self.cpus.is_empty() {
            return self.cpus.clone();
        }
        let n = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        (0..n).collect()
    }
}
