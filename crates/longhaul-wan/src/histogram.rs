//! Release-lateness histogram: how long after its due time each packet was handed to the
//! far side. 1 us buckets up to 20 ms (where lateness is interesting), one overflow bucket
//! above; atomics so the stats writer can read while the direction thread records.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub const BUCKETS_US: usize = 20_000;

pub struct LatenessHistogram {
    buckets: Vec<AtomicU64>, // index = whole microseconds late; last = overflow
    count: AtomicU64,
    max_ns: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Default for LatenessHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatenessHistogram {
    pub fn new() -> Self {
        LatenessHistogram {
            buckets: (0..=BUCKETS_US).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }

    pub fn record(&self, late_ns: u64) {
        let idx = ((late_ns / 1000) as usize).min(BUCKETS_US);
        self.buckets[idx].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        if late_ns > self.max_ns.load(Relaxed) {
            self.max_ns.store(late_ns, Relaxed); // single writer per histogram
        }
    }

    /// Percentiles as the upper edge of the bucket holding the rank (conservative).
    pub fn percentiles(&self) -> Percentiles {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        let max_us = self.max_ns.load(Relaxed) as f64 / 1000.0;
        let at = |q: f64| -> f64 {
            if total == 0 {
                return 0.0;
            }
            let rank = ((q * total as f64).ceil() as u64).max(1);
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return if i == BUCKETS_US { max_us } else { ((i + 1) as f64).min(max_us.max(0.0)).max(0.0) };
                }
            }
            max_us
        };
        Percentiles { count: total, p50_us: at(0.5), p90_us: at(0.9), p99_us: at(0.99), p999_us: at(0.999), max_us }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_distribution() {
        let h = LatenessHistogram::new();
        for i in 0..1000u64 {
            h.record(i * 1000 + 500); // 0.5, 1.5, ... 999.5 us
        }
        let p = h.percentiles();
        assert_eq!(p.count, 1000);
        assert_eq!(p.p50_us, 500.0);
        assert_eq!(p.p99_us, 990.0);
        assert_eq!(p.max_us, 999.5);
    }

    #[test]
    fn overflow_bucket_reports_max() {
        let h = LatenessHistogram::new();
        h.record(100);
        h.record(50_000_000); // 50 ms late
        let p = h.percentiles();
        assert_eq!(p.max_us, 50_000.0);
        assert_eq!(p.p99_us, 50_000.0);
        assert!(p.p50_us <= 1.0);
    }

    #[test]
    fn empty_histogram_is_zero() {
        assert_eq!(LatenessHistogram::new().percentiles().count, 0);
    }
}
