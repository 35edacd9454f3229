//! Hostile servers: answers no honest server sends, each made to reach one of a
//! client's limits (the faults `endless-headers`, `huge-line`, `million-events`,
//! `keep-alive-forever`, `gzip-bomb`, `html-200`, `endless-error` and `endless`).
//!
//! Every body is made as it is read, one piece at a time: the simulator holds no
//! more of it than a piece, and a client that stops reading stops it. Each has an
//! end far beyond what any client should read (a gigabyte, a million events, the
//! hang time), so that a client without limits is still seen to fail, not to hang
//! the test forever.

use std::{
    future::Future,
    io,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    body::Body,
    http::{header, HeaderName, HeaderValue, StatusCode},
    response::Response,
};
use bytes::Bytes;

use crate::{
    fault::{Fault, Faults},
    text::TokenText,
};

/// `huge-line` and `endless-error`: bytes written before the body ends on its own.
const ENDLESS_BYTES: u64 = 1 << 30;
/// `gzip-bomb`: bytes the body decompresses to before it ends on its own.
const BOMB_BYTES: u64 = 4 << 30;
/// `million-events`: events without a token before the answer.
const N_EMPTY_EVENTS: u64 = 1_000_000;
/// `endless-headers`: the size of the response's header block, far beyond every
/// client's limit (Chromium's is 256 KiB, hyper's 400 KiB).
const HEADER_BLOCK_BYTES: usize = 2 << 20;
/// `keep-alive-forever`: the time between two comments.
const KEEP_ALIVE_EVERY: Duration = Duration::from_millis(100);
/// `endless`: the time between two tokens.
const TOKEN_EVERY: Duration = Duration::from_millis(2);
/// Bytes of one piece of a body that is written as fast as it is read.
const PIECE_BYTES: usize = 64 << 10;

/// The hostile fault among `faults`, if any: these replace the whole answer.
pub(super) fn fault_of(faults: &Faults) -> Option<Fault> {
    faults.0.iter().copied().find(|f| f.is_hostile())
}

/// The answer of hostile `fault` to request `id`; `hang` bounds the bodies written
/// on a timer.
// Long: one response per hostile fault, an arm each.
pub(super) fn response(fault: Fault, id: u64, hang: Duration) -> Response {
    let event_stream = "text/event-stream; charset=utf-8";
    let (status, content_type, pieces): (StatusCode, &str, Pieces) = match fault {
        Fault::EndlessHeaders => (StatusCode::OK, event_stream, Pieces::once(DONE)),
        Fault::HugeLine => (
            StatusCode::OK,
            event_stream,
            Pieces::repeated(
                r#"data: {"choices":[{"index":0,"delta":{"content":""#,
                vec![b'x'; PIECE_BYTES],
                ENDLESS_BYTES,
            ),
        ),
        Fault::MillionEvents => {
            const EMPTY: &str = "data: {\"choices\":[]}\n\n";
            const PER_PIECE: u64 = 5_000;
            (
                StatusCode::OK,
                event_stream,
                Pieces::repeated(
                    "",
                    EMPTY.repeat(PER_PIECE as usize).into_bytes(),
                    N_EMPTY_EVENTS * EMPTY.len() as u64,
                ),
            )
        }
        Fault::KeepAliveForever => (
            StatusCode::OK,
            event_stream,
            Pieces::timed(KEEP_ALIVE_EVERY, hang, |_| {
                Bytes::from_static(b": keep-alive\n\n")
            }),
        ),
        Fault::GzipBomb => (StatusCode::OK, event_stream, Pieces::bomb()),
        Fault::Html200 => (
            StatusCode::OK,
            "text/html; charset=utf-8",
            Pieces::once(WELCOME_PAGE),
        ),
        Fault::EndlessError => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/html; charset=utf-8",
            Pieces::repeated(
                "<html><body>\n",
                b"<p>upstream busy, retrying</p>\n".repeat(PIECE_BYTES / 32),
                ENDLESS_BYTES,
            ),
        ),
        Fault::Endless => {
            let text = TokenText::answer(id);
            (
                StatusCode::OK,
                event_stream,
                Pieces::timed(TOKEN_EVERY, hang, move |i| {
                    let content = serde_json::to_string(text.token(i)).expect("a string");
                    Bytes::from(format!(
                        "data: {{\"id\":\"chatcmpl-{id}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{content}}},\"finish_reason\":null}}]}}\n\n"
                    ))
                }),
            )
        }
        other => unreachable!("`{other}` is not a hostile fault"),
    };
    let gzip = matches!(pieces.kind, Kind::Bomb { .. });
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache");
    if gzip {
        response = response.header(header::CONTENT_ENCODING, "gzip");
    }
    let mut response = response.body(Body::new(pieces)).expect("a valid response");
    if fault == Fault::EndlessHeaders {
        let value = HeaderValue::from_str(&"a".repeat(2_000)).expect("ASCII");
        let headers = response.headers_mut();
        for i in 0..HEADER_BLOCK_BYTES / 2_000 {
            let name =
                HeaderName::from_bytes(format!("x-padding-{i}").as_bytes()).expect("a header name");
            headers.insert(name, value.clone());
        }
    }
    response
}

const DONE: &str = "data: [DONE]\n\n";

/// What a web server answers when the URL points at it instead of the API.
const WELCOME_PAGE: &str = "<!DOCTYPE html>\n<html>\n<head><title>Welcome to nginx!</title></head>\n<body>\n<h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed.</p>\n</body>\n</html>\n";

enum Kind {
    /// One piece.
    Once(Option<Bytes>),
    /// A head, then the same piece until `limit` bytes are written.
    Repeated {
        head: Option<Bytes>,
        piece: Bytes,
        written: u64,
        limit: u64,
    },
    /// A piece every `every`, made from its index, until `until` have passed.
    Timed {
        every: Duration,
        n_left: u64,
        index: u64,
        make: Box<dyn FnMut(u64) -> Bytes + Send>,
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
    },
    /// A gzip stream that decompresses to `data: ` and zeros without end.
    Bomb { bits: BitWriter, inflated: u64 },
}

/// A body made a piece at a time.
struct Pieces {
    kind: Kind,
}

impl Pieces {
    fn once(text: &'static str) -> Pieces {
        Pieces {
            kind: Kind::Once(Some(Bytes::from_static(text.as_bytes()))),
        }
    }

    fn repeated(head: &'static str, piece: Vec<u8>, limit: u64) -> Pieces {
        Pieces {
            kind: Kind::Repeated {
                head: (!head.is_empty()).then(|| Bytes::from_static(head.as_bytes())),
                piece: Bytes::from(piece),
                written: 0,
                limit,
            },
        }
    }

    fn timed(
        every: Duration,
        until: Duration,
        make: impl FnMut(u64) -> Bytes + Send + 'static,
    ) -> Pieces {
        Pieces {
            kind: Kind::Timed {
                every,
                n_left: (until.as_secs_f64() / every.as_secs_f64()).ceil() as u64,
                index: 0,
                make: Box::new(make),
                timer: None,
            },
        }
    }

    fn bomb() -> Pieces {
        Pieces {
            kind: Kind::Bomb {
                bits: BitWriter::default(),
                inflated: 0,
            },
        }
    }

    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        match &mut self.kind {
            Kind::Once(piece) => Poll::Ready(piece.take()),
            Kind::Repeated {
                head,
                piece,
                written,
                limit,
            } => {
                if let Some(head) = head.take() {
                    return Poll::Ready(Some(head));
                }
                if *written >= *limit {
                    return Poll::Ready(None);
                }
                *written += piece.len() as u64;
                Poll::Ready(Some(piece.clone()))
            }
            Kind::Timed {
                every,
                n_left,
                index,
                make,
                timer,
            } => {
                if *n_left == 0 {
                    return Poll::Ready(None);
                }
                if *index > 0 {
                    let sleep = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(*every)));
                    std::task::ready!(sleep.as_mut().poll(cx));
                    *timer = None;
                }
                *n_left -= 1;
                *index += 1;
                Poll::Ready(Some(make(*index - 1)))
            }
            Kind::Bomb { bits, inflated } => {
                if *inflated >= BOMB_BYTES {
                    return Poll::Ready(None);
                }
                if *inflated == 0 {
                    *inflated = bits.start_bomb();
                }
                *inflated += bits.zeros(PIECE_BYTES);
                Poll::Ready(Some(Bytes::from(bits.take())))
            }
        }
    }
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<http_body::Frame<Bytes>>>> {
        self.get_mut()
            .poll_piece(cx)
            .map(|piece| piece.map(|bytes| Ok(http_body::Frame::data(bytes))))
    }
}

/// A deflate stream (RFC 1951) written bit by bit, least significant bit first,
/// inside a gzip member (RFC 1952) that never ends: one block with the fixed
/// Huffman codes (§3.2.6), whose every 13 bits copy 258 bytes from one byte back.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u32,
    n_bits: u32,
}

impl BitWriter {
    /// Writes `n` bits of `value`, least significant first (the header's fields).
    fn bits(&mut self, value: u32, n: u32) {
        self.acc |= value << self.n_bits;
        self.n_bits += n;
        while self.n_bits >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n_bits -= 8;
        }
    }

    /// Writes a Huffman code of `n` bits, most significant bit first.
    fn code(&mut self, code: u32, n: u32) {
        let reversed = code.reverse_bits() >> (32 - n);
        self.bits(reversed, n);
    }

    /// A literal byte below 144: 8 bits, `0x30 + byte`.
    fn literal(&mut self, byte: u8) {
        self.code(0x30 + u32::from(byte), 8);
    }

    /// The gzip header, the block's header and `data: ` then one zero, as
    /// literals; returns the bytes these inflate to.
    fn start_bomb(&mut self) -> u64 {
        // Magic, deflate, no flags, no mtime, no extra flags, unknown OS.
        self.out
            .extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
        // BFINAL 0 (the block never ends), BTYPE 01 (fixed Huffman codes).
        self.bits(0, 1);
        self.bits(1, 2);
        for &byte in b"data: \0" {
            self.literal(byte);
        }
        7
    }

    /// About `compressed` bytes of copies of the zero before: returns the bytes
    /// they inflate to.
    fn zeros(&mut self, compressed: usize) -> u64 {
        let n_copies = compressed * 8 / 13;
        for _ in 0..n_copies {
            // Length 258: symbol 285, code 11000101, no extra bits; distance 1:
            // code 00000, no extra bits.
            self.code(0b1100_0101, 8);
            self.code(0, 5);
        }
        n_copies as u64 * 258
    }

    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inflates a fixed-Huffman block that holds only literals below 144 and
    /// <258, 1> copies (what [`BitWriter`] writes), after the gzip header.
    fn inflate(data: &[u8]) -> Vec<u8> {
        assert_eq!(&data[..3], &[0x1f, 0x8b, 8]);
        let mut bit = 10 * 8;
        let mut read = |n: u32| {
            let mut v = 0;
            for i in 0..n {
                let b = (data[bit / 8] >> (bit % 8)) & 1;
                v |= u32::from(b) << i;
                bit += 1;
            }
            v
        };
        assert_eq!(read(1), 0, "not the final block");
        assert_eq!(read(2), 1, "fixed Huffman codes");
        let mut out = Vec::new();
        let n_bits = (data.len() - 10) * 8 - 3;
        let mut used = 0;
        while used + 13 <= n_bits {
            // Codes are read most significant bit first.
            let mut code = 0;
            for _ in 0..8 {
                code = (code << 1) | read(1);
            }
            used += 8;
            if code == 0b1100_0101 {
                let mut distance = 0;
                for _ in 0..5 {
                    distance = (distance << 1) | read(1);
                }
                used += 5;
                assert_eq!(distance, 0, "distance 1");
                let last = *out.last().unwrap();
                out.extend(std::iter::repeat_n(last, 258));
            } else {
                assert!((0x30..0x30 + 144).contains(&code), "a literal: {code:#b}");
                out.push((code - 0x30) as u8);
            }
        }
        out
    }

    #[test]
    fn the_bomb_inflates_to_data_and_zeros_at_over_150_times_its_size() {
        let mut bits = BitWriter::default();
        let mut inflated = bits.start_bomb();
        inflated += bits.zeros(1_000);
        let data = bits.take();
        let out = inflate(&data);
        // The last copy's bits may wait for the next piece.
        assert!(
            inflated - out.len() as u64 <= 258,
            "{inflated} vs {}",
            out.len()
        );
        assert!(out.starts_with(b"data: \0"));
        assert!(out[6..].iter().all(|&b| b == 0));
        assert!(
            inflated > 150 * data.len() as u64,
            "{inflated} from {}",
            data.len()
        );
    }
}
