//! Which way the two sides of a connection sleep and wake, recorded in the
//! region so that both agree.

use core::fmt;

/// How a side sleeps and is woken; both sides of a connection must use the
/// same. [`Uring::init`](super::Uring::init) records the kind of its
/// [`Config`](super::Config) in the region, and
/// [`Uring::attach_with`](super::Uring::attach_with) refuses another.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{NotifierKind, Spin, Notifier};
///
/// // A notifier that waits on the flag's word (a futex, or a spin).
/// assert_eq!(Spin.kind(), NotifierKind::Word);
/// assert_eq!(NotifierKind::from_word(1), Some(NotifierKind::EventFd));
/// assert_eq!(NotifierKind::from_word(9), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum NotifierKind {
    /// The waiter sleeps on the "needs wakeup" word itself, and the waker
    /// wakes that word (a futex, an RTOS event keyed by address, or a spin
    /// that looks at it).
    #[default]
    Word = 0,
    /// The waiter sleeps on an eventfd of its own, which the waker writes
    /// (`EventFd`, Linux, feature `std`).
    EventFd = 1,
}

impl NotifierKind {
    /// The kind a region's word records; `None` for a value no kind has.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::NotifierKind;
    ///
    /// assert_eq!(NotifierKind::from_word(NotifierKind::Word as u32), Some(NotifierKind::Word));
    /// ```
    pub const fn from_word(word: u32) -> Option<Self> {
        match word {
            0 => Some(Self::Word),
            1 => Some(Self::EventFd),
            _ => None,
        }
    }
}

impl fmt::Display for NotifierKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Word => "a wait on the wake word",
            Self::EventFd => "eventfds",
        })
    }
}
