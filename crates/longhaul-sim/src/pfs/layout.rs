//! Where a block goes: the file system's striping of blocks over LUNs (NSDs or OSTs) and of
//! LUNs over servers. GPFS stripes every file's blocks round-robin over all NSDs of the file
//! system, starting at a different NSD per file; Lustre gives each file `stripe_count` OSTs,
//! picked by its round-robin allocator (each new file starts at the OST after the last file's
//! first), and stripes the file's RPC-sized pieces over them.

use super::params::Variant;

#[derive(Debug, Clone)]
pub struct Layout {
    pub variant: Variant,
    pub servers: u32,
    /// LUNs in the file system; LUN `n` is served by server `n % servers` (the NSD server list
    /// given round-robin, as mmcrnsd stanzas usually are).
    pub luns: u32,
    pub stripe_count: u32,
    /// Blocks per application file.
    pub blocks_per_file: u64,
    /// Lustre's allocator: the first OST of the next file created.
    next_ost: u32,
}

impl Layout {
    pub fn new(variant: Variant, servers: u32, luns: u32, stripe_count: u32, blocks_per_file: u64) -> Self {
        Layout { variant, servers, luns, stripe_count, blocks_per_file, next_ost: 0 }
    }

    pub fn server_of(&self, lun: u32) -> u32 {
        lun % self.servers
    }

    /// The LUNs a new file is spread over, in stripe order (`thread` is the writer's index over
    /// all clients: GPFS starts each writer's files at a different NSD).
    pub fn new_file(&mut self, thread: u32, file: u64) -> Vec<u32> {
        match self.variant {
            Variant::Gpfs => {
                let start = (thread as u64 + file) % self.luns as u64;
                (0..self.luns).map(|i| ((start + i as u64) % self.luns as u64) as u32).collect()
            }
            Variant::Lustre => {
                let start = self.next_ost;
                self.next_ost = (start + 1) % self.luns;
                (0..self.stripe_count).map(|i| (start + i) % self.luns).collect()
            }
        }
    }

    /// The LUN of block `seq` of a writer whose current file has `targets`.
    pub fn lun_of(&self, targets: &[u32], seq: u64) -> u32 {
        targets[((seq % self.blocks_per_file) % targets.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpfs_spreads_every_file_over_all_nsds_and_lustre_over_its_stripe() {
        let mut g = Layout::new(Variant::Gpfs, 2, 6, 1, 100);
        let t = g.new_file(3, 0);
        assert_eq!(t, vec![3, 4, 5, 0, 1, 2]);
        let luns: Vec<u32> = (0..6).map(|s| g.lun_of(&t, s)).collect();
        assert_eq!(luns, t);
        assert_eq!(g.server_of(5), 1);
        let mut l = Layout::new(Variant::Lustre, 2, 6, 2, 100);
        assert_eq!(l.new_file(0, 0), vec![0, 1]);
        assert_eq!(l.new_file(1, 0), vec![1, 2]);
    }
}
