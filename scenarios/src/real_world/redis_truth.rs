//! The real world's Redis ownership log: each node's `MONITOR` tape
//! (`redfence_chaos::monitor`) re-executed through the simulated server's
//! command engine (`redfence_sim::redis::Replay`), so a real run is judged
//! on the same kind of record as a simulated one — every change of the lock
//! key's holder on each server, expiries included.
//!
//! The nodes are named as the simulation names its hosts (`redis`,
//! `replica`, and `redis-1`, `redis-2`, … for the independent masters of a
//! topology that runs several), and their tapes are fed in one time order
//! into one log, as the simulation's servers append to one log as they run.
//! Each master's end-of-run keyspace is compared with its own replay.
//!
//! A recording that may be incomplete is never trusted: a gap the
//! recorder named, a command the engine does not know, a key type it cannot
//! hold, or a replayed keyspace that disagrees with the server's own at the
//! end makes the log `None`, and the gap, in words, becomes the reason
//! every verdict that needed the log gives for being undecided.
//!
//! One disagreement is expected and handled: a replica's full
//! resynchronisation (after its primary restarted empty, or after a long
//! cut) loads a snapshot that no monitor shows. Until its promotion no
//! client uses a replica, so its copy decides nothing a client could see:
//! at a promotion a copy that differs from what the replica holds is
//! replaced by it (its records so far dropped, its holders starting at the
//! promotion), and a never-promoted replica whose copy differs at the end
//! is left out of the log.

use redfence_chaos::monitor::{Mark, Snapshot, TapeEntry};
use redfence_chaos::{NodeTape, RedisNode};
use redfence_sim::redis::{OwnershipLog, OwnershipRecord, Replay};
use redfence_sim::world::{master_host, REPLICA_HOST};

/// How far a lease's remaining time may differ between the replay and the
/// server's `PTTL` at the end: the end snapshot's reads take a few
/// milliseconds after the instant the replay is compared at, and a
/// loaded machine may take tens.
const END_TTL_TOLERANCE_MS: u64 = 250;

/// The client name snapshot commands run under in the replay.
const SNAPSHOT_CLIENT: &str = "redfence-snapshot";

/// The name a node's records carry: the simulation's host names (master
/// m's are [`master_host`]`(m)`, as the majority view expects).
fn server_name(node: RedisNode) -> String {
    match node {
        RedisNode::Primary => master_host(0),
        RedisNode::Replica => REPLICA_HOST.to_owned(),
        RedisNode::Master(m) => master_host(m),
    }
}

/// Milliseconds on the world's clock of a server time in Unix µs (the
/// world's clock reads whole milliseconds since its start, so the offset
/// is taken in µs before rounding down, as that clock does).
fn world_ms(unix_us: i64, started_wall_us: i64) -> u64 {
    u64::try_from((unix_us - started_wall_us).div_euclid(1_000)).unwrap_or(0)
}

/// The ownership log of keys starting with `lock_key_prefix` that `tapes`
/// show, on the world's clock (`started_wall_us` is its 0 in Unix µs), or
/// why it cannot be trusted.
pub(super) fn ownership_log(
    tapes: &[NodeTape],
    started_wall_us: i64,
    lock_key_prefix: &str,
) -> Result<Vec<OwnershipRecord>, String> {
    let gaps: Vec<&str> = tapes
        .iter()
        .flat_map(|t| t.tape.gaps.iter().map(String::as_str))
        .collect();
    if !gaps.is_empty() {
        return Err(format!(
            "the Redis recording has a gap ({})",
            gaps.join("; ")
        ));
    }
    let unix_base_ms = started_wall_us.div_euclid(1_000);
    let mut nodes: Vec<Node> = tapes
        .iter()
        .map(|t| Node::new(t.node, lock_key_prefix, unix_base_ms))
        .collect();
    // One time order over both tapes; a node's own entries keep their
    // order (each tape is sorted stably, and ties go to the earlier tape).
    let mut merged: Vec<(i64, usize, usize)> = Vec::new();
    for (t, tape) in tapes.iter().enumerate() {
        for (i, entry) in tape.tape.entries.iter().enumerate() {
            merged.push((entry.unix_us(), t, i));
        }
    }
    merged.sort();
    let mut skipped_types: Vec<String> = Vec::new();
    let mut problems = Vec::new();
    for (step, &(unix_us, t, i)) in merged.iter().enumerate() {
        let at_ms = world_ms(unix_us, started_wall_us);
        let node = &mut nodes[t];
        match &tapes[t].tape.entries[i] {
            TapeEntry::Command(command) => {
                node.replay
                    .apply(at_ms, command.db, &command.client, &command.args);
            }
            TapeEntry::Mark { mark, .. } => match mark {
                Mark::Stopped => node.replay.stop(at_ms),
                Mark::Started => node.replay.start(at_ms),
                Mark::Loaded(snapshot) => {
                    load(&mut node.replay, at_ms, snapshot);
                    skipped_types.extend(snapshot.skipped.iter().map(|(key, kind)| {
                        format!("{}: key {key:?} is a {kind}", server_name(node.node))
                    }));
                }
                Mark::Checked(snapshot) => {
                    node.replay.finish(at_ms);
                    let name = server_name(node.node);
                    let differs = compare_end(&name, &node.replay, snapshot, lock_key_prefix);
                    if !differs.is_empty() {
                        // Nothing of this copy was ever seen by a client
                        // (a replica until its promotion): it is replaced
                        // by what the server holds, from now on.
                        node.resync(at_ms, snapshot, lock_key_prefix, unix_base_ms);
                    }
                    node.served = true;
                }
            },
        }
        node.tag(step);
    }
    if !skipped_types.is_empty() {
        return Err(format!(
            "the Redis recording cannot re-create keys of these types ({})",
            skipped_types.join("; ")
        ));
    }
    let end_step = merged.len();
    for (t, tape) in tapes.iter().enumerate() {
        let node = &mut nodes[t];
        let name = server_name(node.node);
        let unknown = node.replay.unknown_commands();
        if !unknown.is_empty() {
            let list: Vec<String> = unknown
                .iter()
                .map(|(command, n)| format!("{command} ×{n}"))
                .collect();
            problems.push(format!(
                "{name} ran commands the replay engine does not know ({})",
                list.join(", ")
            ));
        }
        if let Some((at_us, end)) = &tape.end {
            node.replay.finish(world_ms(*at_us, started_wall_us));
            node.tag(end_step);
            let differs = compare_end(&name, &node.replay, end, lock_key_prefix);
            if differs.is_empty() {
                continue;
            }
            if node.node == RedisNode::Replica && !node.served {
                // A replica no client ever used: a full resync (after its
                // primary restarted empty, say) replaced its copy without
                // a trace on its tape. Its copy had no say in any verdict
                // a client could observe; it is left out of the log.
                node.records.clear();
                continue;
            }
            problems.extend(differs);
        }
    }
    if !problems.is_empty() {
        return Err(format!(
            "the re-executed Redis recording does not match the servers ({})",
            problems.join("; ")
        ));
    }
    // Back into the one order the nodes' records were made in.
    let mut tagged: Vec<(usize, usize, usize, OwnershipRecord)> = Vec::new();
    for (t, node) in nodes.into_iter().enumerate() {
        for (n, (step, record)) in node.records.into_iter().enumerate() {
            tagged.push((step, t, n, record));
        }
    }
    tagged.sort_by_key(|(step, t, n, _)| (*step, *t, *n));
    Ok(tagged.into_iter().map(|(_, _, _, record)| record).collect())
}

/// One node's replay and the records it made, each tagged with the step
/// (of the merged tapes) that made it.
struct Node {
    node: RedisNode,
    replay: Replay,
    log: OwnershipLog,
    records: Vec<(usize, OwnershipRecord)>,
    /// Clients used this node (a primary or another master from the start;
    /// a replica from its promotion).
    served: bool,
}

impl Node {
    fn new(node: RedisNode, prefix: &str, unix_base_ms: i64) -> Self {
        let log = OwnershipLog::new();
        Self {
            node,
            replay: Replay::new(&server_name(node), prefix, log.clone(), unix_base_ms),
            log,
            records: Vec::new(),
            served: node != RedisNode::Replica,
        }
    }

    /// Takes the records made since the last call, as made at `step`.
    fn tag(&mut self, step: usize) {
        let events = self.log.events();
        let seen = self.records.len();
        self.records
            .extend(events.into_iter().skip(seen).map(|record| (step, record)));
    }

    /// Replaces the copy with `snapshot` at `at_ms`: its records so far are
    /// dropped, and the holders it has now start at `at_ms`.
    fn resync(&mut self, at_ms: u64, snapshot: &Snapshot, prefix: &str, unix_base_ms: i64) {
        let log = OwnershipLog::new();
        let mut replay = Replay::new(&server_name(self.node), prefix, log.clone(), unix_base_ms);
        load(&mut replay, at_ms, snapshot);
        self.replay = replay;
        self.log = log;
        self.records.clear();
    }
}

/// Re-creates a snapshot's keys in `replay` at `at_ms`.
fn load(replay: &mut Replay, at_ms: u64, snapshot: &Snapshot) {
    for command in &snapshot.commands {
        replay.apply(at_ms, 0, SNAPSHOT_CLIENT, command);
    }
}

/// Where the replay's strings differ from what the server held at the end.
fn compare_end(name: &str, replay: &Replay, end: &Snapshot, prefix: &str) -> Vec<String> {
    let mut problems = Vec::new();
    // The TTLs were read up to `read_ms` after the instant the replay is
    // compared at: the server's may be that much lower.
    let tolerance_ms = END_TTL_TOLERANCE_MS.saturating_add(end.read_ms);
    for (key, value, ttl_ms) in &end.strings {
        let shown = String::from_utf8_lossy(key);
        match replay.string_at_end(0, key) {
            None => {
                // A key about to expire may have been read just before.
                if ttl_ms.is_none_or(|ttl| ttl > tolerance_ms) {
                    problems.push(format!("{name} holds {shown}, the replay does not"));
                }
            }
            Some((replayed, replayed_ttl)) => {
                if replayed != *value {
                    problems.push(format!(
                        "{name} holds {shown} = {:?}, the replay {:?}",
                        String::from_utf8_lossy(value),
                        String::from_utf8_lossy(&replayed)
                    ));
                } else if !ttl_close(*ttl_ms, replayed_ttl, tolerance_ms) {
                    problems.push(format!(
                        "{name}'s {shown} has {ttl_ms:?} ms left, the replay's {replayed_ttl:?}"
                    ));
                }
            }
        }
    }
    // A lock key the replay still holds that the server does not: the
    // server dropped a holding the tape does not show.
    // The holder and the time left go in the words: they tell a command
    // the tape missed (much time left) from a clock edge (little).
    for (key, value, ttl_ms) in replay.strings_at_end() {
        let on_server = end.strings.iter().any(|(k, _, _)| *k == key);
        let about_to_expire = ttl_ms.is_some_and(|ttl| ttl <= tolerance_ms);
        if key.starts_with(prefix.as_bytes()) && !on_server && !about_to_expire {
            let left = match ttl_ms {
                Some(ttl_ms) => format!("{ttl_ms} ms left"),
                None => "no expiry".to_owned(),
            };
            problems.push(format!(
                "the replay holds {} = {} ({left}) on {name}, the server does not",
                String::from_utf8_lossy(&key),
                String::from_utf8_lossy(&value)
            ));
        }
    }
    problems
}

fn ttl_close(server: Option<u64>, replay: Option<u64>, tolerance_ms: u64) -> bool {
    match (server, replay) {
        (None, None) => true,
        (Some(a), Some(b)) => a.abs_diff(b) <= tolerance_ms,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay_holding(lease_ms: u64, at_end_ms: u64) -> Replay {
        let mut replay = Replay::new("redis", "lock:", OwnershipLog::new(), 0);
        let set: Vec<Vec<u8>> = ["SET", "lock:{a}", "owner-1", "PX", &lease_ms.to_string()]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        replay.apply(0, 0, "client-1", &set);
        replay.finish(at_end_ms);
        replay
    }

    fn empty_server() -> Snapshot {
        Snapshot::default()
    }

    /// A server holding `lock:{a}` = owner-1 with `ttl_ms` left, read in
    /// `read_ms`.
    fn server_holding(ttl_ms: u64, read_ms: u64) -> Snapshot {
        Snapshot {
            strings: vec![(b"lock:{a}".to_vec(), b"owner-1".to_vec(), Some(ttl_ms))],
            read_ms,
            ..Snapshot::default()
        }
    }

    /// The end snapshot's TTLs are read after the instant the replay is
    /// compared at; a slow read (a loaded machine: seen in the real suite)
    /// lowers them by up to its length, which is no difference. A lower
    /// TTL than that allows still is one.
    #[test]
    fn a_slow_end_read_allows_for_its_own_length() {
        let replay = replay_holding(60_000, 1_000);
        let late = 59_000 - END_TTL_TOLERANCE_MS - 400;
        assert_eq!(
            compare_end("replica", &replay, &server_holding(late, 400), "lock:"),
            Vec::<String>::new()
        );
        let problems = compare_end("replica", &replay, &server_holding(late, 0), "lock:");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("ms left, the replay's"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_holding_the_server_lost_is_named_with_its_holder_and_time_left() {
        let problems = compare_end(
            "redis",
            &replay_holding(5_000, 1_000),
            &empty_server(),
            "lock:",
        );
        assert_eq!(
            problems,
            vec![
                "the replay holds lock:{a} = owner-1 (4000 ms left) on redis, the server does not"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn a_holding_about_to_expire_is_no_difference() {
        let at_end_ms = 5_000 - END_TTL_TOLERANCE_MS;
        let problems = compare_end(
            "redis",
            &replay_holding(5_000, at_end_ms),
            &empty_server(),
            "lock:",
        );
        assert_eq!(problems, Vec::<String>::new());
    }
}
