//! Simulated time: an integer count of picoseconds.
//!
//! Integer time keeps runs bit-identical across machines and avoids the drift that floating
//! point accumulates over 10^9 events. A u64 of picoseconds covers 213 days of simulated time.

/// Simulated time in picoseconds.
pub type Time = u64;

pub const PS: Time = 1;
pub const NS: Time = 1_000;
pub const US: Time = 1_000_000;
pub const MS: Time = 1_000_000_000;
pub const S: Time = 1_000_000_000_000;

/// Microseconds (as typed by users) to picoseconds, rounded to the nearest picosecond.
pub fn from_us(us: f64) -> Time {
    (us * US as f64).round() as Time
}

/// Nanoseconds (as in parameter structs) to picoseconds.
pub fn from_ns(ns: f64) -> Time {
    (ns * NS as f64).round() as Time
}

pub fn to_us(t: Time) -> f64 {
    t as f64 / US as f64
}

pub fn to_s(t: Time) -> f64 {
    t as f64 / S as f64
}
