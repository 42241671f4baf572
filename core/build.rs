//! Rebuilds the crate when a migration is added or changed.
//!
//! `sqlx::migrate!` embeds `migrations/` at compile time, and cargo does not
//! notice a new file there by itself: without this, a binary built before a
//! migration was added keeps applying the old set (seen when 0002 was
//! added: the real world's databases stayed at version 1). sqlx's own
//! documentation gives the same advice.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
