//! The amp scenario, firmware as the server: lays out the `uring` region
//! and the two stream rings in the shared memory, answers the host's echo
//! requests (checking every body byte, writing every response byte) until
//! `STOP`, then streams both ways. Polls (its notifier never sleeps).
//!
//! Before it takes a request, and again before it answers one, it asks the
//! server whether the host is still the one it served (`check_peer`): once
//! the host closed, or another host instance attached in the place of a
//! killed one, it serves that connection no more (requests of the old host
//! still in the ring are neither taken nor answered) and lays out a new
//! connection, with the next connection id, for the new host. It checks
//! that the requests of each connection come from one host, numbered in
//! order, and prints each connection's count and range of numbers.
//!
//! In the hostile and restart runs the host steers it through the control
//! words (`amp_proto::Control`): after `Hostile` it counts the errors its
//! server reports instead of ending the run; `Reset` lays the region out
//! afresh (a new connection, with the next connection id); `Scribble(k)`
//! makes it the hostile peer, corrupting the completion ring in way `k`
//! and then serving no more until `Reset`; `Hold` takes no more requests
//! on the connection; `Finish` ends the run.
#![no_std]
#![no_main]

use amp::{Boot, Outcome, Streams};
use amp_proto::{Command, Control, ECHO, STOP, URING_LEN, URING_OFFSET};
use uring_queue::uring::{Error, Incoming, Server, Uring};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    amp::finish("amp_server", serve())
}

/// How a connection ended.
enum End {
    /// The client sent `STOP`.
    Stop,
    /// The host asked for a fresh layout (command number).
    Reset(u32),
    /// The host ended the run.
    Finish,
    /// The host closed, or another instance attached in its place.
    HostGone,
}

impl End {
    fn name(&self) -> &'static [u8] {
        match self {
            Self::Stop => b"stop",
            Self::Reset(_) => b"reset",
            Self::Finish => b"finish",
            Self::HostGone => b"host gone",
        }
    }
}

/// The echo requests one connection answered: their count, and the
/// numbers of the first and the next expected.
#[derive(Default)]
struct Answered {
    count: u32,
    first: u32,
    next: u32,
}

impl Answered {
    /// Counts request `number`; whether it is the one expected (any number
    /// first, then each one more than the last).
    fn count(&mut self, number: u32) -> bool {
        let expected = self.count == 0 || number == self.next;
        if self.count == 0 {
            self.first = number;
        }
        self.count = self.count.wrapping_add(1);
        self.next = number.wrapping_add(1);
        expected
    }

    /// Prints `amp_server: connection <id> (<end>): <n> answered, numbers
    /// <first> to <last>`.
    fn report(&self, id: u32, end: &End) {
        let print = firmware::story::print;
        print(b"amp_server: connection ");
        firmware::story::print_u32(id);
        print(b" (");
        print(end.name());
        print(b"): ");
        firmware::story::print_u32(self.count);
        print(b" answered");
        if self.count > 0 {
            print(b", numbers ");
            firmware::story::print_u32(self.first);
            print(b" to ");
            firmware::story::print_u32(self.next.wrapping_sub(1));
        }
        print(b"\n");
    }
}

/// What the run has counted, and the last command carried out.
struct Run {
    control: &'static Control,
    last: u32,
    hostile: bool,
    errors: u32,
    connections: u32,
    served: u32,
}

impl Run {
    fn error(&mut self) {
        self.errors = self.errors.saturating_add(1);
        self.control.count(self.errors, self.connections);
    }
}

fn serve() -> Outcome {
    let control = amp::control().ok_or("the control words fit")?;
    let mut streams = Streams::init()?;
    let mut run = Run {
        control,
        last: 0,
        hostile: false,
        errors: 0,
        connections: 0,
        served: 0,
    };
    let mut reset = None;
    loop {
        let id = amp::next_connection_id();
        // SAFETY: one region at a time: the previous connection's server
        // was dropped at the end of the last round.
        let region = unsafe { amp::shared(URING_OFFSET, URING_LEN) }.ok_or("the region fits")?;
        let uring = Uring::init(region, amp_proto::config()).map_err(|_| "the region lays out")?;
        let mut server = uring.into_server(Boot(id));
        run.connections += 1;
        run.control.count(run.errors, run.connections);
        if let Some(seq) = reset.take() {
            run.control.done(seq, run.errors, run.connections);
        }
        let mut answered = Answered::default();
        let end = connection(&mut server, &mut run, &mut answered)?;
        answered.report(id, &end);
        match end {
            End::Stop => break,
            End::Reset(seq) => reset = Some(seq),
            End::Finish => return finish(&run),
            End::HostGone => {}
        }
    }
    amp::report("amp_server: requests served and checked: ", run.served);
    streams.run()?;
    amp::report(
        "amp_server: stream values each way: ",
        amp_proto::STREAM_VALUES,
    );
    Ok(())
}

/// Serves one connection until `STOP`, a command, or the host's going
/// ends it.
fn connection(
    server: &mut Server<'_, Boot>,
    run: &mut Run,
    answered: &mut Answered,
) -> Result<End, &'static str> {
    let mut serving = true;
    loop {
        if let Some((seq, command)) = run.control.pending(run.last)
            && let Some(end) = carry_out(run, seq, command, &mut serving)
        {
            return Ok(end);
        }
        if host_gone(server) {
            return Ok(End::HostGone);
        }
        if !serving {
            continue;
        }
        let incoming = match server.try_recv() {
            Ok(Some(incoming)) => incoming,
            Ok(None) => continue,
            Err(_) if run.hostile => {
                // Latched: nothing more comes from this connection.
                run.error();
                serving = false;
                continue;
            }
            Err(_) => return Err("the host's requests are well formed"),
        };
        // Taken while the host went: not answered.
        if host_gone(server) {
            return Ok(End::HostGone);
        }
        let stop = incoming.opcode() == STOP;
        let in_order = stop || answered.count(incoming.flags());
        match answer(server, incoming) {
            Ok(()) if stop => return Ok(End::Stop),
            Ok(()) if in_order => run.served += 1,
            Ok(()) if run.hostile => run.error(),
            Ok(()) => return Err("a connection's requests come from one host, in order"),
            Err(_) if run.hostile => run.error(),
            Err(what) => return Err(what),
        }
    }
}

/// Carries out command number `seq`: the end of the connection, if it
/// ends it (`Reset` is reported done once the next connection is laid
/// out); clears `serving` for the commands that stop serving.
fn carry_out(run: &mut Run, seq: u32, command: Command, serving: &mut bool) -> Option<End> {
    run.last = seq;
    match command {
        Command::Hostile => run.hostile = true,
        Command::Reset => return Some(End::Reset(seq)),
        Command::Finish => {
            run.control.done(seq, run.errors, run.connections);
            return Some(End::Finish);
        }
        Command::Scribble(kind) => {
            scribble(kind);
            *serving = false;
        }
        Command::Hold => *serving = false,
    }
    run.control.done(seq, run.errors, run.connections);
    None
}

/// Whether the host closed, or another host instance attached to the
/// connection in its place (latched by the server).
fn host_gone(server: &mut Server<'_, Boot>) -> bool {
    matches!(server.check_peer(), Err(Error::PeerGone))
}

/// The end of a hostile or restart run: reports the counts.
fn finish(run: &Run) -> Outcome {
    amp::report("amp_server: requests served and checked: ", run.served);
    amp::report("amp_server: errors reported: ", run.errors);
    amp::report("amp_server: connections laid out: ", run.connections);
    Ok(())
}

/// Corrupts the completion ring as a hostile peer would: `0` a tail far
/// ahead of the head; `1` a completion with a tag the client never issued
/// and an oversized response length; `2` random words over the region's
/// headers, lines and rings.
fn scribble(kind: u32) {
    let cq = amp::peek(20) as usize;
    let capacity = amp::peek(cq + 20);
    let data = cq + amp::peek(cq + 32) as usize;
    let (tail, head) = (amp::peek(cq + 128), amp::peek(cq + 256));
    match kind {
        0 => amp::scribble(cq + 128, head.wrapping_add(capacity).wrapping_add(5)),
        1 => {
            let slot = data + (tail & capacity.wrapping_sub(1)) as usize * 24;
            for (k, word) in [7, 0xdead, 0, u32::MAX, 0, 0].into_iter().enumerate() {
                amp::scribble(slot + 4 * k, word);
            }
            amp::scribble(cq + 128, tail.wrapping_add(1));
        }
        _ => {
            let end = amp::peek(28) as usize;
            let mut x = 0x2545_f491u32;
            for _ in 0..256 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                amp::scribble((x as usize % end.max(4)) & !3, x);
            }
        }
    }
}

/// Checks an echo request's body and writes its response; answers `STOP`
/// with nothing. A body with a wrong byte is answered (with the count of
/// wrong bytes) and is an error.
fn answer(server: &mut Server<'_, Boot>, incoming: Incoming) -> Outcome {
    let (result, len) = match incoming.opcode() {
        ECHO => {
            let (body, response) = server
                .buffers(&incoming)
                .map_err(|_| "the request is this server's")?;
            amp_proto::answer_echo(incoming.flags(), body, response)
        }
        STOP => (0, 0),
        _ => (-2, 0),
    };
    server
        .complete(incoming, result, len)
        .map_err(|_| "the completion is posted")?;
    if result == 0 {
        Ok(())
    } else {
        Err("every body byte the host wrote is right")
    }
}
