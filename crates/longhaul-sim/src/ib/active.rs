//! The queue pairs of one host that may have work requests to transmit, kept in id order (the
//! host's round-robin order). A sorted vector: hosts have from one to a few hundred queue pairs,
//! the send engine looks up the next one for every packet, and membership changes only per
//! message, so a lookup must be cheap and a change may cost a short memmove.

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

    pub fn remove(&mut self, qp: u32) {
        if let Ok(i) = self.0.binary_search(&qp) {
            self.0.remove(i);
        }
    }

    /// The first queue pair with an id at least `from`.
    #[inline]
    pub fn first_from(&self, from: u32) -> Option<u32> {
        let i = self.0.partition_point(|&q| q < from);
        self.0.get(i).copied()
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
        assert_eq!(a.first_from(4), Some(5));
        assert_eq!(a.first_from(10), None);
        a.remove(5);
        a.remove(7);
        assert_eq!(a.first_from(4), Some(9));
    }
}
