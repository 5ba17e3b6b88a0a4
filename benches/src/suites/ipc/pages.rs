//! The pair over regions backed by each kind of page
//! (`SharedMemory::create_with`, [`Pages`]), and what each costs to set up.
//!
//! Three connections of the blocking calls (the `uring_queue` variant),
//! each with a server process of its own, over 4 KiB pages
//! (`uring_queue_normal`, the anchor), shared memory advised to use
//! transparent huge pages (`uring_queue_thp`) and 2 MiB pages from the
//! reserved pool (`uring_queue_huge`), sized for one 4 MiB request and its
//! response. Tests `1MiB.pages` and `4MiB.pages`, one request in flight.
//!
//! Then `setup.pages`: creating a region of that size, mapping it and
//! writing one byte per 4 KiB (the first touch of every page), then
//! unmapping it, per page kind: rows `setup.pages.<variant>.median` (µs)
//! and `.t_vs_uring_queue_normal`.
//!
//! Huge pages must be reserved by root (`/proc/sys/vm/nr_hugepages`). When
//! the pool has too few free pages and this process may write that file
//! (it runs as root), the suite raises it by what it lacks for the run and
//! puts the old value back after; otherwise the `uring_queue_huge` rows
//! read `NaN` and stderr says why. Where shared memory ignores the
//! transparent huge page hint (`shmem_enabled` is `never` or `deny`),
//! stderr says so: the `thp` rows then measure 4 KiB pages.

use super::peer::Placement;
use super::uring::{self, Blocking, Connection};
use super::wire::{IpcError, MAX_BODY, Patterns};
use super::{Transport, measure};
use crate::harness::{Compare, Ctx, row};
use std::time::{Duration, Instant};
use uring_queue::uring::Uring;
use uring_queue::{Pages, SharedMemory};

const NORMAL: &str = "uring_queue_normal";
const KINDS: [(&str, Pages); 3] = [
    (NORMAL, Pages::Normal),
    ("uring_queue_thp", Pages::TransparentHuge),
    ("uring_queue_huge", Pages::Huge),
];

/// The largest body sent more than one at a time on these connections:
/// none is, so the region holds one largest request and its response.
const DEEP_MAX: usize = 4 << 10;

const SIZES: &[(&str, usize)] = &[("1MiB", 1 << 20), ("4MiB", MAX_BODY)];

const HUGE_PAGE: usize = 2 << 20;
const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";

/// One page kind's variant: the pair, or why this machine has none.
#[derive(Debug)]
enum Kind<'c, 'm, 'p> {
    Pair(Blocking<'c, 'm, 'p>),
    Unavailable(String),
}

impl Transport for Kind<'_, '_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        match self {
            Self::Pair(pair) => pair.exchange(len, count, depth),
            Self::Unavailable(why) => Err(IpcError::Transport(why.clone())),
        }
    }

    fn unsupported(&self, len: usize, depth: usize) -> Option<String> {
        match self {
            Self::Pair(pair) => pair.unsupported(len, depth),
            Self::Unavailable(why) => Some(why.clone()),
        }
    }
}

/// Huge pages raised in the pool for this run; the old count is put back
/// on drop.
#[derive(Debug)]
struct Reservation {
    old: Option<usize>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(old) = self.old {
            if let Err(e) = std::fs::write(NR_HUGEPAGES, old.to_string()) {
                eprintln!("  pages: could not put {NR_HUGEPAGES} back to {old}: {e}");
            }
        }
    }
}

fn meminfo(key: &str) -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Makes sure `pages` huge pages are free, raising the pool if this
/// process may; the reason when it cannot.
fn reserve(pages: usize) -> Result<Reservation, String> {
    let free = meminfo("HugePages_Free:").ok_or("no HugePages_Free in /proc/meminfo")?;
    if free >= pages {
        return Ok(Reservation { old: None });
    }
    let total = meminfo("HugePages_Total:").unwrap_or(0);
    let wanted = total + (pages - free);
    let why = |e: &dyn std::fmt::Display| {
        format!(
            "{free} free 2 MiB pages, {pages} needed, and raising the pool failed ({e}): \
             as root, echo {wanted} > {NR_HUGEPAGES}"
        )
    };
    std::fs::write(NR_HUGEPAGES, wanted.to_string()).map_err(|e| why(&e))?;
    let reservation = Reservation { old: Some(total) };
    match meminfo("HugePages_Free:") {
        Some(now) if now >= pages => {
            eprintln!("  pages: raised {NR_HUGEPAGES} from {total} to {wanted} for this run");
            Ok(reservation)
        }
        now => Err(why(&format!("{} free after", now.unwrap_or(0)))),
    }
}

/// Whether shared memory takes the transparent huge page hint.
fn thp_note() -> Option<String> {
    let path = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";
    let mode = std::fs::read_to_string(path).ok()?;
    let chosen = mode.split_whitespace().find(|w| w.starts_with('['))?;
    matches!(chosen, "[never]" | "[deny]")
        .then(|| format!("{path} is {chosen}: the uring_queue_thp rows measure 4 KiB pages here"))
}

/// The region's length for one largest request and its response.
fn region_len() -> Result<usize, IpcError> {
    Uring::required_size(&uring::config(DEEP_MAX)).map_err(|e| uring::err(e.into()))
}

/// Runs the page-kind rows.
pub fn measure_pages(ctx: &Ctx, patterns: &Patterns, placement: &Placement) {
    let len = match region_len() {
        Ok(len) => len,
        Err(e) => panic!("ipc pages: {e}"),
    };
    if let Some(note) = thp_note() {
        eprintln!("  pages: {note}");
    }
    // One region of huge pages at a time: the pair's, then each setup's.
    let reservation = reserve(len.div_ceil(HUGE_PAGE));
    let mut memories: Vec<Result<SharedMemory, String>> = KINDS
        .iter()
        .map(|&(name, pages)| match (&reservation, pages) {
            (Err(why), Pages::Huge) => Err(why.clone()),
            _ => SharedMemory::create_with(name, len, pages).map_err(|e| e.to_string()),
        })
        .collect();
    pairs(ctx, &mut memories, patterns, placement.server_cpu());
    drop(memories);
    setup(ctx, len, reservation.as_ref().err());
}

/// The `<size>.pages` tests: a connection per page kind.
fn pairs(
    ctx: &Ctx,
    memories: &mut [Result<SharedMemory, String>],
    patterns: &Patterns,
    cpu: Option<usize>,
) {
    let connections: Vec<Result<Connection<'_, '_>, String>> = memories
        .iter_mut()
        .map(|m| {
            let shm = m.as_mut().map_err(|why| why.clone())?;
            Connection::spawn(shm, DEEP_MAX, patterns, cpu).map_err(|e| e.to_string())
        })
        .collect();
    {
        let mut clients: Vec<Kind<'_, '_, '_>> = connections
            .iter()
            .map(|c| match c {
                Ok(conn) => Kind::Pair(Blocking::new(conn)),
                Err(why) => Kind::Unavailable(why.clone()),
            })
            .collect();
        let mut variants: Vec<(&'static str, &mut dyn Transport)> = KINDS
            .iter()
            .zip(&mut clients)
            .map(|((name, _), c)| (*name, c as &mut dyn Transport))
            .collect();
        for &(size, len) in SIZES {
            measure(
                ctx,
                (&format!("{size}.pages"), NORMAL),
                len,
                1,
                &mut variants,
            );
        }
    }
    for (c, (name, _)) in connections.into_iter().zip(KINDS) {
        if let Ok(conn) = c {
            if let Err(e) = conn.finish() {
                panic!("ipc: shutting down the {name} server: {e}");
            }
        }
    }
}

/// Creates a region of `len` bytes of `pages`, touches every 4 KiB of it
/// and unmaps it: the time it took.
fn set_up(len: usize, pages: Pages) -> Result<Duration, String> {
    let start = Instant::now();
    let mut shm =
        SharedMemory::create_with("compare-setup", len, pages).map_err(|e| e.to_string())?;
    let region = shm.region();
    let base = region.as_ptr();
    for at in (0..region.len()).step_by(4096) {
        // SAFETY: `at` is inside the mapping, which lives until `shm` drops
        // below; a volatile byte store is the first touch of its page and
        // nothing else reads or writes the region meanwhile.
        unsafe { base.add(at).write_volatile(1) };
    }
    drop(shm);
    Ok(start.elapsed())
}

/// The `setup.pages` test: what each page kind costs to set up.
fn setup(ctx: &Ctx, len: usize, huge_unavailable: Option<&String>) {
    let test = "setup.pages";
    let mut c = Compare::new("ipc", test, NORMAL);
    for &(name, pages) in &KINDS {
        if pages == Pages::Huge && huge_unavailable.is_some() {
            continue;
        }
        c.variant(name, move || {
            set_up(len, pages).unwrap_or_else(|e| panic!("ipc {test} {name}: {e}"))
        });
    }
    let results = c.run(ctx.rounds(21, 3));
    drop(c);
    for &(name, pages) in &KINDS {
        if let (Pages::Huge, Some(why)) = (pages, huge_unavailable) {
            row("ipc", &format!("{test}.{name}.median"), f64::NAN, "us");
            row(
                "ipc",
                &format!("{test}.{name}.t_vs_{NORMAL}"),
                f64::NAN,
                "x",
            );
            eprintln!("  {name:<18} not measured: {why}");
            continue;
        }
        let us = results.median(name).as_secs_f64() * 1e6;
        row("ipc", &format!("{test}.{name}.median"), us, "us");
        row(
            "ipc",
            &format!("{test}.{name}.t_vs_{NORMAL}"),
            results.ratio(name),
            "x",
        );
        eprintln!("  {name:<18} {us:>9.1} us per {len}-byte region");
    }
}
