//! `redfence list`: every scenario, protocol and property, one line each.

use std::process::ExitCode;

use redfence_scenarios::{catalog, protocols, Property};

use super::CliError;

/// The first sentence of `text`.
fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

/// Prints the catalog.
pub fn list() -> Result<ExitCode, CliError> {
    println!("SCENARIOS");
    for scenario in catalog::all() {
        println!(
            "  {:<30} {}",
            scenario.name(),
            first_sentence(scenario.describe())
        );
    }
    println!("\nPROTOCOLS");
    for protocol in protocols::all() {
        println!("  {:<30} {}", protocol.name(), protocol.describe());
    }
    println!("\nPROPERTIES");
    for property in Property::ALL {
        println!("  {:<30} {}", property.name(), property.description());
    }
    Ok(ExitCode::SUCCESS)
}
