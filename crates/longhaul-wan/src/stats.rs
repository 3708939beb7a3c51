//! The stats file: one JSON object the controller reads, replaced atomically (write to a
//! temporary file, then rename) so a reader never sees half of it.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use crate::dataplane::{Counters, LaneCounters};
use crate::model::{DirectionConfig, QueueLimit};

pub struct DirectionStats<'a> {
    pub name: &'a str,
    pub config: &'a DirectionConfig,
    pub counters: &'a Counters,
}

/// One link's state and its counters in each direction.
pub struct LinkStats<'a> {
    pub up: bool,
    /// Whether the hosts see it (carrier on its TUN devices).
    pub carrier: bool,
    pub changes: u64,
    /// When it last went down or up (seconds since start), if it ever did.
    pub changed_s: Option<f64>,
    pub ab: &'a LaneCounters,
    pub ba: &'a LaneCounters,
}

fn lane_json(c: &LaneCounters) -> String {
    format!(
        "{{\"packets_in\": {}, \"bytes_in\": {}, \"packets_out\": {}, \"bytes_out\": {}, \"drops_queue\": {}, \
         \"drops_loss\": {}, \"drops_down\": {}, \"queue_bytes\": {}, \"queue_packets\": {}}}",
        c.packets_in.load(Relaxed),
        c.bytes_in.load(Relaxed),
        c.packets_out.load(Relaxed),
        c.bytes_out.load(Relaxed),
        c.drops_queue.load(Relaxed),
        c.drops_loss.load(Relaxed),
        c.drops_down.load(Relaxed),
        c.queue_bytes.load(Relaxed),
        c.queue_packets.load(Relaxed),
    )
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for ch in text.chars() {
        match ch {
            '"' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub fn render(
    directions: &[DirectionStats],
    links: &[LinkStats],
    elapsed_s: f64,
    cpu_s: f64,
    offload: bool,
    running: bool,
    control_error: Option<&str>,
) -> String {
    let mut s = String::new();
    let error = control_error.map_or("null".to_string(), json_string);
    let _ = write!(
        s,
        "{{\"elapsed_s\": {elapsed_s:.6}, \"cpu_s\": {cpu_s:.6}, \"offload\": {offload}, \"running\": {running}, \
         \"control_error\": {error}, \"links\": ["
    );
    for (k, l) in links.iter().enumerate() {
        let changed = l.changed_s.map_or("null".to_string(), |t| format!("{t:.6}"));
        let _ = write!(
            s,
            "{}{{\"link\": {k}, \"up\": {}, \"carrier\": {}, \"changes\": {}, \"changed_s\": {changed}, \"ab\": {}, \"ba\": {}}}",
            if k > 0 { ", " } else { "" },
            l.up,
            l.carrier,
            l.changes,
            lane_json(l.ab),
            lane_json(l.ba),
        );
    }
    s.push_str("], \"directions\": {");
    for (i, d) in directions.iter().enumerate() {
        let c = d.counters;
        let p = c.lateness.percentiles();
        let (queue_limit_bytes, queue_limit_packets) = match d.config.queue {
            QueueLimit::Bytes(b) => (b, 0),
            QueueLimit::Packets(n) => (0, n),
        };
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(
            s,
            "\"{}\": {{\"delay_us\": {}, \"jitter_us\": {}, \"rate_bps\": {}, \"loss\": {}, \
             \"queue_limit_bytes\": {}, \"queue_limit_packets\": {}, \"realtime\": {}, \
             \"packets_in\": {}, \"segments_in\": {}, \"bytes_in\": {}, \"packets_out\": {}, \"bytes_out\": {}, \
             \"drops_queue\": {}, \"drops_loss\": {}, \"drops_no_route\": {}, \"drops_write\": {}, \"drops_down\": {}, \
             \"queue_bytes\": {}, \"queue_packets\": {}, \"queue_bytes_max\": {}, \
             \"line_packets\": {}, \"line_bytes\": {}, \
             \"lateness_count\": {}, \"lateness_p50_us\": {}, \"lateness_p90_us\": {}, \"lateness_p99_us\": {}, \
             \"lateness_p999_us\": {}, \"lateness_max_us\": {}}}",
            d.name,
            d.config.delay_ns as f64 / 1000.0,
            d.config.jitter_ns as f64 / 1000.0,
            d.config.rate_bps,
            d.config.loss,
            queue_limit_bytes,
            queue_limit_packets,
            c.realtime.load(Relaxed),
            c.packets_in.load(Relaxed),
            c.segments_in.load(Relaxed),
            c.bytes_in.load(Relaxed),
            c.packets_out.load(Relaxed),
            c.bytes_out.load(Relaxed),
            c.drops_queue.load(Relaxed),
            c.drops_loss.load(Relaxed),
            c.drops_no_route.load(Relaxed),
            c.drops_write.load(Relaxed),
            c.drops_down.load(Relaxed),
            c.queue_bytes.load(Relaxed),
            c.queue_packets.load(Relaxed),
            c.queue_bytes_max.load(Relaxed),
            c.line_packets.load(Relaxed),
            c.line_bytes.load(Relaxed),
            p.count,
            p.p50_us,
            p.p90_us,
            p.p99_us,
            p.p999_us,
            p.max_us,
        );
    }
    s.push_str("}}\n");
    s
}

pub fn write_atomically(path: &str, text: &str) -> std::io::Result<()> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_is_one_json_object_with_unit_keys() {
        let cfg = DirectionConfig::default();
        let c = Counters::default();
        c.packets_in.store(3, Relaxed);
        c.lateness.record(12_000);
        let lane = LaneCounters::default();
        lane.drops_down.store(7, Relaxed);
        let links = [LinkStats { up: false, carrier: true, changes: 1, changed_s: Some(0.5), ab: &lane, ba: &lane }];
        let dirs = [DirectionStats { name: "ab", config: &cfg, counters: &c }];
        let text = render(&dirs, &links, 1.5, 0.25, true, true, Some("bad \"x\""));
        assert!(text.starts_with('{') && text.trim_end().ends_with('}'));
        assert!(text.contains("\"packets_in\": 3"));
        assert!(text.contains("\"link\": 0, \"up\": false, \"carrier\": true, \"changes\": 1, \"changed_s\": 0.500000"));
        assert!(text.contains("\"drops_down\": 7") && text.contains("\"control_error\": \"bad \\\"x\\\"\""));
        assert!(text.contains("\"lateness_p50_us\": 12.0") || text.contains("\"lateness_p50_us\": 12"));
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn atomic_write_replaces_file() {
        let dir = std::env::temp_dir().join(format!("lhwan-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        let p = path.to_str().unwrap();
        write_atomically(p, "{\"a\": 1}").unwrap();
        write_atomically(p, "{\"a\": 2}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 2}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
