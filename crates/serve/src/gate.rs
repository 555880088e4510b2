//! Caps on open SSE streams (docs/design.md §11): per client address
//! (`server.max_streams_per_ip`) and in total (`server.max_streams`). Each
//! open stream holds a `Ticket`; the stream's end (the client gone, the
//! service stopping) drops it and frees its place.
//!
//! An IPv6 client is counted by its /64: one host is handed a whole /64, and
//! counting single addresses would give it 2^64 times the cap.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Which cap refused a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    PerAddress,
    Total,
}

impl Refused {
    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Refused::PerAddress => "per_address",
            Refused::Total => "total",
        }
    }
}

#[derive(Default)]
struct Open {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// The counts of open streams and their caps.
pub struct StreamGate {
    open: Mutex<Open>,
    max_per_client: usize,
    max_total: usize,
}

/// One open stream's place; dropped when the stream ends.
pub struct Ticket {
    gate: Arc<StreamGate>,
    client: Option<IpAddr>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.gate.lock();
        open.total -= 1;
        if let Some(client) = self.client
            && let Some(n) = open.by_client.get_mut(&client)
        {
            *n -= 1;
            if *n == 0 {
                open.by_client.remove(&client);
            }
        }
    }
}

/// The key a client address is counted under (an IPv6 address by its /64).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

impl StreamGate {
    pub fn new(max_per_client: usize, max_total: usize) -> Arc<StreamGate> {
        Arc::new(StreamGate {
            open: Mutex::default(),
            max_per_client,
            max_total,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // The counts stay whole whatever panicked while they were held.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more stream of `client` (None: a peer with no IP
    /// address, such as a Unix socket, counts only toward the total).
    pub fn admit(self: &Arc<Self>, client: Option<IpAddr>) -> Result<Ticket, Refused> {
        let client = client.map(client_key);
        let mut open = self.lock();
        if open.total >= self.max_total {
            return Err(Refused::Total);
        }
        if let Some(client) = client {
            let n = open.by_client.entry(client).or_insert(0);
            if *n >= self.max_per_client {
                return Err(Refused::PerAddress);
            }
            *n += 1;
        }
        open.total += 1;
        Ok(Ticket {
            gate: self.clone(),
            client,
        })
    }

    /// Open streams.
    pub fn open(&self) -> usize {
        self.lock().total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn per_client_then_total() {
        let gate = StreamGate::new(2, 3);
        let a1 = gate.admit(ip("10.0.0.1")).unwrap();
        let _a2 = gate.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(gate.admit(ip("10.0.0.1")).err(), Some(Refused::PerAddress));
        let _b = gate.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(gate.admit(ip("10.0.0.3")).err(), Some(Refused::Total));
        assert_eq!(gate.open(), 3);
        drop(a1);
        assert_eq!(gate.open(), 2);
        let _a3 = gate.admit(ip("10.0.0.1")).expect("a place freed");
    }

    #[test]
    fn an_ipv6_host_is_its_slash_64() {
        let gate = StreamGate::new(1, 10);
        let _a = gate.admit(ip("2001:db8:1:2::1")).unwrap();
        assert_eq!(
            gate.admit(ip("2001:db8:1:2:ffff::9")).err(),
            Some(Refused::PerAddress),
            "same /64"
        );
        let _b = gate.admit(ip("2001:db8:1:3::1")).expect("another /64");
        let _c = gate.admit(ip("::ffff:10.0.0.1")).unwrap();
        assert_eq!(
            gate.admit(ip("10.0.0.1")).err(),
            Some(Refused::PerAddress),
            "an IPv4-mapped address is its IPv4 address"
        );
    }

    #[test]
    fn no_address_counts_toward_the_total_only() {
        let gate = StreamGate::new(1, 2);
        let _a = gate.admit(None).unwrap();
        let _b = gate.admit(None).unwrap();
        assert_eq!(gate.admit(None).err(), Some(Refused::Total));
        drop(_a);
        assert!(gate.open() == 1);
    }
}
