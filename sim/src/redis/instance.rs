//! An instance's life: starting it with its background tasks (the active
//! expiry cycle, the link to its primary when it starts as a replica) and
//! promoting it to primary.
//!
//! Apart from `server.rs` because these drive replication (`replication.rs`),
//! which in turn drives a server: the server's state itself imports neither.

use std::rc::Rc;

use super::clock::Clock;
use super::replication::{become_primary, become_replica};
use super::server::{Server, ACTIVE_EXPIRE_PERIOD_MS};
use super::transport::Transport;
use super::{OwnershipLog, RedisConfig};

impl Server {
    /// Creates the instance and starts its background tasks (must run on a
    /// `LocalSet`).
    pub(crate) fn start(
        config: RedisConfig,
        log: OwnershipLog,
        clock: Clock,
        transport: Transport,
    ) -> Rc<Server> {
        let server = Rc::new_cyclic(|me| {
            let mut server = Self::new(config, log, clock, transport);
            server.me = me.clone();
            server
        });
        let weak = Rc::downgrade(&server);
        let expiry = tokio::task::spawn_local(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(ACTIVE_EXPIRE_PERIOD_MS)).await;
                let Some(server) = weak.upgrade() else { return };
                server.active_expire_cycle();
            }
        });
        server.tasks.borrow_mut().push(expiry);
        if let Some((host, port)) = server.config.replica_of.clone() {
            become_replica(&server, host, port);
        }
        server
    }

    pub(crate) fn promote(self: &Rc<Self>) {
        become_primary(self);
    }
}
