//! The latency model: a continuous-batching inference engine, on its own thread.
//!
//! Like vLLM or SGLang, the engine runs in *steps*. At the start of a step it admits
//! waiting requests while fewer than `max_batch` sequences run (the rest wait in a
//! FIFO queue: that wait shows up in TTFT). A step decodes one token for every
//! running sequence and takes
//!
//! ```text
//! step = decode_base + decode_per_seq × (n_running − 1) + Σ prefill(admitted this step)
//! prefill(p) = prefill_base + prefill_per_token × p
//! ```
//!
//! scaled by a seeded jitter of ±`jitter`. So TPOT grows with the batch, prefill of
//! a newcomer stalls everyone's next token (as it does in real engines), and the
//! aggregate throughput `n / step` bends into a knee at `max_batch`.
//!
//! Token times come from this schedule, never from how fast a client reads: the
//! step clock advances by the computed durations.
//!
//! Timing is split between two places, because each is good at half of it:
//!
//! - the **engine thread** keeps the clock. It sleeps with the OS's precision
//!   (tokio's timer wheel ticks in milliseconds, which ITL would show) and never
//!   touches a client.
//! - the **dispatcher**, a task on the server's runtime, talks to the writers. Waking
//!   a task from outside the runtime costs 60–200 µs here (a parked worker must be
//!   woken) and grows with the number of tasks: a thousand streams woken from the
//!   engine thread saw their tokens a millisecond late before any write. Woken from
//!   inside, a task costs a queue push.
//!
//! At the start of a step the engine sends the dispatcher every running sequence's
//! token (its number and due instant), which the dispatcher forwards at once, so each
//! writer prepares its event's bytes during the step. [`HAND_OFF_LEAD`] before the
//! step's end the dispatcher *prepares* the step: writers hand their events to their
//! connections, which hold them (see `connection::Gate`). [`RELEASE_LEAD`] before
//! the end the engine wakes the dispatcher again; it keeps its worker awake
//! (yielding) until the due instant and then *releases* the step ([`Released`]):
//! every connection holding it writes, once. If the runtime falls behind, tokens
//! are written late and the truth record shows it.

use std::{
    collections::VecDeque,
    mem,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc, Arc, Mutex,
    },
    task::{Context, Poll, Waker},
    thread,
    time::{Duration, Instant},
};

use clap::Args;
use serde::Serialize;
use tokio::sync::mpsc::{self as tokio_mpsc, UnboundedSender};

/// The model's parameters, with defaults for a small model on one GPU.
#[derive(Clone, Copy, Debug, Args, Serialize)]
pub struct EngineParams {
    /// Sequences decoded at once; more wait in a queue. Four puts the knee of the
    /// page's default ladder (1, 2, 4, 6) inside it.
    #[arg(long, default_value_t = 4)]
    pub max_batch: usize,
    /// Decode step time with one sequence, ms.
    #[arg(long, default_value_t = 20.0)]
    pub decode_base_ms: f64,
    /// Extra decode step time per additional sequence in the batch, ms.
    #[arg(long, default_value_t = 2.5)]
    pub decode_per_seq_ms: f64,
    /// Fixed prefill time of a request, ms.
    #[arg(long, default_value_t = 25.0)]
    pub prefill_base_ms: f64,
    /// Prefill time per prompt token, ms.
    #[arg(long, default_value_t = 0.1)]
    pub prefill_per_token_ms: f64,
    /// Relative jitter of each step (0.05 = ±5%).
    #[arg(long, default_value_t = 0.05)]
    pub jitter: f64,
    /// Seed of the jitter, for reproducible schedules.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Tokens the KV cache holds (every running sequence's prompt and output so
    /// far), for `/metrics`' `kv_cache_usage_perc`. The model does not preempt.
    #[arg(long, default_value_t = 65_536)]
    pub kv_cache_tokens: u64,
}

/// What the engine is doing, as `/metrics` reports it: set by the engine thread at
/// every step, read by anyone.
#[derive(Debug, Default)]
pub struct Gauges {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    /// Tokens held in the KV cache by the running sequences.
    pub kv_tokens: AtomicU64,
    /// Tokens generated since the start (a counter).
    pub generation_tokens: AtomicU64,
}

impl EngineParams {
    /// Step time without jitter, µs.
    pub fn step_us(&self, n_running: usize, prompt_tokens_admitted: &[u64]) -> f64 {
        let decode =
            self.decode_base_ms + self.decode_per_seq_ms * n_running.saturating_sub(1) as f64;
        let prefill: f64 = prompt_tokens_admitted
            .iter()
            .map(|&p| self.prefill_base_ms + self.prefill_per_token_ms * p as f64)
            .sum();
        (decode + prefill) * 1e3
    }
}

/// One token, handed to the request's writer when it is due.
#[derive(Clone, Copy, Debug)]
pub struct TokenDue {
    /// 0-based index of the token in the request's output.
    pub index: u64,
    /// The engine step that produces it: write it once the step is released.
    pub step: u64,
    pub due: Instant,
    /// When the sequence joined the batch (the same for every token of a request).
    pub admitted: Instant,
    pub last: bool,
}

/// A request for the engine.
pub struct Job {
    pub prompt_tokens: u64,
    pub n_tokens: u64,
    pub tokens: UnboundedSender<TokenDue>,
}

/// A handle on the engine thread. Dropping every handle stops the thread.
#[derive(Clone)]
pub struct Engine {
    submit: mpsc::Sender<Vec<Job>>,
    released: Arc<Released>,
    gauges: Arc<Gauges>,
}

impl Engine {
    /// Starts the engine thread and its dispatcher, which is spawned on the current
    /// tokio runtime (the one serving the writers).
    pub fn start(params: EngineParams) -> Engine {
        let (submit, jobs) = mpsc::channel();
        let released = Arc::new(Released::default());
        let gauges = Arc::new(Gauges::default());
        let (to_dispatcher, from_engine) = tokio_mpsc::unbounded_channel();
        tokio::spawn(dispatch(from_engine, released.clone()));
        thread::Builder::new()
            .name("sim-engine".into())
            .spawn({
                let gauges = gauges.clone();
                move || run(params, jobs, to_dispatcher, &gauges)
            })
            .expect("the engine thread starts");
        Engine {
            submit,
            released,
            gauges,
        }
    }

    /// What the engine is doing now.
    pub fn gauges(&self) -> &Gauges {
        &self.gauges
    }

    /// The steps whose end has come: their tokens may be written.
    pub fn released(&self) -> &Arc<Released> {
        &self.released
    }

    /// Queues a request; its tokens arrive on `job.tokens` as they fall due.
    pub fn submit(&self, job: Job) {
        self.submit_all(vec![job]);
    }

    /// Queues several requests that arrive at the same instant (in this order).
    pub fn submit_all(&self, jobs: Vec<Job>) {
        // The engine only stops when every handle is gone, so this cannot fail while
        // `self` exists.
        let _ = self.submit.send(jobs);
    }
}

/// What the engine thread tells the dispatcher.
enum ToDispatcher {
    /// A step has started: hand each sequence its token.
    Tokens(Vec<(UnboundedSender<TokenDue>, TokenDue)>),
    /// The step's end is [`HAND_OFF_LEAD`] away: writers may hand its events over.
    Prepare { step: u64 },
    /// The step's end is [`RELEASE_LEAD`] away: release it at `due`.
    Release { step: u64, due: Instant },
}

/// The dispatcher: forwards tokens and releases steps from inside the runtime.
async fn dispatch(
    mut from_engine: tokio_mpsc::UnboundedReceiver<ToDispatcher>,
    released: Arc<Released>,
) {
    while let Some(message) = from_engine.recv().await {
        match message {
            ToDispatcher::Tokens(tokens) => {
                for (writer, token) in tokens {
                    // A closed channel is a client gone: the engine notices and frees
                    // the slot at its next step.
                    let _ = writer.send(token);
                }
            }
            ToDispatcher::Prepare { step } => released.prepare(step),
            ToDispatcher::Release { step, due } => {
                // Yield rather than sleep: a timer would wake a millisecond late, and
                // yielding keeps this worker awake and the writers' wake-ups local.
                while Instant::now() < due {
                    tokio::task::yield_now().await;
                }
                released.release(step);
                // Let the writers hand out this step before the next step's tokens
                // reach them: 1,000 sends would hold the rest up.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// How far the steps have come: the last step whose events may be handed to the
/// connections (*prepared*), the last whose end has come (*released*: its events
/// may be written), and the tasks waiting for either.
///
/// A watch channel did this before; this is the same idea without its per-waiter
/// bookkeeping, which cost ≈ 0.7 µs a waiter at the instant that matters most.
#[derive(Default)]
pub struct Released {
    prepared: AtomicU64,
    step: AtomicU64,
    waiting: Waiters,
}

impl Released {
    /// The last released step (0 before the first).
    pub fn step(&self) -> u64 {
        self.step.load(Ordering::Acquire)
    }

    /// The last prepared step (released steps are prepared too).
    pub fn prepared(&self) -> u64 {
        self.prepared.load(Ordering::Acquire)
    }

    /// Ready once `step` has been released; otherwise wakes the task at the next
    /// change (which may still be too early: poll again).
    pub fn poll_released(&self, step: u64, cx: &mut Context<'_>) -> Poll<()> {
        self.waiting.poll_until(|| self.step() >= step, cx)
    }

    /// Ready once `step` has been prepared.
    pub fn poll_prepared(&self, step: u64, cx: &mut Context<'_>) -> Poll<()> {
        self.waiting.poll_until(|| self.prepared() >= step, cx)
    }

    /// Waits until `step` has been released.
    pub async fn wait_for(&self, step: u64) {
        std::future::poll_fn(|cx| self.poll_released(step, cx)).await;
    }

    fn prepare(&self, step: u64) {
        self.prepared.fetch_max(step, Ordering::AcqRel);
        self.waiting.wake_all();
    }

    fn release(&self, step: u64) {
        self.prepared.fetch_max(step, Ordering::AcqRel);
        self.step.store(step, Ordering::Release);
        self.waiting.wake_all();
    }
}

/// Tasks waiting for a condition that another task makes true, then wakes them all.
#[derive(Default)]
pub struct Waiters(Mutex<Vec<Waker>>);

impl Waiters {
    /// Ready once `reached` holds; otherwise registers the task for the next
    /// [`wake_all`](Self::wake_all) (which may still be too early: poll again).
    pub fn poll_until(&self, reached: impl Fn() -> bool, cx: &mut Context<'_>) -> Poll<()> {
        if reached() {
            return Poll::Ready(());
        }
        let mut waiting = self.0.lock().expect("waiters lock");
        // Checked again under the lock: a change in between has already taken the list.
        if reached() {
            return Poll::Ready(());
        }
        waiting.push(cx.waker().clone());
        Poll::Pending
    }

    /// Wakes every waiting task; call after making a condition true.
    pub fn wake_all(&self) {
        let waiting = mem::take(&mut *self.0.lock().expect("waiters lock"));
        for waker in waiting {
            waker.wake();
        }
    }
}

struct Running {
    job: Job,
    admitted: Instant,
    emitted: u64,
}

// Long: the simulated engine's step loop: admit, prefill, decode, evict.
fn run(
    params: EngineParams,
    jobs: mpsc::Receiver<Vec<Job>>,
    dispatcher: UnboundedSender<ToDispatcher>,
    gauges: &Gauges,
) {
    let mut step = 0u64;
    let mut rng = SplitMix64(params.seed);
    let mut waiting: VecDeque<Job> = VecDeque::new();
    let mut running: Vec<Running> = Vec::new();
    let mut clock = Instant::now();
    let mut admitted_prompts = Vec::new();
    loop {
        if waiting.is_empty() && running.is_empty() {
            gauges.running.store(0, Ordering::Relaxed);
            gauges.waiting.store(0, Ordering::Relaxed);
            gauges.kv_tokens.store(0, Ordering::Relaxed);
            match jobs.recv() {
                Ok(batch) => waiting.extend(batch),
                Err(_) => return,
            }
            // Idle until now: the next step starts when the request arrived.
            clock = clock.max(Instant::now());
        }
        while let Ok(batch) = jobs.try_recv() {
            waiting.extend(batch);
        }
        admitted_prompts.clear();
        while running.len() < params.max_batch.max(1) {
            let Some(job) = waiting.pop_front() else {
                break;
            };
            if job.n_tokens == 0 || job.tokens.is_closed() {
                continue;
            }
            admitted_prompts.push(job.prompt_tokens);
            running.push(Running {
                job,
                admitted: clock,
                emitted: 0,
            });
        }
        gauges
            .running
            .store(running.len() as u64, Ordering::Relaxed);
        gauges
            .waiting
            .store(waiting.len() as u64, Ordering::Relaxed);
        let kv_tokens: u64 = running
            .iter()
            .map(|seq| seq.job.prompt_tokens + seq.emitted)
            .sum();
        gauges.kv_tokens.store(kv_tokens, Ordering::Relaxed);
        if running.is_empty() {
            continue;
        }
        gauges
            .generation_tokens
            .fetch_add(running.len() as u64, Ordering::Relaxed);
        let jitter = 1.0 + params.jitter * (2.0 * rng.next_f64() - 1.0);
        let step_us = (params.step_us(running.len(), &admitted_prompts) * jitter).max(1.0);
        let step_end = clock + Duration::from_nanos((step_us * 1e3) as u64);
        step += 1;
        let mut tokens = Vec::with_capacity(running.len());
        running.retain_mut(|seq| {
            // A closed channel means the client went away: free its slot, as vLLM
            // aborts a request whose connection closed.
            if seq.job.tokens.is_closed() {
                return false;
            }
            let index = seq.emitted;
            seq.emitted += 1;
            let last = seq.emitted >= seq.job.n_tokens;
            tokens.push((
                seq.job.tokens.clone(),
                TokenDue {
                    index,
                    step,
                    due: step_end,
                    admitted: seq.admitted,
                    last,
                },
            ));
            !last
        });
        let release = ToDispatcher::Release {
            step,
            due: step_end,
        };
        if dispatcher.send(ToDispatcher::Tokens(tokens)).is_err() {
            return; // The runtime is gone.
        }
        sleep_until(step_end.checked_sub(HAND_OFF_LEAD).unwrap_or(step_end));
        if dispatcher.send(ToDispatcher::Prepare { step }).is_err() {
            return;
        }
        sleep_until(step_end.checked_sub(RELEASE_LEAD).unwrap_or(step_end));
        if dispatcher.send(release).is_err() {
            return;
        }
        clock = step_end;
    }
}

/// How long before a step's end its writers hand their events to their connections,
/// which hold them until the step is released (see `connection::Gate`). It covers
/// a thousand hand-offs on two busy cores (≈ 2 µs each); a connection holding a step
/// writes nothing else meanwhile, so a new response's headers can wait this long.
pub const HAND_OFF_LEAD: Duration = Duration::from_millis(6);

/// How long before a step's end the engine wakes the dispatcher, which then waits
/// for the exact instant on its own. It covers the wake-up of a parked runtime
/// worker (p99 ≈ 200 µs measured here) and the engine thread's own late wake-up.
pub const RELEASE_LEAD: Duration = Duration::from_micros(1000);

/// Sleeps until `deadline` with the OS's precision (tens of µs on Linux).
fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        thread::sleep(deadline - now);
    }
}

/// A tiny, seeded PRNG (SplitMix64): reproducible jitter without a dependency.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> EngineParams {
        EngineParams {
            max_batch: 2,
            decode_base_ms: 4.0,
            decode_per_seq_ms: 1.0,
            prefill_base_ms: 2.0,
            prefill_per_token_ms: 0.0,
            jitter: 0.0,
            seed: 1,
            kv_cache_tokens: 1_000,
        }
    }

    #[test]
    fn step_time_grows_with_batch_and_prefill() {
        let p = params();
        assert_eq!(p.step_us(1, &[]), 4_000.0);
        assert_eq!(p.step_us(2, &[]), 5_000.0);
        assert_eq!(p.step_us(2, &[10, 10]), 9_000.0);
    }

    #[tokio::test]
    async fn a_third_request_waits_for_a_slot() {
        let engine = Engine::start(params());
        let mut receivers = Vec::new();
        let mut jobs = Vec::new();
        for n_tokens in [3, 3, 2] {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            jobs.push(Job {
                prompt_tokens: 0,
                n_tokens,
                tokens: tx,
            });
            receivers.push(rx);
        }
        engine.submit_all(jobs);
        let mut dues = Vec::new();
        for rx in &mut receivers {
            let mut times = Vec::new();
            while let Some(t) = rx.recv().await {
                times.push(t);
                if t.last {
                    break;
                }
            }
            dues.push(times);
        }
        assert_eq!(dues.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 2]);
        let start = dues[0][0].admitted;
        let at = |r: usize, i: usize| (dues[r][i].due - start).as_micros() as i64;
        // Steps: 1) A, B admitted: 5 ms + 2×2 ms prefill = 9 ms; 2) 5 ms; 3) 5 ms.
        assert_eq!(at(0, 0), 9_000);
        assert_eq!(at(1, 0), 9_000);
        assert_eq!(at(0, 2), 19_000);
        // C joins after A and B finish: 4 ms + 2 ms prefill = 6 ms, then 4 ms.
        assert_eq!(at(2, 0), 25_000);
        assert_eq!(at(2, 1), 29_000);
        assert_eq!((dues[2][0].admitted - start).as_micros(), 19_000);
    }

    #[tokio::test]
    async fn writers_wait_for_their_step_and_wake_on_release() {
        let released = Arc::new(Released::default());
        let waiter = {
            let released = released.clone();
            tokio::spawn(async move { released.wait_for(2).await })
        };
        tokio::task::yield_now().await;
        released.release(1);
        tokio::task::yield_now().await;
        assert!(
            !waiter.is_finished(),
            "step 1 does not release step 2's tokens"
        );
        released.release(2);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("releasing step 2 wakes its waiter")
            .expect("the waiter ends");
        // Past steps are ready at once, without registering.
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(released.poll_released(1, &mut cx).is_ready());
        assert!(released.waiting.0.lock().unwrap().is_empty());
    }

    #[test]
    fn splitmix_is_reproducible_and_in_range() {
        let mut a = SplitMix64(7);
        let mut b = SplitMix64(7);
        for _ in 0..1000 {
            let x = a.next_f64();
            assert_eq!(x, b.next_f64());
            assert!((0.0..1.0).contains(&x));
        }
    }
}
