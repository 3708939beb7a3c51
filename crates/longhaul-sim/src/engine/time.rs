//! Simulated time: an integer count of picoseconds.
//!
//! Integer time keeps runs bit-identical across machines and avoids the drift that floating
//! point accumulates over 10^9 events. A u64 of picoseconds covers 213 days of simulated time.

/// Simulated time in picoseconds.
pub type Time = u64;

/// One picosecond: the engine's resolution.
pub const PS: Time = 1;
/// One nanosecond in picoseconds.
pub const NS: Time = 1_000;
/// One microsecond in picoseconds.
pub const US: Time = 1_000_000;
/// One millisecond in picoseconds.
pub const MS: Time = 1_000_000_000;
/// One second in picoseconds.
pub const S: Time = 1_000_000_000_000;

/// Microseconds (as typed by users) to picoseconds, rounded to the nearest picosecond.
pub fn from_us(us: f64) -> Time {
    (us * US as f64).round() as Time
}

/// Nanoseconds (as in parameter structs) to picoseconds.
pub fn from_ns(ns: f64) -> Time {
    (ns * NS as f64).round() as Time
}

/// Picoseconds to microseconds (the unit of delays in scenarios and records).
pub fn to_us(t: Time) -> f64 {
    f64_of(t) / US as f64
}

/// Picoseconds to seconds (the unit of durations and rates in records).
pub fn to_s(t: Time) -> f64 {
    f64_of(t) / S as f64
}

/// `n as f64` for n < 2^63 (a time below 106 days, a count): the same value, converted through
/// i64 in one instruction (x86-64 has no unsigned conversion; `u64 as f64` takes six).
#[inline(always)]
pub fn f64_of(n: u64) -> f64 {
    debug_assert!(n < 1 << 63, "{n} out of range");
    n as i64 as f64
}

/// `x as Time` for 0 <= x < 2^63: the same truncation, converted through i64 (`f64 as u64`
/// adds about ten instructions of range fix-ups).
#[inline(always)]
pub fn time_of(x: f64) -> Time {
    debug_assert!((0.0..9.2e18).contains(&x), "{x} out of range");
    x as i64 as Time
}

/// `x.round() as Time` for 0 <= x < 2^63, the same value without a call into libm: `x` less
/// its integer part is exact in floating point, so comparing it with one half rounds half away
/// from zero as `round` does.
#[inline(always)]
pub fn round_time(x: f64) -> Time {
    let t = time_of(x);
    if x - f64_of(t) >= 0.5 {
        t + 1
    } else {
        t
    }
}

/// `x.ceil() as Time` for 0 <= x < 2^63, the same value without a call into libm (x86-64's
/// baseline instruction set has no rounding instruction).
#[inline(always)]
pub fn ceil_time(x: f64) -> Time {
    let t = time_of(x);
    if f64_of(t) < x {
        t + 1
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The libm-free roundings give what `ceil` and `round` give, halves and integers
        /// included, over the picosecond counts the simulator takes them of.
        #[test]
        fn roundings_agree_with_libm(whole in 0u64..1 << 62, frac in prop_oneof![Just(0.0), Just(0.5), 0.0f64..1.0], small in 0.0f64..1e6) {
            for x in [whole as f64 + frac, (whole >> 20) as f64 + frac, small, 0.49999999999999994, 2.5, 4_503_599_627_370_495.5] {
                prop_assert_eq!(round_time(x), x.round() as Time, "round {}", x);
                prop_assert_eq!(ceil_time(x), x.ceil() as Time, "ceil {}", x);
            }
        }
    }
}
