//! The client processes: idle ones, which connect, make one checked call
//! and then hold their connection; and active ones, which connect to every
//! server of the active test and run the requests the suite asks for.

use super::control::{Control, command, field};
use super::flight::{self, Socket};
use super::{DEPTH, SIZE, SMALL, unix};
use crate::suites::ipc::uring::SLOTS;
use crate::suites::ipc::wire::{IpcError, Patterns};
use std::os::fd::OwnedFd;
use uring_queue::uring::service::{ClientConfig, Connection, connect};

fn connected(name: &str, config: ClientConfig) -> Result<Connection<SLOTS>, IpcError> {
    connect::<SLOTS>(name, config)
        .map_err(|e| IpcError::Transport(format!("connecting to @{name}: {e}")))
}

/// How an active client waits for its replies: it parks at once on its
/// eventfd (and socket) instead of spinning first. Sixteen clients and the
/// server share two CPUs; a spinning client would only keep the server from
/// answering.
pub fn active_config() -> ClientConfig {
    ClientConfig {
        options: crate::suites::ipc::uring::parking(),
    }
}

/// The idle role: connects to the service in its setup, makes one checked
/// 4 B call, answers `ok` and holds the connection until the suite hangs up.
pub fn idle(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let mut control = Control::inherited(fds)?;
    let setup = control.setup()?;
    let patterns = Patterns::upto(SMALL);
    let connection = field(&setup, "name").and_then(|name| {
        let c = connected(name, ClientConfig::default())?;
        flight::pair(&c, &patterns, (SIZE, 1, 1))?;
        Ok(c)
    });
    let _connection = control.answer(connection)?;
    control.until_hang_up()
}

/// An active client's connections, one per transport.
struct Active {
    service: Connection<SLOTS>,
    unix: Socket,
    #[cfg(feature = "iceoryx2")]
    iceoryx2: super::iceoryx::Client,
    patterns: Patterns,
}

impl Active {
    fn connect(setup: &str, _control: &Control) -> Result<Self, IpcError> {
        let patterns = Patterns::upto(SMALL);
        Ok(Self {
            service: connected(field(setup, "hub")?, active_config())?,
            unix: Socket::new(unix::connect(field(setup, "unix")?)?, &patterns, SMALL)?,
            #[cfg(feature = "iceoryx2")]
            iceoryx2: super::iceoryx::Client::open(field(setup, "iceoryx2")?, _control.socket()?)?,
            patterns,
        })
    }

    /// Runs `count` requests over `variant`'s connection.
    fn run(&mut self, variant: &str, count: usize) -> Result<(), IpcError> {
        let work = (SIZE, count, DEPTH);
        match variant {
            "service" => flight::pair(&self.service, &self.patterns, work)?,
            "unix" => self.unix.exchange(&self.patterns, work)?,
            #[cfg(feature = "iceoryx2")]
            "iceoryx2" => self.iceoryx2.exchange(&self.patterns, work)?,
            other => return Err(IpcError::Transport(format!("no variant {other}"))),
        };
        Ok(())
    }
}

/// The active role: connects to the servers in its setup, answers `ok`,
/// then runs each command (`<variant> <count>`) and answers it.
pub fn active(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let mut control = Control::inherited(fds)?;
    let setup = control.setup()?;
    let connected = Active::connect(&setup, &control);
    let mut active = control.answer(connected)?;
    while let Some(line) = control.next()? {
        let done = command(&line).and_then(|(variant, count)| active.run(variant, count));
        control.answer(done)?;
    }
    Ok(())
}
