//! Lock configuration: a validated builder with every default documented once.
//!
//! | field | default | bound |
//! |---|---|---|
//! | `lease_ms` | 30 000 | 1 ..= 86 400 000 |
//! | `renew_interval_ms` | `lease_ms / 3` (at least 1) | 1 ..< `lease_ms` |
//! | `hold_ms_max` | 300 000 | `lease_ms` ..= 86 400 000 |
//! | `renewals_max` | 30 | 0 ..= 100 000 |
//! | `acquire_deadline_ms` | 10 000 | 1 ..= 3 600 000 |
//! | `backoff_base_ms` | 25 | 1 ..= `backoff_cap_ms` |
//! | `backoff_cap_ms` | 1 000 | 1 ..= 600 000 |
//! | `attempts_max` | 50 | 1 ..= 100 000 |
//! | `op_timeout_ms` | 500 | 1 ..< `lease_ms` |
//! | `reasks_max` | 3 | 0 ..= 100 |
//! | `keys` | `lock:{name}`, `fence:{name}` | see [`KeyScheme`] |
//! | `fence_source` | [`FenceSourceKind::RedisCounter`] | |
//!
//! The renew interval defaults to a third of the lease so that two renewals can
//! fail before the lease runs out. The operation timeout matches redis-rs's own
//! response timeout and must stay below the lease: an "acquired" reply that
//! arrives after the lease ended would be a lie.

use std::time::Duration;

use crate::error::ConfigError;
use crate::resource::KeyScheme;

const LEASE_MS_MAX: u64 = 86_400_000;
const HOLD_MS_MAX_MAX: u64 = 86_400_000;
const RENEWALS_MAX_MAX: u32 = 100_000;
const ACQUIRE_DEADLINE_MS_MAX: u64 = 3_600_000;
const BACKOFF_CAP_MS_MAX: u64 = 600_000;
const ATTEMPTS_MAX_MAX: u32 = 100_000;
const REASKS_MAX_MAX: u32 = 100;

pub use redfence_history::FenceSourceKind;

/// Validated lock configuration. Build it with [`LockConfig::builder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockConfig {
    lease_ms: u64,
    renew_interval_ms: u64,
    hold_ms_max: u64,
    renewals_max: u32,
    acquire_deadline_ms: u64,
    backoff_base_ms: u64,
    backoff_cap_ms: u64,
    attempts_max: u32,
    op_timeout_ms: u64,
    reasks_max: u32,
    keys: KeyScheme,
    fence_source: FenceSourceKind,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfigBuilder::default()
            .build()
            .expect("the documented defaults are valid")
    }
}

impl LockConfig {
    /// A builder starting from the documented defaults.
    pub fn builder() -> LockConfigBuilder {
        LockConfigBuilder::default()
    }

    /// How long a lease lasts unless renewed.
    pub fn lease_ms(&self) -> u64 {
        self.lease_ms
    }
    /// How often the keeper renews.
    pub fn renew_interval_ms(&self) -> u64 {
        self.renew_interval_ms
    }
    /// Longest a lease may be held, renewals included.
    pub fn hold_ms_max(&self) -> u64 {
        self.hold_ms_max
    }
    /// Most renewals per lease.
    pub fn renewals_max(&self) -> u32 {
        self.renewals_max
    }
    /// Longest `acquire` waits before answering retry-later.
    pub fn acquire_deadline_ms(&self) -> u64 {
        self.acquire_deadline_ms
    }
    /// Full-jitter base.
    pub fn backoff_base_ms(&self) -> u64 {
        self.backoff_base_ms
    }
    /// Full-jitter cap.
    pub fn backoff_cap_ms(&self) -> u64 {
        self.backoff_cap_ms
    }
    /// Most acquire attempts per `acquire`.
    pub fn attempts_max(&self) -> u32 {
        self.attempts_max
    }
    /// Timeout of one Redis round trip.
    pub fn op_timeout_ms(&self) -> u64 {
        self.op_timeout_ms
    }
    /// Re-asks with the same owner token after an indeterminate outcome.
    pub fn reasks_max(&self) -> u32 {
        self.reasks_max
    }
    /// Key spelling.
    pub fn keys(&self) -> &KeyScheme {
        &self.keys
    }
    /// Fence source.
    pub fn fence_source(&self) -> FenceSourceKind {
        self.fence_source
    }
    /// `lease_ms` as a `Duration`.
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }
    /// `op_timeout_ms` as a `Duration`.
    pub fn op_timeout(&self) -> Duration {
        Duration::from_millis(self.op_timeout_ms)
    }
}

/// Builder for [`LockConfig`]; every setter takes the unit named in its suffix.
#[derive(Clone, Debug, Default)]
pub struct LockConfigBuilder {
    lease_ms: Option<u64>,
    renew_interval_ms: Option<u64>,
    hold_ms_max: Option<u64>,
    renewals_max: Option<u32>,
    acquire_deadline_ms: Option<u64>,
    backoff_base_ms: Option<u64>,
    backoff_cap_ms: Option<u64>,
    attempts_max: Option<u32>,
    op_timeout_ms: Option<u64>,
    reasks_max: Option<u32>,
    keys: Option<KeyScheme>,
    fence_source: Option<FenceSourceKind>,
}

macro_rules! setter {
    ($name:ident, $ty:ty) => {
        #[doc = concat!("Sets `", stringify!($name), "`; see the module table for its default and bound.")]
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = Some(value);
            self
        }
    };
}

impl LockConfigBuilder {
    setter!(lease_ms, u64);
    setter!(renew_interval_ms, u64);
    setter!(hold_ms_max, u64);
    setter!(renewals_max, u32);
    setter!(acquire_deadline_ms, u64);
    setter!(backoff_base_ms, u64);
    setter!(backoff_cap_ms, u64);
    setter!(attempts_max, u32);
    setter!(op_timeout_ms, u64);
    setter!(reasks_max, u32);
    setter!(keys, KeyScheme);
    setter!(fence_source, FenceSourceKind);

    /// Validates and builds; every invalid value or combination is a
    /// [`ConfigError`] naming the field.
    pub fn build(self) -> Result<LockConfig, ConfigError> {
        let lease_ms = in_range("lease_ms", self.lease_ms.unwrap_or(30_000), 1, LEASE_MS_MAX)?;
        let renew_interval_ms = self.renew_interval_ms.unwrap_or((lease_ms / 3).max(1));
        in_range("renew_interval_ms", renew_interval_ms, 1, LEASE_MS_MAX)?;
        if renew_interval_ms >= lease_ms {
            return Err(ConfigError::RenewIntervalNotBelowLease {
                renew_interval_ms,
                lease_ms,
            });
        }
        let hold_ms_max = in_range(
            "hold_ms_max",
            self.hold_ms_max.unwrap_or(300_000),
            1,
            HOLD_MS_MAX_MAX,
        )?;
        if hold_ms_max < lease_ms {
            return Err(ConfigError::HoldBelowLease {
                hold_ms_max,
                lease_ms,
            });
        }
        let renewals_max = in_range(
            "renewals_max",
            u64::from(self.renewals_max.unwrap_or(30)),
            0,
            u64::from(RENEWALS_MAX_MAX),
        )? as u32;
        let acquire_deadline_ms = in_range(
            "acquire_deadline_ms",
            self.acquire_deadline_ms.unwrap_or(10_000),
            1,
            ACQUIRE_DEADLINE_MS_MAX,
        )?;
        let backoff_cap_ms = in_range(
            "backoff_cap_ms",
            self.backoff_cap_ms.unwrap_or(1_000),
            1,
            BACKOFF_CAP_MS_MAX,
        )?;
        let backoff_base_ms = in_range(
            "backoff_base_ms",
            self.backoff_base_ms.unwrap_or(25),
            1,
            BACKOFF_CAP_MS_MAX,
        )?;
        if backoff_base_ms > backoff_cap_ms {
            return Err(ConfigError::BackoffBaseAboveCap {
                backoff_base_ms,
                backoff_cap_ms,
            });
        }
        let attempts_max = in_range(
            "attempts_max",
            u64::from(self.attempts_max.unwrap_or(50)),
            1,
            u64::from(ATTEMPTS_MAX_MAX),
        )? as u32;
        let op_timeout_ms = in_range(
            "op_timeout_ms",
            self.op_timeout_ms.unwrap_or(500),
            1,
            LEASE_MS_MAX,
        )?;
        if op_timeout_ms >= lease_ms {
            return Err(ConfigError::OpTimeoutNotBelowLease {
                op_timeout_ms,
                lease_ms,
            });
        }
        let reasks_max = in_range(
            "reasks_max",
            u64::from(self.reasks_max.unwrap_or(3)),
            0,
            u64::from(REASKS_MAX_MAX),
        )? as u32;
        Ok(LockConfig {
            lease_ms,
            renew_interval_ms,
            hold_ms_max,
            renewals_max,
            acquire_deadline_ms,
            backoff_base_ms,
            backoff_cap_ms,
            attempts_max,
            op_timeout_ms,
            reasks_max,
            keys: self.keys.unwrap_or_default(),
            fence_source: self.fence_source.unwrap_or_default(),
        })
    }
}

fn in_range(field: &'static str, value: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
    if value < min || value > max {
        return Err(ConfigError::OutOfRange {
            field,
            value,
            min,
            max,
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_values() {
        let c = LockConfig::default();
        assert_eq!(c.lease_ms(), 30_000);
        assert_eq!(c.renew_interval_ms(), 10_000);
        assert_eq!(c.hold_ms_max(), 300_000);
        assert_eq!(c.renewals_max(), 30);
        assert_eq!(c.acquire_deadline_ms(), 10_000);
        assert_eq!(c.backoff_base_ms(), 25);
        assert_eq!(c.backoff_cap_ms(), 1_000);
        assert_eq!(c.attempts_max(), 50);
        assert_eq!(c.op_timeout_ms(), 500);
        assert_eq!(c.reasks_max(), 3);
        assert_eq!(c.fence_source(), FenceSourceKind::RedisCounter);
    }

    #[test]
    fn renew_interval_follows_lease() {
        let c = LockConfig::builder()
            .lease_ms(900)
            .op_timeout_ms(100)
            .build()
            .unwrap();
        assert_eq!(c.renew_interval_ms(), 300);
    }

    #[test]
    fn every_invalid_combination_is_a_typed_error() {
        let b = LockConfig::builder;
        assert!(matches!(
            b().lease_ms(0).build(),
            Err(ConfigError::OutOfRange {
                field: "lease_ms",
                ..
            })
        ));
        assert!(matches!(
            b().lease_ms(LEASE_MS_MAX + 1).build(),
            Err(ConfigError::OutOfRange {
                field: "lease_ms",
                ..
            })
        ));
        assert_eq!(
            b().lease_ms(1000).renew_interval_ms(1000).build(),
            Err(ConfigError::RenewIntervalNotBelowLease {
                renew_interval_ms: 1000,
                lease_ms: 1000
            })
        );
        assert!(matches!(
            b().renew_interval_ms(0).build(),
            Err(ConfigError::OutOfRange {
                field: "renew_interval_ms",
                ..
            })
        ));
        assert_eq!(
            b().lease_ms(1000).hold_ms_max(999).build(),
            Err(ConfigError::HoldBelowLease {
                hold_ms_max: 999,
                lease_ms: 1000
            })
        );
        assert!(matches!(
            b().renewals_max(RENEWALS_MAX_MAX + 1).build(),
            Err(ConfigError::OutOfRange {
                field: "renewals_max",
                ..
            })
        ));
        assert!(matches!(
            b().acquire_deadline_ms(0).build(),
            Err(ConfigError::OutOfRange {
                field: "acquire_deadline_ms",
                ..
            })
        ));
        assert_eq!(
            b().backoff_base_ms(50).backoff_cap_ms(10).build(),
            Err(ConfigError::BackoffBaseAboveCap {
                backoff_base_ms: 50,
                backoff_cap_ms: 10
            })
        );
        assert!(matches!(
            b().backoff_base_ms(0).build(),
            Err(ConfigError::OutOfRange {
                field: "backoff_base_ms",
                ..
            })
        ));
        assert!(matches!(
            b().attempts_max(0).build(),
            Err(ConfigError::OutOfRange {
                field: "attempts_max",
                ..
            })
        ));
        assert_eq!(
            b().lease_ms(100).op_timeout_ms(100).build(),
            Err(ConfigError::OpTimeoutNotBelowLease {
                op_timeout_ms: 100,
                lease_ms: 100
            })
        );
        assert!(matches!(
            b().reasks_max(REASKS_MAX_MAX + 1).build(),
            Err(ConfigError::OutOfRange {
                field: "reasks_max",
                ..
            })
        ));
    }
}
