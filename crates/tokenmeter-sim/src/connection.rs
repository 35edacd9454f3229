//! A connection's side of the schedule: one task per connection, and a gate that
//! holds a step's events until the step's end, so that at that instant a connection
//! has one write to make.
//!
//! Two costs made the simulator late at scale, each measured on these machines:
//!
//! - hyper runs each HTTP/2 stream as a future handed to its executor. With tokio's
//!   executor every stream is a task; each hand-off woke the connection's task, which
//!   tokio runs next (its LIFO slot), so a connection carrying 100 streams wrote once
//!   or twice per stream. [`drive`] polls the connection and all its streams in one
//!   [`FuturesUnordered`] (in the order they were woken) instead.
//! - handing a thousand events to hyper takes a couple of milliseconds on two cores,
//!   and the 1,000th token of a step left that much after the first. [`Gate`] and
//!   [`GatedIo`] let writers hand events over shortly *before* the step's end; the
//!   connection encodes them into a buffer and writes it when the step is released.
//!
//! With the in-runtime release (`engine`), this took 1,000 streams over ten
//! connections from p50 6.1 ms / p99 16 ms late to 0.36 / 2.3 ms, and over one
//! connection, as a browser opens, to p99 0.2 ms (`cargo xtask bench sim`).

use std::{
    collections::VecDeque,
    future::Future,
    io,
    pin::Pin,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    task::{ready, Context, Poll},
};

use futures_util::{future::BoxFuture, stream::FuturesUnordered, StreamExt};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::mpsc,
};

use crate::{
    engine::{Released, Waiters},
    truth::TruthStore,
};

/// The executor given to hyper for one connection: streams it spawns join the
/// connection's task.
#[derive(Clone)]
pub struct StreamExecutor {
    streams: mpsc::UnboundedSender<BoxFuture<'static, ()>>,
}

impl<F> hyper::rt::Executor<F> for StreamExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        // Fails only once `drive` has returned, when no connection is left to spawn.
        let _ = self.streams.send(Box::pin(stream));
    }
}

/// Runs the connection that `serve` builds (with the executor it is given) and the
/// streams it spawns, until all of them have ended.
pub async fn drive<S, F>(serve: S)
where
    S: FnOnce(StreamExecutor) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let (streams, mut spawned) = mpsc::unbounded_channel();
    let mut running: FuturesUnordered<BoxFuture<'static, ()>> = FuturesUnordered::new();
    running.push(Box::pin(serve(StreamExecutor { streams })));
    loop {
        tokio::select! {
            Some(stream) = spawned.recv() => running.push(stream),
            Some(()) = running.next(), if !running.is_empty() => {}
            // The connection is gone (and with it every sender) and no stream runs.
            else => break,
        }
    }
}

/// Written times of one request's tokens, filled in by its connection.
pub struct WrittenSlots(Box<[AtomicU64]>);

impl WrittenSlots {
    const NOT_WRITTEN: u64 = u64::MAX;

    pub fn new(n_tokens: usize) -> WrittenSlots {
        WrittenSlots(
            (0..n_tokens)
                .map(|_| AtomicU64::new(Self::NOT_WRITTEN))
                .collect(),
        )
    }

    /// When token `index` was written, µs since the simulator started.
    pub fn get(&self, index: usize) -> Option<u64> {
        let us = self.0.get(index)?.load(Ordering::Acquire);
        (us != Self::NOT_WRITTEN).then_some(us)
    }

    pub(crate) fn set(&self, index: usize, us: u64) {
        if let Some(slot) = self.0.get(index) {
            slot.store(us, Ordering::Release);
        }
    }
}

/// Events handed over ahead of their step, waiting for the connection to write them.
struct Stamp {
    slots: Arc<WrittenSlots>,
    tokens: Vec<usize>,
}

/// What a connection's writers and its socket share: events may be handed to the
/// connection before their step's end, and the gate holds every write until the
/// step is released.
///
/// Handing a thousand events to hyper takes milliseconds on two cores; writing them
/// takes a few writes per connection. So writers hand over [`HAND_OFF_LEAD`] before
/// the step's end, and at the step's end only the connections have work to do.
/// While a connection holds a step nothing else is written on it either (a new
/// response's headers wait with it); the gate never holds a step already released.
///
/// "Written" is when the socket write that carried the event started (the one that
/// emptied the buffer holding it, if the socket took it in pieces). An HTTP/2 stream
/// out of flow-control window is the exception: its events stay queued in h2 and
/// leave later than recorded (the simulator grants a 1 MB window).
///
/// [`HAND_OFF_LEAD`]: crate::engine::HAND_OFF_LEAD
pub struct Gate {
    released: Arc<Released>,
    truth: Arc<TruthStore>,
    /// The last step handed over: nothing is written before it is released.
    held: AtomicU64,
    /// Stamps in the order their events were handed over, with the number of stamps
    /// ever pushed before them.
    stamps: Mutex<(u64, VecDeque<Stamp>)>,
    /// Writers waiting for their stamps (at the end of a stream, or before a cut).
    waiting: Waiters,
}

impl Gate {
    pub fn new(released: Arc<Released>, truth: Arc<TruthStore>) -> Arc<Gate> {
        Arc::new(Gate {
            released,
            truth,
            held: AtomicU64::new(0),
            stamps: Mutex::new((0, VecDeque::new())),
            waiting: Waiters::default(),
        })
    }

    /// Records events of `step` handed to the connection; `tokens` (indices into
    /// `slots`) get their written time when the connection writes them.
    pub fn hold(&self, step: u64, slots: &Arc<WrittenSlots>, tokens: Vec<usize>) {
        self.held.fetch_max(step, Ordering::AcqRel);
        if !tokens.is_empty() {
            let mut stamps = self.stamps.lock().expect("gate lock");
            stamps.1.push_back(Stamp {
                slots: slots.clone(),
                tokens,
            });
        }
    }

    /// Ready once the first `n_tokens` tokens of `slots` have been written.
    pub fn poll_written(
        &self,
        slots: &WrittenSlots,
        n_tokens: usize,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        self.waiting
            .poll_until(|| (0..n_tokens).all(|i| slots.get(i).is_some()), cx)
    }

    /// The number of stamps pushed so far: a write starting now carries their events.
    fn pushed(&self) -> u64 {
        let stamps = self.stamps.lock().expect("gate lock");
        stamps.0 + stamps.1.len() as u64
    }

    /// The socket took the events of the first `carried` stamps, in a write that
    /// started at `now_us`.
    fn written(&self, carried: u64, now_us: u64) {
        let mut resolved = false;
        {
            let mut stamps = self.stamps.lock().expect("gate lock");
            while stamps.0 < carried {
                let Some(stamp) = stamps.1.pop_front() else {
                    break;
                };
                stamps.0 += 1;
                for &index in &stamp.tokens {
                    stamp.slots.set(index, now_us);
                }
                resolved = true;
            }
        }
        if resolved {
            self.waiting.wake_all();
        }
    }
}

/// The connection's socket behind its [`Gate`].
///
/// Writes go to a buffer, always accepted, so hyper encodes every event as soon as
/// it is handed over, ahead of the step's end. A flush writes the buffer to the
/// socket once the held step is released: at the step's end, one `write` per
/// connection carries all its events.
pub struct GatedIo<T> {
    inner: T,
    gate: Arc<Gate>,
    buffer: Vec<u8>,
    /// How much of `buffer` the socket has taken.
    written: usize,
    /// Stamps pushed before the last write into `buffer`: their events are in it.
    carried: u64,
}

/// Beyond this much buffered, a write waits for the socket (a client that does not
/// read makes the connection wait, not the buffer grow).
const MAX_BUFFERED: usize = 1 << 20;

impl<T> GatedIo<T> {
    pub fn new(inner: T, gate: Arc<Gate>) -> GatedIo<T> {
        GatedIo {
            inner,
            gate,
            buffer: Vec::with_capacity(16 * 1024),
            written: 0,
            carried: 0,
        }
    }
}

impl<T: AsyncWrite + Unpin> GatedIo<T> {
    /// Writes the buffer to the socket once the held step is released; then the
    /// events it carries are written, and their tokens get the time.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.buffer.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let held = self.gate.held.load(Ordering::Acquire);
        ready!(self.gate.released.poll_released(held, cx));
        // The time a write starts: on loopback the call itself delivers the bytes and
        // may let the reader run before it returns.
        let mut write_started_us = self.gate.truth.now_us();
        while self.written < self.buffer.len() {
            write_started_us = self.gate.truth.now_us();
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buffer[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.buffer.clear();
        self.written = 0;
        self.gate.written(self.carried, write_started_us);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GatedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GatedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.buffer.len() >= MAX_BUFFERED {
            ready!(self.poll_drain(cx))?;
        }
        self.buffer.extend_from_slice(data);
        // The connection's writers run in this task, never during its poll: every
        // stamp pushed so far belongs to an event hyper has encoded by now.
        self.carried = self.gate.pushed();
        Poll::Ready(Ok(data.len()))
    }

    /// No: with vectored writes h2 hands over every DATA frame over 256 bytes (every
    /// event, here) in a write of its own; without, it copies them into its buffer.
    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    };

    use hyper::rt::Executor;

    use super::*;

    #[tokio::test]
    async fn streams_spawned_by_the_connection_run_to_the_end() {
        let done = Arc::new(AtomicUsize::new(0));
        let counter = done.clone();
        drive(move |executor| async move {
            for _ in 0..3 {
                let counter = counter.clone();
                executor.execute(async move {
                    // Outlives the connection's own future.
                    tokio::task::yield_now().await;
                    counter.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
        .await;
        assert_eq!(done.load(Ordering::SeqCst), 3);
    }
}
