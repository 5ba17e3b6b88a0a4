//! The host's [`Notifier`] for the firmware: polls, or, with a doorbell
//! (the socket QEMU wires the firmware's UART to), sleeps until the
//! firmware rings (the socket is readable) and rings by writing a byte; and
//! judges the firmware gone when its
//! emulator process exited, or when the connection id the firmware
//! publishes in its `pid` word is not the one this side attached to (the
//! firmware rebooted and laid out a new connection). On a real part the
//! emulator's process is the remote core, whose state Linux's remoteproc
//! reports.

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use uring_queue::uring::{Notifier, WakeFlag};

/// Polls; the firmware is gone once `emulator` exited or its connection id
/// is no longer `id`.
#[derive(Debug)]
pub struct Firmware {
    /// The connection id the firmware published when this side attached.
    pub id: u32,
    /// The emulator's process id, if known.
    pub emulator: Option<u32>,
    /// The doorbell: the socket of the firmware's UART (non-blocking).
    pub bell: Option<UnixStream>,
    /// Doorbells the firmware rang that woke this side.
    pub woken: Arc<AtomicU32>,
}

impl Firmware {
    /// Whether the emulator's process is gone (or a zombie).
    fn emulator_exited(&self) -> bool {
        let Some(pid) = self.emulator else {
            return false;
        };
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name in parentheses.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => true,
        }
    }
}

impl Notifier for Firmware {
    fn wait(&self, flag: &WakeFlag, timeout: Duration) {
        let Some(mut bell) = self.bell.as_ref() else {
            std::thread::yield_now();
            return;
        };
        if !flag.is_armed() {
            return;
        }
        let mut fds = [PollFd::new(bell, PollFlags::IN)];
        let timeout = Timespec::try_from(timeout).ok();
        if poll(&mut fds, timeout.as_ref()).is_ok_and(|n| n > 0) {
            let mut bytes = [0u8; 64];
            if bell.read(&mut bytes).is_ok_and(|n| n > 0) {
                self.woken.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn wake(&self, _flag: &WakeFlag) {
        if let Some(mut bell) = self.bell.as_ref() {
            let _ = bell.write(&[1]);
        }
    }

    fn has_exited(&self, pid: u32) -> bool {
        pid != self.id || self.emulator_exited()
    }
}
