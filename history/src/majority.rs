//! The majority view: who holds a lock kept on several independent Redis
//! masters (Redlock), derived from each master's own ownership log.
//!
//! Why: a lock over N masters is held by whoever holds its key on a strict
//! majority of them — that is the algorithm's whole claim, and the only
//! reading under which two clients can never both "hold" it on servers that
//! keep their state. One master's log says who holds *that copy*; the
//! properties ask who holds *the lock*. So the masters' records are folded
//! into one timeline on the pseudo-server [`MAJORITY_SERVER`], which the
//! checkers read as they read a single primary's log:
//!
//! - a holder's majority begins (`Set`) with the record that gave it its
//!   `⌊N/2⌋+1`-th copy;
//! - it ends with the record that took away one copy too many, worded as
//!   that record's change (`Expired`, `Deleted`, `Lost`); an overwrite that
//!   hands the majority straight to another holder is an `Overwritten`, one
//!   that leaves nobody with a majority ends it as a deletion would;
//! - records of servers that are not masters (a replica) are left out.
//!
//! It is decided from what the servers applied, nothing a client said: a
//! minority holder is not a holder, whatever its library believed.

use std::collections::BTreeMap;

use crate::history::{OwnershipChange, OwnershipRecord};

/// The server name the majority view's records carry.
pub const MAJORITY_SERVER: &str = "a majority of the masters";

/// A master's copy of a key: who holds it, and — for a copy its master
/// lost by crashing — until when it still counts.
#[derive(Clone, Copy, Debug)]
struct Copy<'a> {
    owner: &'a str,
    /// `Some((from_ms, until_ms))` once the master crashed with it: no
    /// client can take that master's copy while it is down, so it counts
    /// for its holder until the master restarts (and forgets it) or until
    /// a lease after the crash (its TTL ran out meanwhile), whichever
    /// comes first. This is what makes Redis' remedy — restart a crashed
    /// master only after the longest lease — visible in the view.
    down: Option<(u64, u64)>,
}

/// The majority view of `log` over `masters` (server names, each counted
/// once): one record per change of the majority holder of each key, in
/// the order of the records that caused them. `restarts` are the moments
/// masters were restarted (`(server, at_ms)`), `lease_ms` the longest a
/// copy can outlive its master's crash. With one master it is that
/// master's own records, renamed.
pub fn majority_view(
    log: &[OwnershipRecord],
    masters: &[String],
    restarts: &[(String, u64)],
    lease_ms: u64,
) -> Vec<OwnershipRecord> {
    assert!(!masters.is_empty(), "a majority of no masters");
    let quorum = masters.len() / 2 + 1;
    // Per key: each master's copy. BTreeMaps: deterministic.
    let mut copies: BTreeMap<&str, BTreeMap<&str, Copy<'_>>> = BTreeMap::new();
    let mut majority: BTreeMap<&str, &str> = BTreeMap::new();
    let mut view = Vec::new();
    let mut horizon_ms = 0;
    for record in log {
        if !masters.contains(&record.server) {
            continue;
        }
        let key = record.key.as_str();
        // Crashed copies whose master restarted, or whose TTL ran out,
        // before this record stop counting first.
        let holders = copies.entry(key).or_default();
        forget_gone(
            &mut view,
            &mut majority,
            key,
            holders,
            restarts,
            record.at_ms,
            quorum,
        );
        let holders = copies.entry(key).or_default();
        let server = record.server.as_str();
        horizon_ms = horizon_ms.max(record.at_ms);
        match (&record.change, record.change.started_owner()) {
            (_, Some(owner)) => {
                holders.insert(server, Copy { owner, down: None });
            }
            (OwnershipChange::Lost { .. }, None) => {
                if let Some(copy) = holders.get_mut(server) {
                    copy.down = Some((record.at_ms, record.at_ms.saturating_add(lease_ms)));
                }
            }
            (_, None) => {
                holders.remove(server);
            }
        }
        let word = match &record.change {
            OwnershipChange::Expired { .. } => Word::Expired,
            OwnershipChange::Lost { .. } => Word::Lost,
            _ => Word::Deleted,
        };
        settle(
            &mut view,
            &mut majority,
            key,
            holders,
            quorum,
            record.at_ms,
            word,
        );
    }
    // Restarts after the last record still end what they end; nothing is
    // decided past the last thing seen.
    let horizon_ms = restarts
        .iter()
        .map(|&(_, at_ms)| at_ms)
        .fold(horizon_ms, u64::max);
    for (key, holders) in &mut copies {
        forget_gone(
            &mut view,
            &mut majority,
            key,
            holders,
            restarts,
            horizon_ms,
            quorum,
        );
    }
    view
}

/// Drops, in time order, the crashed copies of `key` that stopped
/// counting by `before_ms`, recording what that did to the majority.
fn forget_gone<'a>(
    view: &mut Vec<OwnershipRecord>,
    majority: &mut BTreeMap<&'a str, &'a str>,
    key: &'a str,
    holders: &mut BTreeMap<&'a str, Copy<'a>>,
    restarts: &[(String, u64)],
    before_ms: u64,
    quorum: usize,
) {
    // Bounded: each turn removes one copy.
    while let Some((server, gone_ms, restarted)) = next_gone(holders, restarts, before_ms) {
        holders.remove(server);
        let word = if restarted { Word::Lost } else { Word::Expired };
        settle(view, majority, key, holders, quorum, gone_ms, word);
    }
}

/// How a majority that ends is worded.
#[derive(Clone, Copy)]
enum Word {
    Expired,
    Lost,
    Deleted,
}

/// The crashed copy among `holders` that stops counting first, before
/// `before_ms`: its server, when, and whether by a restart.
fn next_gone<'a>(
    holders: &BTreeMap<&'a str, Copy<'_>>,
    restarts: &[(String, u64)],
    before_ms: u64,
) -> Option<(&'a str, u64, bool)> {
    holders
        .iter()
        .filter_map(|(&server, copy)| {
            let (from_ms, until_ms) = copy.down?;
            let restart_ms = restarts
                .iter()
                .filter(|(s, at_ms)| s == server && *at_ms >= from_ms)
                .map(|&(_, at_ms)| at_ms)
                .min();
            let (gone_ms, restarted) = match restart_ms {
                Some(at_ms) if at_ms <= until_ms => (at_ms, true),
                _ => (until_ms, false),
            };
            (gone_ms <= before_ms).then_some((server, gone_ms, restarted))
        })
        .min_by_key(|&(server, gone_ms, _)| (gone_ms, server))
}

/// Records the change of `key`'s majority holder, if `holders` changed it.
fn settle<'a>(
    view: &mut Vec<OwnershipRecord>,
    majority: &mut BTreeMap<&'a str, &'a str>,
    key: &'a str,
    holders: &BTreeMap<&str, Copy<'a>>,
    quorum: usize,
    at_ms: u64,
    word: Word,
) {
    let now = holder_with(holders, quorum);
    let before = majority.get(key).copied();
    if now == before {
        return;
    }
    let change = match (before, now) {
        (None, Some(owner)) => OwnershipChange::Set {
            owner: owner.to_owned(),
        },
        (Some(from), Some(to)) => OwnershipChange::Overwritten {
            from: from.to_owned(),
            to: to.to_owned(),
        },
        (Some(owner), None) => {
            let owner = owner.to_owned();
            match word {
                Word::Expired => OwnershipChange::Expired { owner },
                Word::Lost => OwnershipChange::Lost { owner },
                Word::Deleted => OwnershipChange::Deleted { owner },
            }
        }
        (None, None) => unreachable!("unchanged majorities were skipped"),
    };
    match now {
        Some(owner) => majority.insert(key, owner),
        None => majority.remove(key),
    };
    view.push(OwnershipRecord {
        at_ms,
        server: MAJORITY_SERVER.to_owned(),
        key: key.to_owned(),
        change,
    });
}

/// The holder of at least `quorum` of `holders`' copies, if any (at most
/// one can be: `quorum` is a strict majority).
fn holder_with<'a>(holders: &BTreeMap<&str, Copy<'a>>, quorum: usize) -> Option<&'a str> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for copy in holders.values() {
        *counts.entry(copy.owner).or_default() += 1;
    }
    counts
        .into_iter()
        .find(|&(_, count)| count >= quorum)
        .map(|(owner, _)| owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at_ms: u64, server: &str, change: OwnershipChange) -> OwnershipRecord {
        OwnershipRecord {
            at_ms,
            server: server.to_owned(),
            key: "lock:{r}".to_owned(),
            change,
        }
    }
    fn set(o: &str) -> OwnershipChange {
        OwnershipChange::Set { owner: o.into() }
    }
    fn expired(o: &str) -> OwnershipChange {
        OwnershipChange::Expired { owner: o.into() }
    }
    fn deleted(o: &str) -> OwnershipChange {
        OwnershipChange::Deleted { owner: o.into() }
    }
    fn lost(o: &str) -> OwnershipChange {
        OwnershipChange::Lost { owner: o.into() }
    }
    fn masters(n: usize) -> Vec<String> {
        (0..n)
            .map(|m| {
                if m == 0 {
                    "redis".to_owned()
                } else {
                    format!("redis-{m}")
                }
            })
            .collect()
    }
    fn changes(view: &[OwnershipRecord]) -> Vec<(u64, OwnershipChange)> {
        view.iter()
            .inspect(|r| assert_eq!(r.server, MAJORITY_SERVER))
            .map(|r| (r.at_ms, r.change.clone()))
            .collect()
    }

    #[test]
    fn a_holder_holds_from_its_quorum_th_copy_until_it_has_fewer() {
        let log = [
            rec(10, "redis", set("a")),
            rec(11, "redis-1", set("a")),
            rec(12, "redis-2", set("a")),
            rec(50, "redis-1", expired("a")),
            rec(60, "redis", deleted("a")),
            rec(61, "redis-2", deleted("a")),
        ];
        assert_eq!(
            changes(&majority_view(&log, &masters(3), &[], 1_000)),
            [(11, set("a")), (60, deleted("a"))]
        );
    }

    /// The clock-jump story: one master's copy expires early, and a
    /// second client gathers a majority from it and the masters the first
    /// could not reach — the view shows the handover, never two holders.
    #[test]
    fn an_early_expiry_hands_the_majority_on() {
        let log = [
            rec(0, "redis", set("a")),
            rec(1, "redis-1", set("a")),
            rec(2, "redis-2", set("a")),
            rec(300, "redis-2", expired("a")),
            rec(310, "redis-2", set("b")),
            rec(311, "redis-3", set("b")),
            rec(312, "redis-4", set("b")),
            rec(1000, "redis", expired("a")),
        ];
        assert_eq!(
            changes(&majority_view(&log, &masters(5), &[], 1_000)),
            [(2, set("a")), (300, expired("a")), (312, set("b"))]
        );
    }

    #[test]
    fn overwrites_hand_over_or_end_and_losses_keep_their_word() {
        let over = |from: &str, to: &str| OwnershipChange::Overwritten {
            from: from.into(),
            to: to.into(),
        };
        let log = [
            rec(0, "redis", set("a")),
            rec(1, "redis-1", set("a")),
            rec(2, "redis-2", set("b")),
            // a keeps 1, b gets 2: a straight handover.
            rec(5, "redis", over("a", "b")),
            // b down to 1, c has 1, a has 1: nobody.
            rec(6, "redis", over("b", "c")),
            rec(7, "redis-1", over("a", "c")),
            rec(9, "redis-1", lost("c")),
            rec(20, "replica", set("z")),
        ];
        // redis-1 crashed at 9 and restarted at 30: c's copy there counts
        // until the restart, which ends c's majority as a loss.
        let restarts = [("redis-1".to_owned(), 30)];
        assert_eq!(
            changes(&majority_view(&log, &masters(3), &restarts, 1_000)),
            [
                (1, set("a")),
                (5, over("a", "b")),
                (6, deleted("b")),
                (7, set("c")),
                (30, lost("c")),
            ]
        );
    }

    /// Redis' remedy: a crashed master that stays down for a lease keeps
    /// its copy out of anyone else's reach, so the holder keeps its
    /// majority until that copy's TTL would have run out; restarted at
    /// once, the master forgets it, and the majority ends at the restart.
    #[test]
    fn a_crashed_copy_counts_until_its_master_restarts_or_its_lease_ends() {
        let log = [
            rec(0, "redis", set("a")),
            rec(1, "redis-1", set("a")),
            rec(100, "redis-1", lost("a")),
            rec(1_000, "redis", expired("a")),
            rec(1_300, "redis-1", set("b")),
        ];
        let delayed = [("redis-1".to_owned(), 1_250)];
        assert_eq!(
            changes(&majority_view(&log, &masters(3), &delayed, 1_000)),
            [(1, set("a")), (1_000, expired("a"))]
        );
        let at_once = [("redis-1".to_owned(), 150)];
        assert_eq!(
            changes(&majority_view(&log, &masters(3), &at_once, 1_000)),
            [(1, set("a")), (150, lost("a"))]
        );
        // Never restarted: counted until a lease after the crash.
        let log = [
            rec(0, "redis", set("a")),
            rec(1, "redis-1", set("a")),
            rec(100, "redis-1", lost("a")),
            rec(2_000, "redis-2", set("c")),
        ];
        assert_eq!(
            changes(&majority_view(&log, &masters(3), &[], 1_000)),
            [(1, set("a")), (1_100, expired("a"))]
        );
    }

    #[test]
    fn one_master_is_its_own_majority() {
        let log = [
            rec(0, "redis", set("a")),
            rec(3, "replica", set("a")),
            rec(9, "redis", expired("a")),
        ];
        assert_eq!(
            changes(&majority_view(&log, &masters(1), &[], 1_000)),
            [(0, set("a")), (9, expired("a"))]
        );
    }
}
