//! [`IrqCell`]: a value shared by `main` and an interrupt handler.

use core::cell::{Cell, UnsafeCell};

/// A value that `main` hands to an interrupt handler (or takes back), each
/// access made with interrupts masked, so on these single-core machines no
/// two accesses overlap. The firmware's stand-in for a HAL's
/// `Mutex<RefCell<Option<T>>>`.
pub struct IrqCell<T> {
    value: UnsafeCell<Option<T>>,
    /// Set while a closure of [`with`](Self::with) runs: a nested access
    /// (from that closure) finds the cell busy instead of aliasing it.
    busy: Cell<bool>,
}

// SAFETY: every access to `value` and `busy` happens inside `masked`, with
// interrupts off on a single core, so accesses never overlap; a nested access
// from inside `with` sees `busy` and touches nothing. `T: Send` because the
// value moves between `main` and a handler.
unsafe impl<T: Send> Sync for IrqCell<T> {}

impl<T> IrqCell<T> {
    /// An empty cell.
    pub const fn new() -> Self {
        Self {
            value: UnsafeCell::new(None),
            busy: Cell::new(false),
        }
    }

    /// Stores `value`, handing back the one it held.
    pub fn put(&self, value: T) -> Option<T> {
        self.with_slot(|slot| slot.replace(value)).flatten()
    }

    /// Takes the value out.
    pub fn take(&self) -> Option<T> {
        self.with_slot(Option::take).flatten()
    }

    /// Runs `f` on the value, if the cell holds one and is not busy.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.with_slot(|slot| slot.as_mut().map(f)).flatten()
    }

    fn with_slot<R>(&self, f: impl FnOnce(&mut Option<T>) -> R) -> Option<R> {
        crate::irq::masked(|| {
            if self.busy.replace(true) {
                return None;
            }
            // SAFETY: interrupts are masked and `busy` was clear, so this is
            // the only reference to the value until `busy` is cleared below.
            let r = f(unsafe { &mut *self.value.get() });
            self.busy.set(false);
            Some(r)
        })
    }
}

impl<T> Default for IrqCell<T> {
    fn default() -> Self {
        Self::new()
    }
}
