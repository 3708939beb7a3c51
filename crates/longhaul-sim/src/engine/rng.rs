//! Random-number streams: one independent, seeded stream per component and purpose, so that
//! adding a component never changes the draws another one sees (a run is reproducible from its
//! seed, and comparable across scenarios that differ in one component).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One seeded stream of random draws (xoshiro256++), owned by one component for one purpose.
pub struct RngStream(Xoshiro256PlusPlus);

impl RngStream {
    /// Stream `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        // splitmix-style mixing of (seed, stream) into one 64-bit seed for the generator.
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        RngStream(Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31)))
    }

    /// True with probability `p` (p = 0 never draws, so loss-free runs consume no randomness).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.0.random::<f64>() < p
    }

    /// A draw uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }
}
