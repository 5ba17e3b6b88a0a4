//! What several test binaries share: `mod common;` in each.

/// A xorshift64 generator: seeded, so a failing run repeats exactly.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next value; never 0 from a seed that is not 0.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
