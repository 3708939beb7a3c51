//! longhaul-wan: the data plane of `longhaul emu` (a userspace long-haul link between
//! network namespaces) and the small load generators its benchmarks use.
//!
//! Sub-commands: link, tcp-sink, tcp-source, ping-server, ping-client, cbr-source, cbr-sink.
//! Errors are one line on stderr and exit status 2; the Python control plane validates user
//! input before it gets here, so these are for direct use and internal faults.

mod args;
mod control;
mod dataplane;
mod histogram;
mod link;
mod loadgen_tcp;
mod loadgen_udp;
mod model;
mod packet;
mod rng;
mod rxstamp;
mod stats;
mod sys;
mod tun;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = argv.split_first() else {
        eprintln!("usage: longhaul-wan link|tcp-sink|tcp-source|ping-server|ping-client|cbr-source|cbr-sink --option value ...");
        std::process::exit(2);
    };
    let result = args::Args::parse(rest).and_then(|a| match command.as_str() {
        "link" => link::main(&a),
        "tcp-sink" => loadgen_tcp::sink(&a),
        "tcp-source" => loadgen_tcp::source(&a),
        "ping-server" => loadgen_udp::ping_server(&a),
        "ping-client" => loadgen_udp::ping_client(&a),
        "cbr-source" => loadgen_udp::cbr_source(&a),
        "cbr-sink" => loadgen_udp::cbr_sink(&a),
        other => Err(format!("unknown sub-command '{other}'")),
    });
    if let Err(message) = result {
        eprintln!("longhaul-wan {command}: error: {message}");
        std::process::exit(2);
    }
}
