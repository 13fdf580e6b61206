//! The SLURM executor's end-to-end tests, against a real one-node cluster
//! with accounting that they start themselves (`scripts/slurm-dev`: root,
//! and Debian's slurmctld, slurmd, slurm-client, munge, slurmdbd and
//! mariadb-server). A target of their own, with
//! the e2e target's harness, so `scripts/test` runs them beside the e2e
//! target rather than after it: most of their time is SLURM's own (a job's
//! time limit is counted in minutes), not the machine's. `cargo test` alone
//! leaves them out (`test = false`); `cargo test --test slurm` runs them.

// A test's helpers unwrap as its `#[test]` functions do (clippy.toml
// allows it only inside those): a panic is the test failing.
#![allow(clippy::unwrap_used)]

// The harness is shared with the e2e target; this one uses part of it.
#[allow(dead_code)]
#[path = "../e2e/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "../e2e/users_harness.rs"]
mod users_harness;

mod cluster;
mod node_gpus;
mod slurm;
mod slurm_accounting;
mod slurm_arrays;
mod slurm_batches;
mod slurm_faults;
mod slurm_hostile;
mod slurm_owners;
