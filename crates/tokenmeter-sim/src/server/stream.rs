//! The streamed body of one response: the engine's due tokens become SSE events
//! (with the faults that change a stream on its way: cuts, error events, broken
//! JSON, comments, grouped tokens, split characters), handed to the connection once
//! their step is prepared and written when it is released.

use std::{
    collections::VecDeque,
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{ready, Context, Poll},
    time::Duration,
};

use axum::{
    body::Body,
    http::{header, StatusCode},
    response::Response,
};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::{
    gateway::Gateway,
    wire::{Piece, StreamPlan},
    AppState,
};
use crate::{
    connection::{Gate, WrittenSlots},
    engine::TokenDue,
    fault::{Fault, SPLIT_WRITE_PAUSE},
    text::TokenText,
    truth::{Outcome, RequestTruth, TokenTruth},
};

/// Size of the `huge-event` fault's single event: above tokenmeter's default 1 MiB limit.
const HUGE_EVENT_BYTES: usize = 3 << 19;
/// Stands for the `bad-utf8` fault's invalid byte until the event is encoded (a
/// private-use character, which no corpus holds).
const INVALID_UTF8_MARK: char = '\u{E000}';
/// Tokens per event with the `multi-token` fault.
const TOKENS_PER_EVENT: u64 = 4;

enum Frame {
    /// Bytes, and the indices of the tokens that this piece completes.
    Data(Bytes, Vec<usize>),
    /// Cut the connection (the `cut` fault).
    Abort,
    /// Hand over nothing more until the step is out and [`SPLIT_WRITE_PAUSE`] has
    /// passed (the `split-writes` fault): what follows is a write of its own.
    Pause,
}

/// The writer of one streamed response: turns due tokens into events.
struct Writer {
    state: Arc<AppState>,
    plan: StreamPlan,
    truth: RequestTruth,
    rx: Option<UnboundedReceiver<TokenDue>>,
    answer: TokenText,
    reasoning: TokenText,
    /// Frames ready to hand over, each with the engine step it belongs to: handed
    /// over once the step is prepared, written once it is released.
    frames: VecDeque<(u64, Frame)>,
    /// The step of the token being handled (0 before the first token).
    step: u64,
    /// Tokens waiting to be grouped into one event (`multi-token`).
    group: Vec<usize>,
    group_text: String,
    group_is_reasoning: bool,
    /// Token events written so far: of reasoning, and of the answer (whose first
    /// is a tool call's name).
    n_reasoning_events: u64,
    n_answer_events: u64,
    ended: bool,
    committed: bool,
    /// The `done-hold` fault's wait after the last event.
    hold: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The `split-writes` fault's wait between the pieces of a write.
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A gateway that holds the stream back (the buffering faults).
    gateway: Option<Gateway>,
    /// The connection's write gate, and when it wrote each token.
    gate: Arc<Gate>,
    written: Arc<WrittenSlots>,
}

impl Writer {
    fn push_raw(&mut self, text: String) {
        self.push_bytes(text.into_bytes(), Vec::new());
    }

    /// Queues one write, cut into pieces as the stream's faults say; `tokens` are
    /// completed by its last piece.
    fn push_bytes(&mut self, bytes: Vec<u8>, tokens: Vec<usize>) {
        let split_writes = self.plan.faults.has(Fault::SplitWrites);
        let pieces = if self.plan.faults.has(Fault::SplitUtf8) {
            split_inside_chars(&bytes)
        } else if split_writes {
            split_once(&bytes)
        } else {
            self.frames
                .push_back((self.step, Frame::Data(Bytes::from(bytes), tokens)));
            return;
        };
        let mut tokens = Some(tokens);
        for (i, (piece, is_last)) in pieces.into_iter().enumerate() {
            if split_writes && i > 0 {
                self.frames.push_back((self.step, Frame::Pause));
            }
            let completes = if is_last {
                tokens.take().unwrap_or_default()
            } else {
                Vec::new()
            };
            if split_writes && i == 0 {
                // The end of the write before and the start of this one leave
                // together, as one piece: one read holds both.
                if let Some((step, Frame::Data(before, _))) = self.frames.back_mut() {
                    if *step == self.step {
                        *before = [before.as_ref(), piece].concat().into();
                        continue;
                    }
                }
            }
            self.frames.push_back((
                self.step,
                Frame::Data(Bytes::copy_from_slice(piece), completes),
            ));
        }
    }

    fn on_token(&mut self, due: TokenDue) {
        let index = self.truth.tokens.len();
        self.step = due.step;
        self.truth
            .admitted_us
            .get_or_insert(self.state.truth.us(due.admitted));
        let half = (self.plan.n_tokens / 2) as usize;
        if index == half && half > 0 {
            if self.plan.faults.has(Fault::Cut) {
                self.flush_group();
                self.frames.push_back((self.step, Frame::Abort));
                self.end(Outcome::Faulted);
                return;
            }
            if self.plan.faults.has(Fault::ErrorEvent) {
                self.flush_group();
                self.push_raw(self.plan.error_event());
                self.end(Outcome::Faulted);
                return;
            }
            if self.plan.faults.has(Fault::BadJson) {
                self.flush_group();
                self.push_raw(self.plan.broken_event());
            }
        }
        self.truth.tokens.push(TokenTruth {
            due_us: self.state.truth.us(due.due),
            written_us: None,
        });
        let is_reasoning = (index as u64) < self.plan.n_reasoning;
        if is_reasoning && self.plan.faults.has(Fault::HiddenReasoning) {
            // Thought, counted in usage, never streamed (o1-style hidden reasoning);
            // its "written" is its due time, so the stream's end waits for nothing.
            self.truth.n_reasoning_tokens += 1;
            self.written.set(index, self.state.truth.us(due.due));
            if due.last {
                self.finish_normally();
            }
            return;
        }
        if self.plan.faults.has(Fault::Comments) && index == 0 {
            self.push_raw(self.plan.comment("OPENROUTER PROCESSING"));
        }
        if is_reasoning != self.group_is_reasoning {
            self.flush_group();
        }
        self.group_is_reasoning = is_reasoning;
        let text = if is_reasoning {
            self.truth.n_reasoning_tokens += 1;
            self.reasoning.token(index as u64)
        } else {
            self.answer.token(index as u64)
        };
        self.group.push(index);
        self.group_text.push_str(text);
        if index == 0 && self.plan.faults.has(Fault::HugeEvent) {
            let filler = "数据".repeat(HUGE_EVENT_BYTES / 6);
            self.group_text.push_str(&filler);
        }
        let group_size = if self.plan.faults.has(Fault::MultiToken) {
            TOKENS_PER_EVENT
        } else {
            1
        };
        if self.group.len() as u64 >= group_size || due.last {
            self.flush_group();
        }
        if self.plan.faults.has(Fault::Comments) && index % 5 == 4 {
            self.push_raw(self.plan.comment("keep-alive"));
        }
        if due.last {
            self.finish_normally();
        }
    }

    fn flush_group(&mut self) {
        if self.group.is_empty() {
            return;
        }
        let mut text = std::mem::take(&mut self.group_text);
        let tokens = std::mem::take(&mut self.group);
        let middle = (self.plan.n_tokens / 2) as usize;
        let bad_utf8 = self.plan.faults.has(Fault::BadUtf8) && tokens.contains(&middle);
        if bad_utf8 {
            text.push(INVALID_UTF8_MARK);
        }
        let (piece, n_before) = match (self.group_is_reasoning, self.plan.tool_call) {
            (true, _) => (Piece::Reasoning, self.n_reasoning_events),
            (false, false) => (Piece::Answer, self.n_answer_events),
            (false, true) if self.n_answer_events == 0 => (Piece::ToolName, 0),
            (false, true) => (Piece::ToolArguments, self.n_answer_events),
        };
        // Anthropic's blocks: the reasoning's first, then the answer's.
        let block = u32::from(!self.group_is_reasoning && self.plan.n_reasoning > 0);
        let event = self
            .plan
            .token_event(&text, piece, (n_before == 0).then_some(block));
        if self.group_is_reasoning {
            self.n_reasoning_events += 1;
        } else {
            self.n_answer_events += 1;
            if !self.plan.tool_call {
                // As a client decodes it: the invalid byte becomes U+FFFD.
                self.truth
                    .text
                    .push_str(&text.replace(INVALID_UTF8_MARK, "\u{FFFD}"));
            }
        }
        self.truth.n_token_events += 1;
        let mut bytes = event.into_bytes();
        if bad_utf8 {
            let mark = INVALID_UTF8_MARK
                .encode_utf8(&mut [0; 4])
                .as_bytes()
                .to_vec();
            if let Some(at) = bytes.windows(mark.len()).position(|w| w == mark) {
                bytes.splice(at..at + mark.len(), [0xFF]);
            }
        }
        self.push_bytes(bytes, tokens);
    }

    fn finish_normally(&mut self) {
        let n_generated = self.truth.tokens.len() as u64;
        let timings = self.plan.timings.then(|| self.timings(n_generated));
        let closing = self.plan.closing(
            n_generated,
            self.truth.prompt_tokens,
            self.truth.cached_tokens,
            timings,
        );
        for event in closing {
            self.push_raw(event);
        }
        if self.plan.faults.has(Fault::AfterDone) {
            let late = |delta| self.plan.chunk(delta, None).to_string();
            let more = [
                self.plan.comment("keep-alive"),
                self.plan.event(&json!({"id": self.plan.response_id, "choices": [], "usage": self.plan.usage(999, 999, 0)}).to_string()),
                self.plan.event(&late(json!({"content": "多余"}))),
                self.plan.event("[DONE]"),
                self.plan.event("{\"choices\":[{\"delta\":{\"content\":\"坏"),
                "\n\r\n".to_owned(),
            ]
            .concat();
            self.push_raw(more);
        }
        self.end(Outcome::Completed);
    }

    /// llama.cpp's `timings` of this request: prompt processing from admission to
    /// the first token, prediction from the first token to the last (as scheduled).
    fn timings(&self, n_generated: u64) -> serde_json::Value {
        let ms = |us: u64| us as f64 / 1e3;
        let first = self.truth.tokens.first().map_or(0, |t| t.due_us);
        let last = self.truth.tokens.last().map_or(first, |t| t.due_us);
        let admitted = self.truth.admitted_us.unwrap_or(first);
        json!({
            "prompt_n": self.truth.prompt_tokens - self.truth.cached_tokens,
            "cache_n": self.truth.cached_tokens,
            "prompt_ms": ms(first.saturating_sub(admitted)),
            "predicted_n": n_generated,
            "predicted_ms": ms(last.saturating_sub(first)),
        })
    }

    fn end(&mut self, outcome: Outcome) {
        self.ended = true;
        self.truth.outcome = outcome;
        // Dropping the receiver tells the engine to free the slot.
        self.rx = None;
    }

    fn commit(&mut self) {
        if !self.committed {
            self.committed = true;
            for (index, token) in self.truth.tokens.iter_mut().enumerate() {
                token.written_us = self.written.get(index);
            }
            self.truth.ended_us = self.state.truth.now_us();
            let placeholder = RequestTruth::accepted(0, String::new(), "", 0);
            self.state
                .truth
                .push(std::mem::replace(&mut self.truth, placeholder));
        }
    }

    /// The next piece of the body: `None` at the end.
    ///
    /// Events are handed to the connection once their step is *prepared*, shortly
    /// before it is due, and the connection's [`Gate`] writes them once it is
    /// released: at the step's end only the connections have work left to do.
    fn poll_next_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        loop {
            if let Some(gateway) = self.gateway.as_mut() {
                if let Poll::Ready(release) = gateway.poll_timer(cx) {
                    return self.leave(release);
                }
            }
            if let Some((step, frame)) = self.frames.front() {
                let step = *step;
                let released = self.state.engine.released();
                if let Frame::Abort = frame {
                    // Cut only after the step's end and once what came before is out.
                    ready!(released.poll_released(step, cx));
                    ready!(self
                        .gate
                        .poll_written(&self.written, self.truth.tokens.len(), cx));
                    self.frames.pop_front();
                    return Poll::Ready(Some(Err(io::Error::other("simulated cut"))));
                }
                if let Frame::Pause = frame {
                    // The piece before is written at the step's release; this one a
                    // moment after it.
                    ready!(released.poll_released(step, cx));
                    let pause = self
                        .pause
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(SPLIT_WRITE_PAUSE)));
                    ready!(pause.as_mut().poll(cx));
                    self.pause = None;
                    self.frames.pop_front();
                    continue;
                }
                ready!(released.poll_prepared(step, cx));
                let Some((_, Frame::Data(bytes, tokens))) = self.frames.pop_front() else {
                    unreachable!("the front frame is data");
                };
                if let Some(gateway) = self.gateway.as_mut() {
                    // Held back; out only when the gateway releases.
                    match gateway.take(step, &bytes, tokens) {
                        Some(release) => return self.leave(release),
                        None => continue,
                    }
                }
                self.gate.hold(step, &self.written, tokens);
                return Poll::Ready(Some(Ok(bytes)));
            }
            if self.ended {
                if let Some(release) = self.gateway.as_mut().and_then(Gateway::drain) {
                    return self.leave(release);
                }
                // The stream ends once its last events are written, so that the truth
                // it commits is whole.
                ready!(self
                    .gate
                    .poll_written(&self.written, self.truth.tokens.len(), cx));
                self.commit();
                if self.plan.faults.has(Fault::DoneHold) {
                    // `[DONE]` is out; the body stays open as a misbehaving proxy
                    // keeps it, until the hang time passes.
                    let hang = Duration::from_secs_f64(self.state.config.hang_s);
                    let hold = self
                        .hold
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(hang)));
                    ready!(hold.as_mut().poll(cx));
                }
                return Poll::Ready(None);
            }
            let next = match self.rx.as_mut() {
                Some(rx) => ready!(rx.poll_recv(cx)),
                None => None,
            };
            match next {
                Some(due) => self.on_token(due),
                // No tokens at all (the `empty` fault): a well-formed, empty answer.
                None => self.finish_normally(),
            }
        }
    }
}

impl Writer {
    /// A gateway's release, handed to the connection.
    fn leave(
        &mut self,
        (step, bytes, tokens): (u64, Bytes, Vec<usize>),
    ) -> Poll<Option<io::Result<Bytes>>> {
        self.gate.hold(step, &self.written, tokens);
        Poll::Ready(Some(Ok(bytes)))
    }
}

/// The streamed body itself: polled by hyper in place, so the writer's state is
/// never moved (a stream built with `unfold` moved it twice per event).
impl http_body::Body for Writer {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<http_body::Frame<Bytes>>>> {
        self.get_mut()
            .poll_next_frame(cx)
            .map(|frame| frame.map(|data| data.map(http_body::Frame::data)))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.committed {
            if !self.ended {
                self.truth.outcome = Outcome::Disconnected;
            }
            self.commit();
        }
    }
}

/// Splits a write's bytes in two: inside its first multi-byte character where it
/// has one, else in the middle (`data: [DONE]` becomes `data: [` and `DONE]`).
/// Returns `(piece, is_last)`.
fn split_once(bytes: &[u8]) -> Vec<(&[u8], bool)> {
    let cut = (1..bytes.len())
        .find(|&i| bytes[i] & 0b1100_0000 == 0b1000_0000)
        .unwrap_or(bytes.len() / 2);
    if cut == 0 {
        return vec![(bytes, true)];
    }
    vec![(&bytes[..cut], false), (&bytes[cut..], true)]
}

/// Splits an event's bytes into up to three pieces, each cut inside a multi-byte
/// character where there is one. Returns `(piece, is_last)`.
fn split_inside_chars(bytes: &[u8]) -> Vec<(&[u8], bool)> {
    let continuation: Vec<usize> = (1..bytes.len())
        .filter(|&i| bytes[i] & 0b1100_0000 == 0b1000_0000)
        .collect();
    let mut cuts: Vec<usize> = match continuation.len() {
        0 => vec![bytes.len() / 2],
        1 => vec![continuation[0]],
        n => vec![continuation[0], continuation[n - 1]],
    };
    cuts.retain(|&c| c > 0 && c < bytes.len());
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push((&bytes[start..cut], false));
        start = cut;
    }
    pieces.push((&bytes[start..], true));
    pieces
}

pub(super) fn stream_response(
    state: Arc<AppState>,
    gate: Arc<Gate>,
    plan: StreamPlan,
    mut truth: RequestTruth,
    rx: UnboundedReceiver<TokenDue>,
) -> Response {
    truth.headers_us = Some(state.truth.now_us());
    let seed = truth.id;
    let response_id = plan.response_id.clone();
    let mut writer = Writer {
        state,
        truth,
        step: 0,
        rx: Some(rx),
        answer: TokenText::answer(seed),
        reasoning: TokenText::reasoning(),
        frames: VecDeque::new(),
        group: Vec::new(),
        group_text: String::new(),
        group_is_reasoning: false,
        n_reasoning_events: 0,
        n_answer_events: 0,
        ended: false,
        committed: false,
        hold: None,
        pause: None,
        gateway: Gateway::of(&plan.faults),
        gate,
        written: Arc::new(WrittenSlots::new(plan.n_tokens as usize)),
        plan,
    };
    // What real servers open with: OpenAI's role-only chunk, Responses'
    // `response.created`, Anthropic's `message_start`; no token, and no reason for
    // TTFT.
    let (prompt_tokens, cached_tokens) = (writer.truth.prompt_tokens, writer.truth.cached_tokens);
    for event in writer.plan.opening(prompt_tokens, cached_tokens) {
        writer.push_raw(event);
    }
    writer.truth.tool_call = writer.plan.tool_call;
    let mut response = Response::builder();
    if writer.gateway.as_ref().is_some_and(Gateway::is_gzip) {
        response = response.header(header::CONTENT_ENCODING, "gzip");
    }
    response
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-request-id", response_id)
        .body(Body::new(writer))
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_land_inside_characters() {
        let text = "data: {\"content\":\"你好\"}\n\n";
        let pieces = split_inside_chars(text.as_bytes());
        assert_eq!(pieces.len(), 3);
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.0.iter().copied()).collect();
        assert_eq!(joined, text.as_bytes());
        assert!(
            std::str::from_utf8(pieces[0].0).is_err(),
            "the first cut is inside 你"
        );
        assert!(pieces[2].1 && !pieces[0].1);
        let ascii = split_inside_chars(b"data: x\n\n");
        assert_eq!(ascii.len(), 2);
    }
}
