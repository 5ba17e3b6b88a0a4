//! [`join3`]: three futures polled side by side, with no panic path (a
//! join that panics when polled after completion would keep the scenarios
//! from linking with the panic-never handler).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

/// Polls `a`, `b` and `c` until all three are ready; resolves to their
/// outputs. Polled again after that, it stays pending.
pub fn join3<A, B, C>(a: A, b: B, c: C) -> Join3<A, B, C>
where
    A: Future + Unpin,
    B: Future + Unpin,
    C: Future + Unpin,
{
    Join3 {
        a: Leg::Running(a),
        b: Leg::Running(b),
        c: Leg::Running(c),
    }
}

/// The future of [`join3`].
pub struct Join3<A: Future, B: Future, C: Future> {
    a: Leg<A>,
    b: Leg<B>,
    c: Leg<C>,
}

// The legs are polled through `Pin::new` (they are `Unpin`); their outputs
// are never pinned.
impl<A: Future + Unpin, B: Future + Unpin, C: Future + Unpin> Unpin for Join3<A, B, C> {}

enum Leg<F: Future> {
    Running(F),
    Done(F::Output),
    Taken,
}

impl<F: Future + Unpin> Leg<F> {
    /// Polls a running leg; whether it is no longer running.
    fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        if let Leg::Running(future) = self
            && let Poll::Ready(output) = Pin::new(future).poll(cx)
        {
            *self = Leg::Done(output);
        }
        !matches!(self, Leg::Running(_))
    }

    fn take(&mut self) -> Option<F::Output> {
        match core::mem::replace(self, Leg::Taken) {
            Leg::Done(output) => Some(output),
            _ => None,
        }
    }
}

impl<A: Future + Unpin, B: Future + Unpin, C: Future + Unpin> Future for Join3<A, B, C> {
    type Output = (A::Output, B::Output, C::Output);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // `&`, not `&&`: every leg is polled on every poll.
        if !(this.a.poll(cx) & this.b.poll(cx) & this.c.poll(cx)) {
            return Poll::Pending;
        }
        match (this.a.take(), this.b.take(), this.c.take()) {
            (Some(a), Some(b), Some(c)) => Poll::Ready((a, b, c)),
            _ => Poll::Pending,
        }
    }
}
