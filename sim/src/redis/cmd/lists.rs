//! LPUSH: the one list command, there so that a key can hold a non-string
//! value and every WRONGTYPE path of the string commands and the lock
//! scripts can be exercised.

use std::collections::VecDeque;

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::{Entry, Value, LIST_LEN_MAX};
use super::{err, Outcome};

pub(super) fn lpush(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let key = &args[1];
    let mut ks = exec.keyspace();
    let (mut list, expires_at_ms) = match ks.lookup(exec.db, key, exec.now_ms) {
        None => (VecDeque::new(), None),
        Some(Entry {
            value: Value::List(list),
            expires_at_ms,
        }) => (list.clone(), *expires_at_ms),
        Some(_) => return Frame::error(err::WRONGTYPE).into(),
    };
    let pushed = args.len() - 2;
    if list.len() + pushed > LIST_LEN_MAX {
        return Frame::error(err::OOM).into();
    }
    for element in &args[2..] {
        list.push_front(element.clone());
    }
    let len = list.len();
    let entry = Entry {
        value: Value::List(list),
        expires_at_ms,
    };
    ks.put(exec.db, key, entry, exec.now_ms);
    Frame::Integer(len as i64).into()
}
