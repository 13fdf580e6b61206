//! One exact `NETLINK_SOCK_DIAG` query: the uid owning a TCP socket, named
//! by its four-tuple (linux/inet_diag.h). The kernel looks the socket up
//! by hash; nothing is listed.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const INET_DIAG_NOCOOKIE: u32 = !0;

#[repr(C)]
#[derive(Clone, Copy)]
struct NlMsgHdr {
    len: u32,
    kind: u16,
    flags: u16,
    seq: u32,
    pid: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SockId {
    sport: [u8; 2],
    dport: [u8; 2],
    src: [u8; 16],
    dst: [u8; 16],
    interface: u32,
    cookie: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ReqV2 {
    family: u8,
    protocol: u8,
    ext: u8,
    pad: u8,
    states: u32,
    id: SockId,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DiagMsg {
    family: u8,
    state: u8,
    timer: u8,
    retrans: u8,
    id: SockId,
    expires: u32,
    rqueue: u32,
    wqueue: u32,
    uid: u32,
    inode: u32,
}

/// The uid of the socket whose local end is `from` and remote end `to`
/// (both of one family), or `None` when the kernel knows no such socket
/// (closed already, another network namespace) or cannot be asked.
pub fn socket_owner(from: SocketAddr, to: SocketAddr) -> Option<u32> {
    let bytes = |ip: IpAddr| -> [u8; 16] {
        let mut b = [0u8; 16];
        match ip {
            IpAddr::V4(v4) => b[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => b.copy_from_slice(&v6.octets()),
        }
        b
    };
    let family = match (from.ip(), to.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => libc::AF_INET,
        (IpAddr::V6(_), IpAddr::V6(_)) => libc::AF_INET6,
        _ => return None,
    };
    #[repr(C)]
    struct Request {
        head: NlMsgHdr,
        req: ReqV2,
    }
    let request = Request {
        head: NlMsgHdr {
            len: std::mem::size_of::<Request>() as u32,
            kind: SOCK_DIAG_BY_FAMILY,
            flags: libc::NLM_F_REQUEST as u16,
            seq: 1,
            pid: 0,
        },
        req: ReqV2 {
            family: family as u8,
            protocol: libc::IPPROTO_TCP as u8,
            ext: 0,
            pad: 0,
            states: !0,
            id: SockId {
                sport: from.port().to_be_bytes(),
                dport: to.port().to_be_bytes(),
                src: bytes(from.ip()),
                dst: bytes(to.ip()),
                interface: 0,
                cookie: [INET_DIAG_NOCOOKIE; 2],
            },
        },
    };
    // SAFETY: a netlink socket of our own; the request is a live, fully
    // initialised repr(C) value of the size sent; the answer is read into
    // a buffer of the size given and decoded only within what was read.
    unsafe {
        let fd = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        );
        if fd < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 200_000,
        };
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        );
        let sent = libc::send(
            fd.as_raw_fd(),
            (&request as *const Request).cast(),
            std::mem::size_of::<Request>(),
            0,
        );
        if sent < 0 {
            return None;
        }
        let mut buf = [0u8; 1024];
        let n = libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0);
        let head = std::mem::size_of::<NlMsgHdr>();
        if n < (head + std::mem::size_of::<DiagMsg>()) as isize {
            return None;
        }
        let h: NlMsgHdr = std::ptr::read_unaligned(buf.as_ptr().cast());
        if h.kind != SOCK_DIAG_BY_FAMILY {
            return None;
        }
        let m: DiagMsg = std::ptr::read_unaligned(buf.as_ptr().add(head).cast());
        Some(m.uid)
    }
}
