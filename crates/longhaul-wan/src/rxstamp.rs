//! Kernel timestamps on UDP sockets, so the ping tools measure the path between the hosts'
//! network devices without the time their own threads take: the receive stamp
//! (SO_TIMESTAMPNS: the packet entered the host's stack) and the software transmit stamp
//! (SO_TIMESTAMPING, SOF_TIMESTAMPING_TX_SOFTWARE: the device driver took the packet; TUN
//! stamps in tun_net_xmit), both CLOCK_REALTIME. On a 2-vCPU VM shared with the programs under
//! test, a program's wake-up and a send system call after a long sleep (cold caches) take
//! tens to thousands of microseconds and vary with load and idle time; the stamps do not.

use std::io;
use std::os::fd::RawFd;

use crate::sys::check;

pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Ask for receive stamps on `fd`. The kernel starts stamping (for every socket) from a
/// work queue a moment later; a packet received before that is stamped when it is read.
pub fn enable(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: an int option value of the right size.
    check(unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&on as *const libc::c_int).cast(), 4)
    })
    .map(|_| ())
}

/// SO_TIMESTAMPING (asm-generic/socket.h SO_TIMESTAMPING_OLD, the 64-bit-time_t value; the
/// libc crate does not export it for this target). SCM_TIMESTAMPING has the same number.
const SO_TIMESTAMPING: libc::c_int = 37;

/// Ask for software transmit stamps on `fd` (read back with [`tx_stamp`]).
pub fn enable_tx(fd: RawFd) -> io::Result<()> {
    let flags = (libc::SOF_TIMESTAMPING_TX_SOFTWARE
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_TSONLY) as libc::c_int;
    // SAFETY: an int option value of the right size.
    check(unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, SO_TIMESTAMPING, (&flags as *const libc::c_int).cast(), 4) })
        .map(|_| ())
}

/// The transmit stamp of the datagram just sent on `fd` (CLOCK_REALTIME ns). A datagram
/// reaches the driver within the send call unless the device queue is busy, so this waits
/// at most `wait_ns` for it; None if the kernel gave none.
pub fn tx_stamp(fd: RawFd, wait_ns: u64) -> Option<u64> {
    let until = crate::sys::mono_ns() + wait_ns;
    loop {
        let mut control = [0u64; 32];
        let mut data = [0u8; 64];
        let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
        // SAFETY: all-zero is a valid msghdr.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: msg points at live buffers of the sizes given.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n >= 0 {
            // SAFETY: walking the control messages the kernel wrote into `control`;
            // scm_timestamping is three timespecs, the first the software stamp.
            unsafe {
                let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
                while !cmsg.is_null() {
                    if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == SO_TIMESTAMPING {
                        let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                        return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                    }
                    cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
                }
            }
            continue;
        }
        if crate::sys::mono_ns() >= until {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// One datagram received on `fd` (non-blocking or not, as the socket is).
pub struct Received {
    pub len: usize,
    /// Kernel receive time (CLOCK_REALTIME ns), if the kernel attached one.
    pub stamp_ns: Option<u64>,
    pub from: libc::sockaddr_storage,
    pub from_len: libc::socklen_t,
}

pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<Received> {
    // SAFETY: all-zero is a valid sockaddr_storage and msghdr.
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 16]; // 128 bytes, 8-aligned: room for one timespec cmsg
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at live buffers of the sizes given.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp_ns = None;
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                stamp_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(Received { len: n as usize, stamp_ns, from, from_len: msg.msg_namelen })
}

pub fn send_to(fd: RawFd, data: &[u8], to: &libc::sockaddr_storage, to_len: libc::socklen_t) -> io::Result<usize> {
    // SAFETY: `to` is a sockaddr the kernel filled in, of length `to_len`.
    let n = unsafe {
        libc::sendto(fd, data.as_ptr().cast(), data.len(), 0, (to as *const libc::sockaddr_storage).cast(), to_len)
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn loopback_datagram_carries_a_kernel_stamp_taken_before_the_read() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(b.as_raw_fd()).unwrap();
        // The kernel turns stamping on for the whole machine from a work queue, shortly after.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = realtime_ns();
        a.send_to(b"hello", b.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u8; 64];
        let r = recv(b.as_raw_fd(), &mut buf).unwrap();
        let read_at = realtime_ns();
        assert_eq!(&buf[..r.len], b"hello");
        let stamp = r.stamp_ns.expect("no timestamp");
        assert!(stamp >= before && read_at - stamp >= 15_000_000, "stamp {stamp}, before {before}, read {read_at}");
        send_to(b.as_raw_fd(), b"back", &r.from, r.from_len).unwrap();
        assert_eq!(a.recv(&mut buf).unwrap(), 4);
    }

    #[test]
    fn a_sent_datagram_gets_a_software_transmit_stamp_within_the_send() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_tx(a.as_raw_fd()).unwrap();
        let before = realtime_ns();
        a.send_to(b"hello", b.local_addr().unwrap()).unwrap();
        let after = realtime_ns();
        let stamp = tx_stamp(a.as_raw_fd(), 1_000_000).expect("no transmit stamp");
        assert!(before <= stamp && stamp <= after, "stamp {stamp} outside the send [{before}, {after}]");
        assert_eq!(tx_stamp(a.as_raw_fd(), 0), None, "one stamp per datagram");
    }
}
