//! Sends taken one per task. A level's start (or a wave of requests ending
//! together) has hundreds of lanes ready to send at once, and a `fetch` call costs
//! the engine about half a millisecond. Each lane sleeping for zero milliseconds
//! is not enough: their timers are all posted at the same moment and run back to
//! back, so the chunks of the streams already flowing wait behind every one of
//! those calls (measured at 256 streams: stretches of 100+ ms of `fetch` with no
//! idle moment, and a chunk's stamp late by as much). The [`Pacer`] lets one lane
//! through per timer task and posts the next timer only then, so whatever arrived
//! meanwhile (a chunk to stamp) is queued ahead of the next send.

use std::{
    cell::{Cell, RefCell},
    collections::VecDeque,
    rc::Rc,
    time::Duration,
};

use futures_channel::oneshot;

/// The queue of lanes waiting to send (see the module docs).
#[derive(Default)]
pub struct Pacer {
    waiting: RefCell<VecDeque<oneshot::Sender<()>>>,
    pumping: Cell<bool>,
}

impl Pacer {
    /// Resolves when it is this caller's turn: one caller per task of the event
    /// loop, in the order they asked.
    pub async fn turn(self: &Rc<Self>) {
        let (tx, rx) = oneshot::channel();
        self.waiting.borrow_mut().push_back(tx);
        if !self.pumping.replace(true) {
            wasm_bindgen_futures::spawn_local(Rc::clone(self).pump());
        }
        // A dropped sender (the pacer gone with its run) lets the caller go on.
        let _ = rx.await;
    }

    /// One waiting caller let through per timer task, until none waits.
    async fn pump(self: Rc<Self>) {
        loop {
            gloo_timers::future::sleep(Duration::ZERO).await;
            let next = self.waiting.borrow_mut().pop_front();
            match next {
                // The woken lane runs right after this task's own code (futures
                // wake as microtasks): its send is this task's work.
                Some(tx) => {
                    let _ = tx.send(());
                }
                None => {
                    self.pumping.set(false);
                    return;
                }
            }
        }
    }
}
