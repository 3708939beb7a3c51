//! The queue pairs of one host that may have work requests to transmit, kept in id order (the
//! host's round-robin order). A sorted vector: hosts have from one to a few hundred queue pairs,
//! the send engine walks them from its round-robin position for every packet, and membership
//! changes only per message, so a walk must be cheap and a change may cost a short memmove.

#[derive(Debug, Default)]
pub(crate) struct ActiveQps(Vec<u32>);

impl ActiveQps {
    pub fn insert(&mut self, qp: u32) {
        match self.0.last() {
            None => self.0.push(qp),
            Some(&last) if last < qp => self.0.push(qp),
            _ => {
                if let Err(i) = self.0.binary_search(&qp) {
                    self.0.insert(i, qp);
                }
            }
        }
    }

    /// The position (in `0..=len`) of the first queue pair with an id at least `from`.
    #[inline]
    pub fn position_from(&self, from: u32) -> usize {
        self.0.partition_point(|&q| q < from)
    }

    pub fn contains(&self, qp: u32) -> bool {
        self.0.binary_search(&qp).is_ok()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The queue pair at position `i` (in id order).
    #[inline]
    pub fn at(&self, i: usize) -> u32 {
        self.0[i]
    }

    /// Remove the queue pair at position `i`: the next one moves into it.
    #[inline]
    pub fn remove_at(&mut self, i: usize) {
        self.0.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_ids_sorted_and_unique() {
        let mut a = ActiveQps::default();
        for qp in [5, 1, 9, 5, 3] {
            a.insert(qp);
        }
        assert_eq!(a.0, vec![1, 3, 5, 9]);
        assert_eq!(a.position_from(4), 2);
        assert_eq!(a.at(2), 5);
        assert_eq!(a.position_from(10), a.len());
        a.remove_at(2);
        assert_eq!(a.at(a.position_from(4)), 9);
    }
}
