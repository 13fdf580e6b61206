use super::*;

#[test]
fn timeouts_of_years_give_a_positive_poll_timeout() {
    let year = Duration::from_secs(365 * 24 * 3600);
    assert_eq!(poll_ms(year * 3), i32::MAX);
    assert_eq!(poll_ms(Duration::from_secs(30 * 24 * 3600)), i32::MAX);
    assert_eq!(poll_ms(Duration::from_millis(1500)), 1501);
    assert_eq!(poll_ms(Duration::ZERO), 1);
}
