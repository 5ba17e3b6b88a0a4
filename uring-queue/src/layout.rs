//! What every layout in a region of bytes checks, written once for the
//! shared ring and the request/response connection: the region's size and
//! alignment, a ring's capacity and release interval, the header's
//! magic / version / state handshake, and the parts a header names.
//!
//! The peer is not trusted: whatever a header says is checked here before
//! it is used to compute an address.

use crate::loom::sync::atomic::{AtomicU32, Ordering};
use crate::{Region, RegionError};
use core::mem::{align_of, size_of};

/// The state word while the creator writes the header.
const STATE_INITIALISING: u32 = 1;
/// The state word once the layout is complete (0, zeroed memory: nobody
/// started).
const STATE_READY: u32 = 2;

/// Which layout a header describes: its magic number and version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LayoutId {
    magic: u32,
    version: u32,
}

impl LayoutId {
    pub(crate) const fn new(magic: u32, version: u32) -> Self {
        Self { magic, version }
    }
}

/// The first three words of every header: magic number, layout version and
/// init state. Atomic words, so a peer writing them concurrently is a race
/// on values, never on memory safety.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Stamp {
    magic: AtomicU32,
    version: AtomicU32,
    /// 0 (zeroed memory): uninitialised; `STATE_INITIALISING`;
    /// `STATE_READY`, stored with Release once everything else is written.
    state: AtomicU32,
}

const _: () = assert!(size_of::<Stamp>() == 12 && align_of::<Stamp>() == 4);

impl Stamp {
    /// The creator's first step: marks the header as being written and
    /// stamps `id`. The creator then writes the rest and calls
    /// [`publish`](Self::publish).
    pub(crate) fn begin(&self, id: LayoutId) {
        self.state.store(STATE_INITIALISING, Ordering::Relaxed);
        self.magic.store(id.magic, Ordering::Relaxed);
        self.version.store(id.version, Ordering::Relaxed);
    }

    /// The creator's last step. Release: a peer that loads "ready" with
    /// Acquire ([`check`](Self::check)) sees every store before this one.
    pub(crate) fn publish(&self) {
        self.state.store(STATE_READY, Ordering::Release);
    }

    /// The attacher's first step: the layout is ready, then of kind `id`.
    ///
    /// # Errors
    ///
    /// [`RegionError::NotReady`] (worth retrying), [`RegionError::BadMagic`],
    /// [`RegionError::BadVersion`].
    pub(crate) fn check(&self, id: LayoutId) -> Result<(), RegionError> {
        // Acquire: pairs with `publish`, so the fields read after this are
        // the creator's (unless a hostile peer rewrites them, which the
        // checks that follow contain).
        let state = self.state.load(Ordering::Acquire);
        if state != STATE_READY {
            return Err(RegionError::NotReady { state });
        }
        let magic = self.magic.load(Ordering::Relaxed);
        if magic != id.magic {
            return Err(RegionError::BadMagic { found: magic });
        }
        let version = self.version.load(Ordering::Relaxed);
        if version != id.version {
            return Err(RegionError::BadVersion { found: version });
        }
        Ok(())
    }
}

/// A header: a struct of atomic words only, so any bytes are a valid value
/// and a peer writing them races on values only.
///
/// # Safety
///
/// Implementors consist of `AtomicU32`s of the crate's facade (arrays and
/// structs of them included) and nothing else.
pub(crate) unsafe trait Header: Sized {}

/// Checks that `region` holds `needed` bytes and starts on an `align`
/// boundary, then returns the header at its start.
///
/// # Errors
///
/// [`RegionError::TooSmall`], then [`RegionError::Misaligned`].
pub(crate) fn header<'a, H: Header>(
    region: &Region<'a>,
    needed: usize,
    align: usize,
) -> Result<&'a H, RegionError> {
    check_region(
        region,
        needed.max(size_of::<H>()),
        align.max(align_of::<H>()),
    )?;
    // SAFETY: the region holds at least a header's bytes, aligned for it
    // (checked just above), valid for `'a` (the region's contract); `H` is
    // atomic words only (`Header`), valid for any bytes and shareable with a
    // peer that writes them.
    Ok(unsafe { &*region.as_ptr().cast::<H>() })
}

/// Checks that `region` holds `needed` bytes and starts on an `align`
/// boundary.
///
/// # Errors
///
/// [`RegionError::TooSmall`], then [`RegionError::Misaligned`].
pub(crate) fn check_region(
    region: &Region<'_>,
    needed: usize,
    align: usize,
) -> Result<(), RegionError> {
    check_region_len(needed, region.len())?;
    if !is_multiple_of(region.as_ptr() as usize, align) {
        return Err(RegionError::Misaligned { align });
    }
    Ok(())
}

/// Whether `x` is a multiple of `n` (0 only of itself), without a division
/// that can panic: `usize::is_multiple_of` is newer than the crate's
/// `rust-version`.
const fn is_multiple_of(x: usize, n: usize) -> bool {
    match x.checked_rem(n) {
        Some(r) => r == 0,
        None => x == 0,
    }
}

/// Checks that a region of `actual` bytes holds the `needed` ones.
///
/// # Errors
///
/// [`RegionError::TooSmall`].
pub(crate) fn check_region_len(needed: usize, actual: usize) -> Result<(), RegionError> {
    if actual < needed {
        return Err(RegionError::TooSmall { needed, actual });
    }
    Ok(())
}

/// Writes one word of a header the creator is filling in. Each layout's
/// `canonical` has checked that its offsets and sizes fit in a `u32`; a
/// value that did not would be stored as `u32::MAX`, never truncated.
/// Call it once per word, not in a loop over an array of words: the loop
/// takes more flash.
pub(crate) fn store_word(word: &AtomicU32, value: usize) {
    word.store(u32::try_from(value).unwrap_or(u32::MAX), Ordering::Relaxed);
}

/// Checks a release interval (how many pops a consumer may leave
/// unpublished) against its limit.
///
/// # Errors
///
/// [`RegionError::ReleaseInterval`] unless `1 <= found <= max`.
pub(crate) fn check_release_interval(found: usize, max: usize) -> Result<(), RegionError> {
    if found == 0 || found > max {
        return Err(RegionError::ReleaseInterval { found, max });
    }
    Ok(())
}

/// One part of a layout: where it starts (bytes from the region's start),
/// its length, and the alignment its start needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) align: usize,
}

/// Checks the parts a header names: each one's end representable, each
/// start aligned, no two overlapping. Returns where the part that ends last
/// ends.
///
/// # Errors
///
/// [`RegionError::BadOffsets`].
pub(crate) fn check_parts(parts: &[Part]) -> Result<usize, RegionError> {
    let mut end = 0;
    for (k, a) in parts.iter().enumerate() {
        let a_end = a.start.checked_add(a.len).ok_or(RegionError::BadOffsets)?;
        if !is_multiple_of(a.start, a.align) {
            return Err(RegionError::BadOffsets);
        }
        for b in parts.iter().skip(k + 1) {
            // `b`'s end is checked in its own turn; saturating here only
            // decides overlap, which an unrepresentable end fails anyway.
            if a.start < b.start.saturating_add(b.len) && b.start < a_end {
                return Err(RegionError::BadOffsets);
            }
        }
        end = end.max(a_end);
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(start: usize, len: usize, align: usize) -> Part {
        Part { start, len, align }
    }

    #[test]
    fn parts_in_any_order_pass_when_disjoint_and_aligned() {
        let parts = [part(0, 64, 1), part(256, 8, 4), part(128, 8, 4)];
        assert_eq!(check_parts(&parts), Ok(264));
        // An empty part where another ends is apart from it.
        assert_eq!(check_parts(&[part(0, 64, 1), part(64, 0, 4)]), Ok(64));
    }

    #[test]
    fn overlapping_misaligned_or_overflowing_parts_fail() {
        let bad = RegionError::BadOffsets;
        assert_eq!(check_parts(&[part(0, 64, 1), part(60, 8, 4)]), Err(bad));
        assert_eq!(check_parts(&[part(0, 64, 1), part(130, 8, 4)]), Err(bad));
        assert_eq!(
            check_parts(&[part(0, 64, 1), part(usize::MAX, 2, 1)]),
            Err(bad)
        );
        assert_eq!(
            check_parts(&[part(usize::MAX, 2, 1), part(0, 64, 1)]),
            Err(bad)
        );
    }

    #[test]
    fn release_intervals() {
        assert_eq!(check_release_interval(1, 1), Ok(()));
        assert_eq!(
            check_release_interval(0, 4),
            Err(RegionError::ReleaseInterval { found: 0, max: 4 })
        );
    }
}
