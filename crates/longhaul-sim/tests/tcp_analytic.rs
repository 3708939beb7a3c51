//! Analytic cross-checks of the TCP model (issue 3): a window-limited stream moves one window
//! per round trip, and a loss-limited Reno stream follows the Mathis et al. formula
//! BW = (MSS / RTT) sqrt(3/2) / sqrt(p) (CCR 27(3), 1997), which assumes an ACK per segment.

use longhaul_sim::run_tcp_json;
use longhaul_sim::workload::iperf::TcpRecord;

fn run(json: &str) -> TcpRecord {
    run_tcp_json(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// Mean of the time series after the first interval (slow start excluded).
fn steady_mbps(r: &TcpRecord) -> f64 {
    let s = &r.series_bw_MBps[1..];
    s.iter().sum::<f64>() / s.len() as f64
}

#[test]
fn window_limited_throughput_is_window_over_rtt() {
    for (window, delay_us) in [(65_536u64, 100.0), (1 << 20, 1000.0), (4 << 20, 10_000.0)] {
        let r = run(&format!(
            r#"{{"link": "10gige-lan", "stack": "ideal", "path": {{"delay_us": {delay_us}}},
                "tcp": {{"window_bytes": {window}, "duration_s": 2, "interval_s": 0.25}}}}"#
        ));
        let mss = r.mss_bytes as u64;
        let window_bytes = (window / mss * mss) as f64;
        let expected = window_bytes / (r.min_rtt_us.unwrap() * 1e-6) / 1e6;
        let got = steady_mbps(&r);
        let err = (got - expected) / expected;
        assert!(
            err.abs() <= 0.03,
            "window {window} at {delay_us} us: {got:.1} vs {expected:.1} MB/s ({:+.1}%)",
            err * 100.0
        );
    }
}

#[test]
fn loss_limited_reno_follows_mathis() {
    for p in [1e-5f64, 1e-4, 1e-3, 1e-2] {
        let rtt_s: f64 = 2e-3;
        // Enough simulated time for about 80 loss episodes, at least 2 s.
        let episodes_per_s = 1.2247 * p.sqrt() / rtt_s;
        let duration = (80.0 / episodes_per_s).max(2.0);
        let r = run(&format!(
            r#"{{"link": "10gige-lan", "stack": "ideal", "seed": 7, "path": {{"delay_us": 1000, "loss": {p}}},
                "tcp": {{"cc": "reno", "delayed_ack": false, "window_bytes": 1073741824, "duration_s": {duration}}}}}"#
        ));
        let rtt = r.min_rtt_us.unwrap() * 1e-6;
        let mathis = r.mss_bytes as f64 / rtt * 1.5f64.sqrt() / p.sqrt() / 1e6;
        let err = (r.bw_MBps - mathis) / mathis;
        assert!(
            err.abs() <= 0.25,
            "p = {p}: {:.2} vs Mathis {mathis:.2} MB/s ({:+.1}%), {} timeouts",
            r.bw_MBps,
            err * 100.0,
            r.timeouts
        );
    }
}
