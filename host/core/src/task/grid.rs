//! A sweep as one template and its parameters' values: the compact wire
//! form of a sweep (a 10,000-member sweep is its template and a few value
//! lists, not 10,000 specs), and the one expansion both the client and the
//! daemon run, so a member is the same task wherever it was made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::checkpoint::CheckpointSpec;
use super::model::TaskSpec;
use super::vars;

/// The most members a sweep may have.
pub const MAX_SWEEP: usize = 10_000;

/// The most a sweep's members may take expanded (bytes of their specs).
pub const MAX_EXPANDED: usize = 256 << 20;

/// A sweep's template and values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Grid {
    /// Every member's spec before its parameters are substituted (its
    /// name is the sweep's; its `params` empty).
    pub template: TaskSpec,
    /// Each parameter's values, in the order the members vary.
    pub values: BTreeMap<String, Vec<String>>,
}

impl Grid {
    /// Every member, in order: one per combination of the values.
    pub fn members(&self) -> Result<Vec<TaskSpec>, String> {
        let combos = combinations(&self.values)?;
        // A template near the request cap times 10,000 would be gigabytes;
        // so would a long value that the template names many times. The
        // bound is what the largest member could take: the template, plus
        // each `${name}` in it replaced by that parameter's longest value.
        let text = serde_json::to_string(&self.template).unwrap_or_default();
        let one = self.values.iter().fold(text.len(), |size, (name, vals)| {
            let uses = text.matches(&format!("${{{name}}}")).count();
            let longest = vals.iter().map(String::len).max().unwrap_or(0);
            size.saturating_add(uses.saturating_mul(longest))
        });
        let total = one.saturating_mul(combos.len());
        if total > MAX_EXPANDED {
            return Err(format!(
                "its {} members would take about {} MiB; at most {} MiB: a smaller template or fewer members",
                combos.len(),
                total >> 20,
                MAX_EXPANDED >> 20
            ));
        }
        combos
            .iter()
            .map(|p| member(&self.template, p, true))
            .collect()
    }
}

/// Every combination of the values (one empty combination for none).
pub fn combinations(
    values: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<BTreeMap<String, String>>, String> {
    let mut out = vec![BTreeMap::new()];
    for (key, vals) in values {
        if vals.is_empty() {
            return Err(format!("sweep parameter `{key}` has no values"));
        }
        let size = out.len().saturating_mul(vals.len());
        if size > MAX_SWEEP {
            return Err(format!(
                "sweep expands to more than {MAX_SWEEP} members; split it"
            ));
        }
        let mut next = Vec::with_capacity(size);
        for combo in &out {
            for v in vals {
                let mut c = combo.clone();
                c.insert(key.clone(), v.clone());
                next.push(c);
            }
        }
        out = next;
    }
    Ok(out)
}

/// The member of `template` for `params`: the parameters substituted in
/// its command, env values, output and checkpoint, its name labelled with
/// them when it is a sweep's.
pub fn member(
    template: &TaskSpec,
    params: &BTreeMap<String, String>,
    is_sweep: bool,
) -> Result<TaskSpec, String> {
    let sub = |t: &str| {
        // A value is text, substituted once: `${` in it is escaped so the
        // substitution at dispatch leaves it literal.
        vars::expand(t, false, |n| match params.get(n) {
            Some(v) => Some(vars::Subst::Value(v.replace("${", "$${"))),
            None => Some(vars::Subst::Keep),
        })
        .map_err(|e| e.to_string())
    };
    let name = if is_sweep {
        let label: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}[{}]", template.name, label.join(","))
    } else {
        template.name.clone()
    };
    let checkpoint = match &template.checkpoint {
        Some(c) => Some(Box::new(CheckpointSpec {
            pattern: sub(&c.pattern)?,
            resume: c.resume.as_deref().map(sub).transpose()?,
            ..CheckpointSpec::clone(c)
        })),
        None => None,
    };
    Ok(TaskSpec {
        name,
        command: template.command.map_strings(sub)?,
        env: template
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), sub(v)?)))
            .collect::<Result<_, String>>()?,
        output: template.output.as_deref().map(sub).transpose()?,
        params: params.clone(),
        checkpoint,
        ..template.clone()
    })
}

#[cfg(test)]
mod tests {
    use crate::task::file::{Format, parse};
    use crate::task::resolve::resolve;

    #[test]
    fn a_sweep_sent_as_its_grid_expands_to_the_members_the_client_made() {
        let text = "command = \"train --lr ${lr} --seed ${seed} --out ${OUTPUT_PATH}\"\noutput = \"/tmp/o/${lr}\"\nenv = { LR = \"${lr}\" }\n[sweep]\nlr = [0.1, 0.01]\nseed = [1, 2, 3]\n";
        let made = resolve(
            &parse(text, Format::Toml).unwrap(),
            &std::env::temp_dir(),
            "t",
        )
        .unwrap();
        let entry = made[0].clone();
        assert_eq!(entry.members.len(), 6);
        let wire = serde_json::to_string(&entry.clone().compact()).unwrap();
        let sent: crate::task::model::NewEntry = serde_json::from_str(&wire).unwrap();
        assert!(sent.members.is_empty(), "the members are not on the wire");
        let got = sent.expand().unwrap();
        assert_eq!(got.members, entry.members);
        assert_eq!(got.members[5].env["LR"], "0.01");
        assert_eq!(got.members[5].output.as_deref(), Some("/tmp/o/0.01"));
    }

    #[test]
    fn a_10000_member_sweep_is_small_on_the_wire_and_one_more_is_refused() {
        let vals = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let text = format!(
            "command = \"run ${{a}} ${{b}}\"\n[sweep]\na = [{}]\nb = [{}]\n",
            vals(100),
            vals(100)
        );
        let e = resolve(
            &parse(&text, Format::Toml).unwrap(),
            &std::env::temp_dir(),
            "t",
        )
        .unwrap();
        assert_eq!(e[0].members.len(), 10_000);
        let wire = serde_json::to_string(&e[0].clone().compact()).unwrap();
        assert!(wire.len() < 64 * 1024, "{} bytes", wire.len());
        let mut g = e[0].grid.clone().unwrap();
        g.values.insert("c".into(), vec!["x".into(), "y".into()]);
        assert!(g.members().unwrap_err().contains("more than 10000"));
        g.values.remove("c");
        let mut huge = g.clone();
        huge.template
            .env
            .insert("BIG".into(), "x".repeat(512 * 1024));
        assert!(
            huge.members().unwrap_err().contains("MiB"),
            "a huge template is refused"
        );
        // A small request whose value the template names 2,000 times.
        let mut names = g.clone();
        names.template.command = crate::task::model::CommandSpec::Argv(
            std::iter::once("echo".to_string())
                .chain(std::iter::repeat_n("${a}".to_string(), 2_000))
                .collect(),
        );
        names.values.insert("a".into(), vec!["x".repeat(10_000)]);
        names.values.insert("b".into(), vec![String::new(); 10_000]);
        assert!(
            names.members().unwrap_err().contains("MiB"),
            "a value named many times is counted each time"
        );
    }
}
