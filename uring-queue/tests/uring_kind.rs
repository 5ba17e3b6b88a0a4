//! The notifier kind a region records: laid out by `init`, checked by
//! `attach_with`, refused with a typed error, whatever the word says.

use uring_queue::Region;
use uring_queue::uring::{Config, Error, Notifier, NotifierKind, Spin, Uring, WakeFlag};

#[repr(C, align(128))]
struct Mem([u8; 8192]);

/// The header word holding the kind.
const KIND_WORD: usize = 36;

#[test]
fn attach_accepts_only_the_recorded_kind() {
    let mut mem = Box::new(Mem([0; 8192]));
    for (laid_out, other) in [
        (NotifierKind::Word, NotifierKind::EventFd),
        (NotifierKind::EventFd, NotifierKind::Word),
    ] {
        let config = Config::new(4, 4, 0).with_notifier(laid_out);
        Uring::init(Region::new(&mut mem.0), config).unwrap();
        assert_eq!(
            mem.0[KIND_WORD..KIND_WORD + 4],
            (laid_out as u32).to_ne_bytes()
        );
        assert!(Uring::attach_with(Region::new(&mut mem.0), laid_out).is_ok());
        assert_eq!(
            Uring::attach_with(Region::new(&mut mem.0), other).unwrap_err(),
            Error::NotifierMismatch {
                expected: other,
                found: laid_out as u32
            }
        );
    }
}

#[test]
fn an_unknown_kind_is_refused_and_named() {
    let mut mem = Box::new(Mem([0; 8192]));
    Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 0)).unwrap();
    // A peer (or a newer layout) writes a kind this build does not know.
    mem.0[KIND_WORD..KIND_WORD + 4].copy_from_slice(&7u32.to_ne_bytes());
    let e = Uring::attach(Region::new(&mut mem.0)).unwrap_err();
    assert_eq!(
        e,
        Error::NotifierMismatch {
            expected: NotifierKind::Word,
            found: 7
        }
    );
    assert_eq!(
        e.to_string(),
        "the region records an unknown notifier kind 7"
    );
    assert_eq!(
        Error::NotifierMismatch {
            expected: NotifierKind::Word,
            found: 1
        }
        .to_string(),
        "the region wakes through eventfds, not a wait on the wake word"
    );
}

#[test]
fn notifiers_wait_on_the_word_by_default_and_ignore_bind() {
    assert_eq!(Spin.kind(), NotifierKind::Word);
    assert_eq!(NotifierKind::default(), NotifierKind::Word);
    let (a, b) = (WakeFlag::new(), WakeFlag::new());
    Spin.bind(&a, &b);
    a.arm();
    assert!(a.notify(&Spin));
    assert!(!b.is_armed());
}
