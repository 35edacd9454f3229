//! Cancelling a run: one flag, and every in-flight request's `AbortController`, so
//! that Cancel stops them all at once.

use std::{cell::RefCell, collections::HashMap, rc::Rc};

use futures_channel::oneshot;
use web_sys::AbortController;

#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Rc<RefCell<Inner>>,
}

#[derive(Default)]
struct Inner {
    cancelled: bool,
    next_id: u64,
    in_flight: HashMap<u64, AbortController>,
    /// Who waits for Cancel (a scheduler between arrivals).
    waiting: Vec<oneshot::Sender<()>>,
}

impl CancelToken {
    pub fn is_cancelled(&self) -> bool {
        self.inner.borrow().cancelled
    }

    /// Sets the flag and aborts every registered request.
    pub fn cancel(&self) {
        let (controllers, waiting): (Vec<AbortController>, Vec<_>) = {
            let mut inner = self.inner.borrow_mut();
            inner.cancelled = true;
            (
                inner.in_flight.drain().map(|(_, c)| c).collect(),
                inner.waiting.drain(..).collect(),
            )
        };
        for controller in controllers {
            controller.abort();
        }
        for waiter in waiting {
            let _ = waiter.send(());
        }
    }

    /// Resolves once the run is cancelled (at once if it already is), so that a
    /// wait for the next arrival never outlasts Cancel.
    pub async fn cancelled(&self) {
        let receiver = {
            let mut inner = self.inner.borrow_mut();
            if inner.cancelled {
                return;
            }
            let (sender, receiver) = oneshot::channel();
            inner.waiting.push(sender);
            receiver
        };
        let _ = receiver.await;
    }

    /// Registers a request until the returned guard is dropped.
    pub fn register(&self, controller: AbortController) -> Registration {
        let mut inner = self.inner.borrow_mut();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.in_flight.insert(id, controller);
        Registration {
            token: self.clone(),
            id,
        }
    }

    pub fn n_in_flight(&self) -> usize {
        self.inner.borrow().in_flight.len()
    }
}

pub struct Registration {
    token: CancelToken,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.token.inner.borrow_mut().in_flight.remove(&self.id);
    }
}
