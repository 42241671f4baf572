//! redfence patch: a fixed, cheap hasher for the maps turmoil looks up on
//! every step (hosts and runtimes by address, links by address pair).
//! The std `RandomState` (SipHash-1-3) cost a twentieth of a simulated run
//! in these lookups alone. Iteration order is unchanged: an `IndexMap`
//! iterates in insertion order whatever its hasher.

use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, 64 bits.
#[derive(Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// An insertion-ordered map hashed with [`Fnv`].
pub(crate) type FastMap<K, V> = indexmap::IndexMap<K, V, BuildHasherDefault<Fnv>>;
