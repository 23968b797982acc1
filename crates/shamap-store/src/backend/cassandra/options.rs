//! A Cassandra store's location and settings: the `cassandra://` URL, its
//! hosts, keyspace, consistency level, replication factor and requests in
//! flight.

use std::sync::Arc;
use std::time::Duration;

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::timestamp_generator::MonotonicTimestampGenerator;

/// The CQL port when a URL names none.
pub const DEFAULT_PORT: u16 = 9042;
/// Requests in flight per batch when a URL says nothing.
pub const DEFAULT_INFLIGHT: usize = 128;
/// The most requests in flight a URL may ask for.
pub const MAX_INFLIGHT: usize = 4096;
/// The replication factor of a keyspace created when a URL says nothing.
pub const DEFAULT_REPLICATION: u32 = 1;
/// The consistency level of every read and write (CQL's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consistency {
    /// `ONE`
    One,
    /// `TWO`
    Two,
    /// `THREE`
    Three,
    /// `QUORUM`
    Quorum,
    /// `ALL`
    All,
    /// `LOCAL_QUORUM`, the default: a majority of the replicas in the
    /// coordinator's data center.
    LocalQuorum,
    /// `EACH_QUORUM`
    EachQuorum,
    /// `LOCAL_ONE`
    LocalOne,
}

impl Consistency {
    const ALL: [(Consistency, &'static str); 8] = [
        (Consistency::One, "one"),
        (Consistency::Two, "two"),
        (Consistency::Three, "three"),
        (Consistency::Quorum, "quorum"),
        (Consistency::All, "all"),
        (Consistency::LocalQuorum, "local_quorum"),
        (Consistency::EachQuorum, "each_quorum"),
        (Consistency::LocalOne, "local_one"),
    ];

    /// Parses a CQL consistency name, in any case (`local_quorum`, `QUORUM`, ...).
    pub fn parse(s: &str) -> Option<Consistency> {
        let s = s.to_ascii_lowercase();
        Consistency::ALL
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(c, _)| *c)
    }

    /// The CQL name, upper case.
    pub fn name(self) -> String {
        Consistency::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("?", |(_, n)| n)
            .to_ascii_uppercase()
    }

    pub(crate) fn driver(self) -> scylla::statement::Consistency {
        use scylla::statement::Consistency as C;
        match self {
            Consistency::One => C::One,
            Consistency::Two => C::Two,
            Consistency::Three => C::Three,
            Consistency::Quorum => C::Quorum,
            Consistency::All => C::All,
            Consistency::LocalQuorum => C::LocalQuorum,
            Consistency::EachQuorum => C::EachQuorum,
            Consistency::LocalOne => C::LocalOne,
        }
    }
}

/// Where the store is and how to use it: parsed from
/// `cassandra://HOST[:PORT][,HOST[:PORT]...]/KEYSPACE[?consistency=C&replication=N&inflight=N]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CassandraOptions {
    /// Contact points, `host:port` (the driver discovers the other nodes).
    pub hosts: Vec<String>,
    /// The keyspace holding tables `nodes` and `meta`.
    pub keyspace: String,
    /// Consistency of every read and write (default `LOCAL_QUORUM`).
    pub consistency: Consistency,
    /// Replication factor of the keyspace when this store creates it
    /// (`NetworkTopologyStrategy`, that many replicas in every data
    /// center); an existing keyspace keeps its own.
    pub replication: u32,
    /// Most writes in flight at once within a batch.
    pub inflight: usize,
    /// Client-side timeout of each request.
    pub request_timeout: Duration,
    /// Timeout of each connection attempt.
    pub connect_timeout: Duration,
}

impl CassandraOptions {
    /// The URL scheme.
    pub const SCHEME: &'static str = "cassandra://";

    /// True when `s` is meant as a Cassandra URL (starts with the scheme).
    pub fn is_url(s: &str) -> bool {
        s.starts_with(CassandraOptions::SCHEME)
    }

    /// Parses a `cassandra://` URL; the error says what is wrong with it.
    pub fn from_url(url: &str) -> Result<CassandraOptions, String> {
        let rest = url
            .strip_prefix(CassandraOptions::SCHEME)
            .ok_or_else(|| format!("not a {}HOST[:PORT]/KEYSPACE URL", Self::SCHEME))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, keyspace) = path
            .split_once('/')
            .ok_or("no keyspace (the form is cassandra://HOST[:PORT]/KEYSPACE)")?;
        let hosts = hosts
            .split(',')
            .map(parse_host)
            .collect::<Result<Vec<_>, _>>()?;
        check_keyspace(keyspace)?;
        let mut opts = CassandraOptions {
            hosts,
            keyspace: keyspace.to_owned(),
            consistency: Consistency::LocalQuorum,
            replication: DEFAULT_REPLICATION,
            inflight: DEFAULT_INFLIGHT,
            request_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(5),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("option '{pair}' has no value (name=value)"))?;
            match k {
                "consistency" => {
                    opts.consistency = Consistency::parse(v).ok_or_else(|| {
                        format!("consistency '{v}': not one of one, two, three, quorum, all, local_quorum, each_quorum, local_one")
                    })?;
                }
                "replication" => {
                    opts.replication = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=100).contains(n))
                        .ok_or_else(|| format!("replication '{v}': not a number from 1 to 100"))?;
                }
                "inflight" => {
                    opts.inflight = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_INFLIGHT).contains(n))
                        .ok_or_else(|| {
                            format!("inflight '{v}': not a number from 1 to {MAX_INFLIGHT}")
                        })?;
                }
                "timeout_ms" => {
                    let ms: u64 = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=600_000).contains(n))
                        .ok_or_else(|| {
                            format!("timeout_ms '{v}': not a number from 1 to 600000")
                        })?;
                    opts.request_timeout = Duration::from_millis(ms);
                }
                other => {
                    return Err(format!(
                        "unknown option '{other}' (known: consistency, replication, inflight, timeout_ms)"
                    ))
                }
            }
        }
        Ok(opts)
    }

    /// The store's name in messages: `cassandra://HOST:PORT/KEYSPACE`.
    pub fn location(&self) -> String {
        format!(
            "{}{}/{}",
            CassandraOptions::SCHEME,
            self.hosts.join(","),
            self.keyspace
        )
    }
}

impl CassandraOptions {
    /// A runtime (two worker threads named `thread_name`) and a session on
    /// these hosts with these timeouts and consistency: the one way the
    /// node store and the Clio reader connect. The whole attempt is bounded
    /// (`connect_timeout * 3 + request_timeout`) on top of the driver's own
    /// timeouts. Errors: `cannot start the driver's runtime: …` or `cannot
    /// connect to HOSTS: …` (the driver's error may span lines).
    pub fn connect(&self, thread_name: &str) -> Result<(tokio::runtime::Runtime, Session), String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(thread_name)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the driver's runtime: {e}"))?;
        let profile = ExecutionProfile::builder()
            .consistency(self.consistency.driver())
            .request_timeout(Some(self.request_timeout))
            .build();
        let builder = SessionBuilder::new()
            .known_nodes(&self.hosts)
            .connection_timeout(self.connect_timeout)
            .hostname_resolution_timeout(Some(self.connect_timeout))
            .metadata_request_serverside_timeout(self.request_timeout)
            .metadata_request_clientside_timeout(self.request_timeout)
            .schema_agreement_timeout(Duration::from_secs(60))
            .timestamp_generator(Arc::new(MonotonicTimestampGenerator::new()))
            .keyspaces_to_fetch([self.keyspace.clone()])
            .default_execution_profile_handle(profile.into_handle());
        let limit = self.connect_timeout * 3 + self.request_timeout;
        let hosts = self.hosts.join(",");
        let session = runtime
            .block_on(async { tokio::time::timeout(limit, builder.build()).await })
            .map_err(|_| {
                format!(
                    "cannot connect to {hosts}: no answer in {} s",
                    limit.as_secs()
                )
            })?
            .map_err(|e| format!("cannot connect to {hosts}: {e}"))?;
        Ok((runtime, session))
    }
}

/// `host[:port]` with the default port added; an IPv6 address goes in
/// brackets (`[::1]:9042`).
fn parse_host(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("no host (the form is cassandra://HOST[:PORT]/KEYSPACE)".to_owned());
    }
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (addr, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("host '{s}': no closing ']'"))?;
        (format!("[{addr}]"), tail.strip_prefix(':'))
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (s.to_owned(), None),
        }
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("host '{s}': port '{p}' is not a number from 1 to 65535"))?,
    };
    Ok(format!("{host}:{port}"))
}

/// A keyspace name this store accepts: a lower-case letter, then lower-case
/// letters, digits or `_`, at most 48 in all (Cassandra's limit; upper case
/// is refused because CQL folds unquoted names to lower case).
fn check_keyspace(ks: &str) -> Result<(), String> {
    let ok = !ks.is_empty()
        && ks.len() <= 48
        && ks.as_bytes()[0].is_ascii_lowercase()
        && ks
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "keyspace '{ks}': use a lower-case letter, then lower-case letters, digits or '_' (at most 48)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults_and_options() {
        let o = CassandraOptions::from_url("cassandra://127.0.0.1/ledgers").expect("parses");
        assert_eq!(o.hosts, ["127.0.0.1:9042"]);
        assert_eq!(o.keyspace, "ledgers");
        assert_eq!(o.consistency, Consistency::LocalQuorum);
        assert_eq!(o.replication, DEFAULT_REPLICATION);
        assert_eq!(o.inflight, DEFAULT_INFLIGHT);
        assert_eq!(o.location(), "cassandra://127.0.0.1:9042/ledgers");
        let o = CassandraOptions::from_url(
            "cassandra://127.0.0.1:9043,127.0.0.2,[::1]:9044/k_2?consistency=QUORUM&replication=3&inflight=7&timeout_ms=2500",
        )
        .expect("parses");
        assert_eq!(o.hosts, ["127.0.0.1:9043", "127.0.0.2:9042", "[::1]:9044"]);
        assert_eq!(o.consistency, Consistency::Quorum);
        assert_eq!(o.replication, 3);
        assert_eq!(o.inflight, 7);
        assert_eq!(o.request_timeout, Duration::from_millis(2500));
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let err = |u: &str| CassandraOptions::from_url(u).expect_err(u);
        assert!(err("cassandra://h").contains("no keyspace"));
        assert!(err("cassandra:///ks").contains("no host"));
        assert!(err("cassandra://h:0/ks").contains("port '0'"));
        assert!(err("cassandra://h:x/ks").contains("port 'x'"));
        assert!(err("cassandra://h/Ks").contains("keyspace 'Ks'"));
        assert!(err("cassandra://h/k-s").contains("keyspace 'k-s'"));
        assert!(err("cassandra://h/ks?consistency=most").contains("consistency 'most'"));
        assert!(err("cassandra://h/ks?replication=0").contains("replication '0'"));
        assert!(err("cassandra://h/ks?inflight=0").contains("inflight '0'"));
        assert!(err("cassandra://h/ks?color=red").contains("unknown option 'color'"));
        assert!(err("cassandra://h/ks?inflight").contains("has no value"));
    }

    #[test]
    fn consistency_names_round_trip() {
        for (c, name) in Consistency::ALL {
            assert_eq!(Consistency::parse(name), Some(c));
            assert_eq!(Consistency::parse(&c.name()), Some(c));
        }
        assert_eq!(Consistency::parse("lots"), None);
    }
}
