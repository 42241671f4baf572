//! The three Lua scripts, kept as files in `core/lua/` so that the simulation
//! can run the very same text, and loaded here with `include_str!`.
//!
//! They are sent with EVALSHA; on `NOSCRIPT` (first use, or after a server
//! restart emptied the script cache) the client loads the script and sends
//! the call once more (`invoke`).

use std::sync::OnceLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisError, RedisResult, Script, ServerErrorKind, Value};

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
