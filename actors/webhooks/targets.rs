//! A webhook's target resolved and judged: every address its host resolves
//! to must be of a class a public webhook may reach (an IP literal is
//! judged by the domain alone). Resolution is bounded in time: a resolver
//! that hangs refuses the target, never holds a request or a delivery.

use std::net::SocketAddr;
use std::time::Duration;

use crate::domain::webhooks::targets::{Host, Refused, Target, restricted};

/// Why a target cannot be called now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreachable {
    /// The domain refuses it (its form, or an address of a refused class).
    Refused(Refused),
    /// The host did not resolve (no answer, an error or past the bound).
    Unresolved(String),
}

/// The addresses to call `target` at: all of its host's, each allowed.
pub async fn resolve(
    target: &Target,
    allow_private: bool,
    within: Duration,
) -> Result<Vec<SocketAddr>, Unreachable> {
    let addresses: Vec<SocketAddr> = match &target.host {
        Host::Ipv4(ip) => vec![SocketAddr::new((*ip).into(), target.port)],
        Host::Ipv6(ip) => vec![SocketAddr::new((*ip).into(), target.port)],
        Host::Domain(name) => {
            let lookup = tokio::net::lookup_host((name.as_str(), target.port));
            match tokio::time::timeout(within, lookup).await {
                Ok(Ok(found)) => found.collect(),
                Ok(Err(e)) => return Err(Unreachable::Unresolved(e.to_string())),
                Err(_) => return Err(Unreachable::Unresolved(format!("no answer in {within:?}"))),
            }
        }
    };
    if addresses.is_empty() {
        return Err(Unreachable::Unresolved("no address".into()));
    }
    if !allow_private && let Some(class) = addresses.iter().find_map(|a| restricted(a.ip())) {
        return Err(Unreachable::Refused(Refused::Address(class)));
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::webhooks::targets::{AddressClass, target};

    const WITHIN: Duration = Duration::from_secs(2);

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_unless_allowed() {
        let t = target("http://localhost:8080/hook", false).unwrap();
        assert_eq!(
            resolve(&t, false, WITHIN).await,
            Err(Unreachable::Refused(Refused::Address(
                AddressClass::Loopback
            )))
        );
        let found = resolve(&t, true, WITHIN).await.unwrap();
        assert!(
            found
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 8080)
        );
    }

    #[tokio::test]
    async fn a_literal_is_taken_as_written() {
        let t = target("http://127.0.0.1:9/x", true).unwrap();
        assert_eq!(
            resolve(&t, true, WITHIN).await.unwrap(),
            vec!["127.0.0.1:9".parse().unwrap()]
        );
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_is_unresolved() {
        let t = target("https://no-such-host.invalid/hook", false).unwrap();
        assert!(matches!(
            resolve(&t, false, WITHIN).await,
            Err(Unreachable::Unresolved(_))
        ));
    }
}
