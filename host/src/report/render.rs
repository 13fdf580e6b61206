//! The HTML report: one self-contained page, its charts inline as SVG.
