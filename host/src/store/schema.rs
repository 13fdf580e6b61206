//! Versioned migrations. Each entry moves the schema one version up; the
//! version lives in SQLite's `user_version`.

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE tasks (
    id             INTEGER PRIMARY KEY,
    kind           TEXT    NOT NULL CHECK (kind IN ('task', 'array', 'recurring')),
    parent_id      INTEGER REFERENCES tasks(id),
    name           TEXT    NOT NULL,
    project        TEXT    NOT NULL,
    priority       INTEGER NOT NULL,
    state          TEXT    NOT NULL,
    reason         TEXT,
    spec           TEXT    NOT NULL,
    schedule       TEXT,
    next_fire_at   INTEGER,
    submitted_at   INTEGER NOT NULL,
    eligible_at    INTEGER,
    not_before     INTEGER,
    attempts       INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    finished_at    INTEGER
);
CREATE INDEX tasks_queue  ON tasks (state, priority DESC, submitted_at, id);
CREATE INDEX tasks_parent ON tasks (parent_id);
-- What the scheduler's timer looks at, kept small so a pass never scans the queue.
CREATE INDEX tasks_backoff ON tasks (not_before) WHERE state = 'queued' AND not_before IS NOT NULL;
CREATE INDEX tasks_fire    ON tasks (next_fire_at) WHERE state = 'scheduled';

CREATE TABLE deps (
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    dep_id  INTEGER NOT NULL REFERENCES tasks(id),
    kind    TEXT    NOT NULL CHECK (kind IN ('after-ok', 'after-any')),
    PRIMARY KEY (task_id, dep_id)
);
CREATE INDEX deps_dep ON deps (dep_id);

CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    task_id        INTEGER NOT NULL REFERENCES tasks(id),
    attempt        INTEGER NOT NULL,
    state          TEXT    NOT NULL CHECK (state IN ('running', 'finished')),
    run_dir        TEXT    NOT NULL,
    supervisor_pid INTEGER,
    submitted_at   INTEGER NOT NULL,
    eligible_at    INTEGER NOT NULL,
    started_at     INTEGER NOT NULL,
    finished_at    INTEGER,
    exit_code      INTEGER,
    signal         INTEGER,
    class          TEXT,
    message        TEXT,
    gpus           TEXT,
    cpus           TEXT,
    sandbox_note   TEXT,
    UNIQUE (task_id, attempt)
);
CREATE INDEX runs_state ON runs (state);

CREATE TABLE events (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    task_id INTEGER,
    run_id  INTEGER,
    kind    TEXT    NOT NULL,
    message TEXT    NOT NULL
);
CREATE INDEX events_task ON events (task_id);
"#,
    r#"
-- GPU monitoring: the stalled mark, per-run GPU records and series.
ALTER TABLE runs ADD COLUMN stalled_at INTEGER;

CREATE TABLE run_gpus (
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    gpu           INTEGER NOT NULL,
    uuid          TEXT    NOT NULL,
    samples       INTEGER NOT NULL,
    mem_peak      INTEGER NOT NULL,
    util_mean     REAL    NOT NULL,
    util_max      INTEGER NOT NULL,
    temp_max      INTEGER NOT NULL,
    energy_j      REAL    NOT NULL,
    energy_source TEXT    NOT NULL,
    PRIMARY KEY (run_id, gpu)
);

CREATE TABLE run_gpu_series (
    run_id   INTEGER NOT NULL REFERENCES runs(id),
    at       INTEGER NOT NULL,
    gpu      INTEGER NOT NULL,
    util     INTEGER NOT NULL,
    mem      INTEGER NOT NULL,
    temp     INTEGER NOT NULL,
    power_mw INTEGER NOT NULL
);
CREATE INDEX run_gpu_series_run ON run_gpu_series (run_id, at);
"#,
    r#"
-- Each policy's current verdict on each waiting task; rows change only when a
-- verdict changes, so the table does not grow per pass.
CREATE TABLE policy_verdicts (
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    plugin  TEXT    NOT NULL,
    verdict TEXT    NOT NULL,
    reason  TEXT    NOT NULL,
    since   INTEGER NOT NULL,
    PRIMARY KEY (task_id, plugin)
);
"#,
    r#"
-- One word per thing: a parameter grid is a `sweep` (nightjar 0.1 said
-- `array`). The kind's CHECK changes, so the table is rebuilt (SQLite's
-- twelve steps: the runner turns foreign keys off around it and checks them
-- before the commit).
CREATE TABLE tasks_v4 (
    id             INTEGER PRIMARY KEY,
    kind           TEXT    NOT NULL CHECK (kind IN ('task', 'sweep', 'recurring')),
    parent_id      INTEGER REFERENCES tasks(id),
    name           TEXT    NOT NULL,
    project        TEXT    NOT NULL,
    priority       INTEGER NOT NULL,
    state          TEXT    NOT NULL,
    reason         TEXT,
    spec           TEXT    NOT NULL,
    schedule       TEXT,
    next_fire_at   INTEGER,
    submitted_at   INTEGER NOT NULL,
    eligible_at    INTEGER,
    not_before     INTEGER,
    attempts       INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    finished_at    INTEGER
);
INSERT INTO tasks_v4 (id, kind, parent_id, name, project, priority, state, reason, spec,
                      schedule, next_fire_at, submitted_at, eligible_at, not_before,
                      attempts, cancel_requested, finished_at)
SELECT id, CASE kind WHEN 'array' THEN 'sweep' ELSE kind END, parent_id, name, project,
       priority, CASE state WHEN 'array' THEN 'sweep' ELSE state END, reason, spec,
       schedule, next_fire_at, submitted_at, eligible_at, not_before,
       attempts, cancel_requested, finished_at
  FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_v4 RENAME TO tasks;
CREATE INDEX tasks_queue  ON tasks (state, priority DESC, submitted_at, id);
CREATE INDEX tasks_parent ON tasks (parent_id);
CREATE INDEX tasks_backoff ON tasks (not_before) WHERE state = 'queued' AND not_before IS NOT NULL;
CREATE INDEX tasks_fire    ON tasks (next_fire_at) WHERE state = 'scheduled';
"#,
    r#"
-- After a run (nightjar 0.3): what validators found in each run, the
-- checkpoint each attempt resumed from, and what a task waits for before its
-- next attempt when its last run ran out of GPU memory or disk.
ALTER TABLE runs ADD COLUMN findings TEXT;        -- JSON list of validator findings
ALTER TABLE runs ADD COLUMN checkpoint TEXT;      -- the checkpoint file the attempt resumed from
ALTER TABLE runs ADD COLUMN output TEXT;          -- the output folder the daemon gave the run
ALTER TABLE tasks ADD COLUMN needs_gpu_free INTEGER; -- bytes: start only on a GPU with more free memory
ALTER TABLE tasks ADD COLUMN held_for_disk TEXT;  -- JSON: held until these file systems have room
"#,
    r#"
-- Notifications (nightjar 0.3): the outbox, written in the transaction of the
-- state change it tells of; each notifier's place in it; what could not be
-- delivered.
CREATE TABLE outbox (
    id       INTEGER PRIMARY KEY,
    at       INTEGER NOT NULL,
    kind     TEXT    NOT NULL,
    severity TEXT    NOT NULL CHECK (severity IN ('info', 'warning', 'error')),
    task_id  INTEGER,
    run_id   INTEGER,
    project  TEXT,
    facts    TEXT    NOT NULL
);
CREATE TABLE notifiers (
    name       TEXT    PRIMARY KEY,
    cursor     INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER,
    last_error TEXT,
    delivered  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE dead_letters (
    id       INTEGER PRIMARY KEY,
    notifier TEXT    NOT NULL,
    event_id INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    reason   TEXT    NOT NULL,
    state    TEXT    NOT NULL DEFAULT 'dead' CHECK (state IN ('dead', 'requeued', 'delivered'))
);
CREATE INDEX dead_letters_state ON dead_letters (notifier, state);
"#,
    r#"
-- The digest (nightjar 0.3): each scheduled period told, so a restart that
-- catches up never tells one twice.
CREATE TABLE digests (
    period_end   INTEGER PRIMARY KEY,
    period_start INTEGER NOT NULL,
    at           INTEGER NOT NULL
);
"#,
    r#"
-- The runs that ended in a period (the digest's question), without reading
-- every run the lab ever had.
CREATE INDEX runs_finished ON runs (finished_at) WHERE state = 'finished';
"#,
    r#"
-- Reproducibility manifests (nightjar 0.3): what was asked at submit (JSON,
-- on the task, or once on a sweep or recurring template for all its
-- members), what each run ran at its start, and the input digest cache: a
-- file whose device, inode, size, mtime and ctime are unchanged keeps its
-- sha256 (`hits` counts the reads it saved; `used_at` lets gc forget it).
ALTER TABLE tasks ADD COLUMN manifest TEXT;
ALTER TABLE runs ADD COLUMN manifest TEXT;
CREATE TABLE input_digests (
    dev       INTEGER NOT NULL,
    ino       INTEGER NOT NULL,
    size      INTEGER NOT NULL,
    mtime_ns  INTEGER NOT NULL,
    ctime_ns  INTEGER NOT NULL,
    sha256    TEXT    NOT NULL,
    path      TEXT    NOT NULL,
    hashed_at INTEGER NOT NULL,
    used_at   INTEGER NOT NULL,
    hits      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (dev, ino, size, mtime_ns, ctime_ns)
) WITHOUT ROWID;
CREATE INDEX input_digests_used ON input_digests (used_at);
"#,
    r#"
-- Outputs and archives (nightjar 0.3): each run's output manifest (JSON:
-- path, size, sha256 of every file, hashed after validation), when
-- retention removed its local outputs and scratch, and one archive per
-- succeeded run of a project with an archive root: pending until it is
-- copied, flushed, read back and renamed to its final folder (`path`),
-- retried on a schedule after a failure (`failure` is its class).
ALTER TABLE runs ADD COLUMN outputs TEXT;
ALTER TABLE runs ADD COLUMN outputs_removed_at INTEGER;
CREATE INDEX runs_outputs_kept ON runs (finished_at)
    WHERE state = 'finished' AND outputs_removed_at IS NULL;
CREATE TABLE archives (
    run_id     INTEGER PRIMARY KEY REFERENCES runs(id),
    root       TEXT    NOT NULL,
    state      TEXT    NOT NULL CHECK (state IN ('pending', 'done')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    path       TEXT,
    failure    TEXT,
    error      TEXT,
    created_at INTEGER NOT NULL,
    done_at    INTEGER
);
CREATE INDEX archives_due ON archives (next_at) WHERE state = 'pending';
"#,
    r#"
-- Energy and cost (nightjar 0.4): each run's energy in joules, how it was
-- measured (counter, integrated, rapl, estimate), and its cost in the
-- tariff's currency, priced piecewise by the price in force at each sample.
ALTER TABLE runs ADD COLUMN energy_j REAL;
ALTER TABLE runs ADD COLUMN energy_source TEXT;
ALTER TABLE runs ADD COLUMN cost REAL;
ALTER TABLE runs ADD COLUMN currency TEXT;
"#,
    r#"
-- Reports (nightjar 0.4): a period's ended runs with every column a report
-- sums, read from the index alone (a run's row holds its manifests, several
-- KB before its energy and cost), and the GPU series by time, so a week's
-- report reads a week of samples whatever the retention keeps.
CREATE INDEX runs_report ON runs (finished_at, task_id, attempt, eligible_at, started_at,
                                  class, gpus, energy_j, energy_source, cost, currency)
    WHERE state = 'finished';
CREATE INDEX run_gpu_series_at ON run_gpu_series (at, gpu, util);
"#,
    r#"
-- Many users (nightjar 0.5): each task's owner, from the submitter's socket
-- credentials (NULL: a task from before, the daemon's own user's); the
-- HTTP API's tokens, stored as their SHA-256 only; and the audit log of
-- administrative actions, which no statement may change or delete.
ALTER TABLE tasks ADD COLUMN owner_uid INTEGER;
ALTER TABLE tasks ADD COLUMN owner TEXT;
CREATE INDEX tasks_owner_state ON tasks (owner_uid, state);
CREATE TABLE tokens (
    id         INTEGER PRIMARY KEY,
    uid        INTEGER NOT NULL,
    user       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    hash       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    used_at    INTEGER,
    revoked_at INTEGER
);
CREATE TABLE audit (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    uid     INTEGER NOT NULL,
    user    TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    task_id INTEGER,
    detail  TEXT    NOT NULL
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"#,
    r#"
-- Seeds and the result cache (nightjar 0.6): the NIGHTJAR_SEED each run
-- got; the cache key of a run of a task that opted in (a clean git tree
-- and every input hashed, else NULL); the run a cached completion came
-- from; a task's "run for real" flag (`--no-cache`); and the runtime
-- estimates' lookup of a name's earlier runs (backfill).
ALTER TABLE runs ADD COLUMN seed INTEGER;
ALTER TABLE runs ADD COLUMN cache_key TEXT;
ALTER TABLE runs ADD COLUMN cached_from INTEGER;
ALTER TABLE tasks ADD COLUMN cache_bypass INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_cache ON runs (cache_key, finished_at)
    WHERE cache_key IS NOT NULL AND class = 'ok';
CREATE INDEX tasks_name_project ON tasks (name, project);
"#,
    r#"
-- The store's own marks (nightjar 0.7): a random id naming this database
-- (the state dir keeps a copy in `nightjar.db.ids`, so a replaced or
-- recreated file is noticed at start), and the highest task and run ids
-- ever issued: ids are never handed out twice, even after `gc` removed
-- the newest rows.
CREATE TABLE store_meta (
    store_id     TEXT    NOT NULL,
    tasks_issued INTEGER NOT NULL,
    runs_issued  INTEGER NOT NULL,
    copy_kept    INTEGER NOT NULL DEFAULT 0  -- 1 once the copy was written: a missing copy is then noticed
);
INSERT INTO store_meta (store_id, tasks_issued, runs_issued)
    VALUES (lower(hex(randomblob(16))),
            (SELECT COALESCE(MAX(id), 0) FROM tasks),
            (SELECT COALESCE(MAX(id), 0) FROM runs));
"#,
    r#"
-- A hold kept through a block (nightjar 0.8): a held task whose after-ok
-- dependency failed is blocked, and once the dependency is retried it is
-- held again, not queued (it ran without being released before).
ALTER TABLE tasks ADD COLUMN held_when_blocked INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
-- The queue read from its index alone (nightjar 0.9): every column the
-- scheduler reads of a waiting task at each pass (`store/candidates.rs`),
-- the spec's length in bytes included, so a pass over 10,000 waiting tasks
-- reads about 0.6 MB of index pages and not the 10 MB of their rows.
DROP INDEX tasks_queue;
CREATE INDEX tasks_queue ON tasks (state, priority DESC, submitted_at, id,
    kind, not_before, attempts, needs_gpu_free, length(CAST(spec AS BLOB)));
"#,
];
