//! A real browser opens the HTML report: headless Chromium (Debian's
//! `chromium` package, which `scripts/with-services` installs) renders the
//! page offline, takes a screenshot and dumps the DOM it built.
//!
//! Checked: the page renders (a PNG of real size), the DOM the browser built
//! holds the timeline lanes and marks the file holds (so nothing was dropped
//! as malformed), and nothing loads from the network — the browser runs with
//! a proxy on a dead local port and a resolver that finds no host, and its
//! net log must show no request made for the page. A control page with one
//! external image proves the net log check would see such a request.
//!
//! The test fails, never skips, when Chromium is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use redfence_reports::{html, Deployment, Report, ReportKind};

const CHROMIUM: &str = "chromium";
/// Longest one browser run may take before the test gives up on it.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// How often a running browser is polled.
const POLL: Duration = Duration::from_millis(50);

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redfence-browser-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn require_chromium() {
    let found = Command::new(CHROMIUM)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "`{CHROMIUM}` is not installed: this test needs a real browser. scripts/with-services \
         installs it from Debian packages (apt-get install chromium); run the suite with \
         scripts/test"
    );
}

/// What one browser run left behind.
struct Run {
    /// Standard output (the DOM, with --dump-dom).
    stdout: String,
    /// The browser's net log (JSON, one event a line).
    net_log: String,
    /// The browser's own log, where it prints the page's console messages.
    stderr: String,
}

/// Console messages of the page in a browser log (`…:CONSOLE(…)] "…"`),
/// which `--enable-logging=stderr` prints for every message a page logs,
/// its uncaught errors included.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Runs Chromium offline on `page` with `extra` arguments, in `dir`.
fn chromium(dir: &Path, page: &Path, extra: &[String], tag: &str) -> Run {
    let out_path = dir.join(format!("{tag}.stdout"));
    let err_path = dir.join(format!("{tag}.stderr"));
    let net_log = dir.join(format!("{tag}.netlog.json"));
    let mut args: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        // Any fetch goes to a dead local port, and no name resolves.
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        // Quiet the browser's own background traffic.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        // The page's console messages go to stderr, to be checked.
        "--enable-logging=stderr",
        "--v=0",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.push(format!(
        "--user-data-dir={}",
        dir.join(format!("{tag}.profile")).display()
    ));
    args.push(format!("--log-net-log={}", net_log.display()));
    args.extend(extra.iter().cloned());
    args.push(format!("file://{}", page.display()));
    let mut child = Command::new(CHROMIUM)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {CHROMIUM}: {e}"));
    let polls = RUN_TIMEOUT.as_millis() / POLL.as_millis();
    let mut status = None;
    for _ in 0..polls {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(POLL);
    }
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{CHROMIUM} did not finish within {RUN_TIMEOUT:?}: {args:?}");
    };
    assert!(status.success(), "{CHROMIUM} failed ({status}): {args:?}");
    Run {
        stdout: std::fs::read_to_string(&out_path).unwrap(),
        net_log: std::fs::read_to_string(&net_log).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    }
}

/// Net-log lines of network requests a `file://` page made (the browser's
/// own background requests have no file:// site).
fn page_requests(net_log: &str) -> Vec<&str> {
    net_log
        .lines()
        .filter(|l| l.contains("\"url\":\"http") && l.contains("site=file://"))
        .collect()
}

fn write_page(dir: &Path, report: &Report) -> (PathBuf, String) {
    let page = html::render(report);
    let path = dir.join("report.html");
    std::fs::write(&path, &page).unwrap();
    (path, page)
}

#[test]
fn report_renders_offline_in_headless_chromium() {
    require_chromium();
    let dir = scratch("sweep");
    let (page, _) = write_page(&dir, &common::golden("sweep_report.json"));

    let shot = dir.join("report.png");
    let run = chromium(
        &dir,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2000".to_owned(),
        ],
        "screenshot",
    );
    let png = std::fs::read(&shot).expect("the browser wrote a screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    assert!(
        png.len() > 30_000,
        "a rendered page, not a blank one ({} bytes)",
        png.len()
    );
    assert!(
        page_requests(&run.net_log).is_empty(),
        "{:?}",
        page_requests(&run.net_log)
    );

    let run = chromium(&dir, &page, &["--dump-dom".to_owned()], "dom");
    let dom = &run.stdout;
    assert!(
        console_lines(&run.stderr).is_empty(),
        "the page logged to the console: {:?}",
        console_lines(&run.stderr)
    );
    assert!(
        run.net_log.contains(&format!("file://{}", page.display())),
        "the net log recorded the page load, so it would record fetches"
    );
    assert!(
        page_requests(&run.net_log).is_empty(),
        "{:?}",
        page_requests(&run.net_log)
    );
    // The browser built the whole page: every section, and every lane and
    // mark the file holds (none dropped as malformed markup).
    for id in common::SECTIONS {
        assert!(
            dom.contains(&format!("id=\"{id}\"")),
            "section {id} in the DOM"
        );
    }
    assert!(
        dom.contains("</footer>"),
        "the DOM reaches the end of the page"
    );
    // A sweep's page draws timelines for failures of the deployed protocol
    // and unexpected results only; judged as if each protocol were the one
    // deployed, and drawn as a replay's page draws (passing runs too), the
    // pages together draw every kind of mark (failures with their slices
    // included), and the browser must build each of them.
    let marks = [
        "<svg class=\"timeline\"",
        "class=\"lane worker\"",
        "class=\"lane redis\"",
        "class=\"lane store\"",
        "class=\"hold",
        "class=\"redis-hold",
        "class=\"write accepted",
        "class=\"write rejected",
        "class=\"fault pause\"",
        "class=\"fault global replication-cut\"",
        "class=\"crash\"",
        " in-slice\"",
    ];
    let mut in_files = vec![0; marks.len()];
    let golden = common::golden("sweep_report.json");
    for protocol in golden.sweep.protocols.iter().map(|p| p.name.clone()) {
        let mut judged = golden.clone().with_deployment(Deployment {
            protocol: protocol.clone(),
            ..golden.deployment.clone()
        });
        // As a replay's page does, draw passing runs' timelines too.
        judged.kind = ReportKind::Replay;
        let sub = dir.join(&protocol);
        std::fs::create_dir_all(&sub).unwrap();
        let (page, source) = write_page(&sub, &judged);
        let dom = chromium(&sub, &page, &["--dump-dom".to_owned()], "dom").stdout;
        for (mark, total) in marks.iter().zip(in_files.iter_mut()) {
            let in_file = source.matches(mark).count();
            *total += in_file;
            assert_eq!(
                dom.matches(mark).count(),
                in_file,
                "{mark} as deployed {protocol}: the DOM has what the file has"
            );
        }
    }
    for (mark, total) in marks.iter().zip(&in_files) {
        assert!(*total > 0, "the report draws {mark}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hotspot_plots_render_in_headless_chromium() {
    require_chromium();
    let dir = scratch("hotspot");
    let (page, source) = write_page(&dir, &common::golden("hotspot_report.json"));
    let run = chromium(&dir, &page, &["--dump-dom".to_owned()], "dom");
    for mark in [
        "class=\"chart histogram\"",
        "class=\"chart bars\"",
        "class=\"chart curve\"",
        "class=\"point jitter\"",
    ] {
        let in_file = source.matches(mark).count();
        assert!(in_file > 0, "the report draws {mark}");
        assert_eq!(
            run.stdout.matches(mark).count(),
            in_file,
            "{mark} in the DOM"
        );
    }
    assert!(page_requests(&run.net_log).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_network_check_sees_a_page_that_fetches() {
    require_chromium();
    let dir = scratch("control");
    let page = dir.join("fetches.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>control</p><img src=\"http://example.invalid/x.png\"/></body></html>",
    )
    .unwrap();
    let run = chromium(&dir, &page, &["--dump-dom".to_owned()], "dom");
    assert!(run.stdout.contains("control"));
    let requests = page_requests(&run.net_log);
    assert!(
        requests.iter().any(|l| l.contains("example.invalid")),
        "the net log shows the control page's fetch"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Protocols in the wide matrix of the laptop test: more than the shipped
/// set (two reference levels and sixteen mutants), with long names.
const WIDE_PROTOCOLS: usize = 24;

/// On a 1,366 × 768 laptop screen the page has no page-level horizontal
/// scroll even with a matrix far wider than the screen (it scrolls inside
/// its own frame, row names kept in view), and the first failing cell is
/// one link away from the top. The page has no script of its own; the test
/// appends one that writes what the browser measured into the DOM.
#[test]
fn the_page_fits_a_laptop_screen_and_the_first_failure_is_one_click_away() {
    require_chromium();
    let dir = scratch("laptop");
    let mut report = common::golden("sweep_report.json");
    let originals = report.sweep.cells.clone();
    let template = report.sweep.protocols[0].clone();
    for n in 0..WIDE_PROTOCOLS {
        let name = format!("a-team-lock-with-a-rather-long-name-{n}");
        let mut protocol = template.clone();
        protocol.name = name.clone();
        report.sweep.protocols.push(protocol);
        for cell in originals.iter().filter(|c| c.protocol == template.name) {
            let mut copy = cell.clone();
            copy.protocol = name.clone();
            report.sweep.cells.push(copy);
        }
    }
    let page = html::render(&report);
    let first_failing = report
        .sweep
        .cells
        .iter()
        .find(|c| c.first_failure.is_some())
        .expect("the golden sweep has a failing cell");
    let anchor = format!(
        "href=\"#cell-{}--{}\"",
        first_failing.scenario, first_failing.protocol
    );
    let top = &page[..page.find("id=\"readiness\"").expect("readiness section")];
    assert!(
        top.contains(&anchor),
        "the matrix at the top links the first failing cell ({anchor})"
    );
    let probe = "<script>document.body.setAttribute('data-overflow', String(document.documentElement.scrollWidth > window.innerWidth)); document.body.setAttribute('data-inner', String(window.innerWidth));</script></body>";
    let measured = page.replacen("</body>", probe, 1);
    let path = dir.join("report.html");
    std::fs::write(&path, measured).unwrap();
    let dom = chromium(
        &dir,
        &path,
        &["--window-size=1366,768".to_owned(), "--dump-dom".to_owned()],
        "laptop",
    )
    .stdout;
    assert!(dom.contains("data-inner=\"1366\""), "measured at 1,366 px");
    assert!(
        dom.contains("data-overflow=\"false\""),
        "no page-level horizontal scroll at 1,366 px"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The console check sees a page that logs: a control page whose script
/// throws shows up as a console line.
#[test]
fn the_console_check_sees_a_page_that_throws() {
    require_chromium();
    let dir = scratch("console");
    let page = dir.join("throws.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>control</p><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let run = chromium(&dir, &page, &["--dump-dom".to_owned()], "dom");
    assert!(run.stdout.contains("control"));
    assert!(
        console_lines(&run.stderr)
            .iter()
            .any(|l| l.contains("undefinedFunction")),
        "the log shows the control page's error: {}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}
