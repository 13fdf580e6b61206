//! Who a connection counts against for `http.max_connections_per_peer`.
//! A remote client is its address. A local one (127.0.0.1, `::1`) is the
//! local user who owns its socket, as the kernel records it
//! (`/proc/net/tcp`, the way identd answers): every local user shares
//! 127.0.0.1, and one of them must not take the others' share with
//! half-open connections.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

/// What one share of connections belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    /// A remote address.
    Addr(IpAddr),
    /// A local user (the uid owning the client's socket).
    LocalUser(u32),
}

impl Client {
    /// The client of a connection from `peer` to our `local` address.
    pub fn of(peer: SocketAddr, local: SocketAddr) -> Client {
        let loopback = match peer.ip() {
            IpAddr::V4(a) => a.is_loopback(),
            IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
        };
        if loopback && let Some(uid) = socket_owner(peer, local) {
            return Client::LocalUser(uid);
        }
        Client::Addr(peer.ip())
    }

    /// For a person: "this address" or "local user uid N".
    pub fn describe(&self) -> String {
        match self {
            Client::Addr(a) => format!("this address ({a})"),
            Client::LocalUser(uid) => format!("this local user (uid {uid})"),
        }
    }
}

/// The uid owning the socket at `peer` connected to `local`, from the
/// kernel's TCP tables; `None` when it is not there (closed already, or
/// in another network namespace).
fn socket_owner(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            owner_in(&text, peer, local)
        })
}

/// The uid of the row of `table` (`/proc/net/tcp` text) whose local end is
/// `peer` and remote end is `local`.
fn owner_in(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (from, to, uid) = (f.get(1)?, f.get(2)?, f.get(7)?);
        (same(parse(from)?, peer) && same(parse(to)?, local)).then(|| uid.parse().ok())?
    })
}

/// Equal addresses, an IPv4-mapped IPv6 one equal to its IPv4 form.
fn same(a: SocketAddr, b: SocketAddr) -> bool {
    let plain = |s: SocketAddr| match s.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(s.ip(), IpAddr::V4),
        v4 => v4,
    };
    a.port() == b.port() && plain(a) == plain(b)
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6), as the
/// kernel prints them: each 32-bit word in the host's byte order.
fn parse(field: &str) -> Option<SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Open connections per client, so one client (a buggy script, a hostile
/// user) cannot take every slot with half-open connections.
#[derive(Clone, Default)]
pub struct PeerCount(Arc<Mutex<HashMap<Client, usize>>>);

/// One connection counted for its client until dropped.
pub struct PeerSlot(PeerCount, Client);

impl PeerCount {
    /// A slot for `client`, unless it has `max` connections open.
    pub fn take(&self, client: Client, max: usize) -> Option<PeerSlot> {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(client).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(PeerSlot(self.clone(), client))
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut m = self.0.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_tables_are_read_in_host_byte_order() {
        let v4: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let word = u32::from_ne_bytes([127, 0, 0, 1]);
        assert_eq!(parse(&format!("{word:08X}:1F90")), Some(v4));
        let ffff = u32::from_ne_bytes([0, 0, 0xff, 0xff]);
        let mapped2 = parse(&format!("0000000000000000{ffff:08X}{word:08X}:1F90")).unwrap();
        assert!(same(mapped2, v4), "{mapped2}");
        assert!(!same(mapped2, "127.0.0.1:8081".parse().unwrap()));
        assert_eq!(parse("zz:1"), None);
    }

    #[test]
    fn a_local_connection_counts_against_the_user_owning_its_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (_served, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(
            Client::of(peer, local),
            Client::LocalUser(crate::users::euid())
        );
        // A remote address is itself.
        let far: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        assert_eq!(Client::of(far, local), Client::Addr(far.ip()));
    }

    #[test]
    fn each_client_has_its_own_share() {
        let count = PeerCount::default();
        let (a, b) = (Client::LocalUser(1001), Client::LocalUser(1002));
        let held: Vec<PeerSlot> = (0..2).map(|_| count.take(a, 2).unwrap()).collect();
        assert!(count.take(a, 2).is_none(), "a's share is taken");
        assert!(count.take(b, 2).is_some(), "b's is not");
        drop(held);
        assert!(
            count.take(a, 2).is_some(),
            "freed when a's connections close"
        );
    }
}
