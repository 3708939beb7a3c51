//! The flow-level MPI network (`mpi.network = "fluid"`) against the packet level on the S1
//! points' scenarios (python/longhaul/validation/mpi.py builds the same ones): every measured
//! quantity within 5%, the criterion of issue 27. And the flow level's own invariants.

use longhaul_sim::mpi::{run_mpi_json, MpiRecord};

fn run(json: &str, network: &str) -> MpiRecord {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["mpi"]["network"] = network.into();
    let r = run_mpi_json(&v.to_string()).unwrap_or_else(|e| panic!("{json}: {}", e.0));
    assert_eq!(r.status, "ok", "{json} over {network}");
    assert_eq!(r.network, network);
    r
}

fn osu(bench: &str, size: u64, delay_us: f64, extra_mpi: &str, cluster: &str) -> String {
    format!(
        r#"{{"path": {{"delay_us": {delay_us}}}, "cluster": {{{cluster}}}, "mpi": {{{extra_mpi}}},
            "osu": {{"bench": "{bench}", "size_bytes": {size}}}}}"#
    )
}

/// (what, scenario, the quantity it measures)
fn s1_cases() -> Vec<(String, String, fn(&MpiRecord) -> f64)> {
    let bw: fn(&MpiRecord) -> f64 = |r| r.bw_MBps.unwrap();
    let rate: fn(&MpiRecord) -> f64 = |r| r.msg_rate_Mps.unwrap();
    let lat: fn(&MpiRecord) -> f64 = |r| r.lat_us.unwrap();
    let run_time: fn(&MpiRecord) -> f64 = |r| r.run_time_s.unwrap();
    let mut cases = Vec::new();
    for size in [1u64 << 20, 4 << 20] {
        cases.push((format!("S1-mpi-bw-peak osu_bw {size} B"), osu("bw", size, 0.0, "", ""), bw));
    }
    for thr in [8192, 65536] {
        let mpi = format!(r#""eager_threshold_bytes": {thr}"#);
        cases.push((format!("S1-mpi-rndv-threshold-tuning threshold {thr}"), osu("bw", 8192, 1000.0, &mpi, ""), bw));
    }
    for pairs in [1, 4] {
        let json = format!(
            r#"{{"path": {{"delay_us": 1000}}, "osu": {{"bench": "mbw_mr", "size_bytes": 8, "pairs": {pairs}}}}}"#
        );
        cases.push((format!("S1-mpi-multipair {pairs} pairs"), json, rate));
    }
    for delay in [10.0, 100.0, 1000.0] {
        for algo in ["default", "hierarchical"] {
            let mpi = format!(r#""algo": "{algo}""#);
            let cluster = r#""nodes": 32, "ppn": 2, "placement": "block""#;
            cases.push((
                format!("S1-mpi-bcast-hierarchical {algo} at {delay} us"),
                osu("bcast", 131072, delay, &mpi, cluster),
                lat,
            ));
        }
    }
    for app in ["is", "ft", "cg"] {
        for delay in [0.0, 1000.0] {
            let json = format!(
                r#"{{"path": {{"delay_us": {delay}}}, "cluster": {{"nodes": 16, "ppn": 2}}, "mpi": {{}},
                    "app": {{"name": "{app}", "class": "B"}}}}"#
            );
            cases.push((format!("S1-nas-tolerance {app} at {delay} us"), json, run_time));
        }
    }
    cases
}

/// Issue 27's criterion: the flow level within 5% of the packet level on every S1 scenario.
#[test]
fn fluid_agrees_with_packet_level_on_the_s1_points() {
    let mut worst: f64 = 0.0;
    let mut failed = Vec::new();
    for (what, json, measure) in s1_cases() {
        let (p, f) = (measure(&run(&json, "packet")), measure(&run(&json, "fluid")));
        let err = f / p - 1.0;
        println!("{what}: packet {p:.4}, fluid {f:.4}, {:+.1}%", 100.0 * err);
        worst = worst.max(err.abs());
        if err.abs() > 0.05 {
            failed.push(format!("{what}: packet {p:.4} fluid {f:.4} ({:+.1}%)", 100.0 * err));
        }
    }
    assert!(failed.is_empty(), "beyond 5%: {failed:#?}");
    println!("worst {:.2}%", 100.0 * worst);
}
