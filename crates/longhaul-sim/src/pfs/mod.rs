//! A parallel file system across the long-haul link (GPFS-like, with a Lustre-like variant):
//! clients writing blocks through their page pool to NSD servers and their LUNs, over several
//! WAN links that fail and come back.
//!
//! One concern per file: [`params`] (one struct per component, every default cited).

pub mod params;

pub use params::{PfsParams, Variant};
