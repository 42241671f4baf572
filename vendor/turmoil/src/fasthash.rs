//! redfence patch: a fixed, cheap hasher for the maps turmoil looks up on
//! every step or every segment (hosts and runtimes by address, links by
//! address pair, a host's stream sockets by socket pair, its binds by port,
//! a stream's out-of-order segments by sequence number). The std
//! `RandomState` (SipHash-1-3) cost a twentieth of a simulated run in the
//! per-step lookups alone, and the socket lookup still 1.5% under a busy
//! scenario. Iteration order is unchanged: an `IndexMap` iterates in
//! insertion order whatever its hasher, and the hasher is fixed (no
//! per-process seed), so runs stay the same bytes.

use std::hash::{BuildHasherDefault, Hasher};

/// The multiply-rotate word hash of rustc's `FxHasher`: one multiply per
/// written integer, so an address (a few small writes) costs a few
/// instructions where a byte-wise hash (FNV-1a, this patch's first choice)
/// or SipHash cost about a hundred.
#[derive(Clone, Copy, Default)]
pub(crate) struct Fx(u64);

/// Odd, with well-spread bits (rustc-hash 2's multiplier).
const FX_K: u64 = 0xf135_7aea_2e62_a9c5;

impl Fx {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = self.0.wrapping_add(word).wrapping_mul(FX_K);
    }
}

impl Hasher for Fx {
    #[inline]
    fn finish(&self) -> u64 {
        // The multiply moves entropy up, and hashbrown picks buckets by the
        // low bits: rotate the well-mixed high bits down (as rustc-hash 2).
        self.0.rotate_left(26)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// An insertion-ordered map hashed with [`Fx`].
pub(crate) type FastMap<K, V> = indexmap::IndexMap<K, V, BuildHasherDefault<Fx>>;
