//! End-to-end tests: the real `nightjar` binary, a real daemon on a temp
//! state dir, real supervisors and processes, a real SQLite file.

mod harness;

mod archive;
mod archive_hostile;
mod breaker;
mod breaker_postrun;
mod checkpoint;
mod classes;
mod classes_real;
mod cli;
mod client_edges;
mod containment;
mod dashboard;
mod energy;
mod exactly_once;
mod examples;
mod first_party;
mod gpu_oom;
mod gpus;
mod hardening;
mod hostile_inputs;
mod hostile_output;
mod http;
mod http_client;
mod input;
mod manifest;
mod manifest_hostile;
mod notify;
mod notify_daemon;
mod notify_digest;
mod notify_mail;
mod notify_wecom;
mod ordering;
mod plugin_config;
mod policies;
mod report;
mod report_html;
mod rerun_diff;
mod restart;
mod retention;
mod retention_hostile;
mod retry;
mod sandbox;
mod validators;
mod versions;
