//! One task per connection: the connection and all its HTTP/2 streams are polled
//! together, so a step's tokens leave in one write per connection.
//!
//! hyper runs each HTTP/2 stream as a future handed to its executor. With tokio's
//! executor every stream is a task, and the end of an engine step went badly at scale:
//! releasing a thousand streams woke a thousand tasks through the scheduler, and each
//! hand-off woke the connection's task, which tokio runs next (its LIFO slot), so a
//! connection carrying 100 streams made a `write` per stream or two. On loopback a
//! write also pays for the receiver's side (10–25 µs here), and the 1,000th token of a
//! step left 10 ms after the first.
//!
//! [`drive`] runs the connection's future and every stream future it spawns in one
//! [`FuturesUnordered`], which polls woken futures in the order they were woken.
//! Releasing a step wakes the streams (a queue push each, and one task wake per
//! connection); the first hand-off wakes the connection, which is queued behind the
//! other streams of the step, and by the time it runs every frame is ready: one
//! write carries them all.

use std::future::Future;

use futures_util::{future::BoxFuture, stream::FuturesUnordered, StreamExt};
use tokio::sync::mpsc;

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
