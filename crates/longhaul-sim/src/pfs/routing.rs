//! The subnet manager's view of the parallel WAN links: which are plugged, which it has made
//! active, and the route of each destination over them.
//!
//! Routing is OpenSM's default engine, minhop, with LMC 0: the parallel links between the two
//! sites' switches are equal-hop ports, and a switch routes each destination LID out of the
//! least used of them, taking destinations in LID order ([OSM] "Min Hop Algorithm ... port
//! equalization"). So destination `d` (LID ordinal) leaves by active link `d mod n`; with LMC
//! `l` each port owns 2^l consecutive LIDs and the file system uses the base one (GPFS opens
//! one connection per node pair), so base LIDs land on link `d·2^l mod n`. Writes to server
//! `s` cross the link of its LID; replies and read data to client `c` the link of its.
//! Automatic path migration's alternate path uses each port's second LID (base + 1, so LMC >= 1),
//! which minhop puts on the next link: a different link from the primary's whenever two are
//! active.
//!
//! A link unplugged stops carrying packets at once, but routes still point at it until the SM
//! has swept and uploaded new forwarding tables. A link plugged back carries nothing until the
//! SM has made it Active and routes over it again (when: `crate::ib::subnet_manager`).

#[derive(Debug, Clone)]
pub struct Routes {
    pub plugged: Vec<bool>,
    pub active: Vec<bool>,
    lmc: u32,
    /// The link carrying traffic toward each server / each client (None: no active link).
    pub to_server: Vec<Option<usize>>,
    pub to_client: Vec<Option<usize>>,
    /// The alternate path automatic path migration loads: the port's second LID (base + 1),
    /// which minhop routes out of the next link; with LMC 0 there is none (the base LID's).
    pub alt_to_server: Vec<Option<usize>>,
    pub alt_to_client: Vec<Option<usize>>,
}

impl Routes {
    pub fn new(links: usize, lmc: u32, clients: usize, servers: usize) -> Self {
        let mut r = Routes {
            plugged: vec![true; links],
            active: vec![true; links],
            lmc,
            to_server: vec![None; servers],
            to_client: vec![None; clients],
            alt_to_server: vec![None; servers],
            alt_to_client: vec![None; clients],
        };
        r.reroute();
        r
    }

    /// The SM's heavy sweep: every plugged link active, every route recomputed.
    pub fn reroute(&mut self) {
        self.active.clone_from(&self.plugged);
        let up: Vec<usize> = (0..self.active.len()).filter(|&k| self.active[k]).collect();
        let lids = 1usize << self.lmc;
        let second = usize::from(self.lmc > 0);
        let pick = |lid: usize| (!up.is_empty()).then(|| up[lid % up.len()]);
        for (s, r) in self.to_server.iter_mut().enumerate() {
            *r = pick(s * lids);
        }
        for (c, r) in self.to_client.iter_mut().enumerate() {
            *r = pick(c * lids);
        }
        for (s, r) in self.alt_to_server.iter_mut().enumerate() {
            *r = pick(s * lids + second);
        }
        for (c, r) in self.alt_to_client.iter_mut().enumerate() {
            *r = pick(c * lids + second);
        }
    }

    pub fn unplug(&mut self, k: usize) {
        self.plugged[k] = false;
        self.active[k] = false;
    }

    pub fn plug(&mut self, k: usize) {
        self.plugged[k] = true;
    }

    /// The links a connection between client `c` and server `s` uses now, if both carry packets
    /// (the tests' view: the drivers follow the links' events instead).
    #[cfg(test)]
    pub fn alive(&self, c: usize, s: usize) -> bool {
        let ok = |l: Option<usize>| l.is_some_and(|k| self.active[k]);
        ok(self.to_server[s]) && ok(self.to_client[c])
    }

    pub fn links_up(&self) -> u32 {
        self.active.iter().filter(|&&a| a).count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minhop_spreads_destinations_and_moves_them_off_a_dead_link_only_after_a_sweep() {
        let mut r = Routes::new(4, 0, 2, 6);
        assert_eq!(r.to_server, [0, 1, 2, 3, 0, 1].map(Some));
        r.unplug(1);
        assert!(!r.alive(0, 1) && r.alive(0, 0));
        r.reroute();
        assert_eq!(r.to_server, [0, 2, 3, 0, 2, 3].map(Some));
        assert!(r.alive(1, 1));
        r.plug(1);
        assert!(!r.active[1]);
        r.reroute();
        assert_eq!(r.to_server[1], Some(1));
    }

    #[test]
    fn lmc_puts_base_lids_on_fewer_links_and_no_link_is_no_route() {
        let r = Routes::new(4, 2, 2, 4);
        assert_eq!(r.to_server, [Some(0); 4]);
        let mut r = Routes::new(1, 0, 1, 1);
        r.unplug(0);
        r.reroute();
        assert_eq!(r.to_server, [None]);
        assert!(!r.alive(0, 0));
    }

    #[test]
    fn the_alternate_path_is_on_another_link_with_lmc_and_the_same_without() {
        let r = Routes::new(4, 1, 2, 3);
        assert_eq!((r.to_server, r.alt_to_server), ([0, 2, 0].map(Some).to_vec(), [1, 3, 1].map(Some).to_vec()));
        assert_eq!(r.alt_to_client, [1, 3].map(Some));
        let r = Routes::new(4, 0, 2, 3);
        assert_eq!(r.alt_to_server, r.to_server);
    }
}
