//! Taking links down and up while the data plane runs (`longhaul emu link down|up K`).
//!
//! The controller writes the links that should be down into the control file (`--control
//! PATH`: link numbers separated by white space; empty = all up) and sends SIGUSR2. A link
//! taken down is cut at once (its lane drops what it is given and what was on its fibre);
//! the hosts learn of it `detect_ns` later, when its TUN devices lose carrier and the routes
//! skip it (the failure detector's time: 0 = at once, as a host whose own port goes dark).
//! A link brought up gets carrier and carries traffic at once.

use std::sync::Arc;

use crate::dataplane::LinkStates;

/// A carrier change the main thread must make on the link's TUN devices.
#[derive(Debug, PartialEq, Eq)]
pub struct CarrierChange {
    pub link: usize,
    pub on: bool,
}

pub struct Control {
    pub links: Arc<LinkStates>,
    detect_ns: u64,
    carrier_due: Vec<Option<u64>>,
    /// Whether the hosts see the link (its TUN devices have carrier).
    pub carrier: Vec<bool>,
    /// Times the link went down or up, and when it last did (monotonic ns; 0 = never).
    pub changes: Vec<u64>,
    pub changed_ns: Vec<u64>,
}

/// The links the control file wants down: `text` holds link numbers below `links`.
pub fn parse_down(text: &str, links: usize) -> Result<Vec<bool>, String> {
    let mut down = vec![false; links];
    for word in text.split_whitespace() {
        match word.parse::<usize>() {
            Ok(k) if k < links => down[k] = true,
            _ => return Err(format!("control file: '{word}' is not a link number in 0..{}", links - 1)),
        }
    }
    Ok(down)
}

impl Control {
    pub fn new(links: Arc<LinkStates>, detect_ns: u64) -> Control {
        let n = links.len();
        Control {
            links,
            detect_ns,
            carrier_due: vec![None; n],
            carrier: vec![true; n],
            changes: vec![0; n],
            changed_ns: vec![0; n],
        }
    }

    /// Make the links' states what `down` says at `now_ns`; returns the carrier changes due now.
    pub fn apply(&mut self, down: &[bool], now_ns: u64) -> Vec<CarrierChange> {
        for (k, &want_down) in down.iter().enumerate() {
            let up = self.links.is_up(k);
            if want_down && up {
                self.links.set(k, false);
                self.carrier_due[k] = Some(now_ns + self.detect_ns);
            } else if !want_down && !up {
                self.carrier_due[k] = None;
                self.links.set(k, true);
            } else {
                continue;
            }
            self.changes[k] += 1;
            self.changed_ns[k] = now_ns;
        }
        let mut out = self.due(now_ns);
        for (k, carrier) in self.carrier.iter_mut().enumerate() {
            if self.links.is_up(k) && !*carrier {
                *carrier = true;
                out.push(CarrierChange { link: k, on: true });
            }
        }
        out
    }

    /// Carrier losses whose detection time has come by `now_ns`.
    pub fn due(&mut self, now_ns: u64) -> Vec<CarrierChange> {
        let mut out = Vec::new();
        for k in 0..self.carrier_due.len() {
            if matches!(self.carrier_due[k], Some(t) if t <= now_ns) {
                self.carrier_due[k] = None;
                self.carrier[k] = false;
                out.push(CarrierChange { link: k, on: false });
            }
        }
        out
    }

    /// When the next carrier loss is due, if one is pending.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.carrier_due.iter().flatten().min().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(links: usize, detect_ns: u64) -> Control {
        Control::new(Arc::new(LinkStates::all_up(links)), detect_ns)
    }

    #[test]
    fn control_file_names_links_in_range() {
        assert_eq!(parse_down("", 4).unwrap(), vec![false; 4]);
        assert_eq!(parse_down(" 1\n3 ", 4).unwrap(), vec![false, true, false, true]);
        assert!(parse_down("4", 4).is_err());
        assert!(parse_down("-1", 4).is_err());
        assert!(parse_down("x", 4).is_err());
    }

    #[test]
    fn a_cut_is_immediate_and_the_hosts_learn_it_after_the_detection_time() {
        let mut c = control(4, 500);
        assert_eq!(c.apply(&[false, true, false, false], 1000), vec![]);
        assert!(!c.links.is_up(1) && c.carrier[1]);
        assert_eq!(c.next_due_ns(), Some(1500));
        assert_eq!(c.due(1499), vec![]);
        assert_eq!(c.due(1500), vec![CarrierChange { link: 1, on: false }]);
        assert_eq!(c.next_due_ns(), None);
        assert_eq!((c.changes[1], c.changed_ns[1]), (1, 1000));
    }

    #[test]
    fn restoring_brings_carrier_back_at_once_even_before_detection() {
        let mut c = control(2, 0);
        assert_eq!(c.apply(&[true, false], 10), vec![CarrierChange { link: 0, on: false }]);
        assert_eq!(c.apply(&[false, false], 20), vec![CarrierChange { link: 0, on: true }]);
        assert!(c.links.is_up(0) && c.carrier[0] && c.changes[0] == 2);
        // Down and up again before the hosts noticed: no carrier change at all.
        let mut slow = control(2, 1000);
        slow.apply(&[true, false], 10);
        assert_eq!(slow.apply(&[false, false], 20), vec![]);
        assert_eq!(slow.next_due_ns(), None);
        // The same state again changes nothing.
        assert_eq!(slow.apply(&[false, false], 30), vec![]);
        assert_eq!(slow.changes[0], 2);
    }
}
