//! The command table and the helpers every command group shares: argument
//! parsing with Redis's exact rules (`string2ll`), and the canonical error
//! texts.
//!
//! One file per group, as in mini-redis: `strings` (GET GETDEL SET SETNX
//! SETEX PSETEX INCR INCRBY DECR DECRBY), `keys` (DEL EXISTS TYPE EXPIRE
//! PEXPIRE PEXPIREAT TTL PTTL DBSIZE FLUSHDB FLUSHALL), `lists` (LPUSH RPUSH
//! LPOP BLPOP), `hashes` (HSET HGET HINCRBY HDEL HEXISTS HGETALL),
//! `transactions` (MULTI EXEC DISCARD WATCH UNWATCH), `pubsub` (SUBSCRIBE
//! UNSUBSCRIBE PUBLISH), `scripts` (EVAL EVALSHA SCRIPT), `connection`
//! (PING SELECT CLIENT), `replication` (WAIT REPLICAOF SLAVEOF ROLE, and the
//! internal SYNC / REPLCONF). Names, arities and flags are Redis 7.0's;
//! any other name is an unknown command, answered with Redis 7.0's text.

mod connection;
mod hashes;
mod keys;
mod lists;
mod pubsub;
mod replication;
mod scripts;
mod strings;
mod transactions;

pub(crate) use lists::serve_blocked;
pub(crate) use transactions::runs_inside_multi;

use super::exec::Exec;
use super::frame::Frame;

pub(crate) use super::err;

/// Command flags (the subset of Redis's that changes behaviour here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flags(u8);

impl Flags {
    pub const NONE: Flags = Flags(0);
    /// Changes the keyspace: refused on replicas (READONLY).
    pub const WRITE: Flags = Flags(1);
    /// May grow memory: refused at the key limit (OOM).
    pub const DENYOOM: Flags = Flags(2);
    /// Not callable from scripts.
    pub const NOSCRIPT: Flags = Flags(4);

    pub const fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

const W: Flags = Flags::WRITE;
const WD: Flags = Flags::WRITE.union(Flags::DENYOOM);
const NS: Flags = Flags::NOSCRIPT;

/// What a handler produced.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Send this reply.
    Reply(Frame),
    /// WAIT: block until `numreplicas` acknowledged the current offset or
    /// `timeout_ms` passed (the connection awaits; nothing else of this
    /// client runs meanwhile).
    Wait { numreplicas: u64, timeout_ms: u64 },
    /// SYNC: this connection becomes a replica feed.
    Sync { listening_port: u16 },
    /// Several replies in a row (SUBSCRIBE / UNSUBSCRIBE: one per channel).
    Replies(Vec<Frame>),
    /// BLPOP with every list empty: block until an element can be popped
    /// from one of `keys` (in the client's db) or `timeout_ms` passed.
    Block { keys: Vec<Vec<u8>>, timeout_ms: u64 },
}

impl From<Frame> for Outcome {
    fn from(frame: Frame) -> Self {
        Outcome::Reply(frame)
    }
}

pub(crate) type Handler = fn(&mut Exec<'_>, &[Vec<u8>]) -> Outcome;

/// One entry of the command table.
pub(crate) struct Command {
    /// Lowercase name, as in Redis's arity error.
    pub name: &'static str,
    /// Redis arity: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    pub flags: Flags,
    pub handler: Handler,
}

impl Command {
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }
}

const fn c(name: &'static str, arity: i32, flags: Flags, handler: Handler) -> Command {
    Command {
        name,
        arity,
        flags,
        handler,
    }
}

/// The command table, sorted by name (binary search; no hashing).
static COMMANDS: &[Command] = &[
    c("blpop", -3, W.union(NS), lists::blpop),
    c("client", -2, NS, connection::client),
    c("dbsize", 1, Flags::NONE, keys::dbsize),
    c("decr", 2, WD, strings::decr),
    c("decrby", 3, WD, strings::decrby),
    c("del", -2, W, keys::del),
    c("discard", 1, NS, transactions::discard),
    c("eval", -3, NS, scripts::eval),
    c("evalsha", -3, NS, scripts::evalsha),
    c("exec", 1, NS, transactions::exec),
    c("exists", -2, Flags::NONE, keys::exists),
    c("expire", -3, W, keys::expire),
    c("flushall", -1, W, keys::flushall),
    c("flushdb", -1, W, keys::flushdb),
    c("get", 2, Flags::NONE, strings::get),
    c("getdel", 2, W, strings::getdel),
    c("hdel", -3, W, hashes::hdel),
    c("hexists", 3, Flags::NONE, hashes::hexists),
    c("hget", 3, Flags::NONE, hashes::hget),
    c("hgetall", 2, Flags::NONE, hashes::hgetall),
    c("hincrby", 4, WD, hashes::hincrby),
    c("hset", -4, WD, hashes::hset),
    c("incr", 2, WD, strings::incr),
    c("incrby", 3, WD, strings::incrby),
    c("lpop", -2, W, lists::lpop),
    c("lpush", -3, WD, lists::lpush),
    c("multi", 1, NS, transactions::multi),
    c("pexpire", -3, W, keys::pexpire),
    c("pexpireat", -3, W, keys::pexpireat),
    c("ping", -1, Flags::NONE, connection::ping),
    c("psetex", 4, WD, strings::psetex),
    c("pttl", 2, Flags::NONE, keys::pttl),
    c("publish", 3, Flags::NONE, pubsub::publish),
    c("replconf", -1, NS, replication::replconf),
    c("replicaof", 3, NS, replication::replicaof),
    c("role", 1, NS, replication::role),
    c("rpush", -3, WD, lists::rpush),
    c("script", -2, NS, scripts::script),
    c("select", 2, Flags::NONE, connection::select),
    c("set", -3, WD, strings::set),
    c("setex", 4, WD, strings::setex),
    c("setnx", 3, WD, strings::setnx),
    c("slaveof", 3, NS, replication::replicaof),
    c("subscribe", -2, NS, pubsub::subscribe),
    c("sync", -1, NS, replication::sync),
    c("ttl", 2, Flags::NONE, keys::ttl),
    c("type", 2, Flags::NONE, keys::type_),
    c("unsubscribe", -1, NS, pubsub::unsubscribe),
    c("unwatch", 1, NS, transactions::unwatch),
    c("wait", 3, NS, replication::wait),
    c("watch", -2, NS, transactions::watch),
];

/// Container commands' subcommands with their arities (name included), as
/// Redis 7.0's table has them: Redis checks a subcommand before queueing
/// or running it, so an unknown one or a wrong count is refused like an
/// unknown command or a wrong arity (and aborts a transaction). CLIENT
/// lists only what the simulation implements (see `connection.rs`).
static SUBCOMMANDS: &[(&str, &[(&str, i32)])] = &[
    (
        "client",
        &[("getname", 2), ("id", 2), ("setinfo", 4), ("setname", 3)],
    ),
    (
        "script",
        &[
            ("debug", 3),
            ("exists", -3),
            ("flush", -2),
            ("help", 2),
            ("kill", 2),
            ("load", 3),
        ],
    ),
];

/// For a container command: `Err` with Redis's error when the subcommand
/// is unknown or has the wrong arity. `script` picks the script-flavoured
/// texts.
pub(crate) fn check_subcommand(
    command: &Command,
    args: &[Vec<u8>],
    script: bool,
) -> Result<(), Frame> {
    let Some((_, subs)) = SUBCOMMANDS.iter().find(|(name, _)| *name == command.name) else {
        return Ok(());
    };
    let sub = &args[1];
    let Some((sub_name, arity)) = subs.iter().find(|(name, _)| is(sub, name)) else {
        return Err(if script {
            Frame::error("ERR Unknown Redis command called from script")
        } else {
            unknown_subcommand(command.name, sub)
        });
    };
    let probe = Command {
        name: command.name,
        arity: *arity,
        flags: command.flags,
        handler: command.handler,
    };
    if probe.arity_ok(args.len()) {
        return Ok(());
    }
    Err(if script {
        Frame::error("ERR Wrong number of args calling Redis command from script")
    } else {
        wrong_arity(&format!("{}|{sub_name}", command.name))
    })
}

/// Redis's `fullname`: `script|load` for a known subcommand, else the name.
pub(crate) fn full_name(command: &Command, args: &[Vec<u8>]) -> String {
    SUBCOMMANDS
        .iter()
        .find(|(name, _)| *name == command.name)
        .and_then(|(_, subs)| subs.iter().find(|(name, _)| is(&args[1], name)))
        .map_or_else(
            || command.name.to_string(),
            |(sub, _)| format!("{}|{sub}", command.name),
        )
}

/// Finds a command by name, case-insensitively.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Command> {
    if name.len() > 16 {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    COMMANDS
        .binary_search_by(|cmd| cmd.name.as_bytes().cmp(&lower))
        .ok()
        .map(|i| &COMMANDS[i])
}

/// Truncates at the first NUL, as a C `%s` would.
fn c_str(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(nul) => &bytes[..nul],
        None => bytes,
    }
}

fn truncate(bytes: &[u8], max: usize) -> &[u8] {
    &bytes[..bytes.len().min(max)]
}

/// `ERR unknown command 'FOO', with args beginning with: 'a' 'b' ` —
/// Redis 7.0's text: the name as sent (at most 128 bytes), then quoted
/// arguments while the list is shorter than 128 bytes, each cut to what is
/// left of those 128.
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Frame {
    let mut listed: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if listed.len() >= 128 {
            break;
        }
        let room = 128 - listed.len();
        listed.push(b'\'');
        listed.extend_from_slice(truncate(c_str(arg), room));
        listed.extend_from_slice(b"' ");
    }
    let mut text = b"ERR unknown command '".to_vec();
    text.extend_from_slice(truncate(c_str(&args[0]), 128));
    text.extend_from_slice(b"', with args beginning with: ");
    text.extend_from_slice(&listed);
    Frame::error(text)
}

/// `ERR unknown subcommand 'foo'. Try SCRIPT HELP.`
pub(crate) fn unknown_subcommand(container: &str, sub: &[u8]) -> Frame {
    let mut text = b"ERR unknown subcommand '".to_vec();
    text.extend_from_slice(truncate(c_str(sub), 128));
    text.extend_from_slice(format!("'. Try {} HELP.", container.to_ascii_uppercase()).as_bytes());
    Frame::error(text)
}

/// `ERR wrong number of arguments for 'script|load' command`.
pub(crate) fn wrong_arity(name: &str) -> Frame {
    Frame::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// Redis's `string2ll`: optional `-`, no `+`, no leading zeros, no spaces,
/// at most 20 bytes, within i64.
pub(crate) fn parse_i64(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() >= 21 {
        return None;
    }
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if magnitude > i64::MAX as u64 + 1 {
            return None;
        }
        Some((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// An integer argument, or Redis's "not an integer" error.
pub(crate) fn int_arg(bytes: &[u8]) -> Result<i64, Frame> {
    parse_i64(bytes).ok_or_else(|| Frame::error(err::NOT_INTEGER))
}

/// Case-insensitive ASCII comparison of an argument with a keyword.
pub(crate) fn is(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        for pair in COMMANDS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} before {}",
                pair[0].name,
                pair[1].name
            );
        }
        assert!(lookup(b"GeT").is_some());
        assert!(lookup(b"nosuch").is_none());
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-0",
            b"007",
            b"+1",
            b" 1",
            b"1 ",
            b"1.5",
            b"9223372036854775808",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn unknown_command_text_matches_redis() {
        let args: Vec<Vec<u8>> = ["FOO", "a", "b"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(
            unknown_command(&args),
            Frame::error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
        );
        assert_eq!(
            unknown_command(&[b"foo".to_vec()]),
            Frame::error("ERR unknown command 'foo', with args beginning with: ")
        );
    }
}
