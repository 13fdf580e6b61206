//! Manifests in the database: the submit manifest on its task (or once on
//! a sweep or recurring template), each run's start manifest, and the input
//! hash cache.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, exec, row};
use crate::manifest::Key;
use nightjar_core::api::manifest::{Manifest, Manifests};

impl Store {
    /// The cached hashes of `keys`, each hit counted (one transaction).
    pub fn lookup_hashes(&mut self, keys: &[Key], now: i64) -> Result<HashMap<Key, String>> {
        let tx = self.conn.transaction()?;
        let mut found = HashMap::new();
        {
            let mut get = tx.prepare_cached(
                "SELECT sha256 FROM input_digests
                 WHERE dev = ?1 AND ino = ?2 AND size = ?3 AND mtime_ns = ?4 AND ctime_ns = ?5",
            )?;
            let mut hit = tx.prepare_cached(
                "UPDATE input_digests SET hits = hits + 1, used_at = ?6
                 WHERE dev = ?1 AND ino = ?2 AND size = ?3 AND mtime_ns = ?4 AND ctime_ns = ?5",
            )?;
            for k in keys {
                let p = key_params(k);
                let sha: Option<String> = get
                    .query_row(params![p.0, p.1, p.2, p.3, p.4], |r| r.get(0))
                    .optional()?;
                if let Some(sha) = sha {
                    hit.execute(params![p.0, p.1, p.2, p.3, p.4, now])?;
                    found.insert(*k, sha);
                }
            }
        }
        tx.commit()?;
        Ok(found)
    }

    /// Remembers fresh hashes: (key, sha256, path read).
    pub fn remember_hashes(&mut self, fresh: &[(Key, String, String)], now: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO input_digests
                   (dev, ino, size, mtime_ns, ctime_ns, sha256, path, hashed_at, used_at, hits)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, 0)",
            )?;
            for (k, sha, path) in fresh {
                let p = key_params(k);
                put.execute(params![p.0, p.1, p.2, p.3, p.4, sha, path, now])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// How often the cached hash of the file at `path` saved a read
    /// (the newest entry for that path; `None`: never cached).
    pub fn hash_hits(&self, path: &str) -> Result<Option<i64>> {
        Ok(row(
            &self.conn,
            "SELECT hits FROM input_digests WHERE path = ?1 ORDER BY hashed_at DESC LIMIT 1",
            [path],
            |r| r.get(0),
        )
        .optional()?)
    }

    /// Stores run `run`'s start manifest.
    pub fn set_run_manifest(&self, run: i64, manifest: &Manifest) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET manifest = ?1, seed = ?2 WHERE id = ?3",
            params![
                serde_json::to_string(manifest)?,
                manifest.seed.map(|s| s as i64),
                run
            ],
        )?;
        Ok(())
    }

    /// The submit manifest that holds for `task`: its own, else the one
    /// its sweep or recurring template was submitted with. Its `task` is
    /// `task`; spec, command and env are filled in by the caller.
    pub fn submit_manifest(&self, task: i64) -> Result<Option<Manifest>> {
        let text: Option<String> = row(
            &self.conn,
            "SELECT COALESCE(t.manifest, p.manifest) FROM tasks t
             LEFT JOIN tasks p ON p.id = t.parent_id WHERE t.id = ?1",
            [task],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
        let Some(text) = text else { return Ok(None) };
        let mut m: Manifest = serde_json::from_str(&text)?;
        m.task = Some(task);
        Ok(Some(m))
    }

    /// Whether `task` is an instance of a recurring template (its submit
    /// manifest is the template's, from when the schedule was submitted).
    pub fn is_recurring_instance(&self, task: i64) -> Result<bool> {
        let kind: Option<String> = row(
            &self.conn,
            "SELECT p.kind FROM tasks t JOIN tasks p ON p.id = t.parent_id WHERE t.id = ?1",
            [task],
            |r| r.get(0),
        )
        .optional()?;
        Ok(kind.as_deref() == Some("recurring"))
    }

    /// Run `run`'s start manifest (`None`: it has none, having started
    /// before nightjar recorded manifests).
    pub fn run_manifest(&self, run: i64) -> Result<Option<Manifest>> {
        let text: Option<String> = row(
            &self.conn,
            "SELECT manifest FROM runs WHERE id = ?1",
            [run],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
        Ok(text.map(|t| serde_json::from_str(&t)).transpose()?)
    }

    /// The latest run of `task` that has a start manifest.
    pub fn latest_run_with_manifest(&self, task: i64) -> Result<Option<i64>> {
        Ok(row(
            &self.conn,
            "SELECT id FROM runs WHERE task_id = ?1 AND manifest IS NOT NULL
             ORDER BY attempt DESC LIMIT 1",
            [task],
            |r| r.get(0),
        )
        .optional()?)
    }

    /// The manifests of `task`: at submit, and of each run (oldest first).
    pub fn manifests(&self, task: i64) -> Result<Manifests> {
        let submit = self.submit_manifest(task)?;
        let texts = self
            .conn
            .prepare_cached(
                "SELECT manifest FROM runs WHERE task_id = ?1 AND manifest IS NOT NULL ORDER BY attempt",
            )?
            .query_map([task], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let runs = texts
            .iter()
            .map(|t| serde_json::from_str(t))
            .collect::<std::result::Result<_, _>>()?;
        Ok(Manifests { submit, runs })
    }
}

/// A key as SQLite integers (device and inode numbers above 2^63 wrap; they
/// are compared, never computed with).
fn key_params(k: &Key) -> (i64, i64, i64, i64, i64) {
    (
        k.dev as i64,
        k.ino as i64,
        k.size as i64,
        k.mtime_ns,
        k.ctime_ns,
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::store;
    use super::*;
    use crate::task::file::{Format, parse};
    use crate::task::resolve::resolve;
    use nightjar_core::api::manifest::Phase;

    fn key(ino: u64) -> Key {
        Key {
            dev: u64::MAX,
            ino,
            size: 3,
            mtime_ns: 1,
            ctime_ns: 2,
        }
    }

    #[test]
    fn a_cached_hash_is_found_by_its_whole_key_and_its_hits_counted() {
        let (_dir, mut s) = store();
        assert!(s.lookup_hashes(&[key(1)], 5).unwrap().is_empty());
        s.remember_hashes(&[(key(1), "ab".into(), "/d/a".into())], 5)
            .unwrap();
        assert_eq!(s.hash_hits("/d/a").unwrap(), Some(0));
        let found = s.lookup_hashes(&[key(1), key(2)], 6).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[&key(1)], "ab");
        let moved = Key {
            mtime_ns: 9,
            ..key(1)
        };
        assert!(s.lookup_hashes(&[moved], 7).unwrap().is_empty());
        assert_eq!(s.hash_hits("/d/a").unwrap(), Some(1));
    }

    #[test]
    fn sweep_members_read_their_sweeps_submit_manifest_and_runs_their_own() {
        let (dir, mut s) = store();
        let entries = resolve(
            &parse(
                "command = \"echo ${x}\"\n[sweep]\nx = [1, 2]\n",
                Format::Toml,
            )
            .unwrap(),
            &std::env::temp_dir(),
            "t",
        )
        .unwrap();
        let m = Manifest::new(Phase::Submit, 1_000, "/w".into());
        let ids = s
            .submit_with_manifests(&entries, &[Some(m)], 1_000, |_| None)
            .unwrap();
        let members = s.show(ids[0]).unwrap().members;
        let got = s.submit_manifest(members[1].id).unwrap().unwrap();
        assert_eq!(
            (got.task, got.workdir.to_str()),
            (Some(members[1].id), Some("/w"))
        );
        let run = s
            .claim(members[1].id, &Default::default(), dir.path(), 2_000)
            .unwrap()
            .unwrap();
        let mut start = Manifest::new(Phase::Start, 2_000, "/w".into());
        start.run = Some(run.id);
        s.set_run_manifest(run.id, &start).unwrap();
        let shown = s.show(members[1].id).unwrap().manifests;
        assert_eq!(shown.runs[0].run, Some(run.id));
        let submit = shown.submit.unwrap();
        assert_eq!(submit.command, ["/bin/sh", "-c", "echo 2"], "its own spec");
        assert!(!s.is_recurring_instance(members[1].id).unwrap());
    }
}
