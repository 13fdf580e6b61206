//! Whether the database file is sound: SQLite's own checks (`quick_check`
//! at every daemon start, the full `integrity_check` on request), and a
//! scan of the columns a corrupt page turns into something no reader can
//! convert (text that is not UTF-8, a state no version wrote).

use super::{Result, Store};

/// How thoroughly to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// `PRAGMA quick_check`: every page and row, not the indexes' contents.
    Quick,
    /// `PRAGMA integrity_check`: everything, indexes included.
    Full,
}

/// The text columns every reader converts, per table.
const TEXT_COLUMNS: &[(&str, &[&str])] = &[
    (
        "tasks",
        &[
            "kind", "name", "project", "state", "spec", "reason", "owner",
        ],
    ),
    (
        "runs",
        &["state", "run_dir", "class", "message", "gpus", "cpus"],
    ),
    ("events", &["kind", "message"]),
];

impl Store {
    /// SQLite's own check of the file, then the rows readers convert; each
    /// problem as one line naming the table and row. Empty: sound.
    pub fn check(&self, depth: Depth) -> Result<Vec<String>> {
        let pragma = match depth {
            Depth::Quick => "PRAGMA quick_check(20)",
            Depth::Full => "PRAGMA integrity_check(20)",
        };
        let mut stmt = self.conn.prepare(pragma)?;
        let mut problems: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .filter(|l| l != "ok")
            .collect();
        if problems.is_empty() {
            problems.extend(self.unreadable_rows(depth)?);
        }
        Ok(problems)
    }

    /// Rows whose text columns are not UTF-8 (what `ls` would fail on).
    fn unreadable_rows(&self, depth: Depth) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (table, cols) in TEXT_COLUMNS {
            // The event log can be long; a quick check reads the queue's tables.
            if depth == Depth::Quick && *table == "events" {
                continue;
            }
            // One pass over the table, every text column read as bytes.
            let blobs: Vec<String> = cols.iter().map(|c| format!("CAST({c} AS BLOB)")).collect();
            let sql = format!("SELECT id, {} FROM {table}", blobs.join(", "));
            let mut stmt = self.conn.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                for (i, col) in cols.iter().enumerate() {
                    let bytes: Option<Vec<u8>> = r.get(i + 1)?;
                    if bytes.is_some_and(|b| std::str::from_utf8(&b).is_err()) {
                        let id: i64 = r.get(0)?;
                        out.push(format!(
                            "table {table}, row id {id}: column {col} is not UTF-8 text"
                        ));
                        if out.len() >= 20 {
                            return Ok(out);
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}
