//! Command dispatch: Redis's pre-execution checks (unknown command, arity,
//! "not allowed from script", OOM, READONLY on a replica), then the command
//! group's handler, for client connections and for `redis.call` inside
//! scripts — both entry points side by side, so their order stays Redis's
//! `processCommand` / `scriptCall` order and only the wording differs.
//!
//! Apart from `server.rs` so that the server's state does not depend on the
//! handlers (`cmd/`) nor on their context (`exec.rs`), which depend on it.

use super::cmd::{self, Command, Flags, Outcome};
use super::exec::{Caller, Exec};
use super::frame::Frame;
use super::keyspace::KEYS_MAX;
use super::server::{Client, Server};

impl Server {
    /// Runs one command from a client connection.
    pub(crate) fn execute(&self, client: &mut Client, args: &[Vec<u8>]) -> Outcome {
        debug_assert!(
            !args.is_empty(),
            "empty requests are skipped by the connection"
        );
        let now_ms = self.now_ms();
        if let Some(log) = &self.config.command_log {
            log.record(now_ms, &self.config.name, &client.addr, args);
        }
        let outcome = match self.check(args, Caller::Client) {
            Err(reply) => Outcome::Reply(reply),
            Ok(command) => {
                let mut exec = Exec {
                    server: self,
                    db: client.db,
                    client: Some(client),
                    now_ms,
                };
                let outcome = (command.handler)(&mut exec, args);
                let db = exec.db;
                client.db = db;
                outcome
            }
        };
        self.flush_effects();
        outcome
    }

    /// Runs one command from `redis.call` inside a script (db and time are
    /// the script's). Error replies are the script-flavoured ones.
    pub(crate) fn execute_from_script(
        &self,
        db: &mut usize,
        now_ms: u64,
        args: &[Vec<u8>],
    ) -> Frame {
        let command = match self.check(args, Caller::Script) {
            Ok(command) => command,
            Err(reply) => return reply,
        };
        let mut exec = Exec {
            server: self,
            db: *db,
            client: None,
            now_ms,
        };
        let outcome = (command.handler)(&mut exec, args);
        *db = exec.db;
        match outcome {
            Outcome::Reply(frame) => frame,
            // Blocking/connection-level outcomes are NOSCRIPT commands,
            // refused by `check` above.
            other => {
                debug_assert!(false, "script ran a connection-level command: {other:?}");
                Frame::error("ERR This Redis command is not allowed from script")
            }
        }
    }

    /// Redis's pre-execution checks, in `processCommand` order.
    fn check(&self, args: &[Vec<u8>], caller: Caller) -> Result<&'static Command, Frame> {
        let Some(name) = args.first() else {
            return Err(Frame::error("ERR empty command"));
        };
        let Some(command) = cmd::lookup(name) else {
            return Err(match caller {
                Caller::Client => cmd::unknown_command(args),
                Caller::Script => Frame::error("ERR Unknown Redis command called from script"),
            });
        };
        if !command.arity_ok(args.len()) {
            return Err(match caller {
                Caller::Client => Frame::error(format!(
                    "ERR wrong number of arguments for '{}' command",
                    command.name
                )),
                Caller::Script => {
                    Frame::error("ERR Wrong number of args calling Redis command from script")
                }
            });
        }
        if caller == Caller::Script && command.flags.contains(Flags::NOSCRIPT) {
            return Err(Frame::error(
                "ERR This Redis command is not allowed from script",
            ));
        }
        if command.flags.contains(Flags::DENYOOM) && self.keyspace.borrow().keys_total() >= KEYS_MAX
        {
            return Err(Frame::error(
                "OOM command not allowed when used memory > 'maxmemory'.",
            ));
        }
        if command.flags.contains(Flags::WRITE) && !self.is_primary() {
            return Err(Frame::error(
                "READONLY You can't write against a read only replica.",
            ));
        }
        Ok(command)
    }
}
