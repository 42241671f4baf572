//! RESP2 frames: the reply/value type, its encoder and an incremental,
//! bounded parser.
//!
//! Two parsers share one scanner: [`parse_request`] accepts what a client may
//! send (an array of bulk strings) and words its protocol errors exactly as
//! Redis does (`Protocol error: invalid multibulk length`, `expected '$',
//! got 'x'`, ...); [`parse_frame`] accepts any RESP2 value (replies, and the
//! primary→replica stream). Both are incremental: `Ok(None)` means "need
//! more bytes", and the caller keeps the buffer.
//!
//! Bounds (TigerBeetle style: every buffer has a limit): a bulk string is at
//! most [`BULK_BYTES_MAX`], an array at most [`ARRAY_LEN_MAX`] elements and
//! [`DEPTH_MAX`] levels deep, a length line at most [`LINE_BYTES_MAX`]. Redis
//! allows 512 MiB bulks and 1 Mi-element requests; the simulation never needs
//! that much, and smaller bounds keep a misbehaving peer cheap.

use std::fmt;

/// Largest bulk string accepted (bytes).
pub const BULK_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Most elements in one array (request arguments included).
pub const ARRAY_LEN_MAX: usize = 1024 * 1024;
/// Deepest nesting of arrays accepted in a reply/stream frame.
pub const DEPTH_MAX: usize = 16;
/// Longest type+length line (`*123\r\n`), as Redis's 64 KiB inline limit.
pub const LINE_BYTES_MAX: usize = 64 * 1024;

/// One RESP2 value.
#[derive(Clone, PartialEq, Eq)]
pub enum Frame {
    /// `+OK`: a status reply (never contains CR or LF).
    Simple(Vec<u8>),
    /// `-ERR ...`: an error reply, without the leading `-`.
    Error(Vec<u8>),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nfoo`.
    Bulk(Vec<u8>),
    /// `$-1`: the nil bulk string.
    Null,
    /// `*2 ...`.
    Array(Vec<Frame>),
    /// `*-1`: the nil array.
    NullArray,
}

impl Frame {
    /// `+OK`.
    pub fn ok() -> Frame {
        Frame::Simple(b"OK".to_vec())
    }

    /// A status reply; CR and LF become spaces, as Redis does for statuses.
    pub fn simple(text: impl AsRef<[u8]>) -> Frame {
        Frame::Simple(sanitize(text.as_ref()))
    }

    /// An error reply from `text` (without the leading `-`); CR and LF
    /// become spaces, as Redis's `addReplyErrorLength` does.
    pub fn error(text: impl AsRef<[u8]>) -> Frame {
        Frame::Error(sanitize(text.as_ref()))
    }

    /// A bulk string.
    pub fn bulk(bytes: impl Into<Vec<u8>>) -> Frame {
        Frame::Bulk(bytes.into())
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }

    /// Appends the RESP2 encoding of this frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Simple(s) => {
                out.push(b'+');
                out.extend_from_slice(s);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Error(s) => {
                out.push(b'-');
                out.extend_from_slice(s);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Integer(n) => {
                out.push(b':');
                push_decimal(out, *n);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Bulk(b) => {
                out.push(b'$');
                push_length(out, b.len());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Null => out.extend_from_slice(b"$-1\r\n"),
            Frame::Array(items) => {
                push_array_header(out, items.len());
                for item in items {
                    item.encode(out);
                }
            }
            Frame::NullArray => out.extend_from_slice(b"*-1\r\n"),
        }
    }

    /// The RESP2 encoding of this frame.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Encodes a request: an array of bulk strings.
    pub fn request<I, A>(args: I) -> Vec<u8>
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        let items = args
            .into_iter()
            .map(|a| Frame::Bulk(a.as_ref().to_vec()))
            .collect();
        Frame::Array(items).to_bytes()
    }
}

/// Debug shows bytes as (lossy) text, which is what a failing test needs.
impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Simple(s) => write!(f, "+{:?}", String::from_utf8_lossy(s)),
            Frame::Error(s) => write!(f, "-{:?}", String::from_utf8_lossy(s)),
            Frame::Integer(n) => write!(f, ":{n}"),
            Frame::Bulk(b) => write!(f, "${:?}", String::from_utf8_lossy(b)),
            Frame::Null => write!(f, "$nil"),
            Frame::Array(items) => f.debug_list().entries(items).finish(),
            Frame::NullArray => write!(f, "*nil"),
        }
    }
}

fn sanitize(text: &[u8]) -> Vec<u8> {
    text.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

/// A protocol violation. The connection answers `-ERR Protocol error:
/// <message>` and closes, as Redis does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl ProtocolError {
    /// The reply Redis sends before closing the connection.
    pub fn reply(&self) -> Frame {
        Frame::error(format!("ERR Protocol error: {}", self.0))
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn perr(msg: impl Into<String>) -> ProtocolError {
    ProtocolError(msg.into())
}

/// Finds `\r\n` at or after `from`; returns the index of `\r`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|i| from + i)
}

/// Parses a length/number line starting at `at` (after the type byte).
/// `Ok(None)`: incomplete. Returns (value, index after CRLF).
fn number_line(
    buf: &[u8],
    at: usize,
    too_big: &str,
    invalid: &str,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let Some(cr) = find_crlf(buf, at) else {
        if buf.len().saturating_sub(at) > LINE_BYTES_MAX {
            return Err(perr(too_big));
        }
        return Ok(None);
    };
    if cr - at > LINE_BYTES_MAX {
        return Err(perr(too_big));
    }
    let n = std::str::from_utf8(&buf[at..cr])
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| perr(invalid))?;
    Ok(Some((n, cr + 2)))
}

/// A parsed request's arguments and the bytes it took.
pub type Request = (Vec<Vec<u8>>, usize);

/// Parses one client request (an array of bulk strings) from the start of
/// `buf`. Returns the arguments and the bytes consumed; an empty argument
/// list means an empty request (`*0` / `*-1`) that Redis silently skips.
pub fn parse_request(buf: &[u8]) -> Result<Option<Request>, ProtocolError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    if first != b'*' {
        // Redis would parse an inline command here; the simulation has no
        // client that sends one, so it is refused rather than half-supported.
        return Err(perr(format!(
            "inline commands are not supported (got '{}')",
            first.escape_ascii()
        )));
    }
    let Some((count, mut at)) = number_line(
        buf,
        1,
        "too big mbulk count string",
        "invalid multibulk length",
    )?
    else {
        return Ok(None);
    };
    if count <= 0 {
        return Ok(Some((Vec::new(), at)));
    }
    let count = usize::try_from(count).map_err(|_| perr("invalid multibulk length"))?;
    if count > ARRAY_LEN_MAX {
        return Err(perr("invalid multibulk length"));
    }
    // Never trust a length prefix for an allocation: grow as bytes arrive.
    let mut args = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let Some(&tag) = buf.get(at) else {
            return Ok(None);
        };
        if tag != b'$' {
            return Err(perr(format!("expected '$', got '{}'", tag as char)));
        }
        let Some((len, data_at)) = number_line(
            buf,
            at + 1,
            "too big bulk count string",
            "invalid bulk length",
        )?
        else {
            return Ok(None);
        };
        let len = usize::try_from(len).map_err(|_| perr("invalid bulk length"))?;
        if len > BULK_BYTES_MAX {
            return Err(perr("invalid bulk length"));
        }
        let end = data_at + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(perr("bulk string not terminated by CRLF"));
        }
        args.push(buf[data_at..end].to_vec());
        at = end + 2;
    }
    debug_assert_eq!(args.len(), count);
    Ok(Some((args, at)))
}

/// Parses any RESP2 frame from the start of `buf`. Returns the frame and
/// the bytes consumed, or `Ok(None)` when more bytes are needed.
pub fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, ProtocolError> {
    parse_at(buf, 0, 0)
}

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Frame, usize)>, ProtocolError> {
    if depth > DEPTH_MAX {
        return Err(perr("nesting too deep"));
    }
    let Some(&tag) = buf.get(at) else {
        return Ok(None);
    };
    let line = |buf: &[u8]| -> Result<Option<(Vec<u8>, usize)>, ProtocolError> {
        match find_crlf(buf, at + 1) {
            Some(cr) if cr - at > LINE_BYTES_MAX => Err(perr("line too long")),
            Some(cr) => Ok(Some((buf[at + 1..cr].to_vec(), cr + 2))),
            None if buf.len() - at > LINE_BYTES_MAX => Err(perr("line too long")),
            None => Ok(None),
        }
    };
    match tag {
        b'+' => Ok(line(buf)?.map(|(s, n)| (Frame::Simple(s), n))),
        b'-' => Ok(line(buf)?.map(|(s, n)| (Frame::Error(s), n))),
        b':' => Ok(
            number_line(buf, at + 1, "line too long", "invalid integer")?
                .map(|(n, next)| (Frame::Integer(n), next)),
        ),
        b'$' => {
            let Some((len, data_at)) = number_line(
                buf,
                at + 1,
                "too big bulk count string",
                "invalid bulk length",
            )?
            else {
                return Ok(None);
            };
            if len == -1 {
                return Ok(Some((Frame::Null, data_at)));
            }
            let len = usize::try_from(len).map_err(|_| perr("invalid bulk length"))?;
            if len > BULK_BYTES_MAX {
                return Err(perr("invalid bulk length"));
            }
            let end = data_at + len;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(perr("bulk string not terminated by CRLF"));
            }
            Ok(Some((Frame::Bulk(buf[data_at..end].to_vec()), end + 2)))
        }
        b'*' => {
            let Some((count, mut next)) = number_line(
                buf,
                at + 1,
                "too big mbulk count string",
                "invalid multibulk length",
            )?
            else {
                return Ok(None);
            };
            if count == -1 {
                return Ok(Some((Frame::NullArray, next)));
            }
            let count = usize::try_from(count).map_err(|_| perr("invalid multibulk length"))?;
            if count > ARRAY_LEN_MAX {
                return Err(perr("invalid multibulk length"));
            }
            let mut items = Vec::with_capacity(count.min(64));
            for _ in 0..count {
                let Some((item, after)) = parse_at(buf, next, depth + 1)? else {
                    return Ok(None);
                };
                items.push(item);
                next = after;
            }
            Ok(Some((Frame::Array(items), next)))
        }
        other => Err(perr(format!(
            "unexpected type byte '{}'",
            other.escape_ascii()
        ))),
    }
}

/// Appends `*<len>\r\n`, the header of an array of `len` items.
pub(crate) fn push_array_header(out: &mut Vec<u8>, len: usize) {
    out.push(b'*');
    push_length(out, len);
    out.extend_from_slice(b"\r\n");
}

/// Appends `len` in decimal.
fn push_length(out: &mut Vec<u8>, len: usize) {
    push_decimal_digits(out, len as u64);
}

/// Appends `n` in decimal, as Redis writes an integer reply.
///
/// Why not `to_string()`: every reply's lengths and integers went through a
/// `String` of their own, an allocation each (profiled: most of
/// `Frame::encode`'s cost).
fn push_decimal(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_decimal_digits(out, n.unsigned_abs());
}

fn push_decimal_digits(out: &mut Vec<u8>, mut n: u64) {
    // u64::MAX has 20 digits.
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_lengths_are_written_as_decimal_text() {
        for n in [
            i64::MIN,
            -1_000_000,
            -10,
            -9,
            -1,
            0,
            1,
            9,
            10,
            99,
            100,
            i64::MAX,
        ] {
            assert_eq!(
                Frame::Integer(n).to_bytes(),
                format!(":{n}\r\n").into_bytes()
            );
        }
        for len in [0usize, 1, 9, 10, 1234] {
            let mut out = Vec::new();
            push_array_header(&mut out, len);
            assert_eq!(out, format!("*{len}\r\n").into_bytes());
            let bulk = Frame::Bulk(vec![b'x'; len]).to_bytes();
            assert!(bulk.starts_with(format!("${len}\r\n").as_bytes()));
        }
    }

    fn samples() -> Vec<Frame> {
        vec![
            Frame::ok(),
            Frame::error("ERR x"),
            Frame::Integer(-42),
            Frame::Integer(i64::MIN),
            Frame::bulk("hello\r\nworld"),
            Frame::bulk(""),
            Frame::Null,
            Frame::NullArray,
            Frame::Array(vec![]),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Array(vec![Frame::bulk("x"), Frame::Null]),
                Frame::error("E"),
            ]),
        ]
    }

    #[test]
    fn every_frame_round_trips_and_every_prefix_is_incomplete() {
        for frame in samples() {
            let bytes = frame.to_bytes();
            let (parsed, used) = parse_frame(&bytes).unwrap().unwrap();
            assert_eq!(parsed, frame);
            assert_eq!(used, bytes.len());
            for cut in 0..bytes.len() {
                assert_eq!(
                    parse_frame(&bytes[..cut]).unwrap(),
                    None,
                    "{frame:?} cut {cut}"
                );
            }
        }
    }

    #[test]
    fn requests_parse_incrementally_and_in_pipelines() {
        let mut bytes = Frame::request(["CLIENT", "SETINFO", "LIB-NAME", "redis-rs"]);
        bytes.extend(Frame::request(["GET", "k"]));
        let (args, used) = parse_request(&bytes).unwrap().unwrap();
        assert_eq!(args.len(), 4);
        let (args2, used2) = parse_request(&bytes[used..]).unwrap().unwrap();
        assert_eq!(args2, vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(used + used2, bytes.len());
        for cut in 0..used {
            assert_eq!(parse_request(&bytes[..cut]).unwrap(), None);
        }
        assert_eq!(parse_request(b"*0\r\n").unwrap(), Some((vec![], 4)));
    }

    #[test]
    fn malformed_requests_get_redis_wording() {
        let err = |b: &[u8]| parse_request(b).unwrap_err().0;
        assert_eq!(err(b"*x\r\n"), "invalid multibulk length");
        assert_eq!(err(b"*1\r\n:1\r\n"), "expected '$', got ':'");
        assert_eq!(err(b"*1\r\n$-5\r\n"), "invalid bulk length");
        assert_eq!(err(b"*1\r\n$99999999999\r\n"), "invalid bulk length");
        assert_eq!(err(b"*99999999\r\n"), "invalid multibulk length");
        assert_eq!(
            err(b"*1\r\n$1\r\nab\r\n"),
            "bulk string not terminated by CRLF"
        );
        assert!(err(b"PING\r\n").starts_with("inline"));
        let long = vec![b'1'; LINE_BYTES_MAX + 10];
        let mut req = b"*".to_vec();
        req.extend(long);
        assert_eq!(err(&req), "too big mbulk count string");
        assert_eq!(
            ProtocolError("invalid bulk length".into()).reply(),
            Frame::error("ERR Protocol error: invalid bulk length")
        );
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        for bad in [
            &b"?\r\n"[..],
            b":abc\r\n",
            b"$-2\r\n",
            b"*-2\r\n",
            b"$1\r\nab\r\n",
        ] {
            assert!(parse_frame(bad).is_err(), "{bad:?}");
        }
        let mut deep = Vec::new();
        for _ in 0..=DEPTH_MAX + 1 {
            deep.extend_from_slice(b"*1\r\n");
        }
        deep.extend_from_slice(b":1\r\n");
        assert!(parse_frame(&deep).is_err());
    }

    #[test]
    fn statuses_and_errors_never_carry_line_breaks() {
        assert_eq!(Frame::error("a\r\nb").to_bytes(), b"-a  b\r\n");
        assert_eq!(Frame::simple("a\nb").to_bytes(), b"+a b\r\n");
    }
}
