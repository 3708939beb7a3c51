//! The stats file: one JSON object the controller reads, replaced atomically (write to a
//! temporary file, then rename) so a reader never sees half of it.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use crate::dataplane::Counters;
use crate::model::{DirectionConfig, QueueLimit};

pub struct DirectionStats<'a> {
    pub name: &'a str,
    pub config: &'a DirectionConfig,
    pub counters: &'a Counters,
}

pub fn render(directions: &[DirectionStats], elapsed_s: f64, cpu_s: f64, offload: bool, running: bool) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"elapsed_s\": {elapsed_s:.6}, \"cpu_s\": {cpu_s:.6}, \"offload\": {offload}, \"running\": {running}, \"directions\": {{"
    );
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
             \"drops_queue\": {}, \"drops_loss\": {}, \"drops_no_route\": {}, \"drops_write\": {}, \
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
        let text = render(&[DirectionStats { name: "ab", config: &cfg, counters: &c }], 1.5, 0.25, true, true);
        assert!(text.starts_with('{') && text.trim_end().ends_with('}'));
        assert!(text.contains("\"packets_in\": 3"));
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
