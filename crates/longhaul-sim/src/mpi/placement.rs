//! Rank placement on the two clusters: N nodes x P process slots per node on each side.
//!
//! Nodes are numbered cluster A first (0..N-1), then cluster B (N..2N-1). `block` fills node 0's
//! slots, then node 1's, ... (ranks 0..NP-1 in cluster A: MPI launchers' default, and [S1]'s
//! "block rank placement"); `cyclic` deals ranks round-robin over the clusters' nodes in turn
//! (A0, B0, A1, B1, ..., then A0 again: neighbouring ranks sit in different clusters, as in
//! `longhaul emu mpi`); `map` takes the node of every rank explicitly.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    Block,
    Cyclic,
    /// Node index (0..2N) of each rank, in rank order.
    Map(Vec<u32>),
}

/// Where every rank runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub nodes_per_cluster: u32,
    pub ppn: u32,
    /// node[rank]: 0..2N (cluster A is 0..N).
    pub node: Vec<u32>,
}

impl Layout {
    /// Place `ranks` ranks; errors name the problem for the user.
    pub fn new(nodes_per_cluster: u32, ppn: u32, ranks: u32, placement: &Placement) -> Result<Layout, String> {
        let slots = 2 * nodes_per_cluster * ppn;
        if ranks > slots {
            return Err(format!("ranks: {ranks} ranks need more than the {slots} slots (2 clusters x {nodes_per_cluster} nodes x {ppn} processes per node): raise nodes or ppn"));
        }
        let nn = 2 * nodes_per_cluster;
        let node = match placement {
            Placement::Block => (0..ranks).map(|r| r / ppn).collect(),
            Placement::Cyclic => {
                (0..ranks).map(|r| (r % 2) * nodes_per_cluster + (r / 2) % nodes_per_cluster).collect()
            }
            Placement::Map(m) => {
                if m.len() != ranks as usize {
                    return Err(format!("rank_map: {} entries for {ranks} ranks (one node index per rank)", m.len()));
                }
                let mut used = vec![0u32; nn as usize];
                for (r, &n) in m.iter().enumerate() {
                    if n >= nn {
                        return Err(format!(
                            "rank_map: rank {r} on node {n}, valid nodes are 0..{} (cluster A: 0..{})",
                            nn - 1,
                            nodes_per_cluster - 1
                        ));
                    }
                    used[n as usize] += 1;
                    if used[n as usize] > ppn {
                        return Err(format!("rank_map: node {n} holds more than {ppn} ranks (processes per node)"));
                    }
                }
                m.clone()
            }
        };
        Ok(Layout { nodes_per_cluster, ppn, node })
    }

    pub fn ranks(&self) -> u32 {
        self.node.len() as u32
    }
    /// 0 = cluster A, 1 = cluster B.
    pub fn cluster(&self, rank: u32) -> u32 {
        u32::from(self.node[rank as usize] >= self.nodes_per_cluster)
    }
    pub fn same_node(&self, a: u32, b: u32) -> bool {
        self.node[a as usize] == self.node[b as usize]
    }
    /// Ranks of one cluster, ascending.
    pub fn members(&self, cluster: u32) -> Vec<u32> {
        (0..self.ranks()).filter(|&r| self.cluster(r) == cluster).collect()
    }
    /// True if ranks run in both clusters (the long-haul link is in play).
    pub fn spans_clusters(&self) -> bool {
        !self.members(0).is_empty() && !self.members(1).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_cyclic_and_map() {
        let b = Layout::new(2, 2, 8, &Placement::Block).unwrap();
        assert_eq!(b.node, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(b.members(1), vec![4, 5, 6, 7]);
        let c = Layout::new(2, 2, 8, &Placement::Cyclic).unwrap();
        // A0, B0, A1, B1, then round again: neighbours in different clusters.
        assert_eq!(c.node, vec![0, 2, 1, 3, 0, 2, 1, 3]);
        assert!((0..7).all(|r| c.cluster(r) != c.cluster(r + 1)));
        let m = Layout::new(1, 1, 2, &Placement::Map(vec![1, 0])).unwrap();
        assert_eq!(m.cluster(0), 1);
    }

    #[test]
    fn too_many_ranks_or_bad_map_is_an_error() {
        assert!(Layout::new(2, 2, 9, &Placement::Block).unwrap_err().contains("slots"));
        assert!(Layout::new(1, 1, 2, &Placement::Map(vec![0, 0])).unwrap_err().contains("more than 1"));
        assert!(Layout::new(1, 1, 2, &Placement::Map(vec![0, 5])).unwrap_err().contains("valid nodes"));
    }
}
