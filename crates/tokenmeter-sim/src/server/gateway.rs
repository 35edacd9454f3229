//! A gateway between the server and the client that holds the stream back, as the
//! buffering faults model it: nginx with `proxy_buffering on` (released when its
//! buffer fills), a proxy that flushes on a timer, one that holds the whole answer,
//! and nginx's `gzip on` for `text/event-stream` (a gzip stream whose compressor
//! emits only when its buffer fills). The server behind it still writes each token
//! when it is due; what the client gets is the gateway's releases, and the truth
//! records those (a token is written when the release carrying it is).
//!
//! The gzip stream is real gzip (RFC 1952) with stored deflate blocks (RFC 1951
//! §3.2.4), so the browser decodes it as it would nginx's; compressing is not the
//! point, holding back is.

use std::{future::Future, pin::Pin, task::Context, task::Poll, time::Duration};

use bytes::Bytes;

use crate::fault::{Fault, Faults};

/// How much a `buffer-4k` gateway holds before it releases.
const BUFFER_BYTES: usize = 4 * 1024;
/// How long a `buffer-250ms` gateway holds what it got first.
const BUFFER_TIME: Duration = Duration::from_millis(250);
/// The input a `gzip` gateway compresses before its output buffer fills (nginx's
/// `gzip_buffers` of 8 KiB, at the low ratio of short JSON events).
const GZIP_BYTES: usize = 8 * 1024;

enum Release {
    /// Only at the end of the stream.
    AtEnd,
    /// When this many bytes are held.
    Bytes(usize),
    /// This long after the first byte held.
    After(Duration),
}

/// The gateway of one response.
pub(super) struct Gateway {
    release: Release,
    gzip: Option<Gzip>,
    held: Vec<u8>,
    /// Tokens the held bytes complete.
    tokens: Vec<usize>,
    /// The engine step of the last piece held.
    step: u64,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The gzip trailer went out.
    closed: bool,
}

impl Gateway {
    /// The gateway `faults` put in front of a stream, if any.
    pub(super) fn of(faults: &Faults) -> Option<Gateway> {
        let (release, gzip) = if faults.has(Fault::Gzip) {
            (Release::Bytes(GZIP_BYTES), Some(Gzip::default()))
        } else if faults.has(Fault::BufferAll) {
            (Release::AtEnd, None)
        } else if faults.has(Fault::Buffer4k) {
            (Release::Bytes(BUFFER_BYTES), None)
        } else if faults.has(Fault::Buffer250ms) {
            (Release::After(BUFFER_TIME), None)
        } else {
            return None;
        };
        Some(Gateway {
            release,
            gzip,
            held: Vec::new(),
            tokens: Vec::new(),
            step: 0,
            timer: None,
            closed: false,
        })
    }

    /// Whether the response says `content-encoding: gzip`.
    pub(super) fn is_gzip(&self) -> bool {
        self.gzip.is_some()
    }

    /// Takes a piece the server wrote; `Some` when that makes the gateway release
    /// (by size).
    pub(super) fn take(
        &mut self,
        step: u64,
        bytes: &[u8],
        tokens: Vec<usize>,
    ) -> Option<(u64, Bytes, Vec<usize>)> {
        self.held.extend_from_slice(bytes);
        self.tokens.extend(tokens);
        self.step = step;
        match self.release {
            Release::Bytes(limit) if self.held.len() >= limit => self.release(),
            Release::After(after) if self.timer.is_none() => {
                self.timer = Some(Box::pin(tokio::time::sleep(after)));
                None
            }
            _ => None,
        }
    }

    /// Ready with a release when the timer of what it holds fires.
    pub(super) fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<(u64, Bytes, Vec<usize>)> {
        let Some(timer) = self.timer.as_mut() else {
            return Poll::Pending;
        };
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.timer = None;
        match self.release() {
            Some(release) => Poll::Ready(release),
            None => Poll::Pending,
        }
    }

    /// What it still holds when the stream ends, then (gzip) the stream's trailer;
    /// `None` once everything is out.
    pub(super) fn drain(&mut self) -> Option<(u64, Bytes, Vec<usize>)> {
        if let Some(release) = self.release() {
            return Some(release);
        }
        let gzip = self.gzip.as_mut().filter(|_| !self.closed)?;
        self.closed = true;
        Some((self.step, gzip.trailer().into(), Vec::new()))
    }

    /// Everything held, as it leaves the gateway.
    fn release(&mut self) -> Option<(u64, Bytes, Vec<usize>)> {
        if self.held.is_empty() {
            return None;
        }
        self.timer = None;
        let raw = std::mem::take(&mut self.held);
        let bytes = match self.gzip.as_mut() {
            Some(gzip) => gzip.blocks(&raw),
            None => raw,
        };
        Some((self.step, bytes.into(), std::mem::take(&mut self.tokens)))
    }
}

/// A gzip stream of stored blocks, written as the input comes.
#[derive(Default)]
struct Gzip {
    started: bool,
    crc: u32,
    size: u32,
}

impl Gzip {
    /// `input` as stored blocks (after the gzip header, the first time).
    fn blocks(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len() + 16);
        if !self.started {
            self.started = true;
            // Magic, deflate, no flags, no mtime, no extra flags, unknown OS.
            out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
        }
        for block in input.chunks(usize::from(u16::MAX)) {
            let len = block.len() as u16;
            // BFINAL 0, BTYPE 00 (stored): the block starts on a byte boundary.
            out.push(0);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&(!len).to_le_bytes());
            out.extend_from_slice(block);
        }
        self.crc = crc32(self.crc, input);
        self.size = self.size.wrapping_add(input.len() as u32);
        out
    }

    /// The last (empty) block, the CRC-32 and the size of what was compressed.
    fn trailer(&mut self) -> Vec<u8> {
        let mut out = if self.started {
            Vec::new()
        } else {
            self.blocks(&[])
        };
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
        out.extend_from_slice(&self.crc.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out
    }
}

/// CRC-32 (IEEE 802.3, reflected, as gzip uses), continued from `crc`.
fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    let mut crc = !crc;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a gzip stream of stored blocks (what [`Gzip`] writes), checking its
    /// framing, CRC and size.
    fn gunzip_stored(data: &[u8]) -> Vec<u8> {
        assert_eq!(&data[..3], &[0x1f, 0x8b, 8]);
        let mut at = 10;
        let mut out = Vec::new();
        loop {
            let last = data[at] & 1 == 1;
            assert_eq!(data[at] >> 1, 0, "stored");
            let len = u16::from_le_bytes([data[at + 1], data[at + 2]]);
            let nlen = u16::from_le_bytes([data[at + 3], data[at + 4]]);
            assert_eq!(len, !nlen);
            out.extend_from_slice(&data[at + 5..at + 5 + usize::from(len)]);
            at += 5 + usize::from(len);
            if last {
                break;
            }
        }
        let crc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
        let size = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap());
        assert_eq!((crc, size as usize), (crc32(0, &out), out.len()));
        assert_eq!(at + 8, data.len());
        out
    }

    #[test]
    fn crc32_is_gzip_s() {
        // The standard check value.
        assert_eq!(crc32(0, b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(crc32(0, b"1234"), b"56789"), 0xcbf4_3926);
    }

    #[test]
    fn the_gzip_gateway_releases_by_its_buffer_and_the_stream_decodes_whole() {
        let mut gateway = Gateway::of(&Faults(vec![Fault::Gzip])).unwrap();
        let event = "data: {\"choices\":[{\"delta\":{\"content\":\"你好\"}}]}\n\n".as_bytes();
        let mut out = Vec::new();
        let mut releases = 0;
        for i in 0..400 {
            if let Some((_, bytes, tokens)) = gateway.take(i, event, vec![i as usize]) {
                releases += 1;
                assert!(tokens.len() > 100, "a release carries many tokens");
                out.extend_from_slice(&bytes);
            }
        }
        while let Some((_, bytes, _)) = gateway.drain() {
            out.extend_from_slice(&bytes);
        }
        assert!(releases >= 2);
        assert_eq!(gunzip_stored(&out), event.repeat(400));
    }

    #[test]
    fn a_whole_answer_gateway_holds_all_and_a_size_one_releases_by_4_kib() {
        let mut all = Gateway::of(&Faults(vec![Fault::BufferAll])).unwrap();
        for i in 0..100 {
            assert!(all.take(i, &[b'x'; 100], vec![i as usize]).is_none());
        }
        let (_, bytes, tokens) = all.drain().unwrap();
        assert_eq!((bytes.len(), tokens.len()), (10_000, 100));
        assert!(all.drain().is_none());
        let mut by_size = Gateway::of(&Faults(vec![Fault::Buffer4k])).unwrap();
        let released: Vec<usize> = (0..100)
            .filter_map(|i| by_size.take(i, &[b'x'; 100], vec![]))
            .map(|(_, b, _)| b.len())
            .collect();
        assert_eq!(released, [4_100, 4_100]);
        assert_eq!(by_size.drain().unwrap().1.len(), 1_800);
        assert!(Gateway::of(&Faults(vec![Fault::Comments])).is_none());
    }
}
