//! Sends taken one per task. A level's start (or a wave of requests ending
//! together) has hundreds of lanes ready to send at once, and a `fetch` call costs
//! the engine about half a millisecond. Each lane sleeping for zero milliseconds
//! is not enough: their timers are all posted at the same moment and run back to
//! back, so the chunks of the streams already flowing wait behind every one of
//! those calls (measured at 256 streams: stretches of 100+ ms of `fetch` with no
//! idle moment, and a chunk's stamp late by as much). The [`Pacer`] lets one lane
//! through per task and queues the next task only then, so whatever arrived
//! meanwhile (a chunk to stamp) runs ahead of the next send.
//!
//! The tasks are messages to itself on a `MessageChannel`, not timers: a timer
//! set from a timer's task nests, and browsers hold the sixth nested one and
//! every later one to 4 ms (measured in this Chromium: 0.0–0.1 ms, then 4.1–4.6
//! ms), which would spread 256 sends over a second. A message has no such floor.

use std::{
    cell::{Cell, RefCell},
    collections::VecDeque,
    rc::Rc,
    time::Duration,
};

use futures_channel::oneshot;
use wasm_bindgen::{closure::Closure, JsValue};
use web_sys::{MessageChannel, MessageEvent, MessagePort};

/// The lanes waiting to send, and whether a task to let one through is queued.
#[derive(Default)]
struct Queue {
    waiting: RefCell<VecDeque<oneshot::Sender<()>>>,
    pumping: Cell<bool>,
}

impl Queue {
    /// Lets the first waiting lane through; `false` when none waits.
    fn let_one_through(&self) -> bool {
        let next = self.waiting.borrow_mut().pop_front();
        match next {
            // The woken lane runs right after this task's own code (futures wake
            // as microtasks): its send is this task's work.
            Some(tx) => {
                let _ = tx.send(());
                true
            }
            None => {
                self.pumping.set(false);
                false
            }
        }
    }
}

/// One message port that its own handler answers: each message is a task.
struct Channel {
    port: MessagePort,
    receiver: MessagePort,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl Drop for Channel {
    /// A message still on its way when the run ends (the last lane let through
    /// queues one more) finds no handler, rather than a dropped closure.
    fn drop(&mut self) {
        self.receiver.set_onmessage(None);
        self.receiver.close();
        self.port.close();
    }
}

/// Sends let through one per task (see the module docs).
pub struct Pacer {
    queue: Rc<Queue>,
    /// `None` where no `MessageChannel` can be made: timers instead.
    channel: Option<Channel>,
}

impl Default for Pacer {
    fn default() -> Pacer {
        let queue = Rc::new(Queue::default());
        Pacer {
            channel: channel(&queue),
            queue,
        }
    }
}

/// A channel whose every message lets one lane through and, while lanes wait,
/// posts the next.
fn channel(queue: &Rc<Queue>) -> Option<Channel> {
    let pair = MessageChannel::new().ok()?;
    let (receiver, port) = (pair.port1(), pair.port2());
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let queue = Rc::clone(queue);
        let port = port.clone();
        move |_: MessageEvent| {
            if queue.let_one_through() {
                let _ = port.post_message(&JsValue::UNDEFINED);
            }
        }
    });
    receiver.set_onmessage(Some(wasm_bindgen::JsCast::unchecked_ref(
        on_message.as_ref(),
    )));
    Some(Channel {
        port,
        receiver,
        _on_message: on_message,
    })
}

impl Pacer {
    /// Resolves when it is this caller's turn: one caller per task of the event
    /// loop, in the order they asked.
    pub async fn turn(&self) {
        let (tx, rx) = oneshot::channel();
        self.queue.waiting.borrow_mut().push_back(tx);
        if !self.queue.pumping.replace(true) {
            match &self.channel {
                Some(channel) if channel.port.post_message(&JsValue::UNDEFINED).is_ok() => {}
                _ => wasm_bindgen_futures::spawn_local(pump_by_timer(Rc::clone(&self.queue))),
            }
        }
        // A dropped sender (the pacer gone with its run) lets the caller go on.
        let _ = rx.await;
    }
}

/// Without a channel: one waiting lane let through per timer task.
async fn pump_by_timer(queue: Rc<Queue>) {
    loop {
        gloo_timers::future::sleep(Duration::ZERO).await;
        if !queue.let_one_through() {
            return;
        }
    }
}
