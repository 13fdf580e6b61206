use super::*;
use std::path::PathBuf;

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

#[test]
fn the_books_cli_reference_is_what_the_cli_definition_writes() {
    let want = cli_reference();
    let path = repo_file(PATH);
    if std::env::var_os("NIGHTJAR_BLESS").is_some() {
        // CI checks the file; it never writes it.
        assert!(
            std::env::var_os("CI").is_none(),
            "NIGHTJAR_BLESS is set under CI: the reference would pass whatever it holds"
        );
        std::fs::write(&path, &want).expect("write the CLI reference");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{PATH} differs from the CLI's definition: run `scripts/docs --bless` and commit it"
    );
}

#[test]
fn every_verb_has_a_section_in_the_committed_reference() {
    let text = std::fs::read_to_string(repo_file(PATH)).unwrap_or_default();
    let verbs = verbs();
    for verb in [
        "nightjar submit",
        "nightjar plugins new",
        "nightjard daemon",
    ] {
        assert!(verbs.iter().any(|v| v == verb), "{verb} is a verb");
    }
    for verb in &verbs {
        assert!(
            text.contains(&format!("\n## `{verb}`\n")),
            "no section for {verb}"
        );
    }
}
