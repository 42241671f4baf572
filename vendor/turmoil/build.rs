//! redfence patch (PATCHES.md, change 5): tells the crates that depend on
//! turmoil directly that this copy has the idle fast path
//! (`Builder::idle_fast_path`, `Sim::idle_ticks_unpolled`). A crate built
//! outside the redfence workspace gets turmoil 0.7.2 from crates.io instead,
//! since a `[patch]` does not reach dependents; it sees no such metadata
//! and polls every host, which gives the same bytes, only slower.

fn main() {
    // Read by the dependent's build script as
    // DEP_REDFENCE_TURMOIL_IDLE_FAST_PATH.
    println!("cargo::metadata=idle_fast_path=1");
}
