//! Escaping text for HTML, SVG and XML, and anchors for links.
//!
//! Every string from a run (explanations, owner tokens, fault words) reaches
//! the page through [`text`] or [`attr`], so a history can never inject
//! markup. The output stays well-formed XML too (only the five XML entities
//! are used), which is what lets tests parse the HTML and the JUnit file
//! with an XML parser.

/// `s` escaped for element content.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // Control characters are not allowed in XML 1.0.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `s` escaped for a double-quoted attribute value.
pub fn attr(s: &str) -> String {
    text(s).replace('"', "&quot;").replace('\n', "&#10;")
}

/// An id fragment made of `[a-z0-9-]` only, so anchors survive any name.
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// The anchor of a cell's detail.
pub fn cell_id(scenario: &str, protocol: &str) -> String {
    format!("cell-{}--{}", slug(scenario), slug(protocol))
}

/// The anchor of a scenario's section.
pub fn scenario_id(scenario: &str) -> String {
    format!("scenario-{}", slug(scenario))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(text("<a & b>"), "&lt;a &amp; b&gt;");
        assert_eq!(attr("say \"hi\""), "say &quot;hi&quot;");
        assert_eq!(slug("Fail-Over × 2"), "fail-over-2");
        assert_eq!(
            cell_id("late-unlock", "del-unlock"),
            "cell-late-unlock--del-unlock"
        );
    }
}
