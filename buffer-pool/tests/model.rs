//! A state-machine test: random writes, hand-outs and releases (in random
//! order, some on other threads, some while held there) against a reference
//! model of the documented placement policy.
#![cfg(not(loom))]
#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "tests use std"
)]

use buffer_pool::{Buffer, BufferPool, PoolMode, Slice, SlotMap};
use proptest::prelude::*;
use std::sync::mpsc;
use std::thread;

#[derive(Debug, Clone)]
enum Op {
    /// `get_writable(len)`, filled with a pattern.
    Write(usize),
    /// `get_data_owned`.
    Finish,
    /// Drop the held slice at this index (modulo the count) here.
    DropHere(usize),
    /// Move the slice at this index to worker `w`, which holds it.
    SendTo(usize, usize),
    /// Tell the worker holding the slice at this index to check and drop it.
    DropThere(usize),
}

fn op(cap: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..=cap / 2 + 2).prop_map(Op::Write),
        1 => (0..=cap + 3).prop_map(Op::Write),
        3 => Just(Op::Finish),
        2 => any::<usize>().prop_map(Op::DropHere),
        2 => (any::<usize>(), 0..2usize).prop_map(|(i, w)| Op::SendTo(i, w)),
        2 => any::<usize>().prop_map(Op::DropThere),
    ]
}

/// A lent slice as the model sees it.
#[derive(Debug, Clone)]
struct Lent {
    start: usize,
    end: usize,
    front: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Where {
    Idle,
    Pool { start: usize, limit: usize },
    Heap,
}

/// The documented policy, written over a list of spans rather than bit masks.
struct Model {
    cap: usize,
    slots: usize,
    lent: Vec<(u64, Lent)>,
    pending: Vec<u8>,
    at: Where,
    mode: PoolMode,
    /// Length of the last non-empty message.
    hint: usize,
}

impl Model {
    /// Where a message of `need` bytes goes now: where the hint fits, else
    /// where `need` fits.
    fn place(&mut self, need: usize) -> Where {
        match self.place_exactly(need.max(self.hint)) {
            Where::Heap => self.place_exactly(need),
            at => at,
        }
    }

    fn place_exactly(&mut self, need: usize) -> Where {
        if self.lent.len() >= self.slots {
            return Where::Heap;
        }
        if self.lent.iter().all(|(_, l)| l.front) {
            for (_, l) in &mut self.lent {
                l.front = false;
            }
        }
        let tail = self.lent.iter().map(|(_, l)| l.end).max().unwrap_or(0);
        let head = self
            .lent
            .iter()
            .filter(|(_, l)| !l.front)
            .map(|(_, l)| l.start)
            .min()
            .unwrap_or(self.cap);
        let front_end = self
            .lent
            .iter()
            .filter(|(_, l)| l.front)
            .map(|(_, l)| l.end)
            .max()
            .unwrap_or(0);
        if self.cap - tail >= need {
            self.mode = PoolMode::Back;
            Where::Pool {
                start: tail,
                limit: self.cap,
            }
        } else if head.saturating_sub(front_end) >= need {
            self.mode = PoolMode::Front;
            Where::Pool {
                start: front_end,
                limit: head,
            }
        } else {
            Where::Heap
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let need = self.pending.len() + bytes.len();
        match self.at {
            Where::Pool { start, limit } if start + need <= limit => {}
            Where::Heap => {}
            _ if bytes.is_empty() => {}
            _ => {
                self.at = self.place(need);
                if self.at == Where::Heap {
                    self.mode = PoolMode::Alloc;
                }
            }
        }
        self.pending.extend_from_slice(bytes);
    }
}

enum Cmd<M: SlotMap> {
    Hold(u64, Slice<M>, Vec<u8>),
    Drop(u64),
}

fn worker<M: SlotMap>(rx: mpsc::Receiver<Cmd<M>>, done: mpsc::Sender<u64>) {
    let mut held = Vec::new();
    for cmd in rx {
        match cmd {
            Cmd::Hold(id, slice, bytes) => {
                assert_eq!(slice.as_ref(), &bytes[..], "slice changed on its way");
                held.push((id, slice, bytes));
            }
            Cmd::Drop(id) => {
                let i = held.iter().position(|h| h.0 == id).expect("held");
                let (_, slice, bytes) = held.swap_remove(i);
                assert_eq!(slice.as_ref(), &bytes[..], "slice changed while held");
                drop(slice);
                done.send(id).unwrap();
            }
        }
    }
}

/// A handed-out slice: id, the slice if held here, the worker holding it
/// otherwise, and its bytes.
type Held<M> = (u64, Option<Slice<M>>, usize, Vec<u8>);

fn run<M: SlotMap>(slots: usize, cap: usize, ops: &[Op]) {
    let mut pool = BufferPool::<_, M>::with_slot_map(cap);
    let mut model = Model {
        cap,
        slots,
        lent: Vec::new(),
        pending: Vec::new(),
        at: Where::Idle,
        mode: PoolMode::Back,
        hint: 0,
    };
    let (done_tx, done_rx) = mpsc::channel();
    let mut workers = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..2 {
        let (tx, rx) = mpsc::channel();
        let done = done_tx.clone();
        workers.push(thread::spawn(move || worker::<M>(rx, done)));
        senders.push(tx);
    }
    // Every handed-out slice: id, here (Some) or at a worker (None, worker).
    let mut held: Vec<Held<M>> = Vec::new();
    let mut next_id = 0u64;
    let mut stamp = 0u8;
    for op in ops {
        match *op {
            Op::Write(n) => {
                let bytes: Vec<u8> = (0..n)
                    .map(|_| {
                        stamp = stamp.wrapping_add(1);
                        stamp
                    })
                    .collect();
                pool.get_writable(n).copy_from_slice(&bytes);
                model.write(&bytes);
            }
            Op::Finish => {
                let slice = pool.get_data_owned();
                let bytes = std::mem::take(&mut model.pending);
                if !bytes.is_empty() {
                    model.hint = bytes.len();
                }
                assert_eq!(slice.as_ref(), &bytes[..]);
                assert_eq!(slice.len(), bytes.len());
                let at = std::mem::replace(&mut model.at, Where::Idle);
                assert_eq!(
                    slice.is_pooled(),
                    matches!(at, Where::Pool { .. }),
                    "is_pooled"
                );
                let id = next_id;
                next_id += 1;
                if let Where::Pool { start, .. } = at {
                    let front = model.mode == PoolMode::Front;
                    model.lent.push((
                        id,
                        Lent {
                            start,
                            end: start + bytes.len(),
                            front,
                        },
                    ));
                }
                held.push((id, Some(slice), 0, bytes));
            }
            Op::DropHere(i) | Op::SendTo(i, _) | Op::DropThere(i) if held.is_empty() => {
                let _ = i;
            }
            Op::DropHere(i) => {
                let i = i % held.len();
                if held[i].1.is_some() {
                    let (id, slice, _, bytes) = held.swap_remove(i);
                    assert_eq!(slice.as_ref().unwrap().as_ref(), &bytes[..]);
                    model.lent.retain(|(l, _)| *l != id);
                }
            }
            Op::SendTo(i, w) => {
                let i = i % held.len();
                if let Some(slice) = held[i].1.take() {
                    held[i].2 = w;
                    senders[w]
                        .send(Cmd::Hold(held[i].0, slice, held[i].3.clone()))
                        .unwrap();
                }
            }
            Op::DropThere(i) => {
                let i = i % held.len();
                if held[i].1.is_none() {
                    let (id, _, w, _) = held.swap_remove(i);
                    senders[w].send(Cmd::Drop(id)).unwrap();
                    assert_eq!(done_rx.recv().unwrap(), id);
                    model.lent.retain(|(l, _)| *l != id);
                }
            }
        }
        assert_eq!(pool.mode(), model.mode, "mode after {op:?}");
        assert_eq!(pool.get_data_by_ref_(usize::MAX), &model.pending[..]);
        for (_, slice, _, bytes) in &held {
            if let Some(slice) = slice {
                assert_eq!(slice.as_ref(), &bytes[..], "a live slice changed");
            }
        }
    }
    // Release the rest in order on the workers, then: everything dropped means
    // the next fitting message is pooled in Back mode.
    for (id, slice, w, _) in held.drain(..) {
        if slice.is_none() {
            senders[w].send(Cmd::Drop(id)).unwrap();
            assert_eq!(done_rx.recv().unwrap(), id);
        }
    }
    drop(pool.get_data_owned());
    if cap > 0 {
        pool.get_writable(cap);
        assert_eq!(pool.mode(), PoolMode::Back);
        assert!(pool.get_data_owned().is_pooled());
    }
    drop(senders);
    for w in workers {
        w.join().unwrap();
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 1000 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn ops() -> impl Strategy<Value = (usize, Vec<Op>)> {
    let len = if cfg!(miri) { 1..24usize } else { 1..120usize };
    (0..48usize).prop_flat_map(move |cap| (Just(cap), prop::collection::vec(op(cap), len.clone())))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn eight_slots_match_the_model((cap, ops) in ops()) {
        run::<u8>(8, cap, &ops);
    }

    #[test]
    fn sixteen_slots_match_the_model((cap, ops) in ops()) {
        run::<u16>(16, cap, &ops);
    }
}
