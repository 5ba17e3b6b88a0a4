//! Every process of the suite but the pair's server: started once, set up
//! together, driven sample by sample, and shut down cleanly at the end.

#[cfg(feature = "iceoryx2")]
use super::ICEORYX2;
use super::control::Child;
use super::{ACTIVE, HUB, IDLE, Knobs, UNIX, name};
use crate::suites::ipc::wire::IpcError;
use std::time::{Duration, Instant};

/// Every process of the suite but the pair's server.
#[derive(Debug)]
pub struct Processes {
    alone: Child,
    crowded: Child,
    hub: Child,
    unix: Child,
    #[cfg(feature = "iceoryx2")]
    iceoryx2: Child,
    idle: Vec<Child>,
    active: Vec<Child>,
}

impl Processes {
    /// Starts the servers, then the clients (the idle ones on `crowded`),
    /// and waits until every one has answered its setup.
    pub fn start(knobs: &Knobs, server_cpu: Option<usize>) -> Result<Self, IpcError> {
        let hub = |what: &str, cpu| Child::spawn(HUB, &format!("name={}", name(what)), cpu);
        let mut servers = Self {
            alone: hub("one", server_cpu)?,
            crowded: hub("crowded", server_cpu)?,
            hub: hub("active", None)?,
            unix: Child::spawn(UNIX, &format!("name={}", name("unix")), None)?,
            #[cfg(feature = "iceoryx2")]
            iceoryx2: Child::spawn(
                ICEORYX2,
                &format!("name={} clients={}", name("iceoryx2"), knobs.active),
                None,
            )?,
            idle: Vec::new(),
            active: Vec::new(),
        };
        for s in servers.servers() {
            s.answer()?;
        }
        let idle = format!("name={}", name("crowded"));
        let active = format!(
            "hub={} unix={} iceoryx2={}",
            name("active"),
            name("unix"),
            name("iceoryx2")
        );
        for _ in 0..knobs.idle {
            servers.idle.push(Child::spawn(IDLE, &idle, None)?);
        }
        for _ in 0..knobs.active {
            servers.active.push(Child::spawn(ACTIVE, &active, None)?);
        }
        for c in servers.idle.iter_mut().chain(&mut servers.active) {
            c.answer()?;
        }
        Ok(servers)
    }

    fn servers(&mut self) -> Vec<&mut Child> {
        vec![
            &mut self.alone,
            &mut self.crowded,
            &mut self.hub,
            &mut self.unix,
            #[cfg(feature = "iceoryx2")]
            &mut self.iceoryx2,
        ]
    }

    /// One `active` sample: every active client runs `count` requests over
    /// `variant`, all at once; the wall time from the first start to the
    /// last end.
    pub fn active_sample(&mut self, variant: &str, count: usize) -> Result<Duration, IpcError> {
        let start = Instant::now();
        for c in &mut self.active {
            c.send(&format!("{variant} {count}"))?;
        }
        for c in &mut self.active {
            c.answer()?;
        }
        Ok(start.elapsed())
    }

    /// One `active` sample over iceoryx2: the server is woken to poll for
    /// it (untimed) and parked after it, also after a failed sample.
    #[cfg(feature = "iceoryx2")]
    pub fn iceoryx2_sample(&mut self, count: usize) -> Result<Duration, IpcError> {
        self.iceoryx2.send("wake")?;
        self.iceoryx2.answer()?;
        let sample = self.active_sample("iceoryx2", count);
        self.iceoryx2.send("park")?;
        self.iceoryx2.answer()?;
        sample
    }

    /// Hangs up on every process (clients first) and waits for each to exit
    /// cleanly.
    pub fn finish(mut self) -> Result<(), IpcError> {
        for c in self.active.iter().chain(&self.idle) {
            c.hang_up();
        }
        for c in self.active.drain(..).chain(self.idle.drain(..)) {
            c.finish()?;
        }
        self.alone.finish()?;
        self.crowded.finish()?;
        self.hub.finish()?;
        self.unix.finish()?;
        #[cfg(feature = "iceoryx2")]
        self.iceoryx2.finish()?;
        Ok(())
    }
}
