//! The names a scenario's name-valued keys accept, each read from the type or table that defines
//! it: the Python layer's option choices and sweep axes come from here (`_core.names()`), so a
//! name added to an enum or a profile table reaches the CLI without a copy to keep in step.
//!
//! Keys are the scenario's own (`model.key`, `model.table.key`): one vocabulary for the files,
//! the records and the options.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::ib::hca::HcaProfile;
use crate::mpi::apps::{AppName, NasClass};
use crate::mpi::collectives::Algo;
use crate::mpi::osu::OsuBench;
use crate::mpi::params::Rndv;
use crate::net::devices::ExtenderParams;
use crate::net::rate::{Generation, WanFraming};
use crate::nfs::scenario::NfsTransport;
use crate::scenario::{OpName, TestName, TransportName, IB_MTUS};
use crate::tcp::cc::CcName;
use crate::tcp::link::LinkKind;
use crate::tcp::params::{CwndGrowth, HostStack, RtoFormula, RtoRestart, RtoSsthresh};
use crate::tcp::scenario::STACK_PROFILES;

/// Every name-valued key of every model's scenario, with the names it accepts, in the order the
/// model lists them.
pub fn all() -> BTreeMap<&'static str, Vec<String>> {
    let strs = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let mut m = BTreeMap::new();
    m.insert("verbs.transport", variants::<TransportName>());
    m.insert("verbs.op", variants::<OpName>());
    m.insert("verbs.test", variants::<TestName>());
    // Every verbs testbed carries iSER, NFS and the parallel file systems.
    m.insert("verbs.testbed", strs(&crate::scenario::TESTBEDS));
    m.insert("verbs.hca", strs(&HcaProfile::NAMES));
    m.insert("verbs.extender", strs(&ExtenderParams::NAMES));
    m.insert("verbs.wan_framing", variants::<WanFraming>());
    m.insert("verbs.mtu_bytes", IB_MTUS.iter().map(|m| m.to_string()).collect());
    m.insert("tcp.link", strs(&LinkKind::NAMES));
    m.insert("tcp.cc", strs(&CcName::NAMES));
    m.insert("tcp.testbed", strs(&HostStack::NAMES));
    m.insert("tcp.stack", strs(&STACK_PROFILES));
    m.insert("tcp.extender", strs(&ExtenderParams::NAMES));
    m.insert("tcp.rto_formula", variants::<RtoFormula>());
    m.insert("tcp.rto_restart", variants::<RtoRestart>());
    m.insert("tcp.rto_ssthresh", variants::<RtoSsthresh>());
    m.insert("tcp.cwnd_growth", variants::<CwndGrowth>());
    m.insert("nfs.transport", strs(&NfsTransport::NAMES));
    m.insert("nfs.testbed", strs(&crate::scenario::TESTBEDS));
    m.insert("iser.op", strs(&crate::iser::IserOp::NAMES));
    m.insert("iser.testbed", strs(&crate::scenario::TESTBEDS));
    m.insert("pfs.variant", strs(&crate::pfs::Variant::NAMES));
    m.insert("pfs.testbed", strs(&crate::scenario::TESTBEDS));
    m.insert("pfs.migrate.method", strs(&crate::pfs::migrate::Method::NAMES));
    m.insert("pfs.migrate.nodes_at", strs(&crate::pfs::migrate::scenario::NodesAt::NAMES));
    m.insert("pfs.network", strs(&crate::pfs::packet::Network::NAMES));
    m.insert("pfs.transport", strs(&crate::pfs::packet::Network::TRANSPORTS));
    m.insert("mpi.osu.bench", variants::<OsuBench>());
    m.insert("mpi.algo", variants::<Algo>());
    m.insert("mpi.rndv_protocol", variants::<Rndv>());
    m.insert("mpi.library", strs(&crate::mpi::params::LIBRARIES));
    m.insert("mpi.transport", variants::<crate::mpi::scenario::MpiTransport>());
    m.insert("mpi.network", strs(&crate::mpi::network::Network::NAMES));
    m.insert("mpi.app.name", variants::<AppName>());
    m.insert("mpi.app.class", variants::<NasClass>());
    m.insert("mpi.testbed", strs(&crate::mpi::scenario::TESTBEDS));
    m.insert("mpi.node", strs(&crate::mpi::scenario::NODES));
    m.insert("mpi.placement", strs(&crate::mpi::scenario::PLACEMENTS));
    m.insert("mpi.fabric", variants::<Generation>());
    m.insert("mpi.stack", strs(&STACK_PROFILES));
    m
}

/// The names serde accepts for the enum `T` (its variants as renamed), read from its derived
/// `Deserialize`: it hands them to the deserializer, which here keeps them and stops.
pub fn variants<T: for<'de> Deserialize<'de>>() -> Vec<String> {
    let mut seen = None;
    // The stop is the expected outcome: only the variant list handed over matters.
    let _ = T::deserialize(VariantNames(&mut seen));
    seen.unwrap_or_default().iter().map(|v| v.to_string()).collect()
}

struct VariantNames<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant names read")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for VariantNames<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.0 = Some(variants);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name read is one serde accepts for the enum (as renamed), and each variant is named.
    fn round_trip<T: for<'de> Deserialize<'de> + serde::Serialize>(values: &[T]) {
        let names = variants::<T>();
        for n in &names {
            assert!(serde_json::from_str::<T>(&format!("\"{n}\"")).is_ok(), "{n} is not a name serde accepts");
        }
        for v in values {
            let named = serde_json::to_string(v).unwrap();
            assert!(names.iter().any(|n| format!("\"{n}\"") == named), "{named} is missing from {names:?}");
        }
    }

    #[test]
    fn an_enums_names_are_its_serde_names() {
        round_trip(&[WanFraming::Ib, WanFraming::Oc192]);
        round_trip(&[NasClass::A, NasClass::C]);
        round_trip(&[OsuBench::MbwMr, OsuBench::Latency]);
        assert!(serde_json::from_str::<WanFraming>("\"zz\"").is_err());
    }

    #[test]
    fn every_key_names_something() {
        for (key, names) in all() {
            assert!(!names.is_empty(), "{key} has no names");
        }
    }
}
