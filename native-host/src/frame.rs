//! Chrome native-messaging frames: a 4-byte native-endian length, then UTF-8 JSON.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Larger incoming frames are skipped without being allocated.
pub const MAX_INCOMING: u32 = 64 * 1024 * 1024;
/// Chrome closes the port on a host→browser message over 1 MiB; we never send one.
pub const MAX_OUTGOING: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("incoming frame of {0} bytes is over the {MAX_INCOMING}-byte limit; it was skipped")]
    TooLarge(u32),
    #[error("outgoing message of {0} bytes is over Chrome's {MAX_OUTGOING}-byte limit; it was not sent")]
    OutgoingTooLarge(usize),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads one frame. `Ok(None)` is a clean end of input (the browser closed the port).
/// After `TooLarge` the stream is still in sync: the frame's bytes were read and dropped.
pub async fn read<R: AsyncRead + Unpin>(r: &mut R) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_ne_bytes(len);
    if len > MAX_INCOMING {
        let skipped = tokio::io::copy(&mut r.take(u64::from(len)), &mut tokio::io::sink()).await?;
        if skipped < u64::from(len) {
            return Ok(None);
        }
        return Err(FrameError::TooLarge(len));
    }
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf).await?;
    Ok(Some(buf))
}

/// As `read`, blocking: the host reads the browser on a thread of its own, so a frame is
/// handled the moment it arrives, with no hand-over between threads on the way.
pub fn read_blocking<R: std::io::Read>(r: &mut R) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_ne_bytes(len);
    if len > MAX_INCOMING {
        let skipped = std::io::copy(&mut std::io::Read::take(&mut *r, u64::from(len)), &mut std::io::sink())?;
        if skipped < u64::from(len) {
            return Ok(None);
        }
        return Err(FrameError::TooLarge(len));
    }
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

/// Frames `payload`, refusing what Chrome would refuse.
pub fn encode(payload: &[u8]) -> Result<Vec<u8>, FrameError> {
    if payload.len() > MAX_OUTGOING {
        return Err(FrameError::OutgoingTooLarge(payload.len()));
    }
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.extend_from_slice(&(payload.len() as u32).to_ne_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

pub async fn write<W: AsyncWrite + Unpin>(w: &mut W, payload: &[u8]) -> Result<(), FrameError> {
    let framed = encode(payload)?;
    w.write_all(&framed).await?;
    w.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        encode(payload).unwrap()
    }

    #[tokio::test]
    async fn reads_frames_in_order_then_clean_eof() {
        let mut input = frame(br#"{"a":1}"#);
        input.extend(frame(b"{}"));
        let mut r = input.as_slice();
        assert_eq!(read(&mut r).await.unwrap().unwrap(), br#"{"a":1}"#);
        assert_eq!(read(&mut r).await.unwrap().unwrap(), b"{}");
        assert!(read(&mut r).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversize_frame_is_skipped_and_the_next_one_survives() {
        // A real stream of 64 MiB + 1 bytes, fed through a pipe so nothing holds it whole.
        let (mut tx, mut rx) = tokio::io::duplex(64 * 1024);
        let writer = tokio::spawn(async move {
            let n = MAX_INCOMING + 1;
            tx.write_all(&n.to_ne_bytes()).await.unwrap();
            let chunk = vec![b'x'; 1 << 20];
            let mut left = n as usize;
            while left > 0 {
                let k = left.min(chunk.len());
                tx.write_all(&chunk[..k]).await.unwrap();
                left -= k;
            }
            tx.write_all(&frame(b"{\"after\":true}")).await.unwrap();
        });
        match read(&mut rx).await {
            Err(FrameError::TooLarge(n)) => assert_eq!(n, MAX_INCOMING + 1),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert_eq!(read(&mut rx).await.unwrap().unwrap(), b"{\"after\":true}");
        writer.await.unwrap();
    }

    #[test]
    fn blocking_reads_agree() {
        let mut input = frame(br#"{"a":1}"#);
        input.extend((MAX_INCOMING + 1).to_ne_bytes());
        let mut r = input.as_slice();
        assert_eq!(read_blocking(&mut r).unwrap().unwrap(), br#"{"a":1}"#);
        assert!(read_blocking(&mut r).unwrap().is_none(), "an oversize frame cut short is the end");
        let mut cut = 10u32.to_ne_bytes().to_vec();
        cut.extend_from_slice(b"abc");
        assert!(matches!(read_blocking(&mut cut.as_slice()), Err(FrameError::Io(_))));
    }

    #[tokio::test]
    async fn truncated_body_is_an_error_not_a_hang() {
        let mut input = 10u32.to_ne_bytes().to_vec();
        input.extend_from_slice(b"abc");
        assert!(matches!(read(&mut input.as_slice()).await, Err(FrameError::Io(_))));
    }

    #[test]
    fn refuses_to_send_over_one_mebibyte() {
        assert!(encode(&vec![b' '; MAX_OUTGOING]).is_ok());
        assert!(matches!(encode(&vec![b' '; MAX_OUTGOING + 1]), Err(FrameError::OutgoingTooLarge(_))));
    }
}
