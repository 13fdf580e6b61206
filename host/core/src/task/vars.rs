//! `${NAME}` substitution in commands, env values and output paths.
//!
//! `${NAME}` is replaced when NAME is a built-in variable or a sweep parameter;
//! any other name is an error at submit. `$${` writes a literal `${` (so a shell
//! variable can still be written `$${HOME}`, or plainly `$HOME`).

use std::fmt;

/// Variables the host fills in at dispatch.
pub const BUILTINS: &[&str] = &[
    "INPUT_PATH",
    "INPUTS",
    "OUTPUT_PATH",
    "TASK_ID",
    "RUN_ID",
    "SCRATCH",
    "WORKDIR",
    "TASK_NAME",
    "PROJECT",
];

/// A template that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarError {
    /// `${` without a closing `}`.
    Unterminated(String),
    /// A name that is neither built in nor a sweep parameter.
    Unknown(String),
}

impl fmt::Display for VarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarError::Unterminated(t) => write!(f, "`${{` without a closing `}}` in `{t}`"),
            VarError::Unknown(n) => write!(
                f,
                "unknown variable `${{{n}}}`: known are {} and the sweep parameters; write `$${{{n}}}` or `${n}` for a shell variable",
                BUILTINS.join(", ")
            ),
        }
    }
}

impl std::error::Error for VarError {}

/// What to do with one `${NAME}`.
pub enum Subst {
    /// Replace with this text.
    Value(String),
    /// Leave `${NAME}` as written (filled in later).
    Keep,
}

/// Expands `${NAME}` in `template` through `lookup`. With `unescape`, `$${`
/// becomes `${`; without, it is kept so a later pass still sees the escape.
pub fn expand(
    template: &str,
    unescape: bool,
    mut lookup: impl FnMut(&str) -> Option<Subst>,
) -> Result<String, VarError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str(if unescape { "${" } else { "$${" });
            rest = tail;
        } else if let Some(body) = after.strip_prefix("${") {
            let end = body
                .find('}')
                .ok_or_else(|| VarError::Unterminated(template.to_string()))?;
            let name = &body[..end];
            match lookup(name) {
                Some(Subst::Value(v)) => out.push_str(&v),
                Some(Subst::Keep) => {
                    out.push_str("${");
                    out.push_str(name);
                    out.push('}');
                }
                None => return Err(VarError::Unknown(name.to_string())),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks that every variable in `template` is built in or in `params`.
pub fn check(template: &str, params: &[&str]) -> Result<(), VarError> {
    expand(template, false, |n| {
        (BUILTINS.contains(&n) || params.contains(&n)).then_some(Subst::Keep)
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_kept_and_params_replaced_at_submit() {
        let out = expand("run --lr ${lr} --out ${OUTPUT_PATH}", false, |n| match n {
            "lr" => Some(Subst::Value("0.1".into())),
            n if BUILTINS.contains(&n) => Some(Subst::Keep),
            _ => None,
        })
        .unwrap();
        assert_eq!(out, "run --lr 0.1 --out ${OUTPUT_PATH}");
    }

    #[test]
    fn unknown_variable_is_an_error_naming_it() {
        let err = check("echo ${HOME}", &[]).unwrap_err();
        assert_eq!(err, VarError::Unknown("HOME".into()));
        assert!(err.to_string().contains("$${HOME}"));
    }

    #[test]
    fn escapes_survive_submit_and_unescape_at_dispatch() {
        let submit = expand("echo $${HOME} $PATH", false, |_| None).unwrap();
        assert_eq!(submit, "echo $${HOME} $PATH");
        let dispatch = expand(&submit, true, |_| None).unwrap();
        assert_eq!(dispatch, "echo ${HOME} $PATH");
    }

    #[test]
    fn unterminated_is_an_error() {
        assert!(matches!(
            check("a ${TASK_ID", &[]),
            Err(VarError::Unterminated(_))
        ));
    }
}
