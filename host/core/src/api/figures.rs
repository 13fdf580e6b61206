//! Figures for people: energy, money and fixed-point numbers as every
//! output writes them (`show`, `report`, `estimate`, the report's page and
//! charts), never `-0.00`.

/// `x` with `digits` decimals; a value that rounds to zero is written
/// without a sign (`0.00`, never `-0.00`: a saving of minus nothing is a
/// rounding error, not a loss).
pub fn fixed(x: f64, digits: usize) -> String {
    let s = format!("{x:.digits$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// Energy for people: `0.42 kWh`, or `12.3 Wh` under a hundredth of a kWh.
pub fn fmt_energy(joules: f64) -> String {
    let kwh = joules / 3_600_000.0;
    if kwh.abs() >= 0.01 {
        format!("{} kWh", fixed(kwh, 2))
    } else {
        format!("{} Wh", fixed(joules / 3600.0, 1))
    }
}

/// An amount for people (money, GPU-hours): two decimals, four under a
/// hundredth (so a small amount does not read as nothing), the sign kept
/// where the figure is not zero once rounded.
pub fn fmt_amount(x: f64) -> String {
    if x.abs() >= 0.01 || x.abs() < 0.000_05 {
        fixed(x, 2)
    } else {
        fixed(x, 4)
    }
}

/// Money for people (a cost, a saving): as [`fmt_amount`].
pub fn fmt_cost(c: f64) -> String {
    fmt_amount(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_that_rounds_to_zero_has_no_sign_and_a_real_one_keeps_it() {
        assert_eq!(fixed(-0.001, 2), "0.00");
        assert_eq!(fixed(-0.0, 2), "0.00");
        assert_eq!(fixed(-0.004, 0), "0");
        assert_eq!(fixed(-0.006, 2), "-0.01");
        assert_eq!(fixed(12.345, 1), "12.3");
        assert_eq!(fmt_cost(-0.000_01), "0.00", "a saving of minus nothing");
        assert_eq!(fmt_cost(-0.003), "-0.0030", "a small loss still shows");
        assert_eq!(fmt_cost(0.0042), "0.0042");
        assert_eq!(
            fmt_cost(-5.0),
            "-5.00",
            "four decimals only under a hundredth"
        );
        assert_eq!(fmt_cost(12.345), "12.35");
        assert_eq!(fmt_energy(-1.0), "0.0 Wh");
        assert_eq!(fmt_energy(18_000.0), "5.0 Wh");
        assert_eq!(fmt_energy(3_600_000.0), "1.00 kWh");
    }
}
