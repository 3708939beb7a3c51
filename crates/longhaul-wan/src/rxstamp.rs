//! Kernel receive timestamps on UDP sockets (SO_TIMESTAMPNS: the time the packet entered the
//! host's stack, CLOCK_REALTIME), so the ping tools can measure the path without the time
//! their own thread took to be scheduled and read it. On a 2-vCPU VM shared with the
//! programs under test, that wake-up time is tens to thousands of microseconds and varies
//! with load and idle time; the kernel's stamp does not.

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
    check(unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&on as *const libc::c_int).cast(), 4) })
        .map(|_| ())
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
    let n = unsafe { libc::sendto(fd, data.as_ptr().cast(), data.len(), 0, (to as *const libc::sockaddr_storage).cast(), to_len) };
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
}
