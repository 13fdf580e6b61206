//! What a task does after one of its runs ended: the retry rules by failure
//! class. Pure (the store applies the answer in the run's end transaction).
//!
//! - `ok` succeeds the task; a cancel ends it cancelled.
//! - A run stopped by a policy is queued again at once; the attempt is not
//!   counted.
//! - `disk-full` holds the task until its file systems have room again
//!   (`[classes] disk_free`), also without counting the attempt: a retry
//!   would fail the same way, and waiting is not the task's fault. Only
//!   [`MAX_DISK_FULL_RUNS`] in a row, though: a task that fills a disk the
//!   watch does not see (`/tmp`), or only says it did, would run for ever.
//! - A class listed in the task's `retry.on` is tried again after the
//!   backoff while attempts are left; `gpu-oom` then waits for a GPU with
//!   more free memory than the run's peak, when the peak is known.
//! - Anything else fails the task, saying why it was not retried.

use std::path::PathBuf;

use crate::store::RunClass;
use crate::task::model::RetryPolicy;

/// The disk-full run, counted in a row, that no longer holds its task: it
/// is then retried only if `retry.on` lists `disk-full` (using attempts).
pub const MAX_DISK_FULL_RUNS: u32 = 3;

/// How a run's end was asked for, beyond its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Nobody asked: the run ended on its own (or by its timeout).
    None,
    /// A user cancelled it.
    Cancel,
    /// A policy preempted it.
    Preempt,
}

/// What is known of the run that ended.
#[derive(Debug, Clone)]
pub struct Ended<'a> {
    /// The task's id (for the words of a reason).
    pub task: i64,
    /// Its class (after validation).
    pub class: RunClass,
    /// Whether its stop was asked for.
    pub stop: Stop,
    /// Attempts of this round so far, this run included.
    pub attempts: u32,
    /// The task's retry settings.
    pub retry: &'a RetryPolicy,
    /// The highest GPU memory the run used on any of its GPUs, when monitored.
    pub gpu_peak: Option<u64>,
    /// The file systems a disk-full run writes to (workdir, output folder).
    pub disks: &'a [PathBuf],
    /// The free space a held disk-full task waits for.
    pub disk_free: u64,
    /// The task's disk-full runs in a row, this one included.
    pub disk_full_runs: u32,
}

/// File systems a task waits on, and how much room it waits for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiskWait {
    /// Paths on the file systems (any path of each; statvfs asks by path).
    pub paths: Vec<PathBuf>,
    /// Bytes that must be free on every one of them.
    pub free: u64,
}

/// The task's next state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The run succeeded: so does the task.
    Succeeded,
    /// Cancelled by a user.
    Cancelled,
    /// Stopped by a policy: queued again at once, the attempt not counted.
    Requeued,
    /// Tried again after `delay_ms` (attempt `attempt` of `of`); after a
    /// gpu-oom with a known peak, only on a GPU with more free memory.
    Retry {
        /// Backoff before the next attempt.
        delay_ms: i64,
        /// The next attempt's number.
        attempt: u32,
        /// Attempts in all.
        of: u32,
        /// Bytes of free GPU memory the next attempt waits for (more than).
        needs_gpu_free: Option<u64>,
    },
    /// Held until the disks have room; the attempt not counted.
    HoldForDisk(DiskWait),
    /// The task failed; the words say why it was not tried again.
    Failed(String),
}

/// The rules above, applied.
pub fn next(e: &Ended<'_>) -> Next {
    if e.class == RunClass::Ok {
        return Next::Succeeded;
    }
    match e.stop {
        Stop::Cancel => return Next::Cancelled,
        Stop::Preempt => return Next::Requeued,
        Stop::None => {}
    }
    match e.class {
        RunClass::Cancelled => return Next::Cancelled,
        RunClass::Preempted => return Next::Requeued,
        // `retry.on` cannot list disk-full (RetryPolicy::check): a third
        // disk-full run in a row ends the task.
        RunClass::DiskFull if e.disk_full_runs >= MAX_DISK_FULL_RUNS => {
            return Next::Failed(format!(
                "disk-full {} times in a row, so not held again: free room where it writes (or fix what it writes to), then `nightjar retry {}`",
                e.disk_full_runs, e.task
            ));
        }
        RunClass::DiskFull if !e.disks.is_empty() => {
            return Next::HoldForDisk(DiskWait {
                paths: e.disks.to_vec(),
                free: e.disk_free,
            });
        }
        _ => {}
    }
    if !e.retry.retries(e.class) {
        let why = if e.retry.max_attempts > 1 {
            format!(
                "not retried: `{}` is not in retry.on (add it to retry on this class)",
                e.class.as_str()
            )
        } else {
            String::new()
        };
        return Next::Failed(why);
    }
    if e.attempts >= e.retry.max_attempts {
        let why = if e.retry.max_attempts > 1 {
            format!("all {} attempts used", e.retry.max_attempts)
        } else {
            String::new()
        };
        return Next::Failed(why);
    }
    let attempt = e.attempts + 1;
    Next::Retry {
        delay_ms: e.retry.delay_before(attempt).as_millis() as i64,
        attempt,
        of: e.retry.max_attempts,
        needs_gpu_free: e.gpu_peak.filter(|_| e.class == RunClass::GpuOom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(class: RunClass, attempts: u32, retry: &RetryPolicy) -> Ended<'_> {
        Ended {
            task: 1,
            class,
            stop: Stop::None,
            attempts,
            retry,
            gpu_peak: None,
            disks: &[],
            disk_free: 0,
            disk_full_runs: u32::from(class == RunClass::DiskFull),
        }
    }

    fn three() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        }
    }

    #[test]
    fn transient_classes_are_retried_with_backoff_until_attempts_run_out() {
        let r = three();
        for class in [RunClass::Network, RunClass::Lost] {
            let Next::Retry {
                delay_ms,
                attempt,
                of,
                needs_gpu_free,
            } = next(&ended(class, 1, &r))
            else {
                panic!("{class:?} is retried by default");
            };
            assert_eq!(
                (delay_ms, attempt, of, needs_gpu_free),
                (10_000, 2, 3, None)
            );
            let Next::Retry { delay_ms, .. } = next(&ended(class, 2, &r)) else {
                panic!()
            };
            assert_eq!(delay_ms, 20_000, "the backoff doubles");
            assert_eq!(
                next(&ended(class, 3, &r)),
                Next::Failed("all 3 attempts used".into())
            );
        }
    }

    #[test]
    fn deterministic_classes_fail_at_once_unless_listed() {
        let r = three();
        for class in [
            RunClass::AppError,
            RunClass::ValidationFailed,
            RunClass::Timeout,
            RunClass::HostOom,
        ] {
            let Next::Failed(why) = next(&ended(class, 1, &r)) else {
                panic!("{class:?} is not retried by default");
            };
            assert!(
                why.contains(class.as_str()) && why.contains("retry.on"),
                "{why}"
            );
        }
        let listed = RetryPolicy {
            on: vec![RunClass::AppError],
            ..three()
        };
        assert!(matches!(
            next(&ended(RunClass::AppError, 1, &listed)),
            Next::Retry { attempt: 2, .. }
        ));
        assert!(
            matches!(next(&ended(RunClass::Network, 1, &listed)), Next::Failed(_)),
            "a task's own list replaces the defaults"
        );
    }

    #[test]
    fn a_gpu_oom_retry_waits_for_more_free_memory_than_the_peak() {
        let r = three();
        let e = Ended {
            gpu_peak: Some(10 << 30),
            ..ended(RunClass::GpuOom, 1, &r)
        };
        assert!(matches!(
            next(&e),
            Next::Retry {
                needs_gpu_free: Some(p),
                ..
            } if p == 10 << 30
        ));
        let network = Ended {
            gpu_peak: Some(10 << 30),
            ..ended(RunClass::Network, 1, &r)
        };
        assert!(
            matches!(
                next(&network),
                Next::Retry {
                    needs_gpu_free: None,
                    ..
                }
            ),
            "only a gpu-oom asks for more memory"
        );
    }

    #[test]
    fn disk_full_holds_without_an_attempt_even_when_none_are_left() {
        let r = RetryPolicy::default();
        let disks = [PathBuf::from("/data")];
        let e = Ended {
            disks: &disks,
            disk_free: 1 << 30,
            ..ended(RunClass::DiskFull, 1, &r)
        };
        assert_eq!(
            next(&e),
            Next::HoldForDisk(DiskWait {
                paths: disks.to_vec(),
                free: 1 << 30
            })
        );
        assert!(
            matches!(next(&ended(RunClass::DiskFull, 1, &r)), Next::Failed(_)),
            "with no file system to watch it fails"
        );
    }

    #[test]
    fn disk_full_holds_only_so_many_times_in_a_row() {
        let r = RetryPolicy::default();
        let disks = [PathBuf::from("/data")];
        let nth = |n: u32, r: &RetryPolicy| {
            next(&Ended {
                disks: &disks,
                disk_free: 1,
                disk_full_runs: n,
                ..ended(RunClass::DiskFull, 1, r)
            })
        };
        assert!(matches!(nth(2, &r), Next::HoldForDisk(_)));
        let Next::Failed(why) = nth(3, &r) else {
            panic!("the third disk-full run in a row fails");
        };
        assert!(
            why.contains("3 times in a row") && why.contains("nightjar retry 1"),
            "{why}"
        );
    }

    #[test]
    fn stops_asked_for_win_over_the_class() {
        let r = three();
        let cancel = Ended {
            stop: Stop::Cancel,
            ..ended(RunClass::Network, 1, &r)
        };
        assert_eq!(next(&cancel), Next::Cancelled);
        let preempt = Ended {
            stop: Stop::Preempt,
            ..ended(RunClass::Killed, 3, &r)
        };
        assert_eq!(next(&preempt), Next::Requeued, "even with no attempt left");
        let ok = Ended {
            stop: Stop::Preempt,
            ..ended(RunClass::Ok, 1, &r)
        };
        assert_eq!(next(&ok), Next::Succeeded, "it finished before the stop");
    }

    #[test]
    fn a_single_attempt_task_fails_without_a_retry_note() {
        let r = RetryPolicy::default();
        assert_eq!(
            next(&ended(RunClass::AppError, 1, &r)),
            Next::Failed(String::new())
        );
        assert_eq!(
            next(&ended(RunClass::Network, 1, &r)),
            Next::Failed(String::new())
        );
    }
}
