//! NFS/RDMA over a long round trip against the window it is limited by: the server's send
//! queue holds credits x 8 work requests (svcrdma's sc_sq_depth), and a 32 KiB READ posts 8
//! page Writes and one reply Send, so 8/9 of them carry 4 KiB each; one window per round trip.

use longhaul_sim::nfs::run_nfs_json;
use longhaul_sim::nfs::NfsParams;

fn rdma_bw(delay_us: f64, slots: u32) -> f64 {
    let json = format!(
        r#"{{"transport": "rdma", "path": {{"delay_us": {delay_us}}}, "nfs": {{"simulated_bytes": 8388608, "slots": {slots}}}}}"#
    );
    run_nfs_json(&json).unwrap().bw_MBps
}

#[test]
fn rdma_at_long_delay_moves_one_send_queue_of_pages_per_round_trip() {
    let p = NfsParams::s1();
    for delay_us in [1000.0, 2000.0] {
        let bw = rdma_bw(delay_us, p.rdma_credits);
        let window_bytes = (p.rdma_credits * p.sq_depth_per_credit) as f64 * 4096.0 * 8.0 / 9.0;
        let expect = window_bytes / (2.0 * delay_us); // bytes per us = MB/s
        let err = (bw - expect) / expect;
        assert!(err.abs() < 0.10, "{delay_us} us: model {bw:.1} MB/s, window/RTT {expect:.1} ({:+.1}%)", 100.0 * err);
    }
}

#[test]
fn twice_the_credits_give_twice_the_send_queue_and_throughput_at_1000_us() {
    // svcrdma sizes its send queue from the credits it grants, so the window follows them.
    let one = rdma_bw(1000.0, 16);
    let two = rdma_bw(1000.0, 32);
    let ratio = two / one;
    assert!((1.8..=2.2).contains(&ratio), "16 credits {one:.1} MB/s, 32 credits {two:.1} MB/s ({ratio:.2}x)");
}
