//! Scripting commands: EVAL, EVALSHA, SCRIPT. Thin entries into
//! `scripting`, which owns the cache and the Lua state.

use super::super::exec::Exec;
use super::super::scripting;
use super::Outcome;

pub(super) fn eval(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    scripting::eval(exec, args, false).into()
}

pub(super) fn evalsha(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    scripting::eval(exec, args, true).into()
}

pub(super) fn script(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    scripting::script(exec, args).into()
}
