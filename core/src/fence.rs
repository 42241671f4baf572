//! The fencing token: a number that grows with every new ownership.
//!
//! A storage target accepts a write only when its fence is greater than the
//! last fence it accepted, so a worker whose lease ended cannot overwrite its
//! successor. Gaps are fine; only strict order matters.

use std::fmt;

use crate::error::InvalidInput;

/// A positive fencing token. Stored as `i64` because that is what Postgres
/// `BIGINT` and Redis `INCR` both hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fence(i64);

impl Fence {
    /// A fence from its number; zero and negatives are refused because every
    /// counter starts above the initial `last_fence` of 0.
    pub fn new(value: i64) -> Result<Self, InvalidInput> {
        if value <= 0 {
            return Err(InvalidInput::Fence { value });
        }
        Ok(Self(value))
    }

    /// The number.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
