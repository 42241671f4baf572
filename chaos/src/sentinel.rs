//! Redis Sentinel as teams deploy it: three `redis-server --sentinel`
//! processes (same binary and version as the data nodes) watching the
//! primary, deciding when it is down and promoting the replica themselves.
//!
//! Why it exists: the scripted failover (`RealCluster::fail_over` without
//! Sentinel) stops the primary and promotes the replica at a moment the
//! harness picks. In production the moment is Sentinel's: it marks the
//! primary subjectively down after `down-after-milliseconds` without a
//! valid reply, objectively down once a quorum agrees, elects a leader,
//! picks the replica (priority, then replication offset) and promotes it.
//! The gap between the old primary's last acknowledged write and that
//! promotion is where a lock is lost or a fence handed out twice.
//!
//! What is here: the configuration a sentinel starts from ([`config_text`]),
//! the questions the cluster and the workers ask ([`master_addr`],
//! [`known_peers`]), and the recorder of Sentinel's own announcements
//! ([`Announcements`]: `+sdown`, `+odown`, `+selected-slave`,
//! `+promoted-slave`, `+switch-master`, … with the time each arrived), from
//! which the failover's story is told ([`FailoverStory`]).
//!
//! How faults still reach a worker: Sentinel answers with a server's own
//! address, which would bypass the worker's proxy. Each worker therefore
//! gets one proxy per data node and an [`AddressMap`] from each node's real
//! address to that worker's proxy for it; a worker in Sentinel mode asks
//! Sentinel for the master on every connect and dials the mapped address.
//! The worker's path to the sentinels themselves is not proxied (a fault
//! on it is not modelled).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{ChaosError, Result};

/// The name the sentinels monitor the primary under.
pub const MASTER_NAME: &str = "redfence";
/// How many sentinels run.
pub const SENTINELS: usize = 3;
/// How many must agree the primary is down before a failover starts.
pub const QUORUM: usize = 2;
/// No valid reply for this long and a sentinel marks the primary down. Low
/// so a scenario's failover completes in seconds (production often uses
/// 5–30 s; the shape of the failover is the same).
pub const DOWN_AFTER_MS: u64 = 1_000;
/// Sentinel's failover timeout while the primary is up. Besides bounding a
/// failover, it is how long Sentinel leaves a replica alone whose primary
/// address differs from the one Sentinel monitors before it "fixes" it
/// (`+fix-slave-config`: `REPLICAOF` the monitored address, then `CLIENT
/// KILL TYPE normal`). Here the replica always differs: it replicates
/// through the harness's replication proxy, so that replication can be cut.
/// At 10 s, a slow start on a loaded machine let Sentinel re-point the
/// replica past the proxy, and kill the replica's monitor, before the
/// failover (seen once in the real-suite loop, containers provider). So it
/// is far longer than any scenario runs before its failover; a fix that
/// happens anyway is a named gap ([`FIX_SLAVE_CONFIG`]).
pub const FAILOVER_TIMEOUT_MS: u64 = 600_000;
/// Sentinel's failover timeout once it sees the primary down
/// ([`lower_failover_timeout`]): a failed attempt (a split vote, say) is
/// retried after twice this, within [`PROMOTION_TIMEOUT_MS`]; at
/// [`FAILOVER_TIMEOUT_MS`] it would be retried after 20 minutes.
pub const FAILOVER_TIMEOUT_DOWN_MS: u64 = 10_000;
/// Sentinel's announcement that it re-pointed a replica at the address it
/// monitors (see [`FAILOVER_TIMEOUT_MS`]).
pub const FIX_SLAVE_CONFIG: &str = "+fix-slave-config";
/// Longest the cluster waits for the sentinels to find each other and the
/// replica after they start (hello messages every 2 s).
pub const DISCOVERY_TIMEOUT_MS: u64 = 30_000;
/// Longest the cluster waits for Sentinel to promote the replica after the
/// primary stopped: down detection, election, promotion and the end of the
/// failover, with margin.
pub const PROMOTION_TIMEOUT_MS: u64 = 40_000;
/// The announcement that ends a failover: the master's address changed.
pub const SWITCH_MASTER: &str = "+switch-master";
/// Timeout of one question to a sentinel.
const QUESTION_TIMEOUT_MS: u64 = 2_000;
/// Most announcements kept (a failover makes a few dozen).
const ANNOUNCEMENTS_MAX: usize = 4_096;

/// The configuration file of sentinel `port`, monitoring the primary at
/// `primary` (`host:port`), keeping its state in `dir`. Sentinel rewrites
/// the file as it learns, so it must be writable.
pub fn config_text(port: u16, primary: &str, dir: &str) -> Result<String> {
    let (host, primary_port) = primary
        .rsplit_once(':')
        .ok_or_else(|| ChaosError::Process {
            server: "redis-sentinel",
            message: format!("bad primary address {primary:?}"),
        })?;
    Ok(format!(
        "port {port}\n\
         bind 127.0.0.1\n\
         protected-mode no\n\
         dir {dir}\n\
         sentinel monitor {MASTER_NAME} {host} {primary_port} {QUORUM}\n\
         sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n\
         sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n\
         sentinel parallel-syncs {MASTER_NAME} 1\n"
    ))
}

async fn ask<T: redis::FromRedisValue>(addr: &str, command: redis::Cmd) -> Result<T> {
    let run = async {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        command.query_async::<T>(&mut conn).await
    };
    match tokio::time::timeout(Duration::from_millis(QUESTION_TIMEOUT_MS), run).await {
        Ok(result) => result.map_err(|source| ChaosError::Redis {
            node: "redis-sentinel",
            source,
        }),
        Err(_) => Err(ChaosError::NotReady {
            server: "redis-sentinel",
            waited: Duration::from_millis(QUESTION_TIMEOUT_MS),
            last_error: format!("{addr} did not answer"),
        }),
    }
}

/// The master's address (`host:port`) as the first sentinel that answers
/// says it (`SENTINEL get-master-addr-by-name`), as a client library asks.
pub async fn master_addr(sentinels: &[String]) -> Result<String> {
    let mut last = None;
    for sentinel in sentinels {
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("get-master-addr-by-name").arg(MASTER_NAME);
        match ask::<Option<(String, String)>>(sentinel, cmd).await {
            Ok(Some((host, port))) => return Ok(format!("{host}:{port}")),
            Ok(None) => last = Some(format!("{sentinel} knows no master {MASTER_NAME}")),
            Err(e) => last = Some(e.to_string()),
        }
    }
    Err(ChaosError::NotReady {
        server: "redis-sentinel",
        waited: Duration::from_millis(QUESTION_TIMEOUT_MS),
        last_error: last.unwrap_or_else(|| "no sentinel".into()),
    })
}

/// Lowers sentinel `addr`'s failover timeout to [`FAILOVER_TIMEOUT_DOWN_MS`]
/// once it sees the primary down; whether it did (false: not down yet).
///
/// Why only then: `+fix-slave-config` needs the primary to look sane, and
/// a primary a sentinel marks down does not, so from that moment the short
/// timeout can no longer re-point the proxied replica (see
/// [`FAILOVER_TIMEOUT_MS`]). Sentinel reads the timeout live, so a failover
/// already under way is bounded by the new value too.
pub async fn lower_failover_timeout(addr: &str) -> Result<bool> {
    let flags = master_field(addr, "flags").await?.unwrap_or_default();
    if !flags.split(',').any(|f| f == "s_down" || f == "o_down") {
        return Ok(false);
    }
    let mut set = redis::cmd("SENTINEL");
    set.arg("set")
        .arg(MASTER_NAME)
        .arg("failover-timeout")
        .arg(FAILOVER_TIMEOUT_DOWN_MS);
    ask::<()>(addr, set).await?;
    Ok(true)
}

/// One field of what sentinel `addr` says of the master (`SENTINEL MASTER`:
/// `flags`, `failover-timeout`, …); `None` when it has no such field.
pub async fn master_field(addr: &str, field: &str) -> Result<Option<String>> {
    let mut master = redis::cmd("SENTINEL");
    master.arg("master").arg(MASTER_NAME);
    let fields: Vec<String> = ask(addr, master).await?;
    Ok(fields
        .chunks(2)
        .find(|pair| pair[0] == field)
        .and_then(|pair| pair.get(1))
        .cloned())
}

/// What sentinel `addr` knows: the other sentinels and the replicas it has
/// found (a failover needs both: a quorum of peers, a replica to promote).
pub async fn known_peers(addr: &str) -> Result<(usize, usize)> {
    let mut sentinels = redis::cmd("SENTINEL");
    sentinels.arg("sentinels").arg(MASTER_NAME);
    let peers: Vec<redis::Value> = ask(addr, sentinels).await?;
    let mut replicas = redis::cmd("SENTINEL");
    replicas.arg("replicas").arg(MASTER_NAME);
    let found: Vec<redis::Value> = ask(addr, replicas).await?;
    Ok((peers.len(), found.len()))
}

/// Per worker: each data node's real address → that worker's proxy for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressMap {
    /// The sentinels' addresses, asked in order.
    pub sentinels: Vec<String>,
    /// `(real address, the worker's proxy listen address)`.
    pub routes: Vec<(String, String)>,
}

impl AddressMap {
    /// The master's address as Sentinel says it now, translated to this
    /// worker's proxy for that node. An address no route knows is an error
    /// (dialling it would bypass the worker's faults).
    pub async fn master_via_proxy(&self) -> Result<String> {
        let real = master_addr(&self.sentinels).await?;
        self.translate(&real)
    }

    /// `real`'s proxy for this worker.
    pub fn translate(&self, real: &str) -> Result<String> {
        self.routes
            .iter()
            .find(|(from, _)| from == real)
            .map(|(_, to)| to.clone())
            .ok_or_else(|| ChaosError::Process {
                server: "redis-sentinel",
                message: format!(
                    "Sentinel named {real} as the master, which no proxy of this worker \
                     routes to"
                ),
            })
    }
}

/// One announcement a sentinel published, as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Announcement {
    /// When it arrived (Unix µs).
    pub unix_us: i64,
    /// Its channel: the event's name (`+odown`, `+switch-master`, …).
    pub event: String,
    /// Its text (`master redfence 127.0.0.1 6379 #quorum 2/2`, …).
    pub text: String,
}

/// Everything the sentinels announced, from one subscription on each.
#[derive(Clone, Debug, Default)]
pub struct Announcements {
    seen: Arc<Mutex<Vec<Announcement>>>,
    tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Announcements {
    /// Subscribes to every event channel of each sentinel (`PSUBSCRIBE *`)
    /// and keeps what arrives until dropped.
    pub async fn subscribe(sentinels: &[String]) -> Result<Self> {
        let this = Self::default();
        for addr in sentinels {
            let client = redis::Client::open(format!("redis://{addr}/")).map_err(|source| {
                ChaosError::Redis {
                    node: "redis-sentinel",
                    source,
                }
            })?;
            let mut pubsub = tokio::time::timeout(
                Duration::from_millis(QUESTION_TIMEOUT_MS),
                client.get_async_pubsub(),
            )
            .await
            .map_err(|_| ChaosError::NotReady {
                server: "redis-sentinel",
                waited: Duration::from_millis(QUESTION_TIMEOUT_MS),
                last_error: format!("{addr}: no pub/sub connection"),
            })?
            .map_err(|source| ChaosError::Redis {
                node: "redis-sentinel",
                source,
            })?;
            pubsub
                .psubscribe("*")
                .await
                .map_err(|source| ChaosError::Redis {
                    node: "redis-sentinel",
                    source,
                })?;
            let seen = this.seen.clone();
            let task = tokio::spawn(async move {
                use futures_util::StreamExt;
                let mut messages = pubsub.into_on_message();
                while let Some(message) = messages.next().await {
                    let text: String = message.get_payload().unwrap_or_default();
                    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
                    if seen.len() < ANNOUNCEMENTS_MAX {
                        seen.push(Announcement {
                            unix_us: crate::monitor::unix_us_now(),
                            event: message.get_channel_name().to_owned(),
                            text,
                        });
                    }
                }
            });
            this.tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(task);
        }
        Ok(this)
    }

    /// What arrived so far, in arrival order (three sentinels announce
    /// most events three times; [`FailoverStory`] takes the first).
    pub fn seen(&self) -> Vec<Announcement> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Announcements {
    fn drop(&mut self) {
        if Arc::strong_count(&self.tasks) == 1 {
            for task in self
                .tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..)
            {
                task.abort();
            }
        }
    }
}

/// A Sentinel failover, as the sentinels announced it and the promoted
/// node reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailoverStory {
    /// When the first sentinel marked the primary subjectively down.
    pub sdown_us: Option<i64>,
    /// When a quorum agreed it was down.
    pub odown_us: Option<i64>,
    /// When the master switched, and to which address.
    pub switched: Option<(i64, String)>,
    /// The promoted node's replication offset at its promotion (its
    /// `second_repl_offset` − 1: the last byte of the old primary's stream
    /// it had).
    pub offset: Option<u64>,
}

impl FailoverStory {
    /// The story in `seen`, with the promoted node's offset.
    pub fn from_announcements(seen: &[Announcement], offset: Option<u64>) -> Self {
        let first = |event: &str| {
            seen.iter()
                .find(|a| a.event == event && a.text.starts_with("master "))
                .map(|a| a.unix_us)
        };
        let switched = seen
            .iter()
            .find(|a| a.event == SWITCH_MASTER)
            .and_then(|a| {
                // "<name> <old ip> <old port> <new ip> <new port>"
                let parts: Vec<&str> = a.text.split_whitespace().collect();
                (parts.len() == 5).then(|| (a.unix_us, format!("{}:{}", parts[3], parts[4])))
            });
        Self {
            sdown_us: first("+sdown"),
            odown_us: first("+odown"),
            switched,
            offset,
        }
    }

    /// The story as timed events, times in ms from `zero_us` (Unix µs).
    pub fn events(&self, zero_us: i64, promoted_name: &str) -> Vec<(u64, String)> {
        let ms = |us: i64| ((us - zero_us).max(0) / 1_000) as u64;
        let mut events = Vec::with_capacity(3);
        if let Some(us) = self.sdown_us {
            events.push((
                ms(us),
                format!(
                    "Sentinel: the primary gave no valid reply for {DOWN_AFTER_MS} ms, \
                     marked subjectively down (+sdown)"
                ),
            ));
        }
        if let Some(us) = self.odown_us {
            events.push((
                ms(us),
                format!(
                    "Sentinel: {QUORUM} of {SENTINELS} sentinels agree the primary is down \
                     (+odown); failover starts"
                ),
            ));
        }
        if let Some((us, addr)) = &self.switched {
            let offset = match self.offset {
                Some(offset) => format!(" at replication offset {offset}"),
                None => String::new(),
            };
            events.push((
                ms(*us),
                format!("Sentinel: promoted {promoted_name} ({addr}){offset} (+switch-master)"),
            ));
        }
        events
    }

    /// The story in words, times in ms from `zero_us` (Unix µs).
    pub fn describe(&self, zero_us: i64, promoted_name: &str) -> String {
        let at = |us: Option<i64>| match us {
            Some(us) => format!("at {} ms", (us - zero_us).max(0) / 1_000),
            None => "(not announced)".to_owned(),
        };
        let switched = match &self.switched {
            Some((us, addr)) => format!("promoted {promoted_name} ({addr}) {}", at(Some(*us))),
            None => "announced no switch of master".to_owned(),
        };
        let offset = match self.offset {
            Some(offset) => format!(" at replication offset {offset}"),
            None => String::new(),
        };
        format!(
            "Sentinel marked the primary down {} (quorum {QUORUM} of {SENTINELS} agreed {}), \
             {switched}{offset}",
            at(self.sdown_us),
            at(self.odown_us),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_story_takes_the_first_announcement_of_each_event() {
        let a = |unix_us, event: &str, text: &str| Announcement {
            unix_us,
            event: event.into(),
            text: text.into(),
        };
        let seen = vec![
            a(1_000_000, "+sdown", "master redfence 127.0.0.1 7000"),
            a(1_100_000, "+sdown", "master redfence 127.0.0.1 7000"),
            a(
                1_300_000,
                "+odown",
                "master redfence 127.0.0.1 7000 #quorum 2/2",
            ),
            a(
                2_500_000,
                "+switch-master",
                "redfence 127.0.0.1 7000 127.0.0.1 7001",
            ),
        ];
        let story = FailoverStory::from_announcements(&seen, Some(4_242));
        assert_eq!(story.sdown_us, Some(1_000_000));
        assert_eq!(story.odown_us, Some(1_300_000));
        assert_eq!(story.switched, Some((2_500_000, "127.0.0.1:7001".into())));
        assert_eq!(
            story.describe(0, "redis-replica"),
            "Sentinel marked the primary down at 1000 ms (quorum 2 of 3 agreed at 1300 ms), \
             promoted redis-replica (127.0.0.1:7001) at 2500 ms at replication offset 4242"
        );
    }

    #[test]
    fn an_address_no_route_knows_is_refused() {
        let map = AddressMap {
            sentinels: vec![],
            routes: vec![("127.0.0.1:7000".into(), "127.0.0.1:9000".into())],
        };
        assert_eq!(map.translate("127.0.0.1:7000").unwrap(), "127.0.0.1:9000");
        assert!(map.translate("10.0.0.1:7000").is_err());
    }

    #[test]
    fn the_configuration_monitors_the_primary_with_the_quorum() {
        let text = config_text(26379, "127.0.0.1:7000", "/tmp/s").unwrap();
        assert!(text.contains("sentinel monitor redfence 127.0.0.1 7000 2\n"));
        assert!(text.contains("port 26379\n"));
        assert!(config_text(1, "nonsense", "/tmp").is_err());
    }
}
