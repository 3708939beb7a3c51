//! Opening a TUN device inside a named network namespace (/run/netns/NAME), with the
//! virtio-net header (IFF_VNET_HDR) and TSO/checksum offload (TUNSETOFFLOAD) so that the
//! kernel hands us 64 KB TCP super-packets instead of MTU-sized ones: without offloads a
//! 1500-byte TUN path stalls near 70 k packets/s (~1 Gb/s) on this kind of machine.
//! Ioctl numbers and flags: Linux include/uapi/linux/if_tun.h.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::sys::check;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca; // _IOW('T', 202, int)
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0; // _IOW('T', 208, unsigned int)
const TUNSETCARRIER: libc::c_ulong = 0x4004_54e2; // _IOW('T', 226, int), Linux 5.0 and later
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tun {
    pub fd: OwnedFd,
    /// Whether TSO + checksum offload could be enabled (else: one MTU packet per read).
    pub offload: bool,
}

/// Run `f` with the calling thread inside the namespace `ns_name`, then come back.
fn in_netns<T>(ns_name: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let home = File::open("/proc/thread-self/ns/net")?;
    let target = File::open(format!("/run/netns/{ns_name}"))
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace '{ns_name}': {e}")))?;
    // SAFETY: setns on valid namespace fds.
    check(unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) })?;
    let result = f();
    check(unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) })?;
    result
}

/// Create the (non-persistent) TUN device `ifname` in namespace `ns_name`; it disappears
/// when the returned fd is closed, i.e. when the data plane exits for any reason.
pub fn open(ns_name: &str, ifname: &str) -> io::Result<Tun> {
    in_netns(ns_name, || {
        let path = CString::new("/dev/net/tun").unwrap();
        // SAFETY: valid C string; flags are plain ints.
        let raw = check(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
        // SAFETY: raw is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR, _pad: [0; 22] };
        if ifname.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name '{ifname}' too long")));
        }
        for (dst, src) in req.name.iter_mut().zip(ifname.bytes()) {
            *dst = src as libc::c_char;
        }
        // SAFETY: req is a properly sized ifreq.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) })?;
        let flags = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
        // SAFETY: TUNSETOFFLOAD takes the flags by value.
        let offload = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, flags as libc::c_ulong) } == 0;
        Ok(Tun { fd, offload })
    })
}

/// Carrier on or off: off, the kernel marks the device NO-CARRIER and a multipath route's
/// next hop through it `linkdown` (with net.ipv4.conf.*.ignore_routes_with_linkdown = 1 the
/// route then skips it), as when the light on a host's own port goes out.
pub fn set_carrier(fd: &OwnedFd, on: bool) -> io::Result<()> {
    let value: libc::c_int = on.into();
    // SAFETY: TUNSETCARRIER reads an int through the pointer.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETCARRIER, &value) }).map(|_| ())
}
