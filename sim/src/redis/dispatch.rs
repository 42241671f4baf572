//! Command dispatch: Redis's pre-execution checks (unknown command, arity,
//! "not allowed from script", OOM, READONLY on a replica, RESP2 subscribed
//! mode), queueing inside MULTI (a refused command aborts the transaction),
//! then the command group's handler, and after it serving clients blocked
//! in BLPOP, for client connections and for `redis.call` inside
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
            Err(reply) => Outcome::Reply(self.refuse(client, &args[0], reply)),
            Ok(command)
                if !client.channels.is_empty()
                    && !matches!(command.name, "ping" | "subscribe" | "unsubscribe") =>
            {
                let reply = Frame::error(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    cmd::full_name(command, args)
                ));
                Outcome::Reply(self.refuse(client, &args[0], reply))
            }
            Ok(command) if !cmd::runs_inside_multi(command.name) && client.multi.is_some() => {
                Outcome::Reply(client.multi.as_mut().map_or(Frame::Null, |m| m.queue(args)))
            }
            Ok(command) => {
                let mut exec = Exec {
                    server: self,
                    db: client.db,
                    client: Some(client),
                    now_ms,
                    deny_blocking: false,
                };
                let outcome = (command.handler)(&mut exec, args);
                let db = exec.db;
                client.db = db;
                outcome
            }
        };
        // Blocked clients are served after the command that pushed, before
        // any other command runs; their pops join its replication batch.
        if self.lists_pushed.replace(false) && !self.blocked.borrow().is_empty() {
            cmd::serve_blocked(self, now_ms);
        }
        self.flush_effects();
        outcome
    }

    /// A client's command was refused before running (Redis's
    /// `rejectCommand`): an open transaction is marked to abort, and a
    /// refused EXEC discards it at once, wrapping the reason in EXECABORT.
    fn refuse(&self, client: &mut Client, name: &[u8], reply: Frame) -> Frame {
        client.flag_transaction();
        if !name.eq_ignore_ascii_case(b"exec") {
            return reply;
        }
        client.multi = None;
        self.keyspace
            .borrow_mut()
            .unwatch_all(client.id, &client.watched);
        client.watched.clear();
        let Frame::Error(text) = reply else {
            return reply;
        };
        let reason = text.strip_prefix(b"ERR ").unwrap_or(&text);
        let mut wrapped = b"EXECABORT Transaction discarded because of: ".to_vec();
        wrapped.extend_from_slice(reason);
        Frame::error(wrapped)
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
            deny_blocking: true,
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
        cmd::check_subcommand(command, args, caller == Caller::Script)?;
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
