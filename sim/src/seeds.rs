//! Deriving independent seeds from the world's one `u64` seed.
//!
//! Every random choice in a run — turmoil's network, each worker's owner
//! tokens and jitter — must follow from the single seed a user types into
//! `replay`, yet the streams must not be correlated (two workers drawing the
//! same jitter would move in lockstep). SplitMix64 over (seed, stream) gives
//! that, with no state to share.

/// A 64-bit seed for stream `stream` of the run seeded by `seed`.
pub fn derive(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Stream numbers, one per use, so that adding a use never shifts another's.
pub mod stream {
    /// turmoil's RNG (network latency draws).
    pub const TURMOIL: u64 = 1;
    /// Owner tokens of worker `i` use `TOKENS_BASE + i`.
    pub const TOKENS_BASE: u64 = 1_000;
    /// Jitter of worker `i` uses `JITTER_BASE + i`.
    pub const JITTER_BASE: u64 = 2_000;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        assert_eq!(derive(1, 2), derive(1, 2));
        assert_ne!(derive(1, 2), derive(1, 3));
        assert_ne!(derive(1, 2), derive(2, 2));
    }
}
