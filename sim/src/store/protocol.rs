//! The store's messages and their encoding inside a frame body.
//!
//! A body is a sequence of fields, each written `<decimal length>:<bytes>`
//! (netstring-like, without the trailing comma). Length-prefixing every
//! field means values round-trip whatever they contain — newlines, spaces,
//! colons, any UTF-8 — with no escaping rules to get wrong, and the text stays
//! readable in a packet trace (`2:17` `12:write_fenced` `5:res-1` …).
//!
//! The first field of every message is the request id, which the reply
//! echoes: the client holds one request in flight per connection, and
//! checking the echo catches any bug that would pair a reply with the wrong
//! request. The second field names the operation (request) or the kind of
//! answer (reply). Decoding never trusts a length or count: each is checked
//! against the bytes actually present before anything is allocated.

use redfence_core::{FenceLogEntry, FenceOutcome, JobOutcome, WriteOutcome};

/// Most decimal digits in a field length. Eight digits cover the largest
/// frame body (16 MiB = 16 777 216 bytes); more can only be corruption.
pub const FIELD_LEN_DIGITS_MAX: usize = 8;

/// Fewest bytes one encoded fence-log entry takes (seven fields of at least
/// `0:` plus one byte each for the non-empty ones); bounds a decoded count.
const FENCE_LOG_ENTRY_LEN_MIN: usize = 7 * 2;

/// Request id used in an error reply to a request whose id could not be read.
/// Clients number requests from 1, so it never matches a real request.
pub const REQUEST_ID_UNKNOWN: u64 = 0;

/// One request to the store. Mirrors the [`redfence_core::FencedStore`]
/// methods; values are plain strings and numbers because the store, like
/// Postgres, stores what it is given (validation happened at the client's edge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Create the resource (value `""`, fences 0) if absent.
    EnsureResource {
        /// Resource name.
        resource: String,
    },
    /// The single-statement fenced update.
    WriteFenced {
        /// Resource name.
        resource: String,
        /// The writer's fence.
        fence: i64,
        /// The writer's owner token.
        owner: String,
        /// The new value.
        value: String,
    },
    /// Guard check, effect and idempotent completion in one step.
    ApplyJob {
        /// Idempotency key.
        job_id: String,
        /// Resource name.
        resource: String,
        /// The writer's fence.
        fence: i64,
        /// The writer's owner token.
        owner: String,
        /// The new value.
        value: String,
    },
    /// Whether the job has completed.
    IsCompleted {
        /// Idempotency key.
        job_id: String,
    },
    /// The resource's value and fence.
    Read {
        /// Resource name.
        resource: String,
    },
    /// The resource's fence log.
    FenceLog {
        /// Resource name.
        resource: String,
    },
    /// Increments the resource's durable fence counter (`fence_counters`).
    NextFence {
        /// Resource name.
        resource: String,
    },
    /// A write with no fence check at all: what a broken protocol does when
    /// it skips the store's guard (mutants only). Logged like any write.
    WriteUnchecked {
        /// Resource name.
        resource: String,
        /// The fence the writer carried (stored as the new last fence).
        fence: i64,
        /// The writer's owner token.
        owner: String,
        /// The job it completes; empty for none (job ids are never empty).
        job_id: String,
        /// The new value.
        value: String,
    },
}

/// One reply from the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `EnsureResource` committed.
    Done,
    /// What `WriteFenced` did.
    Write(WriteOutcome),
    /// What `ApplyJob` did.
    Job(JobOutcome),
    /// The answer to `IsCompleted`.
    Completed(bool),
    /// The answer to `Read`.
    Value(Option<(String, i64)>),
    /// The answer to `FenceLog`, in `seq` order.
    FenceLog(Vec<FenceLogEntry>),
    /// The answer to `NextFence`.
    Fence(i64),
    /// The request was refused (malformed, or an answer too large for a frame).
    Error(String),
}

/// Why a frame body is not a valid message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The body ended inside a field or before a required field.
    #[error("message truncated")]
    Truncated,
    /// A field length is not `<1..=8 digits>:`.
    #[error("malformed field length")]
    BadLength,
    /// A text field is not UTF-8.
    #[error("field is not UTF-8")]
    NotUtf8,
    /// A number field does not parse.
    #[error("malformed number {0:?}")]
    BadNumber(String),
    /// A tag field holds a word this protocol does not use there.
    #[error("unknown {what} {word:?}")]
    UnknownWord {
        /// Which tag was read.
        what: &'static str,
        /// The word found.
        word: String,
    },
    /// A count larger than the remaining bytes could possibly hold.
    #[error("count {count} cannot fit in the {remaining_len} bytes left")]
    CountTooLarge {
        /// The count read.
        count: u64,
        /// Bytes left in the body.
        remaining_len: usize,
    },
    /// Bytes left over after the message.
    #[error("{0} trailing bytes after the message")]
    TrailingBytes(usize),
}

/// Builds a body field by field.
#[derive(Default)]
struct Encoder {
    body: Vec<u8>,
}

impl Encoder {
    fn bytes(&mut self, field: &[u8]) -> &mut Self {
        self.body
            .extend_from_slice(field.len().to_string().as_bytes());
        self.body.push(b':');
        self.body.extend_from_slice(field);
        self
    }

    fn text(&mut self, field: &str) -> &mut Self {
        self.bytes(field.as_bytes())
    }

    fn int(&mut self, field: i64) -> &mut Self {
        self.text(&field.to_string())
    }

    fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }
}

/// Reads a body field by field; every read is bounds-checked.
struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    fn bytes(&mut self) -> Result<&'a [u8], ProtocolError> {
        let colon = self
            .rest
            .iter()
            .take(FIELD_LEN_DIGITS_MAX + 1)
            .position(|&b| b == b':');
        let Some(colon) = colon else {
            return Err(if self.rest.len() <= FIELD_LEN_DIGITS_MAX {
                ProtocolError::Truncated
            } else {
                ProtocolError::BadLength
            });
        };
        let digits = &self.rest[..colon];
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(ProtocolError::BadLength);
        }
        assert!(digits.len() <= FIELD_LEN_DIGITS_MAX);
        // At most eight ASCII digits: parses into usize without overflow.
        let field_len: usize = std::str::from_utf8(digits)
            .expect("ASCII digits")
            .parse()
            .expect("at most eight digits");
        let after = &self.rest[colon + 1..];
        if after.len() < field_len {
            return Err(ProtocolError::Truncated);
        }
        let (field, rest) = after.split_at(field_len);
        self.rest = rest;
        Ok(field)
    }

    fn text(&mut self) -> Result<&'a str, ProtocolError> {
        std::str::from_utf8(self.bytes()?).map_err(|_| ProtocolError::NotUtf8)
    }

    fn string(&mut self) -> Result<String, ProtocolError> {
        self.text().map(str::to_owned)
    }

    fn int(&mut self) -> Result<i64, ProtocolError> {
        let text = self.text()?;
        text.parse()
            .map_err(|_| ProtocolError::BadNumber(text.to_owned()))
    }

    fn unsigned(&mut self) -> Result<u64, ProtocolError> {
        let text = self.text()?;
        text.parse()
            .map_err(|_| ProtocolError::BadNumber(text.to_owned()))
    }

    fn finish(&self) -> Result<(), ProtocolError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError::TrailingBytes(self.rest.len()))
        }
    }
}

fn unknown(what: &'static str, word: &str) -> ProtocolError {
    ProtocolError::UnknownWord {
        what,
        word: word.to_owned(),
    }
}

/// Encodes request `id` carrying `request`.
pub fn encode_request(id: u64, request: &Request) -> Vec<u8> {
    let mut e = Encoder::default();
    e.text(&id.to_string());
    match request {
        Request::EnsureResource { resource } => e.text("ensure_resource").text(resource),
        Request::WriteFenced {
            resource,
            fence,
            owner,
            value,
        } => e
            .text("write_fenced")
            .text(resource)
            .int(*fence)
            .text(owner)
            .text(value),
        Request::ApplyJob {
            job_id,
            resource,
            fence,
            owner,
            value,
        } => e
            .text("apply_job")
            .text(job_id)
            .text(resource)
            .int(*fence)
            .text(owner)
            .text(value),
        Request::IsCompleted { job_id } => e.text("is_completed").text(job_id),
        Request::Read { resource } => e.text("read").text(resource),
        Request::FenceLog { resource } => e.text("fence_log").text(resource),
        Request::NextFence { resource } => e.text("next_fence").text(resource),
        Request::WriteUnchecked {
            resource,
            fence,
            owner,
            job_id,
            value,
        } => e
            .text("write_unchecked")
            .text(resource)
            .int(*fence)
            .text(owner)
            .text(job_id)
            .text(value),
    };
    e.finish()
}

/// Reads just the request id of `body`, for an error reply to a request that
/// fails to decode further along.
pub fn peek_request_id(body: &[u8]) -> Option<u64> {
    Decoder { rest: body }.unsigned().ok()
}

/// Decodes a request body into its id and request.
pub fn decode_request(body: &[u8]) -> Result<(u64, Request), ProtocolError> {
    let mut d = Decoder { rest: body };
    let id = d.unsigned()?;
    let op = d.text()?;
    let request = match op {
        "ensure_resource" => Request::EnsureResource {
            resource: d.string()?,
        },
        "write_fenced" => Request::WriteFenced {
            resource: d.string()?,
            fence: d.int()?,
            owner: d.string()?,
            value: d.string()?,
        },
        "apply_job" => Request::ApplyJob {
            job_id: d.string()?,
            resource: d.string()?,
            fence: d.int()?,
            owner: d.string()?,
            value: d.string()?,
        },
        "is_completed" => Request::IsCompleted {
            job_id: d.string()?,
        },
        "read" => Request::Read {
            resource: d.string()?,
        },
        "fence_log" => Request::FenceLog {
            resource: d.string()?,
        },
        "next_fence" => Request::NextFence {
            resource: d.string()?,
        },
        "write_unchecked" => Request::WriteUnchecked {
            resource: d.string()?,
            fence: d.int()?,
            owner: d.string()?,
            job_id: d.string()?,
            value: d.string()?,
        },
        other => return Err(unknown("operation", other)),
    };
    d.finish()?;
    Ok((id, request))
}

/// Encodes the reply to request `id`.
pub fn encode_reply(id: u64, reply: &Reply) -> Vec<u8> {
    let mut e = Encoder::default();
    e.text(&id.to_string());
    match reply {
        Reply::Done => {
            e.text("done");
        }
        Reply::Write(outcome) => {
            e.text("write");
            match outcome {
                WriteOutcome::Accepted => e.text("accepted"),
                WriteOutcome::Stale { last_fence } => e.text("stale").int(*last_fence),
                WriteOutcome::NotFound => e.text("not_found"),
            };
        }
        Reply::Job(outcome) => {
            e.text("job");
            match outcome {
                JobOutcome::Applied => e.text("applied"),
                JobOutcome::AlreadyDone => e.text("already_done"),
                JobOutcome::Stale { last_fence } => e.text("stale").int(*last_fence),
                JobOutcome::NotFound => e.text("not_found"),
            };
        }
        Reply::Completed(completed) => {
            e.text("completed")
                .text(if *completed { "true" } else { "false" });
        }
        Reply::Value(None) => {
            e.text("value").text("none");
        }
        Reply::Value(Some((value, last_fence))) => {
            e.text("value").text("some").text(value).int(*last_fence);
        }
        Reply::FenceLog(entries) => {
            e.text("fence_log").text(&entries.len().to_string());
            for entry in entries {
                e.int(entry.seq)
                    .text(&entry.resource)
                    .int(entry.fence)
                    .text(&entry.owner);
                match &entry.job_id {
                    None => e.text("none"),
                    Some(job_id) => e.text("some").text(job_id),
                };
                e.text(entry.outcome.log_spelling()).int(entry.at_ms);
            }
        }
        Reply::Fence(fence) => {
            e.text("fence").int(*fence);
        }
        Reply::Error(message) => {
            e.text("error").text(message);
        }
    }
    e.finish()
}

/// Decodes a reply body into the id it answers and the reply.
pub fn decode_reply(body: &[u8]) -> Result<(u64, Reply), ProtocolError> {
    let mut d = Decoder { rest: body };
    let id = d.unsigned()?;
    let kind = d.text()?;
    let reply = match kind {
        "done" => Reply::Done,
        "write" => Reply::Write(match d.text()? {
            "accepted" => WriteOutcome::Accepted,
            "stale" => WriteOutcome::Stale {
                last_fence: d.int()?,
            },
            "not_found" => WriteOutcome::NotFound,
            other => return Err(unknown("write outcome", other)),
        }),
        "job" => Reply::Job(match d.text()? {
            "applied" => JobOutcome::Applied,
            "already_done" => JobOutcome::AlreadyDone,
            "stale" => JobOutcome::Stale {
                last_fence: d.int()?,
            },
            "not_found" => JobOutcome::NotFound,
            other => return Err(unknown("job outcome", other)),
        }),
        "completed" => Reply::Completed(match d.text()? {
            "true" => true,
            "false" => false,
            other => return Err(unknown("boolean", other)),
        }),
        "value" => Reply::Value(match d.text()? {
            "none" => None,
            "some" => Some((d.string()?, d.int()?)),
            other => return Err(unknown("option tag", other)),
        }),
        "fence_log" => Reply::FenceLog(decode_fence_log(&mut d)?),
        "fence" => Reply::Fence(d.int()?),
        "error" => Reply::Error(d.string()?),
        other => return Err(unknown("reply kind", other)),
    };
    d.finish()?;
    Ok((id, reply))
}

fn decode_fence_log(d: &mut Decoder<'_>) -> Result<Vec<FenceLogEntry>, ProtocolError> {
    let count = d.unsigned()?;
    // Checked before allocating: a corrupt count must not reserve memory the
    // body could never fill.
    let count_max = d.rest.len() / FENCE_LOG_ENTRY_LEN_MIN;
    let count = usize::try_from(count)
        .ok()
        .filter(|&c| c <= count_max)
        .ok_or(ProtocolError::CountTooLarge {
            count,
            remaining_len: d.rest.len(),
        })?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let seq = d.int()?;
        let resource = d.string()?;
        let fence = d.int()?;
        let owner = d.string()?;
        let job_id = match d.text()? {
            "none" => None,
            "some" => Some(d.string()?),
            other => return Err(unknown("option tag", other)),
        };
        let outcome_text = d.text()?;
        let outcome = FenceOutcome::from_log_spelling(outcome_text)
            .ok_or_else(|| unknown("log outcome", outcome_text))?;
        let at_ms = d.int()?;
        entries.push(FenceLogEntry {
            seq,
            resource,
            fence,
            owner,
            job_id,
            outcome,
            at_ms,
            at_us: None,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(seq: i64, job_id: Option<&str>, outcome: FenceOutcome) -> FenceLogEntry {
        FenceLogEntry {
            seq,
            resource: "res 1\n".into(),
            fence: 41,
            owner: "owner:a".into(),
            job_id: job_id.map(str::to_owned),
            outcome,
            at_ms: 1_234,
            at_us: None,
        }
    }

    #[test]
    fn the_encoding_is_readable() {
        let body = encode_request(
            7,
            &Request::WriteFenced {
                resource: "r".into(),
                fence: 42,
                owner: "o".into(),
                value: "a b\n".into(),
            },
        );
        assert_eq!(body, b"1:712:write_fenced1:r2:421:o4:a b\n");
    }

    #[test]
    fn every_reply_round_trips() {
        let replies = [
            Reply::Done,
            Reply::Write(WriteOutcome::Accepted),
            Reply::Write(WriteOutcome::Stale { last_fence: 42 }),
            Reply::Write(WriteOutcome::NotFound),
            Reply::Job(JobOutcome::Applied),
            Reply::Job(JobOutcome::AlreadyDone),
            Reply::Job(JobOutcome::Stale { last_fence: -1 }),
            Reply::Job(JobOutcome::NotFound),
            Reply::Completed(true),
            Reply::Completed(false),
            Reply::Value(None),
            Reply::Value(Some((String::new(), 0))),
            Reply::Value(Some(("x:y 1:z\n".into(), i64::MAX))),
            Reply::FenceLog(vec![]),
            Reply::Fence(42),
            Reply::FenceLog(vec![
                entry(1, None, FenceOutcome::NotFound),
                entry(2, Some("job 7"), FenceOutcome::Accepted),
                entry(3, Some(""), FenceOutcome::Duplicate),
                entry(4, None, FenceOutcome::Stale),
            ]),
            Reply::Error("bad request: 3:abc".into()),
        ];
        for (id, reply) in replies.into_iter().enumerate() {
            let id = id as u64 + 1;
            let body = encode_reply(id, &reply);
            assert_eq!(decode_reply(&body), Ok((id, reply)));
        }
    }

    #[test]
    fn malformed_bodies_are_typed_errors() {
        assert_eq!(decode_request(b""), Err(ProtocolError::Truncated));
        assert_eq!(decode_request(b"1:1"), Err(ProtocolError::Truncated));
        assert_eq!(decode_request(b"x:1"), Err(ProtocolError::BadLength));
        assert_eq!(decode_request(b":1"), Err(ProtocolError::BadLength));
        assert_eq!(
            decode_request(b"123456789:"),
            Err(ProtocolError::BadLength),
            "nine digits"
        );
        assert_eq!(
            decode_request(b"1:x4:read1:r"),
            Err(ProtocolError::BadNumber("x".into()))
        );
        assert_eq!(
            decode_request(b"1:14:drop"),
            Err(unknown("operation", "drop"))
        );
        assert_eq!(
            decode_request(b"1:14:read1:r1:x"),
            Err(ProtocolError::TrailingBytes(3))
        );
        assert_eq!(
            decode_request(b"1:14:read2:\xff\xfe"),
            Err(ProtocolError::NotUtf8)
        );
        assert_eq!(
            decode_reply(b"1:19:fence_log8:99999999"),
            Err(ProtocolError::CountTooLarge {
                count: 99_999_999,
                remaining_len: 0
            })
        );
        assert_eq!(peek_request_id(b"2:17junk"), Some(17));
        assert_eq!(peek_request_id(b"junk"), None);
    }

    fn any_request() -> impl Strategy<Value = Request> {
        let text = || any::<String>();
        prop_oneof![
            text().prop_map(|resource| Request::EnsureResource { resource }),
            (text(), any::<i64>(), text(), text()).prop_map(|(resource, fence, owner, value)| {
                Request::WriteFenced {
                    resource,
                    fence,
                    owner,
                    value,
                }
            }),
            (text(), text(), any::<i64>(), text(), text()).prop_map(
                |(job_id, resource, fence, owner, value)| Request::ApplyJob {
                    job_id,
                    resource,
                    fence,
                    owner,
                    value,
                }
            ),
            text().prop_map(|job_id| Request::IsCompleted { job_id }),
            text().prop_map(|resource| Request::Read { resource }),
            text().prop_map(|resource| Request::FenceLog { resource }),
            text().prop_map(|resource| Request::NextFence { resource }),
        ]
    }

    proptest! {
        #[test]
        fn requests_round_trip(id in any::<u64>(), request in any_request()) {
            let body = encode_request(id, &request);
            prop_assert_eq!(decode_request(&body), Ok((id, request)));
        }

        #[test]
        fn values_round_trip_whatever_they_contain(value in any::<String>(), fence in any::<i64>()) {
            let reply = Reply::Value(Some((value, fence)));
            let body = encode_reply(3, &reply);
            prop_assert_eq!(decode_reply(&body), Ok((3, reply)));
        }

        #[test]
        fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_request(&body);
            let _ = decode_reply(&body);
        }

        #[test]
        fn truncated_requests_are_refused(request in any_request(), cut_seed in any::<usize>()) {
            let body = encode_request(9, &request);
            let cut = cut_seed % body.len();
            prop_assert!(decode_request(&body[..cut]).is_err());
        }
    }
}
