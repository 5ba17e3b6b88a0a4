//! Liveness: one side's view of whether its peer is still there, from the
//! peer's close flag, epoch, heartbeat and process.

use super::Options;
use super::link::{FIRST_EPOCH, SideLine};
use super::wake::Notifier;
use crate::loom::sync::atomic::Ordering;

/// One side's view of its peer's liveness words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watch {
    epoch: u32,
    beat: u32,
    silent_rounds: u32,
    gone: bool,
}

impl Watch {
    pub(crate) fn new(peer: &SideLine) -> Self {
        Self {
            epoch: peer.epoch.load(Ordering::Acquire),
            beat: peer.heartbeat.0.load(Ordering::Relaxed),
            silent_rounds: 0,
            gone: false,
        }
    }

    pub(crate) fn is_gone(&self) -> bool {
        self.gone
    }

    /// Latches the peer gone on news from outside the region: the socket
    /// of a service's connection hung up, or carried bytes the protocol
    /// never sends (a peer that never attached has no process to ask).
    #[cfg(any(
        all(feature = "tokio", target_os = "linux", not(loom)),
        all(test, loom)
    ))]
    pub(crate) fn latch_gone(&mut self) {
        self.gone = true;
    }

    /// Whether the peer still looks alive. `parked` says this check follows
    /// an empty park round (the only time heartbeats are judged).
    pub(crate) fn check<W: Notifier + ?Sized>(
        &mut self,
        peer: &SideLine,
        notifier: &W,
        options: &Options,
        parked: bool,
    ) -> bool {
        if self.gone {
            return false;
        }
        let epoch = peer.epoch.load(Ordering::Acquire);
        if self.epoch == 0 && epoch != 0 {
            // The peer had not attached when we did, so the first instance
            // to attach since took the first epoch: any other one means
            // that instance came and went (perhaps with requests it took)
            // before this look, and the restart is judged like any other.
            self.epoch = FIRST_EPOCH;
        }
        let closed = peer.closed.load(Ordering::Acquire) != 0;
        let restarted = epoch != self.epoch;
        // A notifier with a channel of its own to the peer (a service's
        // socket) knows even of a peer that never attached.
        let exited = parked && {
            let pid = peer.pid.load(Ordering::Relaxed);
            notifier.peer_hung_up() || (pid != 0 && self.epoch != 0 && notifier.has_exited(pid))
        };
        let beat = peer.heartbeat.0.load(Ordering::Relaxed);
        if beat != self.beat {
            self.beat = beat;
            self.silent_rounds = 0;
        } else if parked {
            self.silent_rounds = self.silent_rounds.saturating_add(1);
        }
        let stale = self.epoch != 0
            && options
                .stale_after
                .is_some_and(|rounds| self.silent_rounds >= rounds);
        self.gone = (self.epoch != 0 && closed) || restarted || exited || stale;
        !self.gone
    }
}
