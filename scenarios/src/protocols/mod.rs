//! The protocols shipped with the harness: the reference lock and the
//! mutants, deliberately broken variants that prove the scenarios bite.
//!
//! Every protocol has one kebab-case name used in the CLI, reports, test
//! names and docs; [`all`] lists them in a fixed order.

use std::sync::Arc;

use redfence_core::{LockError, ResourceName, StoreError};

use crate::protocol::{Protocol, StepError};

pub mod reference;

pub use reference::{Reference, ReferenceSession};

/// Every shipped protocol, reference first.
pub fn all() -> Vec<Arc<dyn Protocol>> {
    vec![Arc::new(Reference)]
}

/// The shipped protocol called `name`.
pub fn by_name(name: &str) -> Option<Arc<dyn Protocol>> {
    all().into_iter().find(|p| p.name() == name)
}

/// A validated resource name (scenarios use plain names).
pub fn resource_name(resource: &str) -> Result<ResourceName, StepError> {
    ResourceName::new(resource).map_err(|e| StepError::Failed(e.to_string()))
}

/// A library error as a step outcome: only a lost reply is indeterminate.
pub fn lock_error(error: LockError) -> StepError {
    match error {
        LockError::Indeterminate { .. } => StepError::Indeterminate(error.to_string()),
        other => StepError::Failed(other.to_string()),
    }
}

/// A store error as a step outcome: definite only when the request was never
/// sent or the store refused to run it.
pub fn store_error(error: StoreError) -> StepError {
    let text = error.to_string();
    match &error {
        StoreError::InvalidInput(_) | StoreError::Mutation(_) => StepError::Failed(text),
        StoreError::Transport(message)
            if message.starts_with("request not sent")
                || message.starts_with("request refused by the store, not run") =>
        {
            StepError::Failed(text)
        }
        _ => StepError::Indeterminate(text),
    }
}
