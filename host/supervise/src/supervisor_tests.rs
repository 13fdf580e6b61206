use super::*;

#[test]
fn timeouts_of_years_give_a_positive_poll_timeout() {
    let year = Duration::from_secs(365 * 24 * 3600);
    assert_eq!(poll_ms(year * 3), i32::MAX);
    assert_eq!(poll_ms(Duration::from_secs(30 * 24 * 3600)), i32::MAX);
    assert_eq!(poll_ms(Duration::from_millis(1500)), 1501);
    assert_eq!(poll_ms(Duration::ZERO), 1);
}

#[test]
fn a_spec_line_argument_is_a_line_number_and_none_is_the_first() {
    use std::ffi::OsStr;
    assert_eq!(super::spec_line(None), Some(0));
    assert_eq!(super::spec_line(Some(OsStr::new("999"))), Some(999));
    assert_eq!(super::spec_line(Some(OsStr::new("-1"))), None);
    assert_eq!(super::spec_line(Some(OsStr::new("3; rm -rf /"))), None);
}
