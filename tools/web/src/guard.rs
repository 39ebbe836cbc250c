//! The SSRF guard: every connection the web tools make goes to an address this module vetted.
//!
//! How it holds:
//! - **URLs** are parsed by `url`, which already turns the decimal, octal, hex and short IPv4
//!   forms (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) into one address; only `http` and
//!   `https` pass. An IP-literal host is vetted here, before any request ([`Guard::vet_url`]),
//!   because the HTTP connector never asks a resolver about a literal.
//! - **Names** are resolved once, by [`GuardedResolver`] — the `reqwest::dns::Resolve` the client
//!   is built with — and *every* address of the answer is vetted; one denied address denies the
//!   name, so a DNS answer that mixes a public and a private address cannot be raced. The
//!   connector then connects only to the addresses the resolver returned: there is no second
//!   lookup. A resolver is bound to one port (the connector does not tell it the port), so the
//!   client pool keeps one client per port ([`crate::http`]).
//! - **Redirects** are followed by hand (at most [`MAX_REDIRECTS`]), each hop vetted like the
//!   first URL.
//! - **Denied by default** ([`classify`]): loopback, private (RFC 1918, unique local, site
//!   local), link-local, CGNAT, multicast, broadcast, unspecified, documentation, benchmarking
//!   and other reserved ranges, cloud metadata endpoints, and any IPv6 form that embeds one of
//!   those IPv4 addresses (mapped, compatible, NAT64, 6to4).
//! - **`[web] allow`** entries (`host:port`) open one target each: an IP entry opens that address
//!   on that port, a name entry opens whatever that name resolves to on that port. They widen what
//!   the agent can reach, so the host takes them only from trusted configuration.
//! - **No proxy from the environment**: the client is built with `no_proxy()` unless `[web]
//!   proxy` names one. Through a proxy, the proxy resolves the names, so only address literals
//!   are vetted here; the proxy is the user's choice (trusted configuration only) and its own
//!   policy applies.

use crate::error::WebError;
use std::collections::HashSet;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use url::{Host, Url};

/// Redirects followed per fetch; the next one is an error.
pub const MAX_REDIRECTS: usize = 5;

/// Why an address is denied by default. `name()` is what the denial message cites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DenyRule {
    Loopback,
    Private,
    LinkLocal,
    Cgnat,
    Multicast,
    Broadcast,
    Unspecified,
    Documentation,
    Reserved,
    CloudMetadata,
}

impl DenyRule {
    pub fn name(self) -> &'static str {
        match self {
            DenyRule::Loopback => "loopback",
            DenyRule::Private => "private",
            DenyRule::LinkLocal => "link-local",
            DenyRule::Cgnat => "cgnat",
            DenyRule::Multicast => "multicast",
            DenyRule::Broadcast => "broadcast",
            DenyRule::Unspecified => "unspecified",
            DenyRule::Documentation => "documentation",
            DenyRule::Reserved => "reserved",
            DenyRule::CloudMetadata => "cloud-metadata",
        }
    }
}

impl std::fmt::Display for DenyRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The default-deny rule an address falls under, or `None` for a public address.
pub fn classify(ip: IpAddr) -> Option<DenyRule> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<DenyRule> {
    let [a, b, c, d] = ip.octets();
    // Metadata endpoints first: they sit inside ranges with a weaker-sounding name.
    if (a, b, c, d) == (169, 254, 169, 254) || (a, b, c, d) == (100, 100, 100, 200) {
        return Some(DenyRule::CloudMetadata);
    }
    let rule = match (a, b, c) {
        (0, _, _) => DenyRule::Unspecified,
        (127, _, _) => DenyRule::Loopback,
        (10, _, _) | (192, 168, _) => DenyRule::Private,
        (172, b, _) if (16..=31).contains(&b) => DenyRule::Private,
        (169, 254, _) => DenyRule::LinkLocal,
        (100, b, _) if (64..=127).contains(&b) => DenyRule::Cgnat,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => DenyRule::Documentation,
        (192, 0, 0) | (192, 88, 99) => DenyRule::Reserved,
        (198, b, _) if b == 18 || b == 19 => DenyRule::Reserved,
        (224..=239, _, _) => DenyRule::Multicast,
        (255, 255, 255) if d == 255 => DenyRule::Broadcast,
        (240..=255, _, _) => DenyRule::Reserved,
        _ => return None,
    };
    Some(rule)
}

fn classify_v6(ip: Ipv6Addr) -> Option<DenyRule> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        return Some(DenyRule::Unspecified);
    }
    if ip.is_loopback() {
        return Some(DenyRule::Loopback);
    }
    // IPv4 embedded in IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64
    // (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::) all reach the IPv4 address.
    let tail = Ipv4Addr::new(
        (segments[6] >> 8) as u8,
        segments[6] as u8,
        (segments[7] >> 8) as u8,
        segments[7] as u8,
    );
    let embedded = match segments {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0x2002, hi, lo, ..] => {
            Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8))
        }
        _ => None,
    };
    if let Some(v4) = embedded {
        // A compatible or translated address of a public IPv4 is still odd enough to deny.
        return Some(classify_v4(v4).unwrap_or(DenyRule::Reserved));
    }
    // AWS's IPv6 metadata endpoint (fd00:ec2::254) sits inside unique-local space.
    if segments == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254] {
        return Some(DenyRule::CloudMetadata);
    }
    let first = segments[0];
    let rule = match first {
        f if f & 0xfe00 == 0xfc00 => DenyRule::Private,
        f if f & 0xffc0 == 0xfec0 => DenyRule::Private,
        f if f & 0xffc0 == 0xfe80 => DenyRule::LinkLocal,
        f if f & 0xff00 == 0xff00 => DenyRule::Multicast,
        0x2001 if segments[1] == 0x0db8 => DenyRule::Documentation,
        f if f & 0xfff0 == 0x3ff0 => DenyRule::Documentation,
        // Teredo tunnels (2001::/32) and the discard prefix (100::/64).
        0x2001 if segments[1] == 0 => DenyRule::Reserved,
        0x0100 if segments[1..4] == [0, 0, 0] => DenyRule::Reserved,
        _ => return None,
    };
    Some(rule)
}

/// One `[web] allow` entry: a host (an address or a name) and a port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AllowEntry {
    Addr(IpAddr, u16),
    Name(String, u16),
}

impl AllowEntry {
    /// Parses `host:port` (`[v6]:port` for IPv6). Names are matched case-insensitively.
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let bad = || format!("invalid [web] allow entry \"{text}\": expected host:port");
        let (host, port) = text.trim().rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if host.is_empty() {
            return Err(bad());
        }
        Ok(match host.parse::<IpAddr>() {
            Ok(ip) => AllowEntry::Addr(ip.to_canonical(), port),
            Err(_) => AllowEntry::Name(host.trim_end_matches('.').to_ascii_lowercase(), port),
        })
    }
}

/// A denial: which target, which address and which rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "blocked by the SSRF guard (rule `{rule}`): {host} is {addr}, a {rule} address; add \"{host}:{port}\" to [web] allow in the user configuration to reach it"
)]
pub struct Denial {
    pub host: String,
    pub addr: IpAddr,
    pub port: u16,
    pub rule: DenyRule,
}

/// Looks a name up. The system resolver by default; tests answer from a table.
pub trait Lookup: Send + Sync {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;
}

/// The system resolver (getaddrinfo through tokio).
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// The vetting rules: the allow list and the resolver names go through.
#[derive(Clone)]
pub struct Guard {
    allow: Arc<HashSet<AllowEntry>>,
    lookup: Arc<dyn Lookup>,
}

impl Guard {
    pub fn new(allow: impl IntoIterator<Item = AllowEntry>, lookup: Arc<dyn Lookup>) -> Self {
        Guard { allow: Arc::new(allow.into_iter().collect()), lookup }
    }

    /// The same rules with more targets opened (a search provider's own endpoint).
    pub fn widened(&self, extra: impl IntoIterator<Item = AllowEntry>) -> Self {
        let mut allow: HashSet<AllowEntry> = (*self.allow).clone();
        allow.extend(extra);
        Guard { allow: Arc::new(allow), lookup: Arc::clone(&self.lookup) }
    }

    /// Vets one address reached as `host` on `port`.
    pub fn vet_addr(&self, host: &str, ip: IpAddr, port: u16) -> Result<(), Denial> {
        let ip = ip.to_canonical();
        let Some(rule) = classify(ip) else { return Ok(()) };
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if self.allow.contains(&AllowEntry::Addr(ip, port))
            || self.allow.contains(&AllowEntry::Name(name, port))
        {
            return Ok(());
        }
        Err(Denial { host: host.to_owned(), addr: ip, port, rule })
    }

    /// Vets a URL before a request: scheme, and the address when the host is a literal. Returns
    /// the port the request goes to (a name is vetted by the resolver of that port's client).
    pub fn vet_url(&self, url: &Url) -> Result<u16, WebError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(WebError::Scheme(format!("{}:", url.scheme())));
        }
        let port =
            url.port_or_known_default().ok_or_else(|| WebError::InvalidUrl(url.to_string()))?;
        match url.host() {
            Some(Host::Ipv4(v4)) => self.vet_addr(&v4.to_string(), IpAddr::V4(v4), port)?,
            Some(Host::Ipv6(v6)) => self.vet_addr(&format!("[{v6}]"), IpAddr::V6(v6), port)?,
            Some(Host::Domain(name)) => {
                // A name that is itself an address in a form `url` left alone is vetted as one.
                if let Ok(ip) = name.trim_matches(['[', ']']).parse::<IpAddr>() {
                    self.vet_addr(name, ip, port)?;
                }
            }
            None => return Err(WebError::InvalidUrl(url.to_string())),
        }
        Ok(port)
    }

    /// Resolves `host` and vets every address for `port`.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, WebError> {
        let ips = self
            .lookup
            .lookup(host)
            .await
            .map_err(|e| WebError::Resolve { host: host.to_owned(), detail: e.to_string() })?;
        if ips.is_empty() {
            return Err(WebError::Resolve { host: host.to_owned(), detail: "no addresses".into() });
        }
        for ip in &ips {
            self.vet_addr(host, *ip, port)?;
        }
        Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect())
    }
}

/// The resolver a port's client is built with: resolve once, vet every address, hand the
/// connector only those.
pub struct GuardedResolver {
    pub guard: Guard,
    pub port: u16,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.guard.clone();
        let port = self.port;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = guard.resolve(&host, port).await.map_err(|e| {
                let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
                boxed
            })?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_classified() {
        let rule = |s: &str| classify(s.parse().expect("ip"));
        assert_eq!(rule("8.8.8.8"), None);
        assert_eq!(rule("127.0.0.1"), Some(DenyRule::Loopback));
        assert_eq!(rule("169.254.169.254"), Some(DenyRule::CloudMetadata));
        assert_eq!(rule("::ffff:10.0.0.1"), Some(DenyRule::Private));
        assert_eq!(rule("2002:7f00:1::"), Some(DenyRule::Loopback));
        assert_eq!(rule("2606:4700::1111"), None);
    }

    #[test]
    fn allow_entries_parse() {
        assert_eq!(
            AllowEntry::parse("127.0.0.1:8080"),
            Ok(AllowEntry::Addr("127.0.0.1".parse().expect("ip"), 8080))
        );
        assert_eq!(
            AllowEntry::parse("[::1]:80"),
            Ok(AllowEntry::Addr("::1".parse().expect("ip"), 80))
        );
        assert_eq!(
            AllowEntry::parse("Intranet.:443"),
            Ok(AllowEntry::Name("intranet".into(), 443))
        );
        assert!(AllowEntry::parse("127.0.0.1").is_err());
    }
}
