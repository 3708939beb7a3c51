//! NFS/RDMA over a long round trip against the window it is limited by: the adapter keeps
//! `max_inflight_wqes` work requests in flight per queue pair, and a 32 KiB READ posts 8 page
//! Writes and one reply Send, so 8/9 of them carry 4 KiB each; one window per round trip.

use longhaul_sim::ib::HcaProfile;
use longhaul_sim::nfs::run_nfs_json;

#[test]
fn rdma_at_long_delay_moves_one_window_of_pages_per_round_trip() {
    let hca = HcaProfile::infinihost3();
    for delay_us in [1000.0, 5000.0] {
        let json = format!(r#"{{"transport": "rdma", "path": {{"delay_us": {delay_us}}}, "nfs": {{"simulated_bytes": 4194304}}}}"#);
        let r = run_nfs_json(&json).unwrap();
        let window_bytes = hca.max_inflight_wqes as f64 * 4096.0 * 8.0 / 9.0;
        let expect = window_bytes / (2.0 * delay_us); // bytes per us = MB/s
        let err = (r.bw_MBps - expect) / expect;
        assert!(err.abs() < 0.10, "{delay_us} us: model {:.1} MB/s, window/RTT {expect:.1} ({err:+.1}%)", r.bw_MBps);
    }
}

#[test]
fn the_collapse_is_nfs_rdma_s_not_the_path_s() {
    // The same path and slot count over TCP (whole replies in flight, not 16 pages) moves more
    // at 1000 us, even with slow start inside this short run.
    let tcp = run_nfs_json(r#"{"transport": "ipoib-ud", "path": {"delay_us": 1000}, "nfs": {"simulated_bytes": 8388608}}"#).unwrap();
    let rdma = run_nfs_json(r#"{"transport": "rdma", "path": {"delay_us": 1000}, "nfs": {"simulated_bytes": 8388608}}"#).unwrap();
    assert!(tcp.bw_MBps > 2.0 * rdma.bw_MBps, "tcp {} rdma {}", tcp.bw_MBps, rdma.bw_MBps);
}
