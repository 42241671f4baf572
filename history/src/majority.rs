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
pub const MAJORITY_SERVER: &str = "majority";

/// The majority view of `log` over `masters` (server names, each counted
/// once): one record per change of the majority holder of each key, in the
/// order of the records that caused them. With one master it is that
/// master's own records, renamed.
pub fn majority_view(log: &[OwnershipRecord], masters: &[String]) -> Vec<OwnershipRecord> {
    assert!(!masters.is_empty(), "a majority of no masters");
    let quorum = masters.len() / 2 + 1;
    // Per key: each master's current holder. BTreeMaps: deterministic.
    let mut copies: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    let mut majority: BTreeMap<&str, &str> = BTreeMap::new();
    let mut view = Vec::new();
    for record in log {
        if !masters.contains(&record.server) {
            continue;
        }
        let key = record.key.as_str();
        let holders = copies.entry(key).or_default();
        match record.change.started_owner() {
            Some(owner) => {
                holders.insert(record.server.as_str(), owner);
            }
            None => {
                holders.remove(record.server.as_str());
            }
        }
        let now = holder_with(holders, quorum);
        let before = majority.get(key).copied();
        if now == before {
            continue;
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
                match &record.change {
                    OwnershipChange::Expired { .. } => OwnershipChange::Expired { owner },
                    OwnershipChange::Lost { .. } => OwnershipChange::Lost { owner },
                    _ => OwnershipChange::Deleted { owner },
                }
            }
            (None, None) => unreachable!("unchanged majorities were skipped"),
        };
        match now {
            Some(owner) => majority.insert(key, owner),
            None => majority.remove(key),
        };
        view.push(OwnershipRecord {
            at_ms: record.at_ms,
            server: MAJORITY_SERVER.to_owned(),
            key: record.key.clone(),
            change,
        });
    }
    view
}

/// The holder of at least `quorum` of `holders`' copies, if any (at most
/// one can be: `quorum` is a strict majority).
fn holder_with<'a>(holders: &BTreeMap<&str, &'a str>, quorum: usize) -> Option<&'a str> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for owner in holders.values() {
        *counts.entry(owner).or_default() += 1;
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
            changes(&majority_view(&log, &masters(3))),
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
            changes(&majority_view(&log, &masters(5))),
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
        assert_eq!(
            changes(&majority_view(&log, &masters(3))),
            [
                (1, set("a")),
                (5, over("a", "b")),
                (6, deleted("b")),
                (7, set("c")),
                (9, lost("c")),
            ]
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
            changes(&majority_view(&log, &masters(1))),
            [(0, set("a")), (9, expired("a"))]
        );
    }
}
