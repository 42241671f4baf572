//! Differential fidelity test: the simulated Redis against a real
//! redis-server (7.0.15 here), reply for reply, byte for byte.
//!
//! proptest generates sequences of the supported commands over a small key
//! space (lock and fence keys, a list and a hash for WRONGTYPE, expiry
//! options relative and absolute, counters, hashes, list pops, BLPOP with
//! short timeouts, MULTI/EXEC/DISCARD/WATCH/UNWATCH, SUBSCRIBE /
//! UNSUBSCRIBE / PUBLISH, bad arguments, unknown commands, wrong arities)
//! and of scripts: the three
//! core Lua scripts plus scripts exercising every conversion rule and error
//! path. Each sequence runs on both servers from the same empty state (fresh
//! connections, so no transaction, watch or subscription carries over; db 9
//! flushed, script cache flushed) over one connection each, and every reply
//! must be identical; PTTL/TTL may differ by the time between the two calls.
//! On a mismatch proptest shrinks to a minimal sequence and prints it with
//! both replies.
//!
//! Replies are compared as raw RESP frames (our own parser), which is
//! stricter than comparing `redis::Value`s: status vs bulk, empty errors and
//! error codes are all visible.
//!
//! Needs `REDFENCE_REDIS_URL` (run it through `scripts/with-services`); it
//! fails rather than skips without one. Run it alone: it flushes db 9 and
//! the real server's script cache before every sequence. Cases:
//! `REDFENCE_DIFF_CASES` (default 5000, about 20 s in a debug build).
//!
//! Left out on purpose (known, documented deviations): `CLIENT SETINFO`
//! (7.0.15 does not know it), `error({})` (crashes 7.0.15), unseeded
//! `math.random` (its state is global to the real server process),
//! REPLICAOF/ROLE/WAIT with replicas, cjson/bit/cmsgpack; BLPOP with
//! timeout 0 or one that rounds to 0 ms (blocks for good on an empty list:
//! this one connection would hang); SUBSCRIBE / UNSUBSCRIBE of more than one
//! channel (an argument-less UNSUBSCRIBE lists channels in the real
//! server's dict order, and several channels inside EXEC write more frames
//! than EXEC's array counts), and delivery of messages, which needs a
//! second connection (`sim/tests/redis_turmoil.rs` covers it). Absolute
//! expiry times are either long past or far in the future, so both servers
//! agree whatever their clocks say.

use std::cell::RefCell;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use redfence_core::scripts::{ACQUIRE_LUA, RELEASE_LUA, RENEW_LUA};
use redfence_sim::redis::frame::{parse_frame, Frame};
use redfence_sim::redis::{serve_tokio, OwnershipLog, RedisConfig, RedisHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The db both servers use (the real server may be shared with other tests
/// that use db 0).
const DB: &str = "9";
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

type Cmd = Vec<Vec<u8>>;

/// A minimal RESP client over our frame parser.
struct Raw {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    async fn connect(addr: &str) -> Raw {
        let stream = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream.set_nodelay(true).expect("nodelay");
        Raw {
            stream,
            buf: Vec::new(),
        }
    }

    async fn call(&mut self, args: &[Vec<u8>]) -> Frame {
        self.stream
            .write_all(&Frame::request(args))
            .await
            .expect("write");
        tokio::time::timeout(REPLY_TIMEOUT, async {
            loop {
                if let Some((frame, used)) = parse_frame(&self.buf).expect("well-formed reply") {
                    self.buf.drain(..used);
                    return frame;
                }
                let mut chunk = [0u8; 16 * 1024];
                let n = self.stream.read(&mut chunk).await.expect("read");
                assert!(n > 0, "server closed the connection after {}", show(args));
                self.buf.extend_from_slice(&chunk[..n]);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no reply within {REPLY_TIMEOUT:?} to {}", show(args)))
    }
}

fn show(cmd: &[Vec<u8>]) -> String {
    cmd.iter()
        .map(|a| format!("{:?}", String::from_utf8_lossy(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn c(parts: &[&str]) -> Cmd {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

fn real_addr() -> String {
    let url = std::env::var("REDFENCE_REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "REDFENCE_REDIS_URL is not set: this test compares against a real redis-server. \
             Run: bash scripts/with-services cargo test -p redfence-sim --test differential"
        )
    });
    let rest = url
        .strip_prefix("redis://")
        .unwrap_or_else(|| panic!("REDFENCE_REDIS_URL must be redis://host:port/, got {url}"));
    rest.split('/').next().unwrap_or(rest).to_string()
}

// ----- generators -------------------------------------------------------

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["lock:{a}", "lock:{b}", "fence:{a}", "k", "l", "h"])
        .prop_map(String::from)
}

/// Hash fields: owners of a reentrant lock, and one more.
fn field() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["w1", "w2", "f"]).prop_map(String::from)
}

/// The one channel sequences subscribe to (see the module doc), and one
/// nobody subscribes to.
const CHANNEL: &str = "redfence-diff:unlock";
const NO_CHANNEL: &str = "redfence-diff:other";

/// Absolute (Unix) expire times: long past, far future, or malformed.
fn absolute() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "1",
        "1000",
        "0",
        "-1",
        "x",
        "99999999999",
        "99999999999999",
        "9223372036854775",
        "9223372036854776",
        "9223372036854775807",
    ])
    .prop_map(String::from)
}

/// BLPOP timeouts: short ones that lapse on both servers alike, and bad
/// ones (never 0 or below a millisecond: an empty list would block for
/// good).
fn block_timeout() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["0.01", "0.02", "-1", "x", "nan", "inf", "-0.5", ""])
        .prop_map(String::from)
}

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "w1",
        "w2",
        "1",
        "0",
        "-1",
        "9223372036854775806",
        "9223372036854775807",
        "-9223372036854775808",
        "abc",
        "007",
        "-0",
        "+1",
        "",
        "1.5",
    ])
    .prop_map(String::from)
}

/// Expire amounts: none positive and small enough to lapse mid-sequence
/// (both servers run on the wall clock, so a key that lapses between the
/// real call and the simulated one answers differently; seen in CI with a
/// 1 ms lease). The smallest positive one is 10 s even as milliseconds.
fn amount() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "0",
        "-1",
        "-100",
        "10000",
        "100000",
        "abc",
        "1.5",
        "9223372036854775807",
        "9223372036854775",
        "922337203685477",
        "-9223372036854775808",
    ])
    .prop_map(String::from)
}

fn set_option() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        prop::sample::select(vec![
            "NX", "XX", "GET", "KEEPTTL", "nx", "get", "FOO", "EX", "PX"
        ])
        .prop_map(|o| vec![o.to_string()]),
        (prop::sample::select(vec!["EX", "PX", "ex", "Px"]), amount())
            .prop_map(|(o, n)| vec![o.to_string(), n]),
        (
            prop::sample::select(vec!["EXAT", "PXAT", "pxat"]),
            absolute()
        )
            .prop_map(|(o, n)| vec![o.to_string(), n]),
        prop::sample::select(vec!["EXAT", "PXAT"]).prop_map(|o| vec![o.to_string()]),
    ]
}

fn expire_option() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["NX", "XX", "GT", "LT", "gt", "FOO"]).prop_map(String::from)
}

/// Scripts exercising conversions and error paths (all deterministic).
const SCRIPTS: &[&str] = &[
    "return 1",
    "return {1,2,nil,3}",
    "return {1,false,'x',true}",
    "return {1,{2,{3,'x'}},true,false}",
    "return {ok='fine'}",
    "return {err='bad thing'}",
    "return {err=''}",
    "return {err=5}",
    "return {ok=5}",
    "return {err='a', ok='b'}",
    "return {1, {ok='x'}, {err='e'}}",
    "return {err='x\r\ny'}",
    "return {1,2,3,x=5}",
    "return {}",
    "return 'a', 'b'",
    "return redis.error_reply('my err')",
    "return redis.error_reply('x')",
    "return redis.error_reply('-x')",
    "return redis.error_reply()",
    "return redis.error_reply(5)",
    "return redis.status_reply('st')",
    "return redis.status_reply()",
    "return redis.error_reply('x')['err']",
    "return true",
    "return false",
    "return nil",
    "return 3.99",
    "return -3.99",
    "return 1e20",
    "return 0/0",
    "return '3.99'",
    "return 9007199254740993",
    "return redis.call('GET', KEYS[1])",
    "return redis.call('INCR', KEYS[1])",
    "return redis.pcall('INCR', KEYS[1])",
    "return redis.call('SET', KEYS[1], ARGV[1])",
    "return redis.call('EXISTS', KEYS[1], KEYS[2])",
    "return redis.call('LPUSH', KEYS[1], 'x')",
    "return redis.call('RPUSH', KEYS[1], 'y')",
    "return redis.call('LPOP', KEYS[1])",
    "return redis.call('BLPOP', KEYS[1], 1)",
    "return redis.call('HSET', KEYS[1], 'w1', ARGV[1] or '1')",
    "return redis.call('HINCRBY', KEYS[1], 'w1', 1)",
    "return redis.pcall('HINCRBY', KEYS[1], 'w1', ARGV[1] or '1')",
    "return redis.call('HGETALL', KEYS[1])",
    "return redis.call('HDEL', KEYS[1], 'w1')",
    "return redis.call('HEXISTS', KEYS[1], 'w1')",
    "return redis.call('TYPE', KEYS[1])",
    "return redis.call('INCRBY', KEYS[1], 10)",
    "return redis.pcall('DECRBY', KEYS[1], ARGV[1] or '1')",
    "return redis.call('GETDEL', KEYS[1])",
    "return redis.call('PEXPIREAT', KEYS[1], 1)",
    "return redis.call('SET', KEYS[1], 'v', 'PXAT', '99999999999999', 'GET')",
    "return redis.call('MULTI')",
    "return redis.call('EXEC')",
    "return redis.call('WATCH', KEYS[1])",
    "return redis.call('SUBSCRIBE', 'x')",
    "return redis.call('PUBLISH', 'redfence-diff:other', 'x')",
    "return redis.call('ping')",
    "return redis.call('ping')['ok']",
    "return type(redis.call('get', KEYS[1]))",
    "return redis.call('nosuch')",
    "return redis.call('nosuch', 'a')",
    "return redis.pcall('nosuch')",
    "return redis.call('get')",
    "return redis.pcall('get')",
    "return redis.call()",
    "return redis.pcall()",
    "return redis.call(1)",
    "return redis.call({})",
    "return redis.call('get', {})",
    "return redis.call('get', nil)",
    "return redis.call('set', KEYS[1], true)",
    "return redis.call('wait', 0, 0)",
    "return redis.call('wait')",
    "return redis.call('script', 'flush')",
    "return redis.call('eval', 'return 1', 0)",
    "return redis.call('role')",
    "return redis.call('set', KEYS[1], 'v', 'ex', '0')",
    "return redis.pcall('set', KEYS[1], 'v', 'ex', '0')",
    "return redis.call('set', KEYS[1], 'v', 'get')",
    "return redis.call('Get', KEYS[1])",
    "redis.call('set', KEYS[1], 0.1); return redis.call('get', KEYS[1])",
    "redis.call('set', KEYS[1], 10); return redis.call('get', KEYS[1])",
    "redis.call('set', KEYS[1], 1e20); return redis.call('get', KEYS[1])",
    "redis.call('set', KEYS[1], -0.0); return redis.call('get', KEYS[1])",
    "redis.call('select', '3'); return redis.call('exists', KEYS[1])",
    "error('x')",
    "error('x', 0)",
    "error(nil)",
    "error(5)",
    "error({err='y'})",
    "error(redis.pcall('nosuch'))",
    "local function f() error('deep') end f()",
    "\n\nreturn redis.call('incr', KEYS[1])",
    "\n\nerror('x')",
    "local function f() return redis.call('incr', KEYS[1]) end\nreturn f()",
    "return 1 +",
    "syntax error here",
    "return x.y",
    "return os",
    "return io",
    "return print",
    "return dofile",
    "return loadstring",
    "return _G.x",
    "return rawget(_G, 'x')",
    "foo = 5",
    "redis = nil",
    "redis.call = nil",
    "local t = {}; t.x = 5; return t.x",
    "rawset(_G, 'x', 1) return 1",
    "rawset(string, 'x', 1) return 1",
    "rawset(redis, 'x', 1) return 1",
    "rawset(math, 'x', 1) return 1",
    "rawset(table, 'x', 1) return 1",
    "local ok, e = pcall(rawset, string, 'x', 1) return e",
    "getmetatable('').foo = 1 return 1",
    "getmetatable('').__index.x = 1 return 1",
    "rawset(getmetatable(''), 'x', 1) return 1",
    "return rawequal(getmetatable('').__index, string)",
    "return ('abc'):upper()",
    "local t = {} rawset(t, 'x', 1) return t.x",
    "return rawset(KEYS, 1, 'z')[1]",
    "return rawset(string)",
    "return rawset(5, 1, 1)",
    "return rawset()",
    "return rawset({}, 1)",
    "local t = {} return rawset(t, nil, 1)",
    "return _VERSION",
    "return type(load)",
    "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {ok and 1 or 0, e}",
    "local ok, e = pcall(redis.call, 'nosuch'); return e",
    "local ok, e = pcall(redis.call, 'get', 'a', 'b'); return e",
    "local ok, e = pcall(error, {err='x'}); return e",
    "local ok, e = pcall(error, 'boom'); return e",
    "local ok, e = pcall(function() x = 1 end); return {type(e), tostring(e)}",
    "local t = redis.pcall('incr', KEYS[1]); return t['err']",
    "return redis.pcall('incr', KEYS[1])['err']",
    "return redis.sha1hex('')",
    "return redis.sha1hex('abc')",
    "return redis.sha1hex(5)",
    "return redis.sha1hex()",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
    "return redis.REPL_ALL",
    "return redis.log(redis.LOG_WARNING, 'hi')",
    "return redis.replicate_commands()",
    "math.randomseed(7); return {math.random(1000), math.random(5, 9), tostring(math.random())}",
    "math.randomseed(0); return {math.random(1000000), math.random(1000000)}",
    "math.randomseed(1); return math.random(5, 3)",
    "math.randomseed(1); return tostring(math.random(1,2,3))",
    "return math.randomseed()",
    "return KEYS",
    "return ARGV",
    "return string.format('%d', 5)",
    "return unpack({1, 2})",
];

fn script_body() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(SCRIPTS.to_vec()).prop_map(String::from),
        1 => prop::sample::select(vec![ACQUIRE_LUA, RELEASE_LUA, RENEW_LUA]).prop_map(String::from),
    ]
}

fn sha(body: &str) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// Script arguments: the values, except that every small positive number
/// becomes one that cannot lapse mid-sequence, because any argument may land
/// in a script's lease position (`"1"` did: `PSETEX k 1 ""`, then `EXISTS k`
/// answered 1 on one server and 0 on the other). The forms stay: a sign, a
/// leading zero.
fn script_value() -> impl Strategy<Value = String> {
    value().prop_map(|v| match v.as_str() {
        "1" => "100001".to_string(),
        "+1" => "+100001".to_string(),
        "007" => "0070000".to_string(),
        _ => v,
    })
}

fn script_args() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        // Well-formed: numkeys then keys and args.
        (
            0usize..3,
            prop::collection::vec(key(), 2),
            prop::collection::vec(script_value(), 0..4)
        )
            .prop_map(|(n, keys, args)| {
                let mut out = vec![n.to_string()];
                out.extend(keys.into_iter().take(n));
                out.extend(args);
                out
            }),
        // The core scripts' shapes.
        (
            key(),
            key(),
            script_value(),
            amount(),
            prop::sample::select(vec!["0", "1"])
        )
            .prop_map(|(k1, k2, owner, lease, fence)| vec![
                "2".into(),
                k1,
                k2,
                owner,
                lease,
                fence.into()
            ]),
        (key(), script_value(), amount()).prop_map(|(k, owner, lease)| vec![
            "1".into(),
            k,
            owner,
            lease
        ]),
        // Bad numkeys.
        prop::sample::select(vec!["-1", "5", "x", "01"])
            .prop_map(|n| vec![n.to_string(), "k".into()]),
    ]
}

fn command() -> impl Strategy<Value = Cmd> {
    let s = |v: Vec<String>| v.into_iter().map(String::into_bytes).collect::<Cmd>();
    prop_oneof![
        3 => key().prop_map(move |k| c(&["GET", &k])),
        4 => (key(), value(), prop::collection::vec(set_option(), 0..3)).prop_map(move |(k, v, opts)| {
            let mut out = vec!["SET".to_string(), k, v];
            out.extend(opts.into_iter().flatten());
            s(out)
        }),
        1 => (key(), value()).prop_map(|(k, v)| c(&["SETNX", &k, &v])),
        1 => (key(), amount(), value()).prop_map(|(k, n, v)| c(&["SETEX", &k, &n, &v])),
        1 => (key(), amount(), value()).prop_map(|(k, n, v)| c(&["PSETEX", &k, &n, &v])),
        2 => prop::collection::vec(key(), 1..4).prop_map(move |ks| {
            s(std::iter::once("DEL".to_string()).chain(ks).collect())
        }),
        2 => prop::collection::vec(key(), 1..4).prop_map(move |ks| {
            s(std::iter::once("EXISTS".to_string()).chain(ks).collect())
        }),
        2 => key().prop_map(|k| c(&["INCR", &k])),
        2 => (prop::sample::select(vec!["EXPIRE", "PEXPIRE"]), key(), amount(), prop::collection::vec(expire_option(), 0..3))
            .prop_map(move |(cmd, k, n, opts)| {
                let mut out = vec![cmd.to_string(), k, n];
                out.extend(opts);
                s(out)
            }),
        2 => (prop::sample::select(vec!["TTL", "PTTL"]), key()).prop_map(|(cmd, k)| c(&[cmd, &k])),
        1 => (prop::sample::select(vec!["LPUSH", "RPUSH"]), key(), prop::collection::vec(value(), 1..3)).prop_map(move |(cmd, k, vs)| {
            let mut out = vec![cmd.to_string(), k];
            out.extend(vs);
            s(out)
        }),
        1 => (key(), prop::option::of(prop::sample::select(vec!["0", "1", "2", "-1", "x"]))).prop_map(|(k, n)| {
            let mut out = vec!["LPOP", &k];
            out.extend(n);
            c(&out)
        }),
        1 => (prop::collection::vec(key(), 1..3), block_timeout()).prop_map(move |(ks, t)| {
            let mut out = vec!["BLPOP".to_string()];
            out.extend(ks);
            out.push(t);
            s(out)
        }),
        1 => (prop::sample::select(vec!["INCRBY", "DECRBY"]), key(), value()).prop_map(|(cmd, k, n)| c(&[cmd, &k, &n])),
        1 => (prop::sample::select(vec!["DECR", "GETDEL", "TYPE"]), key()).prop_map(|(cmd, k)| c(&[cmd, &k])),
        1 => (key(), absolute(), prop::collection::vec(expire_option(), 0..2))
            .prop_map(move |(k, n, opts)| {
                let mut out = vec!["PEXPIREAT".to_string(), k, n];
                out.extend(opts);
                s(out)
            }),
        2 => (key(), prop::collection::vec((field(), value()), 1..3)).prop_map(move |(k, pairs)| {
            let mut out = vec!["HSET".to_string(), k];
            out.extend(pairs.into_iter().flat_map(|(f, v)| [f, v]));
            s(out)
        }),
        1 => (key(), field(), value()).prop_map(|(k, f, n)| c(&["HINCRBY", &k, &f, &n])),
        1 => (prop::sample::select(vec!["HGET", "HEXISTS"]), key(), field()).prop_map(|(cmd, k, f)| c(&[cmd, &k, &f])),
        1 => key().prop_map(|k| c(&["HGETALL", &k])),
        1 => (key(), prop::collection::vec(field(), 1..3)).prop_map(move |(k, fs)| {
            let mut out = vec!["HDEL".to_string(), k];
            out.extend(fs);
            s(out)
        }),
        3 => prop::sample::select(vec![
            c(&["MULTI"]),
            c(&["MULTI"]),
            c(&["EXEC"]),
            c(&["EXEC"]),
            c(&["DISCARD"]),
            c(&["UNWATCH"]),
            c(&["MULTI", "x"]),
            c(&["EXEC", "x"]),
            c(&["WATCH"]),
        ]),
        1 => prop::collection::vec(key(), 1..3).prop_map(move |ks| {
            s(std::iter::once("WATCH".to_string()).chain(ks).collect())
        }),
        1 => prop::sample::select(vec![
            c(&["SUBSCRIBE", CHANNEL]),
            c(&["UNSUBSCRIBE"]),
            c(&["UNSUBSCRIBE", CHANNEL]),
            c(&["UNSUBSCRIBE", NO_CHANNEL]),
            c(&["PUBLISH", CHANNEL, "w1"]),
            c(&["PUBLISH", CHANNEL]),
            c(&["SUBSCRIBE"]),
        ]),
        5 => (script_body(), script_args()).prop_map(move |(body, args)| {
            let mut out = vec!["EVAL".to_string(), body];
            out.extend(args);
            s(out)
        }),
        2 => (script_body(), script_args()).prop_map(move |(body, args)| {
            let mut out = vec!["EVALSHA".to_string(), sha(&body)];
            out.extend(args);
            s(out)
        }),
        1 => script_body().prop_map(|b| c(&["SCRIPT", "LOAD", &b])),
        1 => prop::collection::vec(script_body(), 1..3).prop_map(move |bs| {
            let mut out = vec!["SCRIPT".to_string(), "EXISTS".to_string()];
            out.extend(bs.iter().map(|b| sha(b)));
            s(out)
        }),
        1 => prop::sample::select(vec![
            c(&["SCRIPT", "FLUSH"]),
            c(&["SCRIPT", "FLUSH", "ASYNC"]),
            c(&["SCRIPT", "FLUSH", "foo"]),
            c(&["SCRIPT", "FOO"]),
            c(&["SCRIPT"]),
            c(&["SCRIPT", "LOAD"]),
            c(&["SCRIPT", "EXISTS"]),
            c(&["SCRIPT", "LOAD", "return +"]),
            c(&["SCRIPT", "KILL"]),
            c(&["SCRIPT", "HELP"]),
            c(&["EVALSHA", "abc", "0"]),
            c(&["EVAL", "return 1"]),
            c(&["FOO"]),
            c(&["FOO", "a", "b"]),
            c(&["getx", "k"]),
            c(&["GET"]),
            c(&["GET", "k", "k"]),
            c(&["SET", "k"]),
            c(&["INCR", "a", "b"]),
            c(&["DEL"]),
            c(&["EXISTS"]),
            c(&["PING"]),
            c(&["ping", "hello"]),
            c(&["PING", "a", "b"]),
            c(&["SELECT", DB]),
            c(&["SELECT", "16"]),
            c(&["SELECT", "x"]),
            c(&["SELECT", "-1"]),
            c(&["DBSIZE"]),
            c(&["WAIT", "0", "0"]),
            c(&["WAIT", "x", "0"]),
            c(&["WAIT", "0", "x"]),
            c(&["WAIT", "0", "-1"]),
            c(&["CLIENT"]),
            c(&["CLIENT", "FOO"]),
            c(&["FLUSHDB"]),
            c(&["FLUSHDB", "foo"]),
            c(&["EXPIRE", "k"]),
            c(&["TTL"]),
            c(&["PSETEX", "k", "100"]),
            c(&["HSET", "h", "f"]),
            c(&["HGET", "h"]),
            c(&["HDEL", "h"]),
            c(&["LPOP", "l", "1", "2"]),
            c(&["BLPOP", "l"]),
            c(&["GETDEL"]),
            c(&["INCRBY", "k"]),
            c(&["DECRBY", "k", "-9223372036854775808"]),
            c(&["PEXPIREAT", "k"]),
        ]),
    ]
}

fn sequence() -> impl Strategy<Value = Vec<Cmd>> {
    prop::collection::vec(command(), 1..16)
}

// ----- comparison ---------------------------------------------------------

/// Equal, or both TTL answers within the time that passed between them.
fn same(cmd: &Cmd, real: &Frame, sim: &Frame) -> bool {
    if real == sim {
        return true;
    }
    let name = cmd[0].to_ascii_uppercase();
    // EXPIRE/PEXPIRE GT|LT compare "now + amount" with an expiry set by an
    // earlier command; when both used the same amount, the answer depends on
    // whether a millisecond boundary fell between the two commands, on either
    // server (seen in CI: real :0, sim :1). Only that 0/1 tie is tolerated.
    let ordered = cmd.iter().skip(3).any(|o| {
        let o = o.to_ascii_uppercase();
        o == b"GT" || o == b"LT"
    });
    if ordered && matches!(name.as_slice(), b"EXPIRE" | b"PEXPIRE") {
        return matches!((real, sim), (Frame::Integer(0 | 1), Frame::Integer(0 | 1)));
    }
    let tolerance = match name.as_slice() {
        b"PTTL" => 50,
        b"TTL" => 1,
        _ => return false,
    };
    match (real, sim) {
        (Frame::Integer(a), Frame::Integer(b)) if *a >= 0 && *b >= 0 => (a - b).abs() <= tolerance,
        _ => false,
    }
}

struct Pair {
    real_addr: String,
    sim_addr: String,
    real: Raw,
    sim: Raw,
}

impl Pair {
    async fn reset(&mut self) {
        // Fresh connections: no transaction, watch or subscription left.
        self.real = Raw::connect(&self.real_addr).await;
        self.sim = Raw::connect(&self.sim_addr).await;
        for cmd in [c(&["SELECT", DB]), c(&["FLUSHDB"]), c(&["SCRIPT", "FLUSH"])] {
            let real = self.real.call(&cmd).await;
            let sim = self.sim.call(&cmd).await;
            assert_eq!(real, Frame::ok(), "real server: {}", show(&cmd));
            assert_eq!(sim, Frame::ok(), "simulated server: {}", show(&cmd));
        }
    }

    async fn run(&mut self, seq: &[Cmd]) -> Result<(), TestCaseError> {
        self.reset().await;
        for (i, cmd) in seq.iter().enumerate() {
            let real = self.real.call(cmd).await;
            let sim = self.sim.call(cmd).await;
            if !same(cmd, &real, &sim) {
                let listing: Vec<String> = seq[..=i]
                    .iter()
                    .enumerate()
                    .map(|(j, c)| format!("  #{j}: {}", show(c)))
                    .collect();
                return Err(TestCaseError::fail(format!(
                    "reply to command #{i} differs\n  command: {}\n  real:    {real:?}\n  sim:     {sim:?}\nsequence:\n{}",
                    show(cmd),
                    listing.join("\n")
                )));
            }
        }
        Ok(())
    }
}

#[test]
fn simulated_redis_answers_like_the_real_one() {
    let real_addr = real_addr();
    let cases: u32 = std::env::var("REDFENCE_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let pair = local.block_on(&rt, async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let sim_addr = listener.local_addr().expect("addr").to_string();
        tokio::task::spawn_local(serve_tokio(
            listener,
            RedisConfig::new("sim"),
            OwnershipLog::default(),
            RedisHandle::default(),
        ));
        Pair {
            real: Raw::connect(&real_addr).await,
            sim: Raw::connect(&sim_addr).await,
            real_addr: real_addr.clone(),
            sim_addr,
        }
    });
    // First the fixed probes checked by hand against redis-server 7.0.15
    // (every script, on a string and on a list), so a regression shows even
    // without shrinking; then the generated sequences. One test, because
    // both servers' script caches are flushed per sequence.
    let probes: Vec<Cmd> = SCRIPTS
        .iter()
        .flat_map(|body| {
            [
                c(&["SET", "k", "v"]),
                c(&["EVAL", body, "2", "k", "l", "a1"]),
                c(&["LPUSH", "l", "x"]),
                c(&["EVAL", body, "1", "l", "a1"]),
                c(&["DEL", "k", "l"]),
            ]
        })
        .collect();
    let mut pair = pair;
    local
        .block_on(&rt, pair.run(&probes))
        .unwrap_or_else(|e| panic!("{e}"));
    let pair = RefCell::new(pair);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let started = std::time::Instant::now();
    let result = runner.run(&sequence(), |seq| {
        let mut pair = pair.borrow_mut();
        local.block_on(&rt, pair.run(&seq))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("{cases} sequences agreed in {:?}", started.elapsed());
}
