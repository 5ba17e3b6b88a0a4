//! The holder threads shared by the `faster` and `slower` targets: each
//! receives slices with the bytes they must hold, keeps them until their due
//! time, and checks their bytes on arrival and when it drops them.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

/// A slice on its way to, or held by, a holder thread.
pub type Held = Box<dyn AsRef<[u8]> + Send>;

/// What the producer sends a holder.
pub enum Cmd {
    /// Hold this slice, which must keep these bytes, until then.
    Hold(Held, Vec<u8>, Instant),
    /// Drop everything held now, then acknowledge.
    Flush(Sender<()>),
}

/// Panics unless `slice` holds exactly `bytes`. (Not `assert_eq!`: a
/// failure would print two slices of up to 64 KiB.)
pub fn check(slice: &Held, bytes: &[u8], when: &str) {
    assert!(
        slice.as_ref().as_ref() == bytes,
        "slice bytes changed {when}"
    );
}

/// Serves one holder thread; `place` names it in failure messages
/// ("thread", "core").
pub fn worker(rx: Receiver<Cmd>, place: &str) {
    let mut held: Vec<(Held, Vec<u8>, Instant)> = Vec::new();
    loop {
        let cmd = match held.iter().map(|h| h.2).min() {
            Some(due) => match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(cmd) => Some(cmd),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            },
            None => match rx.recv() {
                Ok(cmd) => Some(cmd),
                Err(_) => return,
            },
        };
        match cmd {
            Some(Cmd::Hold(slice, bytes, due)) => {
                check(&slice, &bytes, &format!("on its way to another {place}"));
                held.push((slice, bytes, due));
            }
            Some(Cmd::Flush(ack)) => {
                for (slice, bytes, _) in held.drain(..) {
                    check(&slice, &bytes, &format!("while held on another {place}"));
                }
                ack.send(()).unwrap();
            }
            None => {}
        }
        let now = Instant::now();
        held.retain(|(slice, bytes, due)| {
            if *due <= now {
                check(slice, bytes, &format!("while held on another {place}"));
                false
            } else {
                true
            }
        });
    }
}
