//! The three Lua scripts, kept as files in `core/lua/` so that the simulation
//! can run the very same text, and loaded here with `include_str!`.
//!
//! They are sent with EVALSHA; on `NOSCRIPT` (first use, or after a server
//! restart emptied the script cache) the client loads the script and sends
//! the call once more (`invoke`).

use std::sync::OnceLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisError, RedisResult, Script, ServerErrorKind, Value};

use crate::error::LockError;
use crate::fence::Fence;
use crate::owner::OWNER_TOKEN_LEN_MAX;
use crate::resource::{KEY_PREFIX_LEN_MAX, RESOURCE_NAME_LEN_MAX};

/// Source of `lua/acquire.lua`: lease + fence in one atomic step, idempotent per owner token.
pub const ACQUIRE_LUA: &str = include_str!("../lua/acquire.lua");
/// Source of `lua/release.lua`: compare-and-delete.
pub const RELEASE_LUA: &str = include_str!("../lua/release.lua");
/// Source of `lua/renew.lua`: compare-and-PEXPIRE.
pub const RENEW_LUA: &str = include_str!("../lua/renew.lua");

/// The compiled scripts (with their SHA1s), built once per process because
/// hashing the text on every call would waste the hot path.
pub(crate) struct Scripts {
    pub acquire: Script,
    pub release: Script,
    pub renew: Script,
}

pub(crate) fn scripts() -> &'static Scripts {
    static SCRIPTS: OnceLock<Scripts> = OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        acquire: redis::Script::new(ACQUIRE_LUA),
        release: redis::Script::new(RELEASE_LUA),
        renew: redis::Script::new(RENEW_LUA),
    })
}

/// Arguments of the largest lock command (acquire: `EVALSHA`, hash, key
/// count, two keys, token, lease, fence flag).
const ARGS_MAX: usize = 8;

/// Bytes of the largest lock command's arguments: with these bounds no call
/// regrows the command's buffer. 40 is a SHA1 in hex, 3 a key's `:{` and
/// `}`, 20 the digits of a `u64` lease.
const ARGS_LEN_MAX: usize = "EVALSHA".len()
    + 40
    + 1
    + 2 * (KEY_PREFIX_LEN_MAX + 3 + RESOURCE_NAME_LEN_MAX)
    + OWNER_TOKEN_LEN_MAX
    + 20
    + 1;

/// An `EVALSHA` of `script` over `keys_total` keys; the caller appends the
/// keys, then the arguments. Why not redis-rs's `ScriptInvocation`: it copies
/// every key and argument into its own vectors and then again into the
/// command, on every call of the lock's hot path; this writes each once.
pub(crate) fn evalsha(script: &Script, keys_total: usize) -> Cmd {
    let mut cmd = Cmd::with_capacity(ARGS_MAX, ARGS_LEN_MAX);
    cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys_total);
    cmd
}

/// Sends `cmd`, an [`evalsha`] of `script`. On `NOSCRIPT` (first use on this
/// server, or its script cache was emptied by a restart) the script is
/// loaded and `cmd` sent once more: a `NOSCRIPT` reply means the script did
/// not run, so sending it again cannot run it twice.
pub(crate) async fn invoke<C: ConnectionLike>(
    conn: &mut C,
    script: &Script,
    cmd: &Cmd,
) -> RedisResult<Value> {
    match cmd.query_async(conn).await {
        Err(e) if is_noscript(&e) => reload_and_send(conn, script, cmd).await,
        answered => answered,
    }
}

/// Whether Redis answered that it does not know the script's hash.
pub(crate) fn is_noscript(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
}

/// The second half of [`invoke`], for a caller that sent `cmd` itself and
/// got `NOSCRIPT` back.
pub(crate) async fn reload_and_send<C: ConnectionLike>(
    conn: &mut C,
    script: &Script,
    cmd: &Cmd,
) -> RedisResult<Value> {
    script.load_async(conn).await?;
    cmd.query_async(conn).await
}

/// What the acquire script answered (`core/lua/acquire.lua`), typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireReply {
    /// `{0, false}`: another owner holds the lease.
    Contended,
    /// `{1, fence}`: the lease was taken now.
    Acquired {
        /// The fence the script issued (absent when fences come from elsewhere).
        fence: Option<Fence>,
    },
    /// `{2, fence}`: this owner token already held the lease — a re-ask after
    /// a lost reply learns that its first attempt won.
    AlreadyHeld {
        /// The fence issued to that first attempt (when the script issues fences).
        fence: Option<Fence>,
    },
}

impl AcquireReply {
    /// Whether the owner holds the lease after this reply.
    pub fn held(self) -> bool {
        !matches!(self, AcquireReply::Contended)
    }

    /// The fence the script issued, if any.
    pub fn fence(self) -> Option<Fence> {
        match self {
            AcquireReply::Contended => None,
            AcquireReply::Acquired { fence } | AcquireReply::AlreadyHeld { fence } => fence,
        }
    }
}

/// Parses the acquire script's `{status, fence}` reply: the one place its
/// shape is read, for the library and for any protocol that runs a variant
/// of the script with the same reply.
pub fn parse_acquire_reply(value: &Value) -> Result<AcquireReply, LockError> {
    let bad = || LockError::Protocol(format!("acquire returned {value:?}"));
    let Value::Array(items) = value else {
        return Err(bad());
    };
    let status = match items.first() {
        Some(Value::Int(s @ 0..=2)) => *s,
        _ => return Err(bad()),
    };
    let fence = match items.get(1) {
        // Lua `false` becomes a nil reply, and Redis cuts an array at the
        // first nil, so a missing second element means "no fence".
        None | Some(Value::Nil) => None,
        Some(Value::BulkString(bytes)) => {
            let n: i64 = std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?;
            Some(Fence::new(n)?)
        }
        Some(_) => return Err(bad()),
    };
    Ok(match status {
        0 => AcquireReply::Contended,
        1 => AcquireReply::Acquired { fence },
        _ => AcquireReply::AlreadyHeld { fence },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_acquire_reply_shape() {
        let fence = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert_eq!(
            parse_acquire_reply(&Value::Array(vec![Value::Int(0)])).unwrap(),
            AcquireReply::Contended
        );
        assert_eq!(
            parse_acquire_reply(&Value::Array(vec![Value::Int(1), fence("42")])).unwrap(),
            AcquireReply::Acquired {
                fence: Some(Fence::new(42).unwrap())
            }
        );
        // The fence is a string: an integer reply means the script changed.
        assert!(parse_acquire_reply(&Value::Array(vec![Value::Int(1), Value::Int(42)])).is_err());
        // Past 2^53 a Lua number would round; the string keeps every digit.
        assert_eq!(
            parse_acquire_reply(&Value::Array(vec![
                Value::Int(2),
                fence("9007199254740993")
            ]))
            .unwrap(),
            AcquireReply::AlreadyHeld {
                fence: Some(Fence::new(9_007_199_254_740_993).unwrap())
            }
        );
        assert_eq!(
            parse_acquire_reply(&Value::Array(vec![Value::Int(1)])).unwrap(),
            AcquireReply::Acquired { fence: None }
        );
        assert!(parse_acquire_reply(&Value::Int(1)).is_err());
        assert!(parse_acquire_reply(&Value::Array(vec![Value::Int(3)])).is_err());
        assert!(parse_acquire_reply(&Value::Array(vec![Value::Int(1), fence("x")])).is_err());
        assert!(parse_acquire_reply(&Value::Array(vec![Value::Int(1), fence("0")])).is_err());
    }
}
