//! Redis's canonical error texts (checked against redis-server 7.0.15), in
//! a file of their own: command handlers, the script cache and dispatch all
//! answer with them, and none of those should import another for a string.

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const SYNTAX: &str = "ERR syntax error";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
