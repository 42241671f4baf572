//! List commands: LPUSH, RPUSH, LPOP, BLPOP — what lock libraries use to
//! signal an unlock to waiters (push a token on release, BLPOP to wait), and
//! how a key comes to hold a non-string (WRONGTYPE paths).
//!
//! BLPOP blocks only its own connection, like WAIT: the handler answers at
//! once when a list has an element, and otherwise returns
//! [`Outcome::Block`]; the connection registers with the server and waits
//! (`blocking.rs`). After every client command that pushed, [`serve_blocked`]
//! hands elements to blocked clients in the order they blocked, before the
//! next command runs, so a waiter is served as in Redis's
//! `handleClientsBlockedOnKeys` and its pop replicates in the same batch as
//! the push. Inside EXEC (Redis's `CLIENT_DENY_BLOCKING`) an empty BLPOP
//! answers nil at once; scripts cannot call it (`noscript` in Redis 7.0).
//!
//! Deviations: the timeout is parsed as an `f64` (Redis: `long double`, so
//! hex floats and values beyond `f64`'s range differ); a timeout of 0
//! ("forever") and any longer one give up after [`BLOCK_MS_MAX`]; with
//! several clients blocked on several keys, clients are served strictly in
//! blocking order (Redis goes key by key in the order keys became ready).

use std::collections::VecDeque;

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::{Entry, Value, LIST_LEN_MAX};
use super::super::server::Server;
use super::{err, parse_i64, wrong_arity, Outcome};

/// Longest a BLPOP blocks, in ms (timeout 0 means this long).
pub(crate) const BLOCK_MS_MAX: u64 = 3_600_000;

/// The list at `key` (empty and without deadline when missing), or
/// WRONGTYPE.
fn read(exec: &Exec<'_>, key: &[u8]) -> Result<(VecDeque<Vec<u8>>, Option<u64>), Frame> {
    match exec.keyspace().lookup(exec.db, key, exec.now_ms) {
        None => Ok((VecDeque::new(), None)),
        Some(Entry {
            value: Value::List(list),
            expires_at_ms,
        }) => Ok((list.clone(), *expires_at_ms)),
        Some(_) => Err(Frame::error(err::WRONGTYPE)),
    }
}

/// Stores `list` (deleting the key when it is empty, as Redis does).
fn store(
    server: &Server,
    db: usize,
    key: &[u8],
    list: VecDeque<Vec<u8>>,
    expires_at_ms: Option<u64>,
    now_ms: u64,
) {
    let mut ks = server.keyspace.borrow_mut();
    if list.is_empty() {
        ks.delete(db, key, now_ms);
        return;
    }
    let entry = Entry {
        value: Value::List(list),
        expires_at_ms,
    };
    ks.put(db, key, entry, now_ms);
}

fn push(exec: &mut Exec<'_>, args: &[Vec<u8>], front: bool) -> Outcome {
    let key = &args[1];
    let (mut list, expires_at_ms) = match read(exec, key) {
        Ok(found) => found,
        Err(e) => return e.into(),
    };
    let pushed = args.len() - 2;
    if list.len() + pushed > LIST_LEN_MAX {
        return Frame::error(err::OOM).into();
    }
    for element in &args[2..] {
        if front {
            list.push_front(element.clone());
        } else {
            list.push_back(element.clone());
        }
    }
    let len = list.len();
    store(exec.server, exec.db, key, list, expires_at_ms, exec.now_ms);
    exec.server.lists_pushed.set(true);
    Frame::Integer(len as i64).into()
}

pub(super) fn lpush(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    push(exec, args, true)
}

pub(super) fn rpush(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    push(exec, args, false)
}

/// `LPOP key [count]`: the count is checked before the key; with a count a
/// missing key is a nil array and a count of 0 an empty one.
pub(super) fn lpop(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    if args.len() > 3 {
        return wrong_arity("lpop").into();
    }
    let count = match args.get(2) {
        None => None,
        Some(arg) => match parse_i64(arg) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return Frame::error("ERR value is out of range, must be positive").into(),
        },
    };
    let key = &args[1];
    let (mut list, expires_at_ms) = match exec.keyspace().lookup(exec.db, key, exec.now_ms) {
        None => {
            return match count {
                Some(_) => Frame::NullArray,
                None => Frame::Null,
            }
            .into()
        }
        Some(Entry {
            value: Value::List(list),
            expires_at_ms,
        }) => (list.clone(), *expires_at_ms),
        Some(_) => return Frame::error(err::WRONGTYPE).into(),
    };
    let reply = match count {
        Some(0) => return Frame::Array(Vec::new()).into(),
        None => match list.pop_front() {
            Some(element) => Frame::Bulk(element),
            None => Frame::Null,
        },
        Some(n) => {
            let take = usize::try_from(n).unwrap_or(usize::MAX).min(list.len());
            Frame::Array(list.drain(..take).map(Frame::Bulk).collect())
        }
    };
    store(exec.server, exec.db, key, list, expires_at_ms, exec.now_ms);
    reply.into()
}

/// Redis's `getTimeoutFromObjectOrReply` for a timeout in seconds: the
/// block length in ms, 0 meaning "forever".
fn timeout_ms(exec: &Exec<'_>, arg: &[u8]) -> Result<u64, Frame> {
    let not_float = || Frame::error("ERR timeout is not a float or out of range");
    let text = std::str::from_utf8(arg).map_err(|_| not_float())?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err(not_float());
    }
    let seconds: f64 = text.parse().map_err(|_| not_float())?;
    if seconds.is_nan() {
        return Err(not_float());
    }
    let ms = seconds * 1000.0;
    // C's out-of-range double → long long conversion gives LLONG_MIN on
    // x86, which Redis then calls negative.
    let ms = if ms.is_finite() && ms > i64::MIN as f64 && ms < i64::MAX as f64 {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    if ms > 0 && ms > i64::MAX - exec.unix_now_ms() {
        return Err(Frame::error("ERR timeout is out of range"));
    }
    Ok(ms as u64)
}

/// Pops the head of the list at `key`: `Ok(None)` when missing, WRONGTYPE
/// for another type.
fn pop_head(server: &Server, db: usize, key: &[u8], now_ms: u64) -> Result<Option<Vec<u8>>, Frame> {
    let found = server
        .keyspace
        .borrow_mut()
        .lookup(db, key, now_ms)
        .cloned();
    match found {
        None => Ok(None),
        Some(Entry {
            value: Value::List(mut list),
            expires_at_ms,
        }) => {
            let head = list.pop_front();
            store(server, db, key, list, expires_at_ms, now_ms);
            Ok(head)
        }
        Some(_) => Err(Frame::error(err::WRONGTYPE)),
    }
}

/// BLPOP key [key ...] timeout.
pub(super) fn blpop(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let (keys, timeout) = args[1..].split_at(args.len() - 2);
    let timeout_ms = match timeout_ms(exec, &timeout[0]) {
        Ok(ms) => ms,
        Err(e) => return e.into(),
    };
    for key in keys {
        match pop_head(exec.server, exec.db, key, exec.now_ms) {
            Ok(Some(element)) => {
                return Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Bulk(element)]).into()
            }
            Ok(None) => continue,
            Err(e) => return e.into(),
        }
    }
    if exec.deny_blocking {
        return Frame::NullArray.into();
    }
    let timeout_ms = if timeout_ms == 0 {
        BLOCK_MS_MAX
    } else {
        timeout_ms.min(BLOCK_MS_MAX)
    };
    Outcome::Block {
        keys: keys.to_vec(),
        timeout_ms,
    }
}

/// After a command that pushed: serves blocked clients, oldest first, each
/// from the first of its keys (in its own db) that holds an element.
/// Bounded by the number of blocked clients (one per connection).
pub(crate) fn serve_blocked(server: &Server, now_ms: u64) {
    let waiting: Vec<u64> = server.blocked.borrow().keys().copied().collect();
    for seq in waiting {
        let Some((db, keys)) = server
            .blocked
            .borrow()
            .get(&seq)
            .map(|b| (b.db, b.keys.clone()))
        else {
            continue;
        };
        for key in keys {
            // A key that holds another type keeps its waiters waiting.
            if let Ok(Some(element)) = pop_head(server, db, &key, now_ms) {
                if let Some(blocked) = server.blocked.borrow_mut().remove(&seq) {
                    blocked.wake(Frame::Array(vec![Frame::Bulk(key), Frame::Bulk(element)]));
                }
                break;
            }
        }
    }
}
