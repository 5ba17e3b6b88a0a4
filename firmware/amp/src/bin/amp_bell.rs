//! The amp scenario with doorbells (`amp::bell`): the firmware
//! server parks in `WFI` through its UART notifier (`amp::bell::Bell`)
//! instead of polling (it parks as soon as it finds nothing to do), and is
//! woken by the host's doorbell byte; it rings
//! the host the same way. It answers echo requests (every body byte
//! checked) and `PING`s (the body copied into the response) until `STOP`,
//! whose `flags` say how many 64-byte messages to echo over the UART alone
//! afterwards, the baseline of the latency comparison.
#![no_std]
#![no_main]

use amp::Outcome;
use amp::bell::{self, Bell};
use amp_proto::{ECHO, PING, STOP, URING_LEN, URING_OFFSET};
use uring_queue::uring::{Incoming, Options, Server, Uring};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    amp::finish("amp_bell", serve())
}

fn serve() -> Outcome {
    let id = amp::next_connection_id();
    // SAFETY: made once, here.
    let region = unsafe { amp::shared(URING_OFFSET, URING_LEN) }.ok_or("the region fits")?;
    let uring = Uring::init(region, amp_proto::config()).map_err(|_| "the region lays out")?;
    let mut server = uring.into_server(Bell::new(id));
    // Park at once: every request after an idle spell wakes the firmware
    // through the doorbell.
    server.set_options(Options {
        spin: 0,
        min_spin: 0,
        ..Options::default()
    });
    let mut served = 0u32;
    let uart_messages = loop {
        let incoming = server.recv().map_err(|_| "the host's requests arrive")?;
        if incoming.opcode() == STOP {
            let messages = incoming.flags();
            // The UART is polled from now on: the host's start byte, which
            // may come as soon as `STOP` is answered, stays in the UART.
            bell::poll_only();
            server
                .complete(incoming, 0, 0)
                .map_err(|_| "the completion is posted")?;
            break messages;
        }
        answer(&mut server, incoming)?;
        served += 1;
    };
    amp::report("amp_bell: requests served: ", served);
    amp::report("amp_bell: doorbells taken: ", bell::rung_count());
    if bell::rung_count() == 0 {
        return Err("the host's doorbell woke the firmware");
    }
    bell::echo(uart_messages);
    amp::report("amp_bell: messages echoed over the UART: ", uart_messages);
    Ok(())
}

/// Answers an echo request (checked) or a `PING` (the body copied).
fn answer(server: &mut Server<'_, Bell>, incoming: Incoming) -> Outcome {
    let (body, response) = server
        .buffers(&incoming)
        .map_err(|_| "the request is this server's")?;
    let (result, len) = match incoming.opcode() {
        ECHO => amp_proto::answer_echo(incoming.flags(), body, response),
        PING => match response.get_mut(..body.len()) {
            Some(out) => {
                for (o, &b) in out.iter_mut().zip(body) {
                    *o = b;
                }
                (0, body.len())
            }
            None => (-3, 0),
        },
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
