//! The HTML report: one self-contained page, its charts inline as SVG.
//! (A placeholder of the totals until the page itself lands.)

use nightjar_core::api::report::Accounting;

/// The report as one HTML page.
pub fn html(acc: &Accounting) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let t = &acc.total;
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nightjar report</title></head><body>\n\
         <table><tr><th>runs</th><th>GPU-h</th><th>kWh</th><th>cost ({cur})</th><th>saved</th></tr>\n\
         <tr><td>{}</td><td>{:.2}</td><td>{:.3}</td><td>{:.2}</td><td>{:.2}</td></tr></table>\n</body></html>\n",
        t.runs,
        t.gpu_hours,
        t.energy_kwh,
        t.cost,
        t.savings,
        cur = esc(&acc.currency),
    )
}
