//! The store's marks: the id naming this database and the highest task and
//! run ids it ever issued (table `store_meta`), and their copy outside the
//! database, `nightjar.db.ids` beside it. Ids come from the marks, never
//! from `MAX(id) + 1`, so `gc` removing the newest rows cannot make an id
//! mean a second thing; and a database that knows less than its copy (a
//! lost WAL, a deleted or replaced file) is noticed at start.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rusqlite::Transaction;

use super::{Result, Store, exec, row};

/// The marks of one database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
    /// A random id naming the database (hex).
    pub store_id: String,
    /// The highest task id ever issued.
    pub tasks: i64,
    /// The highest run id ever issued.
    pub runs: i64,
}

/// What an id is issued for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Issue {
    /// A task (or a sweep, a template, an instance).
    Task,
    /// A run.
    Run,
}

/// The largest id nightjar hands out (2^53: no lab gets near it, and every
/// JSON reader keeps it exact); a folder, lock or copy naming a larger one
/// is not believed.
pub const MAX_ID: i64 = 1 << 53;

/// The next id of `what`, recorded as issued in the same transaction.
pub(super) fn issue(tx: &Transaction, what: Issue) -> Result<i64> {
    let (read, write, noun) = match what {
        Issue::Task => (
            "SELECT MAX(tasks_issued, (SELECT COALESCE(MAX(id), 0) FROM tasks)) FROM store_meta",
            "UPDATE store_meta SET tasks_issued = ?1",
            "task",
        ),
        Issue::Run => (
            "SELECT MAX(runs_issued, (SELECT COALESCE(MAX(id), 0) FROM runs)) FROM store_meta",
            "UPDATE store_meta SET runs_issued = ?1",
            "run",
        ),
    };
    let last: i64 = row(tx, read, [], |r| r.get(0))?;
    let id = last.checked_add(1).filter(|id| *id <= MAX_ID).ok_or_else(|| {
        super::StoreError::Invalid(format!(
            "no {noun} id is left: ids up to {last} were handed out (the largest is {MAX_ID}); the store's marks are damaged: run `nightjar daemon check`"
        ))
    })?;
    exec(tx, write, [id])?;
    Ok(id)
}

impl Store {
    /// The database's marks.
    pub fn marks(&self) -> Result<Marks> {
        Ok(row(
            &self.conn,
            "SELECT store_id, tasks_issued, runs_issued FROM store_meta",
            [],
            |r| {
                Ok(Marks {
                    store_id: r.get(0)?,
                    tasks: r.get(1)?,
                    runs: r.get(2)?,
                })
            },
        )?)
    }

    /// Raises the issued marks to at least `tasks` and `runs` (recovery:
    /// ids the folders prove were handed out are never handed out again).
    pub fn raise_marks(&mut self, tasks: i64, runs: i64) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE store_meta SET tasks_issued = MAX(tasks_issued, ?1), runs_issued = MAX(runs_issued, ?2)",
            [tasks, runs],
        )?;
        Ok(())
    }

    /// A number that grows with every row the daemon's connection changed:
    /// a flush that began after it was read covers those changes.
    pub fn ticket(&self) -> u64 {
        self.conn.total_changes()
    }

    /// Whether the state dir's copy of the marks was written (so a missing
    /// copy is a finding, not a first start).
    pub fn copy_kept(&self) -> Result<bool> {
        Ok(
            row(&self.conn, "SELECT copy_kept FROM store_meta", [], |r| {
                r.get::<_, i64>(0)
            })? != 0,
        )
    }

    /// Notes that the copy was written.
    pub fn set_copy_kept(&mut self) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE store_meta SET copy_kept = 1 WHERE copy_kept = 0",
            [],
        )?;
        Ok(())
    }

    /// Which of the task ids in `from..=to` the database has no row for:
    /// at most `limit` of them, and how many in all.
    pub fn missing_tasks(&self, from: i64, to: i64, limit: usize) -> Result<(Vec<i64>, i64)> {
        if to < from {
            return Ok((Vec::new(), 0));
        }
        let present: i64 = row(
            &self.conn,
            "SELECT count(*) FROM tasks WHERE id BETWEEN ?1 AND ?2",
            [from, to],
            |r| r.get(0),
        )?;
        let total = (to - from + 1).saturating_sub(present);
        let mut ids = Vec::new();
        if total == 0 || to - from > 100_000 {
            // A long range is told as a range.
            return Ok((ids, total));
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM tasks WHERE id = ?1")?;
        let mut id = from;
        while id <= to && ids.len() < limit {
            if !stmt.exists([id])? {
                ids.push(id);
            }
            id += 1;
        }
        Ok((ids, total))
    }

    /// Whether the database has a row for run `id`.
    pub fn has_run(&self, id: i64) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")?
            .exists([id])?)
    }

    /// Whether the database holds nothing yet: no task, no run, no id issued.
    pub fn is_new(&self) -> Result<bool> {
        let m = self.marks()?;
        let any: i64 = row(
            &self.conn,
            "SELECT EXISTS (SELECT 1 FROM tasks) OR EXISTS (SELECT 1 FROM runs)",
            [],
            |r| r.get(0),
        )?;
        Ok(m.tasks == 0 && m.runs == 0 && any == 0)
    }
}

/// The copy of the marks in the state dir: one fixed-size line, rewritten
/// in place (`pwrite`), so a write is one system call and never leaves a
/// short file.
pub struct MarksFile {
    path: PathBuf,
    file: File,
    last: Option<Marks>,
}

/// The copy's path for the database at `db`.
pub fn marks_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".ids");
    db.with_file_name(name)
}

const HEAD: &str = "nightjar-ids 1";

impl MarksFile {
    /// Reads the copy at `path`; `Ok(None)` when there is none.
    pub fn read(path: &Path) -> std::io::Result<Option<Marks>> {
        let mut text = String::new();
        match File::open(path) {
            Ok(mut f) => f.read_to_string(&mut text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        parse(&text).map(Some).ok_or_else(|| {
            std::io::Error::other(format!(
                "{} is not a nightjar id file (it should read `{HEAD} STORE_ID TASKS RUNS`)",
                path.display()
            ))
        })
    }

    /// Opens (creating) the copy at `path` for writing.
    pub fn open(path: &Path) -> std::io::Result<MarksFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        Ok(MarksFile {
            path: path.to_path_buf(),
            file,
            last: None,
        })
    }

    /// Writes `m` when it differs from what was written last.
    pub fn write(&mut self, m: &Marks) -> std::io::Result<()> {
        if self.last.as_ref() == Some(m) {
            return Ok(());
        }
        let line = format!("{HEAD} {} {:020} {:020}\n", m.store_id, m.tasks, m.runs);
        self.file.write_all_at(line.as_bytes(), 0)?;
        self.file.set_len(line.len() as u64)?;
        self.last = Some(m.clone());
        Ok(())
    }

    /// Flushes the copy to disk.
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Where the copy is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn parse(text: &str) -> Option<Marks> {
    let rest = text.trim_end().strip_prefix(HEAD)?;
    let mut f = rest.split_whitespace();
    let store_id = f.next()?.to_string();
    let tasks = f.next()?.parse().ok()?;
    let runs = f.next()?.parse().ok()?;
    (f.next().is_none() && store_id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(Marks {
        store_id,
        tasks,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_reads_back_what_was_written_and_a_shorter_write_leaves_no_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = marks_path(&dir.path().join("nightjar.db"));
        assert!(path.ends_with("nightjar.db.ids"));
        assert_eq!(MarksFile::read(&path).unwrap(), None);
        let mut f = MarksFile::open(&path).unwrap();
        let m = Marks {
            store_id: "ab12".into(),
            tasks: 123_456,
            runs: 7,
        };
        f.write(&m).unwrap();
        assert_eq!(MarksFile::read(&path).unwrap(), Some(m.clone()));
        let n = Marks { tasks: 1, ..m };
        f.write(&n).unwrap();
        assert_eq!(MarksFile::read(&path).unwrap(), Some(n));
    }

    #[test]
    fn a_file_that_is_not_an_id_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.ids");
        std::fs::write(&path, "hello").unwrap();
        let e = MarksFile::read(&path).unwrap_err().to_string();
        assert!(e.contains("x.ids") && e.contains("nightjar-ids 1"), "{e}");
    }

    #[test]
    fn ids_are_not_reused_after_the_newest_rows_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("n.db")).unwrap();
        let tx = s.conn.transaction().unwrap();
        assert_eq!(issue(&tx, Issue::Task).unwrap(), 1);
        assert_eq!(issue(&tx, Issue::Task).unwrap(), 2);
        assert_eq!(issue(&tx, Issue::Run).unwrap(), 1);
        tx.commit().unwrap();
        // No row holds ids 1 and 2 (as after gc): the marks still do.
        let tx = s.conn.transaction().unwrap();
        assert_eq!(issue(&tx, Issue::Task).unwrap(), 3);
        tx.commit().unwrap();
        s.raise_marks(10, 20).unwrap();
        assert_eq!(s.marks().unwrap().tasks, 10);
        assert_eq!(s.marks().unwrap().runs, 20);
        s.raise_marks(1, 1).unwrap();
        assert_eq!(s.marks().unwrap().runs, 20, "marks never go down");
    }
}
