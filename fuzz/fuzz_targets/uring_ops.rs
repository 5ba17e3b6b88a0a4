//! Random submit / receive / complete / poll / wait / cancel sequences on a
//! client and server in one region, checked against a model of the
//! protocol: every reply reaches its submitter with its result and bytes, in
//! whatever order the server completes; a cancelled request's completion is
//! discarded; credits bound what is outstanding; no tag repeats while in
//! flight; slots and blocks all come back. Then fuzz-chosen writes to the
//! region (a hostile peer): from the first one on, nothing may crash,
//! overrun or hang, whatever the operations return.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::collections::{HashMap, VecDeque};
use std::ptr::NonNull;
use uring_queue::Region;
use uring_queue::uring::{Config, Error, Incoming, Options, Request, Spin, Ticket, Uring};

const N: usize = 8;
const CONFIG: Config = Config::new(4, 4, 32 << 10);
const WORDS: usize = 16 << 10;

#[derive(Debug, Arbitrary)]
enum Op {
    Submit {
        opcode: u8,
        payload: u16,
        response: u16,
    },
    Recv,
    Complete {
        pick: u8,
        result: i32,
        len: u16,
    },
    Poll,
    Wait {
        pick: u8,
    },
    Cancel {
        pick: u8,
    },
    /// A hostile peer writes `value` to 32-bit word `word` of the region.
    Poke {
        word: u16,
        value: u32,
    },
}

fn body_byte(opcode: u8, k: usize) -> u8 {
    opcode.wrapping_add(k as u8).rotate_left(3)
}

/// What the model knows of one request.
#[derive(Debug)]
struct Sent {
    opcode: u8,
    payload: usize,
    response: usize,
    cancelled: bool,
    /// `(result, response_len)` once completed.
    done: Option<(i32, usize)>,
}

#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct Line([u32; 32]);

fuzz_target!(|ops: Vec<Op>| {
    let mut mem = vec![Line([0; 32]); WORDS / 32];
    let len = Uring::required_size(&CONFIG).unwrap();
    assert!(len <= WORDS * 4);
    let base = NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `mem` outlives the region and is otherwise only written
    // through `base` (the pokes), between operations, single-threaded.
    let region = unsafe { Region::from_raw_parts(base, len) };
    let (mut client, mut server) = Uring::init(region, CONFIG)
        .unwrap()
        .split::<N, _, _>(Spin, Spin);
    let quick = Options {
        spin: 1,
        min_spin: 1,
        park_timeout: Default::default(),
        stale_after: Some(2),
        yield_every: 0,
    };
    client.set_options(quick);
    server.set_options(quick);

    let mut hostile = false;
    let mut sent: HashMap<u64, Sent> = HashMap::new();
    let mut tickets: Vec<Ticket> = Vec::new();
    let mut to_server: VecDeque<u64> = VecDeque::new();
    let mut held: Vec<Incoming> = Vec::new();
    let mut to_client: VecDeque<u64> = VecDeque::new();
    // Completions still to come off the completion ring: what credits bound.
    let outstanding = |sent: &HashMap<u64, Sent>, to_client: &VecDeque<u64>| {
        sent.values().filter(|s| s.done.is_none()).count() + to_client.len()
    };
    // The client routes every completion that has arrived.
    let route = |sent: &mut HashMap<u64, Sent>, to_client: &mut VecDeque<u64>| {
        for tag in to_client.drain(..) {
            if sent[&tag].cancelled {
                sent.remove(&tag);
            }
        }
    };

    for op in ops.into_iter().take(512) {
        match op {
            Op::Submit {
                opcode,
                payload,
                response,
            } => {
                let (p, r) = (payload as usize % 3000, response as usize % 3000);
                let (mut body, out) = match (client.alloc(p), client.alloc(r)) {
                    (Ok(body), Ok(out)) => (body, out),
                    (a, b) => {
                        // Area (or block table) exhausted: give back what
                        // was allocated.
                        for block in [a, b].into_iter().flatten() {
                            client.free(block);
                        }
                        continue;
                    }
                };
                if let Ok(bytes) = client.bytes_mut(&mut body) {
                    for (k, b) in bytes.iter_mut().enumerate() {
                        *b = body_byte(opcode, k);
                    }
                }
                let request = Request::new(opcode.into())
                    .with_payload(body)
                    .with_response(out);
                let may = outstanding(&sent, &to_client) < 4 && sent.len() < N;
                match client.try_submit(request) {
                    Ok(t) => {
                        assert!(hostile || may, "submitted beyond the credits");
                        let tag = t.user_data();
                        assert!(hostile || !sent.contains_key(&tag), "tag reused in flight");
                        sent.insert(
                            tag,
                            Sent {
                                opcode,
                                payload: p,
                                response: r,
                                cancelled: false,
                                done: None,
                            },
                        );
                        to_server.push_back(tag);
                        tickets.push(t);
                    }
                    Err(rejected) => {
                        assert!(
                            hostile || (!may && rejected.error == Error::Busy),
                            "{rejected:?}"
                        );
                        client.free(rejected.value.payload);
                        client.free(rejected.value.response);
                    }
                }
            }
            Op::Recv => match server.try_recv() {
                Ok(Some(inc)) => {
                    if !hostile {
                        let tag = to_server.pop_front().expect("a request nobody sent");
                        assert_eq!(inc.user_data(), tag);
                        let s = &sent[&tag];
                        assert_eq!(
                            (inc.opcode(), inc.payload_len(), inc.response_capacity()),
                            (s.opcode.into(), s.payload, s.response)
                        );
                        let body = server.payload(&inc).unwrap();
                        assert!(
                            body.iter()
                                .enumerate()
                                .all(|(k, &b)| b == body_byte(s.opcode, k))
                        );
                    }
                    held.push(inc);
                }
                Ok(None) => assert!(hostile || to_server.is_empty()),
                Err(e) => assert!(hostile, "{e}"),
            },
            Op::Complete { pick, result, len } => {
                if held.is_empty() {
                    continue;
                }
                let inc = held.swap_remove(pick as usize % held.len());
                let tag = inc.user_data();
                let want = len as usize % 3001;
                if let Ok((body, out)) = server.buffers(&inc) {
                    for (o, b) in out.iter_mut().zip(body) {
                        *o = !*b;
                    }
                }
                match server.complete(inc, result, want) {
                    Ok(()) => {
                        if !hostile {
                            let s = &sent[&tag];
                            assert!(want <= s.response);
                            to_client.push_back(tag);
                            sent.get_mut(&tag).unwrap().done = Some((result, want));
                        }
                    }
                    Err(r) => {
                        if !hostile {
                            assert_eq!(
                                r.error,
                                Error::TooLarge {
                                    max: sent[&tag].response
                                }
                            );
                        }
                        held.push(r.value);
                    }
                }
            }
            Op::Poll => match client.poll_completions() {
                Ok(n) => {
                    if !hostile {
                        assert_eq!(n, to_client.len());
                        route(&mut sent, &mut to_client);
                    }
                }
                Err(e) => assert!(hostile, "{e}"),
            },
            Op::Wait { pick } => {
                if tickets.is_empty() {
                    continue;
                }
                let t = tickets.swap_remove(pick as usize % tickets.len());
                let tag = t.user_data();
                if !hostile {
                    route(&mut sent, &mut to_client);
                }
                match client.try_wait(t) {
                    Ok(reply) => {
                        if !hostile {
                            let s = sent.remove(&tag).unwrap();
                            let (result, len) = s.done.expect("a reply before its completion");
                            assert_eq!((reply.result, reply.response_len()), (result, len));
                            let got = client.response(&reply).unwrap();
                            let body_len = s.payload.min(s.response);
                            for (k, &b) in got.iter().enumerate().take(body_len) {
                                assert_eq!(b, !body_byte(s.opcode, k));
                            }
                        }
                        client.free_reply(reply);
                    }
                    Err(r) => {
                        if !hostile {
                            assert_eq!(r.error, Error::NotReady);
                            assert!(sent[&tag].done.is_none());
                        }
                        tickets.push(r.value);
                    }
                }
            }
            Op::Cancel { pick } => {
                if tickets.is_empty() {
                    continue;
                }
                let t = tickets.swap_remove(pick as usize % tickets.len());
                let tag = t.user_data();
                let r = client.cancel(t);
                if !hostile {
                    assert_eq!(r, Ok(()));
                    let s = sent.get_mut(&tag).unwrap();
                    // Completed and routed (or about to be): freed at once or
                    // on arrival; otherwise reserved until the completion.
                    if s.done.is_some() && !to_client.contains(&tag) {
                        sent.remove(&tag);
                    } else {
                        s.cancelled = true;
                    }
                }
            }
            Op::Poke { word, value } => {
                hostile = true;
                let word = word as usize % (len / 4);
                // SAFETY: in bounds of `mem`; no reference into the region
                // is alive between operations; a racing peer write is what
                // the crate is built to withstand.
                unsafe { base.cast::<u32>().add(word).write_volatile(value) };
            }
        }
        if !hostile {
            assert_eq!(client.in_flight(), sent.len());
        }
    }

    // Drain (unless hostile): complete and take everything.
    if !hostile {
        while let Ok(Some(inc)) = server.try_recv() {
            held.push(inc);
        }
        for inc in held.drain(..) {
            server.complete(inc, 0, 0).unwrap();
        }
        for t in tickets.drain(..) {
            let reply = client.wait(t).unwrap();
            client.free_reply(reply);
        }
        client.poll_completions().unwrap();
        assert_eq!(client.in_flight(), 0);
        assert_eq!(client.blocks_in_use(), 0);
    } else {
        for t in tickets.drain(..) {
            let _ = client.cancel(t);
        }
    }
    drop(held);
    drop(server);
    drop(client);
});
