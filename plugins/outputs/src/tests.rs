use nightjar_sdk::testing::{OutputDir, RunBuilder};
use nightjar_sdk::*;

use super::Outputs;

fn config(text: &str) -> super::Config {
    Outputs::configure(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn key_of(text: &str) -> String {
    let e = Outputs::configure(text).expect_err(text);
    e.key
        .unwrap_or_else(|| panic!("{text}: no key in {}", e.message))
}

fn findings(text: &str, run: &Run) -> Vec<Finding> {
    Outputs::validate(&config(text), run)
}

fn messages(found: &[Finding]) -> Vec<&str> {
    found.iter().map(|f| f.message.as_str()).collect()
}

#[test]
fn an_empty_table_checks_nothing() {
    assert!(findings("", &RunBuilder::new().build()).is_empty());
}

#[test]
fn required_files_must_exist_and_not_be_empty() {
    let run = RunBuilder::new()
        .file("model.pt", 10)
        .file("frames/a.png", 3)
        .file("frames/b.png", 0)
        .file("frames/deep/c.png", 0)
        .build();
    assert!(findings("required = [\"model.pt\", \"frames/a.png\"]", &run).is_empty());
    let found = findings("required = [\"frames/b.png\"]", &run);
    assert_eq!(
        messages(&found),
        ["frames/b.png: is empty (0 bytes), wanted a non-empty file (required)"]
    );
    let found = findings(
        "required = [\"model.pt\", \"frames/*.png\", \"log.txt\", \"**/*.png\"]",
        &run,
    );
    assert_eq!(
        messages(&found),
        [
            "frames/*.png: 1 of the 2 matching files are empty (0 bytes), wanted none empty (required): frames/b.png",
            "log.txt: no file matches, wanted at least one (required)",
            "**/*.png: 2 of the 3 matching files are empty (0 bytes), wanted none empty (required): frames/b.png, frames/deep/c.png",
        ]
    );
    assert_eq!(found[0].path.as_deref(), Some("frames/b.png"));
    assert_eq!(found[1].path.as_deref(), Some("log.txt"));
    assert!(found.iter().all(|f| f.severity == Severity::Error));
    let found = findings("required = [\"log.txt\"]\nseverity = \"warning\"", &run);
    assert_eq!(found[0].severity, Severity::Warning);
}

#[test]
fn a_short_list_is_said_when_a_file_is_missing() {
    let run = RunBuilder::new().file("a", 1).files_omitted(7).build();
    let found = findings("required = [\"b\"]", &run);
    assert!(
        found[0]
            .message
            .ends_with("(the host listed 1 files and left 7 out)")
    );
}

#[test]
fn counts_have_bounds() {
    let mut b = RunBuilder::new();
    for i in 0..5 {
        b = b.file(&format!("frames/{i}.png"), 1);
    }
    let run = b.file("frames/x/9.png", 1).build();
    let rule = |min: u64, max: u64| {
        format!("[[count]]\nglob = \"frames/*.png\"\nmin = {min}\nmax = {max}")
    };
    assert!(
        findings(&rule(5, 5), &run).is_empty(),
        "* stays in its folder"
    );
    assert_eq!(
        messages(&findings(&rule(6, 10), &run)),
        ["frames/*.png: 5 files match, wanted at least 6"]
    );
    assert_eq!(
        messages(&findings(&rule(1, 4), &run)),
        ["frames/*.png: 5 files match, wanted at most 4"]
    );
    let found = findings(
        "[[count]]\nglob = \"frames/**/*.png\"\nmax = 1\nseverity = \"info\"",
        &run,
    );
    assert_eq!(found[0].severity, Severity::Info);
    assert!(
        found[0]
            .message
            .starts_with("frames/**/*.png: 6 files match")
    );
}

#[test]
fn sizes_have_bounds() {
    let run = RunBuilder::new()
        .file("model.pt", 512_000)
        .file("ckpt/a.pt", 5)
        .file("ckpt/b.pt", 2_000_000)
        .build();
    let rule =
        "[[size]]\nglob = \"model.pt\"\nmin = \"1 MB\"\nmax = \"10 GB\"\nseverity = \"warning\"";
    let found = findings(rule, &run);
    assert_eq!(
        messages(&found),
        ["model.pt: 512 KB (512000 bytes), wanted at least 1 MB"]
    );
    assert_eq!(found[0].severity, Severity::Warning);
    assert!(findings("[[size]]\nglob = \"model.pt\"\nmax = \"1MiB\"", &run).is_empty());
    let found = findings(
        "[[size]]\nglob = \"ckpt/*\"\nmin = \"1 KB\"\nmax = \"1 MB\"",
        &run,
    );
    assert_eq!(
        messages(&found),
        [
            "ckpt/a.pt: 5 bytes, wanted at least 1 KB",
            "ckpt/b.pt: 2 MB (2000000 bytes), wanted at most 1 MB"
        ]
    );
    assert!(findings("[[size]]\nglob = \"nothing/*\"\nmin = \"1 KB\"", &run).is_empty());
}

#[test]
fn json_numbers_are_compared_and_every_miss_is_named() {
    let out = OutputDir::new();
    out.write(
        "metrics.json",
        r#"{"loss": 0.4, "accuracy": 0.62, "eval": {"f1": 0.7}, "name": "x"}"#,
    );
    let run = out.run().build();
    let rule = |rules: &str| format!("[[json]]\nfile = \"metrics.json\"\nrules = {rules}");
    assert!(findings(&rule(r#"["loss < 1.0", "eval.f1 > 0.5"]"#), &run).is_empty());
    let found = findings(
        &rule(r#"["loss < 1.0", "accuracy >= 0.8", "eval.f2 > 0.5", "name == 1"]"#),
        &run,
    );
    assert_eq!(
        messages(&found),
        [
            "metrics.json: accuracy is 0.62, wanted >= 0.8",
            "metrics.json: eval.f2 is missing, wanted > 0.5",
            "metrics.json: name is \"x\", not a number; wanted == 1",
        ]
    );
    assert!(
        found
            .iter()
            .all(|f| f.path.as_deref() == Some("metrics.json"))
    );
    let found = findings(
        &(rule(r#"["accuracy >= 0.8"]"#) + "\nseverity = \"warning\""),
        &run,
    );
    assert_eq!(found[0].severity, Severity::Warning);
}

#[test]
fn json_nan_missing_broken_and_huge_files_are_findings() {
    let out = OutputDir::new();
    out.write("nan.json", r#"{"loss": NaN}"#)
        .write("broken.json", "{\"loss\": ")
        .write("huge.json", vec![b' '; (16 << 20) + 1]);
    let run = out.run().build();
    let one = |file: &str| {
        let f = findings(
            &format!("[[json]]\nfile = \"{file}\"\nrules = [\"loss < 1\"]"),
            &run,
        );
        assert_eq!(f.len(), 1, "{file}: {f:?}");
        f[0].message.clone()
    };
    assert_eq!(one("nan.json"), "nan.json: loss is NaN, wanted < 1");
    assert_eq!(
        one("none.json"),
        "none.json: missing; wanted a JSON file where loss < 1"
    );
    assert!(one("broken.json").starts_with("broken.json: not valid JSON ("));
    let huge = one("huge.json");
    assert!(
        huge.starts_with("huge.json: too large to read (16777217 bytes"),
        "{huge}"
    );
    assert!(
        huge.contains("over the 16.7 MB this validator reads"),
        "{huge}"
    );
}

#[test]
fn csv_header_and_rows() {
    let out = OutputDir::new();
    let mut table = String::from("epoch,loss\n");
    for i in 0..12 {
        table.push_str(&format!("{i},{}\n", 1.0 / (i + 1) as f64));
    }
    out.write("results.csv", &table)
        .write("ragged.csv", "a,b\n1,2\n3\n")
        .write("results.tsv", "epoch\tloss\n1\t2\n");
    let run = out.run().build();
    let rule = |extra: &str| format!("[[csv]]\nfile = \"results.csv\"\n{extra}");
    assert!(
        findings(
            &rule("min_rows = 10\ncolumns = [\"epoch\", \"loss\"]"),
            &run
        )
        .is_empty()
    );
    assert!(findings(&rule("min_rows = 12\nmax_rows = 12"), &run).is_empty());
    assert_eq!(
        messages(&findings(&rule("min_rows = 13"), &run)),
        ["results.csv: 12 data rows, wanted at least 13"]
    );
    assert_eq!(
        messages(&findings(&rule("max_rows = 3"), &run)),
        ["results.csv: 12 data rows, wanted at most 3"]
    );
    assert_eq!(
        messages(&findings(&rule("columns = [\"epoch\", \"acc\"]"), &run)),
        [
            "results.csv: no column `acc` in the header, wanted `epoch`, `acc`; the header is: epoch, loss"
        ]
    );
    let found = findings("[[csv]]\nfile = \"ragged.csv\"", &run);
    assert_eq!(
        messages(&found),
        ["ragged.csv: not valid CSV: line 3: 1 fields where the header has 2"]
    );
    assert!(
        findings(
            "[[csv]]\nfile = \"results.tsv\"\ndelimiter = \"\\t\"\ncolumns = [\"loss\"]",
            &run
        )
        .is_empty()
    );
    assert_eq!(
        messages(&findings(
            "[[csv]]\nfile = \"no.csv\"\nseverity = \"warning\"",
            &run
        )),
        ["no.csv: missing, wanted a CSV file"]
    );
}

#[test]
fn an_endless_csv_line_is_refused_not_held() {
    let out = OutputDir::new();
    out.write("one.csv", vec![b'x'; (1 << 20) + 10]);
    let found = findings("[[csv]]\nfile = \"one.csv\"", &out.run().build());
    assert_eq!(found.len(), 1);
    assert!(
        found[0].message.contains("longer than 1048576 bytes"),
        "{:?}",
        found[0]
    );
}

#[test]
fn bad_rules_are_config_errors_naming_the_key() {
    assert_eq!(
        key_of("[[json]]\nfile = \"m.json\"\nrules = [\"loss < 1\", \"loss <\"]"),
        "json[0].rules[1]"
    );
    assert_eq!(
        key_of("[[json]]\nfile = \"m.json\"\nrules = [\"loss => 1\"]"),
        "json[0].rules[0]"
    );
    assert_eq!(
        key_of("[[json]]\nfile = \"m.json\"\nrules = []"),
        "json[0].rules"
    );
    assert_eq!(
        key_of("[[json]]\nfile = \"../m.json\"\nrules = [\"a < 1\"]"),
        "json[0].file"
    );
    assert_eq!(key_of("[[json]]\nrules = [\"a < 1\"]"), "json[0]");
    assert_eq!(key_of("required = [\"ok\", \"a/[b\"]"), "required[1]");
    assert_eq!(key_of("required = [\"/etc/passwd\"]"), "required[0]");
    assert_eq!(
        key_of("[[count]]\nglob = \"*\"\nmin = 5\nmax = 1"),
        "count[0].min"
    );
    assert_eq!(key_of("[[count]]\nglob = \"*\""), "count[0]");
    assert_eq!(
        key_of("[[size]]\nglob = \"*\"\nmin = \"1 parsec\""),
        "size[0].min"
    );
    assert_eq!(
        key_of("[[size]]\nglob = \"*\"\nmin = \"2 MB\"\nmax = \"1 MB\""),
        "size[0].min"
    );
    assert_eq!(
        key_of("[[csv]]\nfile = \"a.csv\"\nmin_rows = 5\nmax_rows = 1"),
        "csv[0].min_rows"
    );
    assert_eq!(
        key_of("[[csv]]\nfile = \"a.csv\"\ndelimiter = \"ab\""),
        "csv[0].delimiter"
    );
    assert_eq!(
        key_of("[[csv]]\nfile = \"a.csv\"\ncolums = []"),
        "csv[0].colums"
    );
    assert_eq!(key_of("requierd = []"), "requierd");
    assert_eq!(key_of("severity = \"fatal\""), "severity");
    assert_eq!(
        key_of("[[count]]\nglob = \"*\"\nmin = 1\nseverity = \"bad\""),
        "count[0].severity"
    );
}

#[test]
fn the_example_table_of_the_docs_is_accepted() {
    let c = config(
        r#"
required = ["model.pt", "frames/*.png"]
[[count]]
glob = "frames/*.png"
min = 100
max = 1000
[[json]]
file = "metrics.json"
rules = ["loss < 1.0", "accuracy >= 0.8", "eval.f1 > 0.5"]
[[csv]]
file = "results.csv"
min_rows = 10
columns = ["epoch", "loss"]
[[size]]
glob = "model.pt"
min = "1 MB"
max = "10 GB"
severity = "warning"
"#,
    );
    assert_eq!(c.severity_of(c.size[0].severity), Severity::Warning);
    assert_eq!(c.severity_of(c.count[0].severity), Severity::Error);
}
