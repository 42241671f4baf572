//! Reports are written atomically: a reader sees the old report or the new
//! one, never a truncated file or a mix, and nothing temporary is left.

mod common;

use std::path::{Path, PathBuf};

use redfence_reports::{write, write_file_atomically, Format};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redfence-atomic-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_report_replaces_the_old_one_whole_and_leaves_nothing_behind() {
    let parent = scratch("whole");
    let dir = parent.join("report");
    let sweep = common::golden("sweep_report.json");
    let hotspot = common::golden("hotspot_report.json");
    write(&sweep, &dir, &Format::ALL).unwrap();
    assert_eq!(
        names(&dir),
        ["junit.xml", "report.html", "report.json", "summary.md"]
    );
    // A second report with fewer formats replaces the first as a whole: no
    // old HTML stays beside the new JSON.
    write(&hotspot, &dir, &[Format::Json]).unwrap();
    assert_eq!(names(&dir), ["report.json"]);
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
    assert_eq!(json, hotspot.to_json());
    assert_eq!(names(&parent), ["report"], "no staging folder left");
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn a_shared_folder_keeps_its_other_files_and_gets_each_file_atomically() {
    let dir = scratch("shared");
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let report = common::golden("hotspot_report.json");
    write(&report, &dir, &[Format::Json, Format::Markdown]).unwrap();
    assert_eq!(names(&dir), ["notes.txt", "report.json", "summary.md"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    write_file_atomically(&dir.join("sweep.json"), b"{}").unwrap();
    assert_eq!(
        names(&dir),
        ["notes.txt", "report.json", "summary.md", "sweep.json"],
        "no temporary file left"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_in_the_way_a_link_and_a_device_are_never_replaced() {
    let parent = scratch("in-the-way");
    let report = common::golden("hotspot_report.json");
    // A file where the folder should be: refused, the file untouched.
    let file = parent.join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    assert!(write(&report, &file, &[Format::Json]).is_err());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    assert_eq!(names(&parent), ["notes.txt"], "nothing moved or left");
    // A link to a report folder stays a link; the report lands behind it.
    let target = parent.join("target");
    std::fs::create_dir(&target).unwrap();
    let link = parent.join("latest");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    write(&report, &link, &[Format::Json]).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(names(&target), ["report.json"]);
    // A device is written in place, not replaced by a file.
    write_file_atomically(Path::new("/dev/null"), b"{}").unwrap();
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    std::fs::remove_dir_all(&parent).unwrap();
}
