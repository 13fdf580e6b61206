//! A period's accounting from the store: runs, outcomes, GPU-hours, waits,
//! energy, cost and savings, by project, user and task name, and the series
//! the charts draw.
