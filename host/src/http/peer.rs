//! Who a connection counts against for `http.max_connections_per_peer`.
//! A remote client is its address. A local one (a loopback address, or
//! any address of this host: the peer's address is then the one it
//! connected to) is the local user who owns its socket, as the kernel
//! records it: every local user shares those addresses, and one of them
//! must not take the others' share with half-open connections. The owner
//! comes from one exact `NETLINK_SOCK_DIAG` query for that socket (as `ss`
//! asks), not a read of the whole TCP table: its cost does not grow with
//! the sockets other users hold.

use crate::sync::LockUnpoisoned;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

#[path = "peer_diag.rs"]
mod diag;

/// What one share of connections belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    /// A remote address.
    Addr(IpAddr),
    /// A local user (the uid owning the client's socket).
    LocalUser(u32),
}

/// `ip` as IPv4 where it is an IPv4 address mapped into IPv6.
pub fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl Client {
    /// The client of a connection from `peer` to our `local` address.
    pub fn of(peer: SocketAddr, local: SocketAddr) -> Client {
        let (p, l) = (plain(peer.ip()), plain(local.ip()));
        let from = SocketAddr::new(p, peer.port());
        let to = SocketAddr::new(l, local.port());
        if (p.is_loopback() || p == l)
            && let Some(uid) = diag::socket_owner(from, to)
        {
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

/// Open connections per client, so one client (a buggy script, a hostile
/// user) cannot take every slot with half-open connections.
#[derive(Clone, Default)]
pub struct PeerCount(Arc<Mutex<HashMap<Client, usize>>>);

/// One connection counted for its client until dropped.
pub struct PeerSlot(PeerCount, Client);

impl PeerCount {
    /// A slot for `client`, unless it has `max` connections open.
    pub fn take(&self, client: Client, max: usize) -> Option<PeerSlot> {
        let mut m = self.0.lock_unpoisoned();
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
        let mut m = self.0.0.lock_unpoisoned();
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

    /// A fresh connection to a listener on `bind`: (its peer, our end).
    fn connection(bind: &str) -> (SocketAddr, SocketAddr, [std::net::TcpStream; 2]) {
        let listener = std::net::TcpListener::bind(bind).unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (served, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        (peer, local, [client, served])
    }

    #[test]
    fn a_local_connection_counts_against_the_user_owning_its_socket() {
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let (peer, local, _open) = connection(bind);
            assert_eq!(
                Client::of(peer, local),
                Client::LocalUser(crate::users::euid()),
                "{bind}"
            );
            // A four-tuple no socket has (closed already): not a local user.
            let gone = SocketAddr::new(peer.ip(), 1);
            assert_eq!(Client::of(gone, local), Client::Addr(gone.ip()), "{bind}");
        }
        // A remote address is itself.
        let (_, local, _open) = connection("127.0.0.1:0");
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
