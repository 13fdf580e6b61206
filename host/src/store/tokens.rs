//! API tokens (schema 13's `tokens` table): their SHA-256 only, who they
//! belong to, when they were last used (to the minute) and revoked; and
//! the queue's counts by state, which the HTTP API's event stream sends.

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, StoreError};
use nightjar_core::api::tokens::TokenRow;

/// `used_at` is written at most this often per token (ms).
pub const USED_EVERY_MS: i64 = 60_000;

/// A live token found by its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenOwner {
    /// The token's id.
    pub id: i64,
    /// Its owner's uid.
    pub uid: u32,
}

impl Store {
    /// Stores a new token's hash; returns its id.
    pub fn token_create(
        &mut self,
        uid: u32,
        user: &str,
        name: &str,
        hash: &str,
        now: i64,
    ) -> Result<i64> {
        self.conn
            .prepare_cached(
                "INSERT INTO tokens (uid, user, name, hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![uid, user, name, hash, now])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The tokens of `uid` (none: everyone's), oldest first, without hashes.
    pub fn token_list(&self, uid: Option<u32>) -> Result<Vec<TokenRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, uid, user, name, created_at, used_at, revoked_at FROM tokens
             WHERE ?1 IS NULL OR uid = ?1 ORDER BY id",
        )?;
        let rows = stmt
            .query_map(params![uid], |r| {
                Ok(TokenRow {
                    id: r.get(0)?,
                    uid: r.get(1)?,
                    user: r.get(2)?,
                    name: r.get(3)?,
                    created_at: r.get(4)?,
                    used_at: r.get(5)?,
                    revoked_at: r.get(6)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The owner's uid of token `id` and whether it is already revoked.
    pub fn token_owner(&self, id: i64) -> Result<(u32, bool)> {
        self.conn
            .prepare_cached("SELECT uid, revoked_at IS NOT NULL FROM tokens WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| {
                StoreError::NotFound(format!(
                    "no token with id {id}; `nightjar token ls` lists yours"
                ))
            })
    }

    /// Revokes token `id` (a revoked one stays revoked at its first time).
    pub fn token_revoke(&mut self, id: i64, now: i64) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            )?
            .execute(params![id, now])?;
        Ok(())
    }

    /// The live (not revoked) token with this hash, marking it used at
    /// `now` when its last mark is a minute old or more.
    pub fn token_use(&mut self, hash: &str, now: i64) -> Result<Option<TokenOwner>> {
        let found: Option<(i64, u32, Option<i64>)> = self
            .conn
            .prepare_cached(
                "SELECT id, uid, used_at FROM tokens WHERE hash = ?1 AND revoked_at IS NULL",
            )?
            .query_row([hash], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let Some((id, uid, used_at)) = found else {
            return Ok(None);
        };
        // `used_at` is bookkeeping: a database that cannot take the write
        // now (locked by another process, a full disk) does not refuse a
        // valid token; the next use writes it.
        if used_at.is_none_or(|t| now - t >= USED_EVERY_MS)
            && let Err(e) = self
                .conn
                .prepare_cached("UPDATE tokens SET used_at = ?2 WHERE id = ?1")
                .and_then(|mut s| s.execute(params![id, now]))
        {
            tracing::warn!("token {id}: its last use is not recorded now: {e}");
        }
        Ok(Some(TokenOwner { id, uid }))
    }

    /// Whether the token with this hash exists and is not revoked (no
    /// `used_at` update: streams ask this while they run).
    pub fn token_live(&self, hash: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM tokens WHERE hash = ?1 AND revoked_at IS NULL")?
            .query_row([hash], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// How many top-level tasks are in each state.
    pub fn state_counts(&self) -> Result<Vec<(String, i64)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT state, COUNT(*) FROM tasks WHERE parent_id IS NULL GROUP BY state ORDER BY state",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_found_by_its_hash_until_revoked_and_marked_used_once_a_minute() {
        let (_dir, mut s) = super::super::tests::store();
        let id = s.token_create(1001, "alice", "laptop", "h1", 10).unwrap();
        assert!(
            s.token_create(1002, "bob", "x", "h1", 11).is_err(),
            "hashes are unique"
        );
        let b = s.token_create(1002, "bob", "x", "h2", 12).unwrap();
        assert_eq!(
            s.token_use("h1", 1000).unwrap(),
            Some(TokenOwner { id, uid: 1001 })
        );
        s.token_use("h1", 1000 + USED_EVERY_MS - 1).unwrap();
        assert_eq!(s.token_list(Some(1001)).unwrap()[0].used_at, Some(1000));
        s.token_use("h1", 1000 + USED_EVERY_MS).unwrap();
        assert_eq!(
            s.token_list(Some(1001)).unwrap()[0].used_at,
            Some(1000 + USED_EVERY_MS)
        );
        assert_eq!(s.token_list(None).unwrap().len(), 2);
        assert_eq!(s.token_owner(b).unwrap(), (1002, false));
        s.token_revoke(b, 50).unwrap();
        s.token_revoke(b, 60).unwrap();
        assert_eq!(s.token_owner(b).unwrap(), (1002, true));
        assert_eq!(s.token_list(Some(1002)).unwrap()[0].revoked_at, Some(50));
        assert_eq!(s.token_use("h2", 70).unwrap(), None);
        assert_eq!(s.token_use("nope", 70).unwrap(), None);
        assert!(matches!(s.token_owner(99), Err(StoreError::NotFound(_))));
    }
}
