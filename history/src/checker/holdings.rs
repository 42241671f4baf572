//! Holdings: who held which lock key on which server, from when to when,
//! rebuilt from the Redis ownership log.
//!
//! Seven rules reason about one owner's uninterrupted holding of a key
//! (renewal and unlock safety, bounded liveness, fail-closed, lease
//! continuity, no overlapping holders, unfenced stale writes), so it is
//! derived here, once per check (`Derived` in `mod.rs`). Each (server, key)
//! pair is its own timeline — a replica logs its own copy of every change,
//! later. The log is read in its order (each server's
//! execution order), not sorted by time: an `Expired` record carries the
//! logical deadline, which may be earlier than the record before it.

use std::collections::BTreeMap;

use crate::history::OwnershipRecord;

/// One owner's uninterrupted holding of a key on one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Holding {
    /// The server.
    pub server: String,
    /// The key.
    pub key: String,
    /// The holder.
    pub owner: String,
    /// When the holding began.
    pub start_ms: u64,
    /// Index of the record that began it.
    pub start_index: usize,
    /// When and by which record it ended; `None` if held at the end of the run.
    pub end: Option<(u64, usize)>,
}

impl Holding {
    /// How long it lasted, counting an open holding until `end_ms`.
    pub fn duration_ms(&self, end_ms: u64) -> u64 {
        let until_ms = self.end.map_or(end_ms, |(at_ms, _)| at_ms);
        until_ms.saturating_sub(self.start_ms)
    }
}

/// Every holding in the log, ordered by the record that began it.
///
/// A record that ends a holding of someone other than the current holder (an
/// inconsistent log) closes the current holding anyway, because the key's
/// holder did change; `Overwritten` from an owner to itself continues the
/// holding (the same token set the key again).
pub(super) fn holdings(log: &[OwnershipRecord]) -> Vec<Holding> {
    let mut open: BTreeMap<(&str, &str), Holding> = BTreeMap::new();
    let mut done: Vec<Holding> = Vec::with_capacity(log.len() / 2 + 1);
    for (index, record) in log.iter().enumerate() {
        let slot = (record.server.as_str(), record.key.as_str());
        let ended = record.change.ended_owner();
        let started = record.change.started_owner();
        if ended.is_some() && ended == started {
            // If the start went unlogged, the holding is known from here.
            open.entry(slot)
                .or_insert_with(|| holding(record, index, started.unwrap_or_default()));
            continue;
        }
        if ended.is_some() {
            if let Some(mut current) = open.remove(&slot) {
                current.end = Some((record.at_ms, index));
                done.push(current);
            }
        }
        if let Some(owner) = started {
            if let Some(mut current) = open.remove(&slot) {
                // A Set over a live holding: the log missed its end.
                current.end = Some((record.at_ms, index));
                done.push(current);
            }
            open.insert(slot, holding(record, index, owner));
        }
    }
    done.extend(open.into_values());
    done.sort_by_key(|h| h.start_index);
    done
}

fn holding(record: &OwnershipRecord, index: usize, owner: &str) -> Holding {
    Holding {
        server: record.server.clone(),
        key: record.key.clone(),
        owner: owner.to_owned(),
        start_ms: record.at_ms,
        start_index: index,
        end: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OwnershipChange;

    fn rec(at_ms: u64, server: &str, change: OwnershipChange) -> OwnershipRecord {
        OwnershipRecord {
            at_ms,
            server: server.to_owned(),
            key: "lock:r".to_owned(),
            change,
        }
    }

    #[test]
    fn timelines_are_per_server_and_in_log_order() {
        let a = || "a".to_owned();
        let log = vec![
            rec(10, "p", OwnershipChange::Set { owner: a() }),
            rec(12, "r", OwnershipChange::Set { owner: a() }),
            rec(
                20,
                "p",
                OwnershipChange::Overwritten {
                    from: a(),
                    to: "b".into(),
                },
            ),
            rec(21, "r", OwnershipChange::Deleted { owner: a() }),
        ];
        let hs = holdings(&log);
        assert_eq!(hs.len(), 3);
        assert_eq!((hs[0].owner.as_str(), hs[0].end), ("a", Some((20, 2))));
        assert_eq!((hs[1].server.as_str(), hs[1].end), ("r", Some((21, 3))));
        assert_eq!((hs[2].owner.as_str(), hs[2].end), ("b", None));
        assert_eq!(hs[2].duration_ms(100), 80);
    }

    #[test]
    fn self_overwrite_continues_the_holding() {
        let log = vec![
            rec(10, "p", OwnershipChange::Set { owner: "a".into() }),
            rec(
                20,
                "p",
                OwnershipChange::Overwritten {
                    from: "a".into(),
                    to: "a".into(),
                },
            ),
            rec(30, "p", OwnershipChange::Expired { owner: "a".into() }),
        ];
        let hs = holdings(&log);
        assert_eq!(hs.len(), 1);
        assert_eq!(hs[0].duration_ms(99), 20);
    }
}
