//! Writing the report's HTML page and its PDF to files (placeholders).

use std::path::Path;

/// Writes the HTML page to `path`.
pub fn write_html(path: &Path, html: &str) -> anyhow::Result<()> {
    std::fs::write(path, html).map_err(|e| anyhow::anyhow!("--html {}: {e}", path.display()))
}

/// Writes the report as a PDF to `path`.
pub fn write_pdf(path: &Path, html: &str) -> anyhow::Result<()> {
    let _ = html;
    anyhow::bail!(
        "--pdf {}: PDF output is not built yet; use --html",
        path.display()
    )
}
