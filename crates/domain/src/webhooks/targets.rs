//! Which URLs a webhook may call: `http` or `https`, at most 2,048 bytes,
//! with a host; and which addresses its host may resolve to. Loopback,
//! private (RFC 1918, fc00::/7), carrier-grade NAT (100.64.0.0/10),
//! link-local and unspecified addresses, and IPv4-mapped or -compatible
//! forms of them, are refused unless private targets are allowed. The
//! caller resolves the host (at creation and at every attempt: an answer
//! can change) and asks about every address it got.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use url::Host;

/// The longest URL taken.
pub const MAX_URL_BYTES: usize = 2_048;

/// Why a URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a URL, another scheme, too long, with no host, or with a user.
    Url,
    /// The host is (or resolves to) an address of a class not allowed.
    Address(AddressClass),
}

/// A class of addresses a public webhook may not reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Loopback,
    Private,
    SharedNat,
    LinkLocal,
    Unspecified,
}

impl AddressClass {
    pub const fn as_str(self) -> &'static str {
        match self {
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::SharedNat => "carrier-grade NAT",
            AddressClass::LinkLocal => "link-local",
            AddressClass::Unspecified => "unspecified",
        }
    }
}

/// The class of `ip` a public webhook may not reach, if it is one.
pub fn restricted(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped().or_else(|| compatible(v6)) {
            Some(v4) => restricted_v4(v4),
            None => restricted_v6(v6),
        },
    }
}

/// The IPv4 address of a deprecated IPv4-compatible form (::a.b.c.d),
/// `::` and `::1` aside (they are IPv6's own).
fn compatible(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    (s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1)).then(|| {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    })
}

fn restricted_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, ..] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some(AddressClass::Unspecified)
    } else if ip.is_loopback() {
        Some(AddressClass::Loopback)
    } else if ip.is_private() {
        Some(AddressClass::Private)
    } else if a == 100 && (64..128).contains(&b) {
        Some(AddressClass::SharedNat)
    } else if ip.is_link_local() {
        Some(AddressClass::LinkLocal)
    } else {
        None
    }
}

fn restricted_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    let first = ip.segments()[0];
    if ip.is_unspecified() {
        Some(AddressClass::Unspecified)
    } else if ip.is_loopback() {
        Some(AddressClass::Loopback)
    } else if first & 0xfe00 == 0xfc00 {
        Some(AddressClass::Private)
    } else if first & 0xffc0 == 0xfe80 {
        Some(AddressClass::LinkLocal)
    } else {
        None
    }
}

/// A webhook's URL as taken: its host and port (the default port of its
/// scheme when none is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: url::Url,
    pub host: url::Host<String>,
    pub port: u16,
}

/// Checks a URL's form; an IP-literal host is judged here too (a name is
/// judged once resolved, by `restricted`).
pub fn target(text: &str, allow_private: bool) -> Result<Target, Refused> {
    if text.len() > MAX_URL_BYTES {
        return Err(Refused::Url);
    }
    let url = url::Url::parse(text).map_err(|_| Refused::Url)?;
    if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() {
        return Err(Refused::Url);
    }
    if url.password().is_some() {
        return Err(Refused::Url);
    }
    let host = url.host().ok_or(Refused::Url)?.to_owned();
    let port = url.port_or_known_default().ok_or(Refused::Url)?;
    let literal = match &host {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(*v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(*v6)),
        url::Host::Domain(_) => None,
    };
    if let Some(class) = literal.and_then(restricted).filter(|_| !allow_private) {
        return Err(Refused::Address(class));
    }
    Ok(Target { url, host, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(ip: &str) -> Option<AddressClass> {
        restricted(ip.parse().unwrap())
    }

    #[test]
    fn each_class_of_address_is_told() {
        use AddressClass::*;
        for (ip, want) in [
            ("127.0.0.1", Some(Loopback)),
            ("127.255.0.9", Some(Loopback)),
            ("::1", Some(Loopback)),
            ("10.1.2.3", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("192.168.1.1", Some(Private)),
            ("fc00::1", Some(Private)),
            ("fdff:ffff::1", Some(Private)),
            ("100.64.0.1", Some(SharedNat)),
            ("100.127.255.255", Some(SharedNat)),
            ("169.254.169.254", Some(LinkLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Unspecified)),
            ("::", Some(Unspecified)),
            // IPv4-mapped and -compatible forms are their IPv4 address.
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:169.254.1.1", Some(LinkLocal)),
            ("::127.0.0.1", Some(Loopback)),
            // Public addresses.
            ("8.8.8.8", None),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("172.32.0.1", None),
            ("2001:4860:4860::8888", None),
            ("::ffff:8.8.8.8", None),
        ] {
            assert_eq!(class(ip), want, "{ip}");
        }
    }

    #[test]
    fn a_url_is_http_or_https_with_a_host() {
        let ok = target("https://hooks.example.com/lendex?x=1", false).unwrap();
        assert_eq!(ok.port, 443);
        assert_eq!(
            target("http://example.com:8080/", false).unwrap().port,
            8080
        );
        for bad in [
            "",
            "example.com/hook",
            "ftp://example.com/",
            "file:///etc/passwd",
            "https://user:pass@example.com/",
            "https://user@example.com/",
            "javascript:alert(1)",
        ] {
            assert_eq!(target(bad, false).err(), Some(Refused::Url), "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(target(&long, false).err(), Some(Refused::Url));
    }

    #[test]
    fn a_literal_address_is_judged_unless_private_targets_are_allowed() {
        for (url, class) in [
            ("http://127.0.0.1:9000/", AddressClass::Loopback),
            ("http://[::1]/", AddressClass::Loopback),
            ("http://10.0.0.7/", AddressClass::Private),
            (
                "http://169.254.169.254/latest/meta-data",
                AddressClass::LinkLocal,
            ),
            ("http://[::ffff:192.168.0.1]/", AddressClass::Private),
            ("http://0.0.0.0/", AddressClass::Unspecified),
            // Spellings the URL parser reads as an address are judged as one.
            ("http://2130706433/", AddressClass::Loopback),
            ("http://0x7f.1/", AddressClass::Loopback),
        ] {
            assert_eq!(
                target(url, false).err(),
                Some(Refused::Address(class)),
                "{url}"
            );
            assert!(target(url, true).is_ok(), "{url}");
        }
        assert!(target("http://93.184.216.34/", false).is_ok());
    }
}
