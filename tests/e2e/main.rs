//! End-to-end tests: the real `nightjar` binary, a real daemon on a temp
//! state dir, real supervisors and processes, a real SQLite file.

// A test's helpers unwrap as its `#[test]` functions do (clippy.toml
// allows it only inside those): a panic is the test failing.
#![allow(clippy::unwrap_used)]

mod harness;
#[path = "../support/webhook_receiver.rs"]
mod webhook;

mod admin;
mod archive;
mod archive_hostile;
mod backfill;
mod board;
mod breaker;
mod cache;
mod checkpoint;
mod classes;
mod classes_real;
mod cli;
mod cli_submit;
mod client_edges;
mod containment;
mod dashboard;
mod dashboard_driver;
mod energy;
mod environments;
mod estimate;
mod exactly_once;
mod examples;
mod faults_clock;
mod faults_crashloop;
mod faults_dispatch;
mod faults_lock;
mod faults_recover;
mod faults_store;
mod faults_store_recover;
mod faults_supervisor;
mod first_party;
mod gpu_oom;
mod gpus;
mod hardening;
mod hardening_socket;
mod history;
mod hostile_env;
mod hostile_inputs;
mod hostile_output;
mod http;
mod http_client;
mod http_connections;
mod http_csrf;
mod http_hostile;
mod input;
mod listing;
mod manifest;
mod manifest_hostile;
mod metrics;
mod money;
mod multiuser;
mod multiuser_access;
mod multiuser_breaker;
mod notify;
mod notify_daemon;
mod notify_digest;
mod notify_mail;
mod ordering;
mod package;
mod passes;
mod plugin_config;
mod plugins_compile;
mod policies;
mod privsep;
mod privsep_races;
mod privsep_raw;
mod python_client;
mod report;
mod report_html;
mod rerun_diff;
mod rerun_diff_running;
mod reserve;
mod restart;
mod retention;
mod retention_hostile;
mod retry;
mod sandbox;
mod simulate;
mod simulate_cache;
mod simulate_hostile;
mod sweep_big;
mod users_harness;
mod validators;
mod versions;
mod wait_progress;
