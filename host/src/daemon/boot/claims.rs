//! Which of the run folders `nightjar daemon recover` found may recreate
//! a task the database lost, when several claim the same one.
//!
//! A folder the daemon's user owns was written by the daemon and its
//! supervisor only; a folder handed to a task's owner (SLURM with
//! `job_user = "owner"`) holds a manifest that owner could rewrite, naming
//! any task id as theirs (`mend.rs` already refuses one that names another
//! owner than the folder's). Two users' folders can therefore both claim a
//! lost task, each for themselves: whichever was read first would recreate
//! it, and the real owner's runs would be refused as another owner's.
//!
//! The rule: the daemon's own folders decide a lost task's owner where any
//! claims it (and a handed-over folder claiming it for another user is
//! refused); where only handed-over folders claim it, they must agree, or
//! none is put back and the task is reported lost. A task the database
//! still has is not decided here: its row names the owner.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One run folder's claim on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The run folder's id.
    pub run: i64,
    /// The task its manifest names.
    pub task: i64,
    /// The owner its manifest gives the task (`None`: the daemon's user).
    pub owner: Option<u32>,
    /// Whether the folder is the daemon's user's (not handed over).
    pub daemons: bool,
}

/// The claims to refuse, by run, with why: of the `claims` on tasks the
/// database does not have (`known` says which it has).
pub fn refused(claims: &[Claim], known: &dyn Fn(i64) -> bool) -> HashMap<i64, String> {
    let mut by_task: BTreeMap<i64, Vec<&Claim>> = BTreeMap::new();
    for c in claims.iter().filter(|c| !known(c.task)) {
        by_task.entry(c.task).or_default().push(c);
    }
    let mut refused = HashMap::new();
    for (task, claims) in by_task {
        let owners = |daemons: bool| -> BTreeSet<Option<u32>> {
            (claims.iter())
                .filter(|c| c.daemons == daemons)
                .map(|c| c.owner)
                .collect()
        };
        let (ours, handed) = (owners(true), owners(false));
        let decided = match ours.len() {
            1 => ours.first().copied(),
            0 if handed.len() <= 1 => continue,
            _ => None,
        };
        for c in &claims {
            let why = match decided {
                Some(owner) if c.owner == owner => continue,
                Some(owner) => format!(
                    "it claims lost task {task} for {}, while the daemon's own run folder of it names {}",
                    who(c.owner),
                    who(owner)
                ),
                None => format!(
                    "run folders of different owners claim lost task {task} ({}), and the database that knew its owner lost it: none is put back",
                    listed(&claims)
                ),
            };
            refused.insert(c.run, why);
        }
    }
    refused
}

/// A task's owner, for a message.
fn who(owner: Option<u32>) -> String {
    owner.map_or_else(|| "the daemon's user".to_string(), |u| format!("uid {u}"))
}

/// Each claim's folder and owner, for a message.
fn listed(claims: &[&Claim]) -> String {
    let each: Vec<String> = (claims.iter())
        .map(|c| format!("run {} for {}", c.run, who(c.owner)))
        .collect();
    each.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(run: i64, task: i64, owner: u32, daemons: bool) -> Claim {
        Claim {
            run,
            task,
            owner: Some(owner),
            daemons,
        }
    }

    #[test]
    fn handed_over_folders_that_disagree_on_a_lost_tasks_owner_put_none_back() {
        // Alice (1001) forged run 3's manifest to claim Bob's (1002) lost
        // task 7; Bob's own run 5 of it claims it too. Neither can be told
        // from the other without the database.
        let claims = [claim(3, 7, 1001, false), claim(5, 7, 1002, false)];
        let refused = refused(&claims, &|_| false);
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[&3].contains("different owners claim lost task 7"));
        assert!(refused[&5].contains("run 3 for uid 1001, run 5 for uid 1002"));
    }

    #[test]
    fn the_daemons_own_folder_decides_a_lost_tasks_owner() {
        let claims = [
            claim(3, 7, 1001, false),
            claim(4, 7, 1002, true),
            claim(5, 7, 1002, false),
        ];
        let refused = refused(&claims, &|_| false);
        assert_eq!(refused.keys().copied().collect::<Vec<_>>(), vec![3]);
        assert!(refused[&3].contains("names uid 1002"), "{refused:?}");
    }

    #[test]
    fn claims_that_agree_or_tasks_the_database_has_are_left_to_adoption() {
        let agree = [claim(3, 7, 1001, false), claim(5, 7, 1001, false)];
        assert!(refused(&agree, &|_| false).is_empty());
        let one = [claim(3, 8, 1001, false)];
        assert!(refused(&one, &|_| false).is_empty());
        // Known: the database's row names the owner (`adopt_run` checks).
        let disagree = [claim(3, 7, 1001, false), claim(5, 7, 1002, false)];
        assert!(refused(&disagree, &|t| t == 7).is_empty());
    }
}
