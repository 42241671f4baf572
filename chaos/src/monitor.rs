//! Recording what a real Redis server applied: one `MONITOR` connection per
//! node, straight to the server (never through a worker's proxy), and the
//! marks of what the cluster did to the node (stopped, started, promoted).
//!
//! Why: real Redis keeps no record of who held a lock when. `MONITOR`
//! streams every command the server runs, in its execution order, with
//! the server's microsecond time — including each command a script runs
//! (`[0 lua] "INCR" …`) and each command `EXEC` runs — and nothing else of
//! a client's. The scenarios crate re-executes the tape through the
//! simulated server's engine (`redfence_sim::redis::Replay`) to recover the
//! ownership log the simulation keeps natively. This module only records
//! and parses; it knows nothing of locks.
//!
//! The recorder never touches a worker's connection: what the lock sends
//! is unchanged. Its cost is the server's (Redis formats each command for
//! every monitor); the README states the measured overhead.
//!
//! What a tape cannot show, measured on Redis 7.0.15, and what is done
//! about it:
//!
//! - **A replica shows the commands its primary sends** (under the primary
//!   link's address), but not a full resynchronisation: that loads a
//!   snapshot no monitor sees. At a promotion the cluster reads the
//!   replica's keyspace before any worker is pointed at it and marks the
//!   tape with it ([`Mark::Checked`]); a replay that disagrees with it is a
//!   named gap.
//! - **Administrative commands** (`CONFIG`, `CLIENT`, `REPLICAOF`, `MONITOR`,
//!   `DEBUG`, …) are not shown. None changes a key.
//! - **A restart**: the old connection ends with the server; a new one is
//!   attached the moment the server answers again, before the restart
//!   returns. A command a worker gets in before that is missing from the
//!   tape; the end-of-run comparison of the replayed keyspace with the
//!   server's ([`snapshot`] again) names such a gap instead of hiding it.
//! - **Bounds**: at most [`TAPE_LINES_MAX`] lines a node and
//!   [`LINE_BYTES_MAX`] bytes a line; past them the tape is marked
//!   incomplete ([`Tape::gaps`]), never silently cut.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{ChaosError, Result};

/// Most lines one node's tape keeps (a hotspot run is tens of thousands).
pub const TAPE_LINES_MAX: usize = 2_000_000;
/// Longest line kept: a lock's commands are short; a longer line is
/// counted as a gap, not parsed.
pub const LINE_BYTES_MAX: usize = 1024 * 1024;
/// How long attaching (connect, `MONITOR`, `+OK`) may take.
const ATTACH_TIMEOUT_MS: u64 = 2_000;
/// How long [`Recorder::sync`] waits for its mark to come back.
const SYNC_TIMEOUT_MS: u64 = 5_000;
/// Most keys a [`snapshot`] reads (`SCAN` pages of 1,000).
pub const SNAPSHOT_KEYS_MAX: usize = 100_000;
/// Bytes read from the monitor connection per call.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// One command as `MONITOR` showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Monitored {
    /// Server time, microseconds since the Unix epoch.
    pub unix_us: i64,
    /// The database it ran in.
    pub db: usize,
    /// Who ran it: `ip:port`, `unix:path`, or `lua` for a script's command.
    pub client: String,
    /// The command and its arguments, unescaped.
    pub args: Vec<Vec<u8>>,
}

/// What the cluster did to a node, at a moment on the same clock as the
/// server's timestamps (this machine's wall clock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The server was stopped (its data is gone: no persistence).
    Stopped,
    /// The server was started, empty.
    Started,
    /// The server's keyspace as read directly at this moment, before any
    /// worker could reach it (see [`snapshot`]): what the tape starts from.
    /// Keys of types the replay cannot hold are listed in
    /// [`Snapshot::skipped`].
    Loaded(Snapshot),
    /// The server's keyspace as read directly at this moment, while no
    /// client could change it (a replica just promoted, before any worker
    /// is pointed at it): the replayed keyspace must equal it, or the tape
    /// missed something (a full resync loads a snapshot no monitor shows).
    Checked(Snapshot),
}

/// One entry of a tape, in the order it was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TapeEntry {
    /// A command the server ran.
    Command(Monitored),
    /// Something the cluster did to the node.
    Mark {
        /// When, microseconds since the Unix epoch.
        unix_us: i64,
        /// What.
        mark: Mark,
    },
}

impl TapeEntry {
    /// When it happened, microseconds since the Unix epoch.
    pub fn unix_us(&self) -> i64 {
        match self {
            TapeEntry::Command(c) => c.unix_us,
            TapeEntry::Mark { unix_us, .. } => *unix_us,
        }
    }
}

/// One node's recording: its entries and why it may be incomplete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tape {
    /// Entries sorted by time (stable: a node's own order within one
    /// microsecond).
    pub entries: Vec<TapeEntry>,
    /// Why the tape may miss commands, in words for a report; empty when
    /// it is complete as far as the recorder can tell.
    pub gaps: Vec<String>,
}

#[derive(Default)]
struct TapeState {
    entries: Vec<TapeEntry>,
    gaps: Vec<String>,
    lines_dropped: u64,
    /// Marks [`Recorder::sync`] is waiting for.
    seen_marks: Vec<String>,
}

/// The recorder of one node: survives the node's restarts.
#[derive(Clone, Default)]
pub struct Recorder {
    state: Arc<Mutex<TapeState>>,
    /// Set while the cluster stops the node: the monitor connection's end
    /// is then expected, not a gap.
    closing: Arc<std::sync::atomic::AtomicBool>,
    /// The live monitor connection's reader task.
    reader: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

/// Microseconds since the Unix epoch, now.
pub fn unix_us_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Recorder")
            .field("entries", &state.entries.len())
            .field("gaps", &state.gaps)
            .finish()
    }
}

impl Recorder {
    /// A recorder with an empty tape and no connection.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TapeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connects to the server at `addr` (`host:port`) and starts recording
    /// what it runs. Returns once the server has confirmed `MONITOR`, so
    /// every command it runs afterwards is on the tape. Must be called
    /// inside a tokio runtime, which then reads the stream.
    pub async fn attach(&self, node: &str, addr: &str) -> Result<()> {
        let attach = async {
            let mut stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            stream.write_all(b"*1\r\n$7\r\nMONITOR\r\n").await?;
            let mut ok = [0u8; 5];
            stream.read_exact(&mut ok).await?;
            Ok::<_, std::io::Error>((stream, ok))
        };
        let (stream, ok) = tokio::time::timeout(Duration::from_millis(ATTACH_TIMEOUT_MS), attach)
            .await
            .map_err(|_| monitor_error(node, addr, "no answer to MONITOR in time"))?
            .map_err(|e| monitor_error(node, addr, &e.to_string()))?;
        if &ok != b"+OK\r\n" {
            return Err(monitor_error(
                node,
                addr,
                &format!("MONITOR answered {:?}", String::from_utf8_lossy(&ok)),
            ));
        }
        let state = self.state.clone();
        self.closing
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let closing = self.closing.clone();
        let task = tokio::spawn(read_stream(stream, state, closing, node.to_owned()));
        if let Some(old) = self
            .reader
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task)
        {
            old.abort();
        }
        Ok(())
    }

    /// The cluster is about to stop the node: the monitor connection's
    /// end that follows is no gap.
    pub fn expect_close(&self) {
        self.closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the monitor connection is still being read.
    pub fn is_reading(&self) -> bool {
        self.reader
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|task| !task.is_finished())
    }

    /// Waits (at most `timeout_ms`) for the monitor connection to end — a
    /// close the cluster announced with [`Self::expect_close`]; whether it
    /// ended.
    pub async fn until_closed(&self, timeout_ms: u64) -> bool {
        const POLL_MS: u64 = 10;
        for _ in 0..timeout_ms / POLL_MS + 1 {
            if !self.is_reading() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
        }
        !self.is_reading()
    }

    /// The close announced with [`Self::expect_close`] did not come: an end
    /// of the connection is a gap again.
    pub fn expect_open(&self) {
        self.closing
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Appends a mark at this moment.
    pub fn mark(&self, mark: Mark) {
        self.mark_at(unix_us_now(), mark);
    }

    /// Appends a mark for the moment `unix_us` (a snapshot's is the moment
    /// its reads began, so it sorts before them).
    pub fn mark_at(&self, unix_us: i64, mark: Mark) {
        self.lock().entries.push(TapeEntry::Mark { unix_us, mark });
    }

    /// Waits until everything the server at `addr` ran before this call is
    /// on the tape: runs `ECHO <unique mark>` on a connection of its own
    /// and waits for the monitor to show it (bounded).
    pub async fn sync(&self, node: &str, addr: &str) -> Result<()> {
        let token = format!("redfence-monitor-sync-{}", uuid::Uuid::new_v4().simple());
        let echo = async {
            let mut stream = TcpStream::connect(addr).await?;
            let request = format!("*2\r\n$4\r\nECHO\r\n${}\r\n{}\r\n", token.len(), token);
            stream.write_all(request.as_bytes()).await?;
            let mut reply = vec![0u8; token.len() + 16];
            let _ = stream.read(&mut reply).await?;
            Ok::<_, std::io::Error>(())
        };
        tokio::time::timeout(Duration::from_millis(SYNC_TIMEOUT_MS), echo)
            .await
            .map_err(|_| monitor_error(node, addr, "ECHO for the sync mark timed out"))?
            .map_err(|e| monitor_error(node, addr, &e.to_string()))?;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(SYNC_TIMEOUT_MS);
        // Bounded by the deadline.
        loop {
            {
                let mut state = self.lock();
                if let Some(at) = state.seen_marks.iter().position(|m| *m == token) {
                    state.seen_marks.remove(at);
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(monitor_error(
                    node,
                    addr,
                    "the monitor did not show the sync mark in time",
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Records `gap` as a reason the tape may be incomplete.
    pub fn gap(&self, gap: String) {
        self.lock().gaps.push(gap);
    }

    /// Stops reading (the connection closes) and returns the tape so far,
    /// sorted by time.
    pub fn finish(&self) -> Tape {
        self.expect_close();
        if let Some(task) = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
        self.tape()
    }

    /// The tape so far, sorted by time.
    pub fn tape(&self) -> Tape {
        let state = self.lock();
        let mut entries = state.entries.clone();
        entries.sort_by_key(TapeEntry::unix_us);
        let mut gaps = state.gaps.clone();
        if state.lines_dropped > 0 {
            gaps.push(format!(
                "{} MONITOR lines past the tape's bound ({TAPE_LINES_MAX} lines, \
                 {LINE_BYTES_MAX} bytes a line) were not kept",
                state.lines_dropped
            ));
        }
        Tape { entries, gaps }
    }
}

fn monitor_error(node: &str, addr: &str, why: &str) -> ChaosError {
    ChaosError::Monitor {
        node: node.to_owned(),
        message: format!("MONITOR connection to {addr}: {why}"),
    }
}

/// Reads `+<time> [<db> <client>] "<arg>" …` lines until the connection
/// ends; an end the cluster did not announce ([`Recorder::expect_close`])
/// is a gap: whatever the server ran afterwards is not on the tape.
async fn read_stream(
    mut stream: TcpStream,
    state: Arc<Mutex<TapeState>>,
    closing: Arc<std::sync::atomic::AtomicBool>,
    node: String,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK_BYTES);
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    // Discarding the rest of a line past the bound.
    let mut skipping = false;
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                if !closing.load(std::sync::atomic::Ordering::SeqCst) {
                    let at_us = unix_us_now();
                    state
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .gaps
                        .push(format!(
                            "{node}: the MONITOR connection closed while the server ran \
                         (at {at_us} µs Unix time); what it ran afterwards is not recorded"
                        ));
                }
                return;
            }
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(end) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + end];
            start += end + 1;
            if std::mem::take(&mut skipping) {
                continue;
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            if state.entries.len() >= TAPE_LINES_MAX {
                state.lines_dropped += 1;
                continue;
            }
            match parse_line(line) {
                Ok(command) => {
                    if command.args.len() == 2
                        && command.args[0].eq_ignore_ascii_case(b"echo")
                        && command.args[1].starts_with(b"redfence-monitor-sync-")
                    {
                        let token = String::from_utf8_lossy(&command.args[1]).into_owned();
                        state.seen_marks.push(token);
                    }
                    state.entries.push(TapeEntry::Command(command));
                }
                Err(why) => {
                    let text = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
                    state.gaps.push(format!(
                        "{node}: a MONITOR line could not be read ({why}): {text}"
                    ));
                }
            }
        }
        buf.drain(..start);
        if buf.len() > LINE_BYTES_MAX {
            buf.clear();
            skipping = true;
            state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .lines_dropped += 1;
        }
    }
}

/// Why a `MONITOR` line could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line does not start with `+<seconds>.<micros> [`.
    #[error("no timestamp")]
    NoTimestamp,
    /// The `[<db> <client>]` part is missing or malformed.
    #[error("no [db client] part")]
    NoClient,
    /// An argument is not a closed `"…"` string with known escapes.
    #[error("a malformed argument")]
    BadArgument,
}

/// Parses one `MONITOR` line (without its `\r\n`), e.g.
/// `+1796135828.202410 [0 lua] "INCR" "fence:{a}"`. Arguments are unescaped
/// as Redis escapes them (`sdscatrepr`: `\\ \" \n \r \t \a \b \xHH`).
pub fn parse_line(line: &[u8]) -> std::result::Result<Monitored, LineError> {
    let line = line.strip_prefix(b"+").ok_or(LineError::NoTimestamp)?;
    let space = line
        .iter()
        .position(|&b| b == b' ')
        .ok_or(LineError::NoTimestamp)?;
    let unix_us = parse_time(&line[..space]).ok_or(LineError::NoTimestamp)?;
    let rest = line[space + 1..]
        .strip_prefix(b"[")
        .ok_or(LineError::NoClient)?;
    let close = rest
        .iter()
        .position(|&b| b == b']')
        .ok_or(LineError::NoClient)?;
    let inside = std::str::from_utf8(&rest[..close]).map_err(|_| LineError::NoClient)?;
    let (db, client) = inside.split_once(' ').ok_or(LineError::NoClient)?;
    let db: usize = db.parse().map_err(|_| LineError::NoClient)?;
    let mut args = Vec::new();
    let mut i = close + 1;
    // Bounded by the line's length: every pass consumes at least a byte.
    while i < rest.len() {
        match rest[i] {
            b' ' => i += 1,
            b'"' => {
                let (arg, used) = parse_quoted(&rest[i + 1..]).ok_or(LineError::BadArgument)?;
                args.push(arg);
                i += 1 + used;
            }
            _ => return Err(LineError::BadArgument),
        }
    }
    if args.is_empty() {
        return Err(LineError::BadArgument);
    }
    Ok(Monitored {
        unix_us,
        db,
        client: client.to_owned(),
        args,
    })
}

/// `1796135828.202410` → microseconds.
fn parse_time(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?;
    let (secs, micros) = text.split_once('.')?;
    if micros.len() != 6 {
        return None;
    }
    let secs: i64 = secs.parse().ok()?;
    let micros: i64 = micros.parse().ok()?;
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

/// One argument after its opening quote: the unescaped bytes and how many
/// bytes (closing quote included) it used.
fn parse_quoted(text: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
                let escaped = *text.get(i + 1)?;
                i += 2;
                out.push(match escaped {
                    b'\\' => b'\\',
                    b'"' => b'"',
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'x' => {
                        let hex = std::str::from_utf8(text.get(i..i + 2)?).ok()?;
                        i += 2;
                        u8::from_str_radix(hex, 16).ok()?
                    }
                    _ => return None,
                });
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    None
}

/// A node's keyspace read directly, as commands that re-create it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// `SET`/`RPUSH`/`HSET` (+ `PEXPIRE`) commands, one key after another,
    /// all in database 0.
    pub commands: Vec<Vec<Vec<u8>>>,
    /// Keys of a type the replay cannot hold (sets, sorted sets, streams),
    /// with their type.
    pub skipped: Vec<(String, String)>,
    /// Every string key's value: the end-of-run comparison reads these.
    pub strings: Vec<(Vec<u8>, Vec<u8>, Option<u64>)>,
    /// How long the read took, connecting included: each TTL above was
    /// read somewhere in that span after the instant the caller noted, so
    /// a comparison at that instant allows this much on top of its own
    /// tolerance (on a loaded machine the read took over 250 ms).
    pub read_ms: u64,
}

/// Reads database 0 of the server at `addr` (bounded by
/// [`SNAPSHOT_KEYS_MAX`]): each key's type, value and remaining TTL.
/// Commands it runs show on the node's own tape; all are reads.
pub async fn snapshot(
    conn: &mut redis::aio::MultiplexedConnection,
) -> redis::RedisResult<Snapshot> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut cursor: u64 = 0;
    // Bounded by SNAPSHOT_KEYS_MAX (and by SCAN's cursor returning to 0).
    loop {
        let (next, page): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1_000)
            .query_async(conn)
            .await?;
        keys.extend(page);
        cursor = next;
        if cursor == 0 || keys.len() >= SNAPSHOT_KEYS_MAX {
            break;
        }
    }
    keys.sort();
    keys.dedup();
    keys.truncate(SNAPSHOT_KEYS_MAX);
    let mut snap = Snapshot::default();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(conn).await?;
        let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(conn).await?;
        if pttl == -2 {
            continue; // gone between SCAN and now
        }
        let ttl_ms = u64::try_from(pttl).ok();
        let create: Vec<Vec<u8>> = match kind.as_str() {
            "string" => {
                let value: Option<Vec<u8>> = redis::cmd("GET").arg(&key).query_async(conn).await?;
                let Some(value) = value else { continue };
                snap.strings.push((key.clone(), value.clone(), ttl_ms));
                vec![b"SET".to_vec(), key.clone(), value]
            }
            "list" => {
                let items: Vec<Vec<u8>> = redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query_async(conn)
                    .await?;
                if items.is_empty() {
                    continue;
                }
                let mut command = vec![b"RPUSH".to_vec(), key.clone()];
                command.extend(items);
                command
            }
            "hash" => {
                let pairs: Vec<Vec<u8>> = redis::cmd("HGETALL").arg(&key).query_async(conn).await?;
                if pairs.is_empty() {
                    continue;
                }
                let mut command = vec![b"HSET".to_vec(), key.clone()];
                command.extend(pairs);
                command
            }
            other => {
                snap.skipped
                    .push((String::from_utf8_lossy(&key).into_owned(), other.to_owned()));
                continue;
            }
        };
        snap.commands.push(create);
        if let Some(ttl_ms) = ttl_ms {
            snap.commands.push(vec![
                b"PEXPIRE".to_vec(),
                key,
                ttl_ms.max(1).to_string().into_bytes(),
            ]);
        }
    }
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_scripts_line_and_a_clients_line_with_escapes() {
        let line = br#"+1796284888.997904 [0 lua] "PSETEX" "lock:{a}" "300" "own\"er\\n1""#;
        let m = parse_line(line).unwrap();
        assert_eq!(m.unix_us, 1_796_284_888_997_904);
        assert_eq!((m.db, m.client.as_str()), (0, "lua"));
        assert_eq!(
            m.args,
            vec![
                b"PSETEX".to_vec(),
                b"lock:{a}".to_vec(),
                b"300".to_vec(),
                b"own\"er\\n1".to_vec()
            ]
        );
        let line = br#"+1796284889.036468 [3 127.0.0.1:58612] "set" "k" "\x00\xff\n\r\t\a\b" """#;
        let m = parse_line(line).unwrap();
        assert_eq!((m.db, m.client.as_str()), (3, "127.0.0.1:58612"));
        assert_eq!(m.args[2], vec![0x00, 0xff, b'\n', b'\r', b'\t', 0x07, 0x08]);
        assert_eq!(m.args[3], b"".to_vec());
    }

    #[test]
    fn refuses_what_is_not_a_monitor_line() {
        assert_eq!(parse_line(b"+OK"), Err(LineError::NoTimestamp));
        assert_eq!(
            parse_line(b"+12.5 [0 lua] \"GET\""),
            Err(LineError::NoTimestamp)
        );
        assert_eq!(
            parse_line(b"+1.000001 0 lua \"GET\""),
            Err(LineError::NoClient)
        );
        assert_eq!(
            parse_line(b"+1.000001 [0 lua] \"GET"),
            Err(LineError::BadArgument)
        );
        assert_eq!(
            parse_line(b"+1.000001 [0 lua] GET"),
            Err(LineError::BadArgument)
        );
        assert_eq!(
            parse_line(b"+1.000001 [0 lua] \"\\q\""),
            Err(LineError::BadArgument)
        );
        assert_eq!(
            parse_line(b"+1.000001 [0 lua]"),
            Err(LineError::BadArgument)
        );
    }
}
