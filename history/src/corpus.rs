//! A regression case: one failure redfence found, saved as a small text file
//! (one `key: value` a line) so it is re-run on every later sweep and in
//! `cargo test`, the way proptest keeps `proptest-regressions/`.
//!
//! Why a file a case and plain text: a reviewer reads the diff that adds a
//! case, and two branches that each save one do not conflict. Pure: the
//! format, its parser (typed errors, a byte bound) and the file name; reading
//! folders and re-running cases belong to the crates that do I/O.

use crate::property::Property;

/// The folder cases are saved to and re-run from when none is named.
pub const DIR_DEFAULT: &str = "redfence-regressions";

/// The longest case file read, in bytes: a case is a handful of short lines
/// (a random-faults schedule is the longest), so more is not a case.
pub const CASE_BYTES_MAX: usize = 64 * 1024;

/// The most cases one folder may hold: a bound on what a re-run reads.
pub const CASES_MAX: usize = 10_000;

/// What a case file's name ends with.
pub const EXTENSION: &str = "txt";

/// One saved failure: what to run again and what it violated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The scenario's name.
    pub scenario: String,
    /// The protocol's name.
    pub protocol: String,
    /// The world seed (the simulation's: cases re-run there).
    pub seed: u64,
    /// The fault schedule, for `random-faults`.
    pub schedule: Option<String>,
    /// The property the run violated.
    pub property: Property,
    /// The redfence version that found it.
    pub found_by: String,
    /// The redfence version that last saw it reproduce, when known.
    pub reproduced_by: Option<String>,
}

/// Why a case file does not parse.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    /// Longer than [`CASE_BYTES_MAX`].
    #[error("{0} bytes, over the {CASE_BYTES_MAX}-byte limit for a case")]
    TooLarge(usize),
    /// A line that is not `key: value`.
    #[error("line {line}: {text:?} is not `key: value`")]
    NotKeyValue {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// A key this version does not know.
    #[error("line {line}: unknown key {key:?}; known: {known}", known = KEYS.join(", "))]
    UnknownKey {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
    },
    /// A key given twice.
    #[error("line {line}: {key} is given twice")]
    Duplicate {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: &'static str,
    },
    /// A required key is absent.
    #[error("no {0} line")]
    Missing(&'static str),
    /// The seed is not a whole number.
    #[error("seed {0:?} is not a whole number")]
    BadSeed(String),
    /// The property is not one redfence checks.
    #[error("unknown property {0:?}")]
    UnknownProperty(String),
}

const SCENARIO: &str = "scenario";
const PROTOCOL: &str = "protocol";
const SEED: &str = "seed";
const SCHEDULE: &str = "schedule";
const PROPERTY: &str = "property";
const FOUND_BY: &str = "found-by";
const REPRODUCED_BY: &str = "reproduced-by";

/// Every key, in the order a case is written.
pub const KEYS: [&str; 7] = [
    SCENARIO,
    PROTOCOL,
    SEED,
    SCHEDULE,
    PROPERTY,
    FOUND_BY,
    REPRODUCED_BY,
];

impl Case {
    /// The file's text: a comment saying what it is, then one line a key.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# A failure redfence found; `redfence run` and `cargo test` re-run it.\n",
        );
        let mut line = |key: &str, value: &str| out.push_str(&format!("{key}: {value}\n"));
        line(SCENARIO, &self.scenario);
        line(PROTOCOL, &self.protocol);
        line(SEED, &self.seed.to_string());
        if let Some(schedule) = &self.schedule {
            line(SCHEDULE, schedule);
        }
        line(PROPERTY, self.property.name());
        line(FOUND_BY, &self.found_by);
        if let Some(version) = &self.reproduced_by {
            line(REPRODUCED_BY, version);
        }
        out
    }

    /// Parses a case file's text (blank lines and `#` comments skipped).
    pub fn parse(text: &str) -> Result<Case, CaseError> {
        if text.len() > CASE_BYTES_MAX {
            return Err(CaseError::TooLarge(text.len()));
        }
        let mut values: [Option<String>; KEYS.len()] = Default::default();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (key, value) = trimmed
                .split_once(':')
                .ok_or_else(|| CaseError::NotKeyValue {
                    line,
                    text: raw.to_owned(),
                })?;
            let key = key.trim();
            let slot =
                KEYS.iter()
                    .position(|k| *k == key)
                    .ok_or_else(|| CaseError::UnknownKey {
                        line,
                        key: key.to_owned(),
                    })?;
            if values[slot].is_some() {
                return Err(CaseError::Duplicate {
                    line,
                    key: KEYS[slot],
                });
            }
            values[slot] = Some(value.trim().to_owned());
        }
        let [scenario, protocol, seed, schedule, property, found_by, reproduced_by] = values;
        let seed = seed.ok_or(CaseError::Missing(SEED))?;
        let property = property.ok_or(CaseError::Missing(PROPERTY))?;
        Ok(Case {
            scenario: scenario.ok_or(CaseError::Missing(SCENARIO))?,
            protocol: protocol.ok_or(CaseError::Missing(PROTOCOL))?,
            seed: seed.parse().map_err(|_| CaseError::BadSeed(seed.clone()))?,
            schedule,
            property: Property::from_name(&property).ok_or(CaseError::UnknownProperty(property))?,
            found_by: found_by.ok_or(CaseError::Missing(FOUND_BY))?,
            reproduced_by,
        })
    }

    /// The deterministic file name: `<scenario>--<protocol>--<seed>--<property>`
    /// and, for a schedule, a hash of it (one seed explores many schedules).
    pub fn file_name(&self) -> String {
        let mut name = format!(
            "{}--{}--{}--{}",
            safe(&self.scenario),
            safe(&self.protocol),
            self.seed,
            self.property.name()
        );
        if let Some(schedule) = &self.schedule {
            name.push_str(&format!("--{:016x}", fnv1a(schedule.as_bytes())));
        }
        format!("{name}.{EXTENSION}")
    }

    /// Whether `other` is the same failure (versions aside).
    pub fn same_failure(&self, other: &Case) -> bool {
        (
            &self.scenario,
            &self.protocol,
            self.seed,
            &self.schedule,
            self.property,
        ) == (
            &other.scenario,
            &other.protocol,
            other.seed,
            &other.schedule,
            other.property,
        )
    }

    /// The version that last saw it reproduce: the one recorded, else the
    /// one that found it.
    pub fn last_reproduced_by(&self) -> &str {
        self.reproduced_by.as_deref().unwrap_or(&self.found_by)
    }
}

/// A name made safe for a file name: a team's own protocol can be called
/// anything, and a path separator must not reach the folder.
fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 64-bit FNV-1a: stable across Rust versions and machines, unlike std's
/// hasher, so a schedule names the same file everywhere.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Case {
        Case {
            scenario: "random-faults".to_owned(),
            protocol: "no-fence-check".to_owned(),
            seed: 7,
            schedule: Some("300 pause w0 1200".to_owned()),
            property: Property::FenceOrder,
            found_by: "0.1.0".to_owned(),
            reproduced_by: None,
        }
    }

    #[test]
    fn a_case_round_trips_through_its_text() {
        let mut c = case();
        assert_eq!(Case::parse(&c.render()), Ok(c.clone()));
        c.schedule = None;
        c.reproduced_by = Some("0.2.0".to_owned());
        assert_eq!(Case::parse(&c.render()), Ok(c.clone()));
        assert!(c.render().contains("\nproperty: fence-order\n"));
    }

    #[test]
    fn a_file_name_is_deterministic_and_safe() {
        let mut c = case();
        let name = c.file_name();
        assert!(name.starts_with("random-faults--no-fence-check--7--fence-order--"));
        assert!(name.ends_with(".txt"));
        assert_eq!(name, case().file_name());
        c.schedule = Some("301 pause w0 1200".to_owned());
        assert_ne!(c.file_name(), name, "another schedule, another file");
        c.schedule = None;
        c.protocol = "../my lock".to_owned();
        assert_eq!(
            c.file_name(),
            "random-faults--___my_lock--7--fence-order.txt"
        );
    }

    #[test]
    fn bad_files_get_typed_errors() {
        let good = case().render();
        assert_eq!(
            Case::parse(&"x".repeat(CASE_BYTES_MAX + 1)),
            Err(CaseError::TooLarge(CASE_BYTES_MAX + 1))
        );
        assert!(matches!(
            Case::parse(&format!("{good}oops\n")),
            Err(CaseError::NotKeyValue { .. })
        ));
        assert!(matches!(
            Case::parse(&format!("{good}colour: red\n")),
            Err(CaseError::UnknownKey { .. })
        ));
        assert!(matches!(
            Case::parse(&format!("{good}seed: 8\n")),
            Err(CaseError::Duplicate { key: "seed", .. })
        ));
        assert_eq!(
            Case::parse(&good.replace("seed: 7", "seed: seven")),
            Err(CaseError::BadSeed("seven".to_owned()))
        );
        assert_eq!(
            Case::parse(&good.replace("fence-order", "tidiness")),
            Err(CaseError::UnknownProperty("tidiness".to_owned()))
        );
        assert_eq!(
            Case::parse(&good.replace("found-by: 0.1.0\n", "")),
            Err(CaseError::Missing("found-by"))
        );
    }

    #[test]
    fn same_failure_ignores_versions() {
        let mut other = case();
        other.found_by = "9.9.9".to_owned();
        other.reproduced_by = Some("9.9.9".to_owned());
        assert!(case().same_failure(&other));
        other.seed = 8;
        assert!(!case().same_failure(&other));
    }
}
