//! What `redfence run` prints by default: a sweep in 80 columns, for a CI
//! log or a terminal read in a minute.
//!
//! Top to bottom: the one-line verdict (what a CI log reader sees first),
//! what ran, a compact matrix — one line per protocol, one character per
//! scenario —, the properties a protocol that must pass never exercised,
//! the failures grouped by signature ([`triage`]) with one replay line each,
//! the readiness summary, and the first replay line. The wide protocol ×
//! scenario matrix with one replay line per failing cell is `--wide`
//! (`run.rs`). Every line fits [`WIDTH_COLS`]: text wraps at words, and a
//! replay command wraps with shell continuations so it still pastes.

use redfence_reports::labels::{never_exercised, property_names};
use redfence_reports::readiness::{ExposureKind, Mark, Readiness};
use redfence_reports::Deployment;
use redfence_scenarios::record::replay_command;
use redfence_scenarios::sweep::{CellStatus, Expectation, Sweep};
use redfence_scenarios::triage::{self, Concern, Group};

/// The widest line printed.
pub const WIDTH_COLS: usize = 80;

/// Widest protocol name the matrix shows whole.
const NAME_COLS_MAX: usize = 28;

/// Most lines of a checker's explanation shown under a group.
const EXPLANATION_LINES_MAX: usize = 3;

/// Column labels of the compact matrix, one per scenario.
const COLUMN_LABELS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `words` set `sep` apart in lines of at most `width_cols`, the first
/// starting with `first`, the rest with `rest`. A word longer than a line
/// stays whole on its own line.
fn fill<'w>(
    words: impl Iterator<Item = &'w str>,
    sep: &str,
    first: &str,
    rest: &str,
    width_cols: usize,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_owned();
    let mut empty = true;
    for word in words {
        let cols = line.chars().count() + word.chars().count();
        if !empty && cols + sep.chars().count() > width_cols {
            lines.push(std::mem::replace(&mut line, rest.to_owned()));
            empty = true;
        }
        if !empty {
            line.push_str(sep);
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
}

/// `text` broken at spaces into lines of at most `width_cols` (see
/// [`fill`]).
pub fn wrap(text: &str, first: &str, rest: &str, width_cols: usize) -> Vec<String> {
    fill(text.split_whitespace(), " ", first, rest, width_cols)
}

/// The words of a shell command, a single-quoted argument (a schedule)
/// kept whole — a continuation inside quotes would change the argument —
/// and a flag kept with its value, so a line never ends in `--seed`.
fn shell_words(command: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.push(c);
            }
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut paired: Vec<String> = Vec::with_capacity(words.len());
    for word in words {
        match paired.last_mut() {
            Some(flag)
                if flag.starts_with("--") && !flag.contains(' ') && !word.starts_with('-') =>
            {
                flag.push(' ');
                flag.push_str(&word);
            }
            _ => paired.push(word),
        }
    }
    paired
}

/// A shell command in lines of at most `width_cols`, each but the last
/// ending in ` \`, the first indented by `indent` and the rest by two more.
pub fn wrap_command(command: &str, indent: &str, width_cols: usize) -> Vec<String> {
    let words = shell_words(command);
    // Room for the continuation on every line but the last.
    let lines = fill(
        words.iter().map(String::as_str),
        " ",
        indent,
        &format!("{indent}  "),
        width_cols.saturating_sub(2),
    );
    let count = lines.len();
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            if i + 1 < count {
                format!("{line} \\")
            } else {
                line
            }
        })
        .collect()
}

/// Counts behind the verdict line.
struct Counts {
    /// (protocol, scenarios held, scenarios) for each protocol that must pass.
    must_pass: Vec<(String, usize, usize)>,
    /// (mutants fully caught, mutants with a promise, catches, promised).
    mutants: Option<(usize, usize, u64, u64)>,
    /// (met, items, not met, partial, no evidence).
    readiness: (usize, usize, usize, usize, usize),
}

fn counts(sweep: &Sweep, readiness: &Readiness) -> Counts {
    let must_pass = sweep
        .protocols
        .iter()
        .filter_map(|p| {
            let cells: Vec<_> = sweep
                .cells
                .iter()
                .filter(|c| c.protocol == p.name && c.expectation == Expectation::Pass)
                .collect();
            let failed = cells
                .iter()
                .filter(|c| c.status == CellStatus::Failed)
                .count();
            (!cells.is_empty()).then(|| (p.name.clone(), cells.len() - failed, cells.len()))
        })
        .collect();
    let promised: Vec<_> = sweep.mutants.iter().filter(|m| m.promised > 0).collect();
    let mutants = (!promised.is_empty()).then(|| {
        (
            promised.iter().filter(|m| m.caught == m.promised).count(),
            promised.len(),
            promised.iter().map(|m| m.caught).sum(),
            promised.iter().map(|m| m.promised).sum(),
        )
    });
    let marked = |mark: Mark| readiness.items.iter().filter(|i| i.mark == mark).count();
    Counts {
        must_pass,
        mutants,
        readiness: (
            marked(Mark::Met),
            readiness.items.len(),
            marked(Mark::NotMet),
            marked(Mark::Partial),
            marked(Mark::NoEvidence),
        ),
    }
}

/// The one-line verdict: the protocols that must pass, the mutants caught
/// and the readiness, in the most words that fit [`WIDTH_COLS`]
/// (`reference: 13/13 scenarios held; 16/16 mutants caught (23/23 promised
/// catches); readiness 7/9 met (1 NOT MET, 1 partial)` when it fits).
pub fn verdict_line(sweep: &Sweep, readiness: &Readiness) -> String {
    let c = counts(sweep, readiness);
    let held = |(name, h, n): &(String, usize, usize)| format!("{name} {h}/{n}");
    let protocols = [
        c.must_pass
            .iter()
            .map(|(name, h, n)| format!("{name}: {h}/{n} scenarios held"))
            .collect::<Vec<_>>()
            .join("; "),
        c.must_pass
            .iter()
            .map(|p| format!("{} held", held(p)))
            .collect::<Vec<_>>()
            .join(", "),
        format!(
            "{} held",
            c.must_pass.iter().map(held).collect::<Vec<_>>().join(", ")
        ),
        format!(
            "{} must-pass protocols {}/{} held",
            c.must_pass.len(),
            c.must_pass.iter().map(|p| p.1).sum::<usize>(),
            c.must_pass.iter().map(|p| p.2).sum::<usize>()
        ),
    ];
    let mutants = c.mutants.map_or(
        [String::new(), String::new(), String::new()],
        |(all, of, caught, promised)| {
            [
                format!("{all}/{of} mutants caught ({caught}/{promised} promised catches)"),
                format!("{all}/{of} mutants caught"),
                format!("mutants {all}/{of}"),
            ]
        },
    );
    let (met, items, not_met, partial, none) = c.readiness;
    let gaps: Vec<String> = [
        (not_met, "NOT MET"),
        (partial, "partial"),
        (none, "no evidence"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, word)| format!("{n} {word}"))
    .collect();
    let ready = [
        if gaps.is_empty() {
            format!("readiness {met}/{items} met")
        } else {
            format!("readiness {met}/{items} met ({})", gaps.join(", "))
        },
        format!("readiness {met}/{items} met"),
        format!("ready {met}/{items}"),
    ];
    // (protocols, mutants, readiness) forms, most words first.
    const FORMS: [(usize, usize, usize); 8] = [
        (0, 0, 0),
        (1, 0, 0),
        (1, 1, 0),
        (1, 1, 1),
        (2, 1, 1),
        (2, 1, 2),
        (2, 2, 2),
        (3, 2, 2),
    ];
    let line = |(p, m, r): (usize, usize, usize)| {
        let parts: Vec<&str> = [
            (!c.must_pass.is_empty()).then_some(protocols[p].as_str()),
            c.mutants.is_some().then_some(mutants[m].as_str()),
            (items > 0).then_some(ready[r].as_str()),
        ]
        .into_iter()
        .flatten()
        .collect();
        parts.join("; ")
    };
    FORMS
        .into_iter()
        .map(line)
        .find(|l| l.chars().count() <= WIDTH_COLS)
        .unwrap_or_else(|| line(FORMS[FORMS.len() - 1]))
}

/// How every output starts: the verdict line, then what ran and how long
/// it took (`timing`).
pub fn head(sweep: &Sweep, readiness: &Readiness, timing: &str) -> Vec<String> {
    let mut out = vec![verdict_line(sweep, readiness)];
    if let Some(provenance) = &sweep.provenance {
        out.extend(wrap(&provenance.line(), "", "  ", WIDTH_COLS));
    }
    let mut ran = vec![
        format!("world: {}", sweep.world.name()),
        format!("seeds: {} from {}", sweep.seeds, sweep.seed_first),
    ];
    ran.extend(sweep.shard.map(|s| format!("shard {s}")));
    ran.push(timing.to_owned());
    out.extend(fill(
        ran.iter().map(String::as_str),
        "   ",
        "",
        "",
        WIDTH_COLS,
    ));
    out
}

/// A cell status as one character of the compact matrix.
fn mark(status: CellStatus) -> char {
    match status {
        CellStatus::Passed => '.',
        CellStatus::Caught => 'X',
        CellStatus::AlsoCaught => 'x',
        CellStatus::NotCaught => '-',
        CellStatus::Missed => 'M',
        CellStatus::Undecidable => '?',
        CellStatus::Failed => 'F',
    }
}

/// How a protocol's row ends: what it held or how it was caught.
fn row_summary(sweep: &Sweep, protocol: &str) -> String {
    let cells: Vec<_> = sweep
        .cells
        .iter()
        .filter(|c| c.protocol == protocol)
        .collect();
    let count = |s: CellStatus| cells.iter().filter(|c| c.status == s).count();
    if must_pass(sweep, protocol) {
        let failed = count(CellStatus::Failed);
        let held = format!("{}/{} held", cells.len() - failed, cells.len());
        return match failed {
            0 => held,
            n => format!("{held}, {n} FAIL"),
        };
    }
    let promised = cells
        .iter()
        .filter(|c| matches!(c.expectation, Expectation::Catch(_)))
        .filter(|c| c.status != CellStatus::Undecidable)
        .count();
    let mut parts = Vec::new();
    if promised > 0 {
        parts.push(format!("{}/{promised} caught", count(CellStatus::Caught)));
    }
    for (status, word) in [
        (CellStatus::Missed, "MISSED"),
        (CellStatus::AlsoCaught, "also"),
        (CellStatus::Undecidable, "n/d"),
    ] {
        match count(status) {
            0 => {}
            n => parts.push(format!("{n} {word}")),
        }
    }
    if parts.is_empty() {
        "not caught".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The compact matrix: a legend naming each scenario's column, then one
/// line per protocol with one character per scenario and a summary.
fn matrix(sweep: &Sweep) -> Vec<String> {
    let labels: Vec<char> = COLUMN_LABELS.chars().collect();
    if sweep.scenarios.len() > labels.len() {
        return vec![format!(
            "{} scenarios are too many for one line each: see --wide",
            sweep.scenarios.len()
        )];
    }
    let name_cols = sweep
        .protocols
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp("protocol".len(), NAME_COLS_MAX);
    let summaries: Vec<String> = sweep
        .protocols
        .iter()
        .map(|p| row_summary(sweep, &p.name))
        .collect();
    let summary_cols = summaries
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    let columns = sweep.scenarios.len();
    // A space between marks when the widest row still fits.
    let gap = name_cols + 2 * columns + 1 + summary_cols <= WIDTH_COLS;
    let join = |marks: &mut dyn Iterator<Item = char>| -> String {
        let marks: Vec<String> = marks.map(String::from).collect();
        marks.join(if gap { " " } else { "" })
    };
    let legend: Vec<String> = sweep
        .scenarios
        .iter()
        .zip(&labels)
        .map(|(s, label)| format!("{label} {}", s.name))
        .collect();
    let mut out = fill(legend.iter().map(String::as_str), "   ", "", "", WIDTH_COLS);
    out.push(String::new());
    out.push(format!(
        "{:<name_cols$} {}",
        "protocol",
        join(&mut labels[..columns].iter().copied())
    ));
    for (protocol, summary) in sweep.protocols.iter().zip(&summaries) {
        let name: String = protocol.name.chars().take(name_cols).collect();
        let marks = &mut sweep.scenarios.iter().map(|s| {
            sweep
                .cell(&s.name, &protocol.name)
                .map_or(' ', |c| mark(c.status))
        });
        out.push(format!("{name:<name_cols$} {}  {summary}", join(marks)));
    }
    let key = [
        ". held",
        "X caught as promised",
        "x also caught (not promised)",
        "- not caught",
        "M MISSED (a promised catch did not happen)",
        "F FAIL (must pass)",
        "? n/d (this world cannot decide it)",
    ];
    out.extend(fill(key.into_iter(), "   ", "", "", WIDTH_COLS));
    out
}

/// The properties no scenario exercised for each protocol that must pass
/// (a pass must not read as "held" for them).
pub fn idle(sweep: &Sweep) -> Vec<String> {
    let mut out = Vec::new();
    for protocol in sweep.protocols.iter().filter(|p| must_pass(sweep, &p.name)) {
        let idle = never_exercised(sweep, &protocol.name);
        if !idle.is_empty() {
            out.extend(wrap(
                &format!(
                    "not exercised for {} in any scenario run (nothing to judge, not \
                     held): {}",
                    protocol.name,
                    property_names(&idle)
                ),
                "",
                "  ",
                WIDTH_COLS,
            ));
        }
    }
    out
}

/// Whether `protocol`'s cells must pass (the reference, or a team's own).
fn must_pass(sweep: &Sweep, protocol: &str) -> bool {
    sweep
        .cells
        .iter()
        .any(|c| c.protocol == protocol && c.expectation == Expectation::Pass)
}

/// The lines of one triage group: its signature and counts, for an
/// unexpected one the checker's words, and its replay command.
fn group_lines(group: &Group) -> Vec<String> {
    let scenarios = match group.scenarios.as_slice() {
        [one] => one.clone(),
        many => format!("{} scenarios", many.len()),
    };
    let mut out = wrap(
        &format!(
            "{}: {scenarios}, {}/{} runs",
            group.signature(),
            group.runs_showing,
            group.runs
        ),
        "  ",
        "      ",
        WIDTH_COLS,
    );
    let Some(sample) = &group.sample else {
        return out;
    };
    if group.concern == Concern::Unexpected {
        if let Some(words) = &sample.explanation {
            let mut lines = wrap(words, "    ", "    ", WIDTH_COLS);
            if lines.len() > EXPLANATION_LINES_MAX {
                lines.truncate(EXPLANATION_LINES_MAX);
                if let Some(last) = lines.last_mut() {
                    last.push_str(" …");
                }
            }
            out.extend(lines);
        }
    }
    if !sample.shows_finding {
        out.push(format!(
            "    (its first run shows another finding; seed {} of {})",
            sample.seed, sample.scenario
        ));
    }
    out.extend(wrap_command(
        replay_command(&sample.replay),
        "    ",
        WIDTH_COLS,
    ));
    out
}

/// The failures grouped by signature, unexpected ones first.
fn findings(groups: &[Group]) -> Vec<String> {
    let mut out = Vec::new();
    for (concern, heading) in [
        (
            Concern::Unexpected,
            "UNEXPECTED: a protocol that must pass failed, or a promised catch did not \
             happen",
        ),
        (
            Concern::Promised,
            "caught as promised (the scenarios work):",
        ),
        (Concern::Extra, "also caught, not promised:"),
    ] {
        let mine: Vec<&Group> = groups.iter().filter(|g| g.concern == concern).collect();
        if mine.is_empty() {
            continue;
        }
        out.push(String::new());
        out.extend(wrap(heading, "", "  ", WIDTH_COLS));
        for group in mine {
            out.extend(group_lines(group));
        }
    }
    out
}

/// The readiness summary: the deployment judged, the items met, each item
/// that is not with why, and what the deployment is exposed to.
fn readiness_lines(readiness: &Readiness, deployment: &Deployment) -> Vec<String> {
    let met = readiness
        .items
        .iter()
        .filter(|i| i.mark == Mark::Met)
        .count();
    let mut out = wrap(
        &format!(
            "readiness of {} (fences {}, replication {}{}): {met}/{} items met",
            deployment.protocol,
            deployment.fence_source.name(),
            match deployment.replication {
                redfence_reports::Replication::Async => "async",
                redfence_reports::Replication::None => "none",
            },
            if deployment.assumed {
                ", assumed: say --fences and --replication"
            } else {
                ""
            },
            readiness.items.len()
        ),
        "",
        "  ",
        WIDTH_COLS,
    );
    for item in readiness.items.iter().filter(|i| i.mark != Mark::Met) {
        out.extend(wrap(
            &format!("{} {}: {}", item.mark.label(), item.id, item.summary),
            "  ",
            "    ",
            WIDTH_COLS,
        ));
    }
    for exposure in readiness.exposed() {
        out.extend(wrap(
            &format!("exposed: {}", exposure.failure),
            "  ",
            "    ",
            WIDTH_COLS,
        ));
    }
    let untested = readiness
        .unprotected
        .iter()
        .filter(|e| e.kind != ExposureKind::Exposed)
        .count();
    if untested > 0 {
        out.push(format!(
            "  {untested} more untested or out of fencing's reach: the report (--out) \
             lists them"
        ));
    }
    out
}

/// Every line of the default output after the verdict and the header:
/// the matrix, idle properties, the triage, readiness, the first replay.
pub fn body(sweep: &Sweep, readiness: &Readiness, deployment: &Deployment) -> Vec<String> {
    let groups = triage::groups(sweep);
    let mut out = vec![String::new()];
    out.extend(matrix(sweep));
    let idle = idle(sweep);
    if !idle.is_empty() {
        out.push(String::new());
        out.extend(idle);
    }
    out.extend(findings(&groups));
    out.push(String::new());
    out.extend(tail(readiness, deployment, &groups));
    out
}

/// The readiness summary and the first replay line: how every output ends.
pub fn tail(readiness: &Readiness, deployment: &Deployment, groups: &[Group]) -> Vec<String> {
    let mut out = readiness_lines(readiness, deployment);
    out.push(String::new());
    match groups
        .first()
        .and_then(|g| g.sample.as_ref().map(|s| (g, s)))
    {
        Some((group, sample)) => {
            out.push(format!("first replay ({}):", group.signature()));
            out.extend(wrap_command(
                replay_command(&sample.replay),
                "  ",
                WIDTH_COLS,
            ));
        }
        None => out.push("nothing failed: nothing to replay".to_owned()),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_wraps_at_words_within_the_width() {
        let lines = wrap("aaa bbb ccc ddd", "> ", "  ", 9);
        assert_eq!(lines, ["> aaa bbb", "  ccc ddd"]);
        assert_eq!(wrap("", "x", "", 80), ["x"]);
    }

    #[test]
    fn a_command_wraps_with_continuations_and_keeps_quotes_whole() {
        let command = "redfence replay random-faults --protocol reference --seed 3 \
                       --schedule '300 pause w0 1200; 2000 fail-over 300'";
        let lines = wrap_command(command, "  ", 40);
        for line in &lines[..lines.len() - 1] {
            assert!(line.ends_with(" \\"), "{line}");
        }
        assert!(lines
            .iter()
            .any(|l| l.contains("'300 pause w0 1200; 2000 fail-over 300'")));
        let rejoined: Vec<String> = lines
            .iter()
            .map(|l| l.trim_end_matches(" \\").trim().to_owned())
            .collect();
        assert_eq!(rejoined.join(" "), command);
    }
}
