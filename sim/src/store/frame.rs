//! Length-prefixed frames: the byte layer of the store protocol.
//!
//! A frame is a 4-byte big-endian body length followed by the body. TCP is a
//! byte stream, so something must say where one message ends; a length prefix
//! does that without escaping and lets the reader refuse an oversized message
//! *before* allocating for it. Both ends bound the body at
//! [`FRAME_BODY_LEN_MAX`], so a corrupt or hostile length cannot make either
//! side buffer without limit.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Size of the length prefix, in bytes.
pub const FRAME_HEADER_LEN: usize = 4;

/// Largest frame body either side sends or accepts, in bytes. Requests are a
/// few hundred bytes plus the value; the bound is set by the largest reply
/// worth sending in one piece (a long fence log), with room to spare.
pub const FRAME_BODY_LEN_MAX: usize = 16 * 1024 * 1024;

/// Writes one frame (`body` behind its length) as a single write, so that the
/// simulated network carries it as one segment.
pub async fn write_frame<W: AsyncWrite + Unpin>(writer: &mut W, body: &[u8]) -> io::Result<()> {
    if body.len() > FRAME_BODY_LEN_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "frame body of {} bytes exceeds the {FRAME_BODY_LEN_MAX}-byte bound",
                body.len()
            ),
        ));
    }
    let body_len = u32::try_from(body.len()).expect("bounded by FRAME_BODY_LEN_MAX");
    let mut frame = Vec::with_capacity(FRAME_HEADER_LEN + body.len());
    frame.extend_from_slice(&body_len.to_be_bytes());
    frame.extend_from_slice(body);
    writer.write_all(&frame).await?;
    writer.flush().await
}

/// Reads one frame's body. `Ok(None)` means the peer closed the stream cleanly
/// between frames; a close inside a frame is an error (the message was cut).
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut header = [0u8; FRAME_HEADER_LEN];
    // The first byte is read apart from the rest: EOF there is a clean close,
    // EOF anywhere after it is a truncated frame.
    if reader.read(&mut header[..1]).await? == 0 {
        return Ok(None);
    }
    reader.read_exact(&mut header[1..]).await?;
    let body_len = u32::from_be_bytes(header) as usize;
    if body_len > FRAME_BODY_LEN_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame body of {body_len} bytes exceeds the {FRAME_BODY_LEN_MAX}-byte bound"),
        ));
    }
    let mut body = vec![0u8; body_len];
    reader.read_exact(&mut body).await?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_back_to_back() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"first").await.unwrap();
        write_frame(&mut wire, b"").await.unwrap();
        write_frame(&mut wire, b"third\nline").await.unwrap();
        assert_eq!(wire.len(), 3 * FRAME_HEADER_LEN + 5 + 10);
        let mut reader = wire.as_slice();
        assert_eq!(read_frame(&mut reader).await.unwrap().unwrap(), b"first");
        assert_eq!(read_frame(&mut reader).await.unwrap().unwrap(), b"");
        assert_eq!(
            read_frame(&mut reader).await.unwrap().unwrap(),
            b"third\nline"
        );
        assert_eq!(read_frame(&mut reader).await.unwrap(), None, "clean EOF");
    }

    #[tokio::test]
    async fn truncated_frames_are_errors_not_clean_closes() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"payload").await.unwrap();
        for cut in 1..wire.len() {
            let mut reader = &wire[..cut];
            let err = read_frame(&mut reader).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn oversized_frames_are_refused_both_ways() {
        let huge_len = u32::try_from(FRAME_BODY_LEN_MAX + 1).unwrap();
        let wire = huge_len.to_be_bytes();
        let err = read_frame(&mut wire.as_slice()).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);

        let body = vec![0u8; FRAME_BODY_LEN_MAX + 1];
        let mut sink = Vec::new();
        let err = write_frame(&mut sink, &body).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(sink.is_empty(), "nothing is written for a refused frame");
    }
}
