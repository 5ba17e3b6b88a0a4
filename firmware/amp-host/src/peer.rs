//! The host's [`Notifier`] for the firmware: polls (the firmware raises no
//! doorbell in this scenario), and judges the firmware gone when its
//! emulator process exited, or when the connection id the firmware
//! publishes in its `pid` word is not the one this side attached to (the
//! firmware rebooted and laid out a new connection). On a real part the
//! emulator's process is the remote core, whose state Linux's remoteproc
//! reports.

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
    fn wait(&self, _flag: &WakeFlag, _timeout: Duration) {
        std::thread::yield_now();
    }

    fn wake(&self, _flag: &WakeFlag) {}

    fn has_exited(&self, pid: u32) -> bool {
        pid != self.id || self.emulator_exited()
    }
}
