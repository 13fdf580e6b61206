//! `outputs`: checks a run's output folder against the rules of its
//! `[[validate]]` table: files that must exist (and not be empty), how many
//! files match a glob, how large they are, numbers in a JSON file, and the
//! shape of a CSV table. Every key is optional.
//!
//! ```toml
//! [[validate]]
//! plugin = "outputs"                        # removed by the host before configure
//! required = ["model.pt", "frames/*.png"]   # each matches at least one file; every match non-empty
//! severity = "error"                        # of `required`, and the default of every rule below
//!
//! [[validate.count]]                        # how many files match
//! glob = "frames/*.png"
//! min = 100
//! max = 1000
//!
//! [[validate.json]]                         # numbers in a JSON file (at most 16 MiB)
//! file = "metrics.json"
//! rules = ["loss < 1.0", "accuracy >= 0.8", "eval.f1 > 0.5"]
//!
//! [[validate.csv]]                          # a CSV table's header and rows (streamed)
//! file = "results.csv"
//! min_rows = 10                             # data rows, the header not counted
//! max_rows = 100000
//! columns = ["epoch", "loss"]               # must be in the header
//! delimiter = ","                           # one character; "\t" for TSV
//!
//! [[validate.size]]                         # sizes of the files a glob matches
//! glob = "model.pt"
//! min = "1 MB"                              # B, KB, MB, GB, KiB, MiB, GiB
//! max = "10 GB"
//! severity = "warning"                      # every rule may say; default "error"
//! ```
//!
//! Globs match the paths of the file list the host sends (relative,
//! `/`-separated): `*` and `?` stay within one folder, `**` crosses
//! folders, `{a,b}` and `[abc]` are alternatives. A `size` or `count` rule
//! judges the files its glob matches; `required` (or `count` with `min`)
//! says that there must be some.
//!
//! A JSON rule is `KEY OP NUMBER`: `KEY` a dotted path into objects (a
//! number in it indexes an array: `history.0.loss`), `OP` one of `<`, `<=`,
//! `>`, `>=`, `==`, `!=`. A missing key, a value that is not a number, and
//! NaN or an infinity (which Python's `json.dump` writes as `NaN` and
//! `Infinity`) are findings. A rule that cannot be read, a glob that is not
//! one and an unknown key are config errors naming the key.
//!
//! Every finding names the file and says what was wanted and what was found:
//! `metrics.json: accuracy is 0.62, wanted >= 0.8`.

use nightjar_sdk::*;

mod compare;
mod config;
mod csv_rule;
mod files;
mod json_rule;

pub use config::Config;

/// The `outputs` validator.
pub struct Outputs;

impl Validator for Outputs {
    type Config = Config;

    fn validate(config: &Config, run: &Run) -> Vec<Finding> {
        let mut found = Vec::new();
        files::required(config, run, &mut found);
        for rule in &config.count {
            files::count(rule, config.severity_of(rule.severity), run, &mut found);
        }
        for rule in &config.size {
            files::size(rule, config.severity_of(rule.severity), run, &mut found);
        }
        for rule in &config.json {
            json_rule::check(rule, config.severity_of(rule.severity), run, &mut found);
        }
        for rule in &config.csv {
            csv_rule::check(rule, config.severity_of(rule.severity), run, &mut found);
        }
        found
    }

    fn check_config(config: &Config) -> Result<(), ConfigError> {
        config.check()
    }
}

export_validator!(Outputs);

#[cfg(test)]
mod tests;
