//! Turns on `turmoil_idle_fast_path` when the turmoil being built is the
//! workspace's patched copy (`vendor/turmoil`, which says so through its
//! `links` metadata). A team's crate outside the workspace resolves turmoil
//! 0.7.2 from crates.io, since a `[patch]` does not reach dependents; the
//! world then polls every host every tick, which gives the same bytes
//! (proven in the workspace by `skipping_the_poll_of_idle_hosts_changes_no_byte`),
//! only slower — rather than failing to compile.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(turmoil_idle_fast_path)");
    println!("cargo::rerun-if-env-changed=DEP_REDFENCE_TURMOIL_IDLE_FAST_PATH");
    if std::env::var_os("DEP_REDFENCE_TURMOIL_IDLE_FAST_PATH").is_some() {
        println!("cargo::rustc-cfg=turmoil_idle_fast_path");
    }
}
