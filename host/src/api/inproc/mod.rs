//! The in-process tier: behaviour tests against a daemon in this process,
//! through the typed [`Api::call`] every front end uses, on a simulated
//! clock with an executor that records what it is handed
//! (`daemon/testkit.rs`). A test submits, makes passes, moves the clock
//! and ends runs as it likes; no process starts, no test sleeps for a
//! fixed time, and what it checks is the reply a client would get. (A
//! plugin that loops still runs out its real `evaluate_timeout`, and the
//! notification lanes deliver on real time.) Tests whose point is a real
//! process (kill -9, the sandbox, the CLI's output, containers, users,
//! the browser) stay in the end-to-end tier (`tests/e2e/`).
//!
//! One file per behaviour: `quotas.rs`, `ordering.rs`, ...

use crate::access::Caller;
use crate::api::handlers::Handler;
use crate::api::wire::{TaskDetail, TaskState};
use crate::api::{Api, ApiError, Show, Submit};
use crate::daemon::testkit::{Fixture, Handed};
use crate::store::RunClass;
use crate::task::file::{Format, parse};
use crate::task::resolve::resolve;

mod access;
mod backfill;
mod cancel;
mod disk_holds;
mod forecast;
mod forecast_edges;
mod forecast_hostile;
mod history;
mod notify;
mod ordering;
mod policies;
mod preempt;
mod quotas;
mod report;
mod reserve;
mod retention;

/// A test plugin's wasm file, built by `host/build.rs`.
pub(crate) const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// One daemon in this process, and who calls it.
pub(crate) struct World {
    /// The daemon, its clock and its executor.
    pub(crate) fx: Fixture,
    api: Api,
    /// The daemon's own user (an administrator), who calls by default.
    pub(crate) me: Caller,
}

impl World {
    /// A daemon whose config holds `extra`.
    pub(crate) fn new(extra: &str) -> World {
        World::with_plugins(&[], extra)
    }

    /// A daemon whose plugin folder holds each `(name, wasm file)` and
    /// whose config holds `extra`.
    pub(crate) fn with_plugins(plugins: &[(&str, &str)], extra: &str) -> World {
        let fx = Fixture::plugins_then(plugins, extra);
        let api = Api::new(std::sync::Arc::clone(&fx.daemon));
        let uid = crate::users::euid();
        let me = Caller {
            uid,
            name: crate::users::name_of(uid),
            admin: true,
        };
        World { fx, api, me }
    }

    /// `req`'s reply to the daemon's user.
    pub(crate) fn call<C: Handler>(&self, req: C) -> Result<C::Reply, ApiError> {
        self.call_as(&self.me.clone(), req)
    }

    /// `req`'s reply to `caller`.
    pub(crate) fn call_as<C: Handler>(
        &self,
        caller: &Caller,
        req: C,
    ) -> Result<C::Reply, ApiError> {
        self.fx.rt().block_on(self.api.call(caller, req))
    }

    /// Submits a task file (TOML, relative paths from the world's folder)
    /// as `caller`: the ids, or the daemon's refusal.
    pub(crate) fn try_submit_as(&self, caller: &Caller, toml: &str) -> Result<Vec<i64>, ApiError> {
        let defs = parse(toml, Format::Toml).expect("the test's task file parses");
        let entries = resolve(&defs, self.fx.dir(), "t").expect("the test's task file resolves");
        self.call_as(
            caller,
            Submit {
                entries,
                verify: false,
            },
        )
    }

    /// Submits a task file as the daemon's user; its ids.
    pub(crate) fn submit(&self, toml: &str) -> Vec<i64> {
        self.try_submit_as(&self.me.clone(), toml)
            .unwrap_or_else(|e| panic!("submit refused: {e}"))
    }

    /// Submits one task `name` running `command` (words) with the task
    /// file's `more` lines; its id.
    pub(crate) fn task(&self, name: &str, command: &[&str], more: &str) -> i64 {
        let toml = format!("[[task]]\nname = \"{name}\"\ncommand = {command:?}\n{more}\n");
        self.submit(&toml)[0]
    }

    /// `show ID`.
    pub(crate) fn show(&self, id: i64) -> TaskDetail {
        self.call(Show { id })
            .unwrap_or_else(|e| panic!("show {id}: {e}"))
    }

    /// A task's state.
    pub(crate) fn state(&self, id: i64) -> TaskState {
        self.show(id).task.state
    }

    /// How many tasks are running.
    pub(crate) fn running(&self) -> usize {
        self.call(crate::api::TaskList::default())
            .expect("ls")
            .iter()
            .filter(|t| t.state == TaskState::Running)
            .count()
    }

    /// A task's reason, or "".
    pub(crate) fn reason(&self, id: i64) -> String {
        self.show(id).task.reason.unwrap_or_default()
    }

    /// One scheduling pass with the chain asked afresh (the scheduler
    /// reuses a ranking for up to 2 s; `fx.pass()` makes a pass that may).
    pub(crate) fn pass(&self) {
        self.fx.fresh_pass();
    }

    /// Moves the clock on by `ms`.
    pub(crate) fn advance(&self, ms: i64) {
        self.fx.clock.advance(ms);
    }

    /// Every launch so far.
    pub(crate) fn handed(&self) -> Handed {
        self.fx.handed()
    }

    /// The run of a task's newest attempt (it must have one).
    pub(crate) fn run(&self, id: i64) -> i64 {
        let t = self.show(id);
        t.runs
            .last()
            .unwrap_or_else(|| panic!("task {id} has no run: {:?}", t.task))
            .id
    }

    /// Removes run `run`'s session from the store behind the daemon's back
    /// (as a store busy past its timeout refuses the note): the daemon
    /// knows it in memory only.
    pub(crate) fn forget_session_note(&self, run: i64) {
        rusqlite::Connection::open(self.fx.daemon.cfg.db_path())
            .expect("a second connection to the store")
            .execute("UPDATE runs SET supervisor_pid = NULL WHERE id = ?1", [run])
            .expect("forget the session's note");
    }

    /// Ends a task's running run now, as `class` with exit `code`.
    pub(crate) fn end(&self, id: i64, class: RunClass, code: i32) {
        let run = self.run(id);
        assert!(
            self.fx.end(run, class, code),
            "the end of run {run} is recorded"
        );
    }
}
