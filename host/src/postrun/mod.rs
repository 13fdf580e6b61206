//! After a run: the class the supervisor gave its end
//! (`sandbox/classify.rs`), then the task's validators over its outputs
//! ([`validate`]), then the end recorded with the retry rules ([`retry`],
//! applied by the store in the run's end transaction).

pub mod manifest;
pub mod retry;
pub mod validate;

use nightjar_core::api::findings::{Finding, Severity};

use crate::store::{RunClass, RunOutcome};

/// The outcome once validators answered: an exit 0 with an error finding is
/// `validation-failed`, its message the first error (and how many more).
pub fn after_validation(mut out: RunOutcome, findings: &[Finding]) -> RunOutcome {
    let errors: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if out.class != RunClass::Ok || errors.is_empty() {
        return out;
    }
    let more = match errors.len() {
        1 => String::new(),
        n => format!(" (and {} more: `nightjar show` lists them)", n - 1),
    };
    let f = errors[0];
    let path = f
        .path
        .as_deref()
        .map(|p| format!("{p}: "))
        .unwrap_or_default();
    out.class = RunClass::ValidationFailed;
    out.message = Some(format!("{} found {path}{}{more}", f.validator, f.message));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity, message: &str) -> Finding {
        Finding {
            validator: "outputs".into(),
            severity,
            path: Some("metrics.json".into()),
            message: message.into(),
        }
    }

    fn ok() -> RunOutcome {
        RunOutcome {
            class: RunClass::Ok,
            exit_code: Some(0),
            signal: None,
            finished_at: 1,
            message: None,
        }
    }

    #[test]
    fn an_error_finding_fails_an_exit_0_and_warnings_do_not() {
        let warned = after_validation(ok(), &[finding(Severity::Warning, "slow")]);
        assert_eq!(warned.class, RunClass::Ok);
        let failed = after_validation(
            ok(),
            &[
                finding(Severity::Warning, "slow"),
                finding(Severity::Error, "accuracy is 0.62, wanted >= 0.8"),
                finding(Severity::Error, "loss is NaN"),
            ],
        );
        assert_eq!(failed.class, RunClass::ValidationFailed);
        assert_eq!(
            failed.message.as_deref(),
            Some(
                "outputs found metrics.json: accuracy is 0.62, wanted >= 0.8 (and 1 more: `nightjar show` lists them)"
            )
        );
    }
}
