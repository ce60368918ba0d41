//! Writing generated files: all or nothing, and only the files whose content changed, so that
//! builds stay incremental and a failure never leaves a half-written output folder.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Relative path (with `/`) → file content, ordered so that output is deterministic.
pub type Outputs = BTreeMap<String, String>;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    pub written: Vec<PathBuf>,
    pub unchanged: Vec<PathBuf>,
}

/// Writes every output under `dir`, all or nothing; see [`OutputWriter`].
pub fn write_outputs(dir: &Path, outputs: &Outputs) -> io::Result<WriteReport> {
    let mut writer = OutputWriter::begin(dir)?;
    writer.add(outputs)?;
    writer.commit()
}

/// Writes generated files as they are produced, and puts them in place only at [`commit`]:
/// all or nothing, and only the files whose content changed.
///
/// When `dir` does not exist yet, files go into a hidden sibling folder that `commit` renames to
/// `dir`: one rename instead of one per file. Otherwise each changed file is written beside its
/// target under a temporary name, and `commit` renames them all. A writer dropped without
/// `commit` (an error, a panic) removes what it wrote.
///
/// [`commit`]: OutputWriter::commit
#[derive(Debug)]
pub struct OutputWriter {
    dir: PathBuf,
    mode: Mode,
    folders: Folders,
    /// Every file added, relative to `dir`.
    added: Vec<String>,
    unchanged: Vec<PathBuf>,
    committed: bool,
}

#[derive(Debug)]
enum Mode {
    /// Into this hidden sibling folder of `dir`.
    Fresh { staging: PathBuf },
    /// Beside each target: (temporary file, target).
    InPlace { staged: Vec<(PathBuf, PathBuf)> },
}

impl OutputWriter {
    pub fn begin(dir: &Path) -> io::Result<OutputWriter> {
        let mut writer = OutputWriter {
            dir: dir.to_path_buf(),
            mode: Mode::InPlace { staged: Vec::new() },
            folders: Folders::default(),
            added: Vec::new(),
            unchanged: Vec::new(),
            committed: false,
        };
        if std::fs::symlink_metadata(dir).is_ok() {
            return Ok(writer);
        }
        let Some(name) = dir.file_name() else {
            return Ok(writer); // `..` or a root: not a folder we would create
        };
        let parent = dir.parent().unwrap_or(Path::new(""));
        let staging = parent.join(format!(
            ".{}.toolc-tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
        let _ = std::fs::remove_dir_all(&staging); // left over by a killed run of this process id
        sweep_abandoned(parent, &name.to_string_lossy());
        writer.folders.ensure(&staging)?;
        writer.mode = Mode::Fresh { staging };
        Ok(writer)
    }

    /// Writes `outputs` (paths relative to the output folder) to their staging places.
    pub fn add(&mut self, outputs: &Outputs) -> io::Result<()> {
        match &mut self.mode {
            // One thread: creating files contends on the file system's allocation locks, and
            // on this machine several writer threads measured no faster, only busier.
            Mode::Fresh { staging } => {
                for (relative, content) in outputs {
                    let path = staging.join(relative);
                    if let Some(folder) = path.parent() {
                        self.folders.ensure(folder)?;
                    }
                    std::fs::write(&path, content)?;
                }
            }
            Mode::InPlace { staged } => {
                for (relative, content) in outputs {
                    let target = self.dir.join(relative);
                    if same_content(&target, content) {
                        self.unchanged.push(target);
                        continue;
                    }
                    if let Some(parent) = target.parent() {
                        self.folders.ensure(parent)?;
                    }
                    let file_name = target
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let temp = target.with_file_name(format!(".{file_name}.toolc-tmp"));
                    std::fs::write(&temp, content)?;
                    staged.push((temp, target));
                }
            }
        }
        self.added.extend(outputs.keys().cloned());
        Ok(())
    }

    /// Puts every added file in place; reports them in path order.
    pub fn commit(mut self) -> io::Result<WriteReport> {
        self.committed = true;
        let mut report = WriteReport::default();
        match std::mem::replace(&mut self.mode, Mode::InPlace { staged: Vec::new() }) {
            Mode::Fresh { staging } => {
                if let Err(e) = std::fs::rename(&staging, &self.dir) {
                    let moved = if std::fs::symlink_metadata(&self.dir).is_ok() {
                        // `dir` appeared meanwhile: move the staged files into it one by one.
                        self.staged_outputs(&staging)
                            .and_then(|outputs| write_outputs(&self.dir, &outputs))
                    } else {
                        Err(e)
                    };
                    let _ = std::fs::remove_dir_all(&staging);
                    return moved;
                }
                self.added.sort();
                report.written = self.added.iter().map(|r| self.dir.join(r)).collect();
            }
            Mode::InPlace { staged } => {
                for (temp, target) in staged {
                    std::fs::rename(&temp, &target)?;
                    report.written.push(target);
                }
                report.written.sort();
                report.unchanged = std::mem::take(&mut self.unchanged);
                report.unchanged.sort();
            }
        }
        Ok(report)
    }
}

impl OutputWriter {
    fn staged_outputs(&self, staging: &Path) -> io::Result<Outputs> {
        self.added
            .iter()
            .map(|relative| {
                Ok((
                    relative.clone(),
                    std::fs::read_to_string(staging.join(relative))?,
                ))
            })
            .collect()
    }
}

impl Drop for OutputWriter {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        match &self.mode {
            Mode::Fresh { staging } => {
                let _ = std::fs::remove_dir_all(staging);
            }
            Mode::InPlace { staged } => {
                for (temp, _) in staged {
                    let _ = std::fs::remove_file(temp);
                }
            }
        }
    }
}

/// Removes the staging folders that killed runs left beside an output folder
/// (`.<name>.toolc-tmp-<pid>`): those of a process that no longer runs, untouched for
/// [`ABANDONED_AFTER`]. Only where `/proc` tells which processes run; the age keeps a run in
/// another process namespace safe.
fn sweep_abandoned(parent: &Path, name: &str) {
    let processes = Path::new("/proc");
    if !processes.join("self").exists() {
        return;
    }
    let folder = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let prefix = format!(".{name}.toolc-tmp-");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= ABANDONED_AFTER));
        if old && pid.parse::<u32>().is_ok() && !processes.join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// How long a staging folder of a dead process is left alone before it counts as abandoned.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether the file at `path` holds exactly `content`; the length is compared before reading.
fn same_content(path: &Path, content: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == content.len() as u64)
        && std::fs::read(path).is_ok_and(|old| old == content.as_bytes())
}

/// Folders already created in this write, so that each is created once, not once per file.
#[derive(Debug, Default)]
struct Folders(foldhash::HashSet<PathBuf>);

impl Folders {
    fn ensure(&mut self, folder: &Path) -> io::Result<()> {
        if self.0.contains(folder) {
            return Ok(());
        }
        std::fs::create_dir_all(folder)?;
        self.0.insert(folder.to_path_buf());
        Ok(())
    }
}

/// What became of a file that is written only when it does not exist yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    Written,
    /// It existed and was left as it is (it may hold the user's edits).
    Kept,
}

/// Writes each of `files` (names relative to `dir`) that does not exist yet and leaves the
/// others alone: handler stubs are a starting point the user edits, never regenerated over.
/// Returns every file's path with what became of it, in order.
pub fn write_missing(
    dir: &Path,
    files: &[(String, String)],
) -> io::Result<Vec<(PathBuf, Created)>> {
    let mut done = Vec::with_capacity(files.len());
    for (name, content) in files {
        let path = dir.join(name);
        if path.exists() {
            done.push((path, Created::Kept));
            continue;
        }
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, content))
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
            })?;
        done.push((path, Created::Written));
    }
    Ok(done)
}

/// Writes one file only when its content differs; returns whether it wrote.
pub fn write_if_changed(path: &Path, content: &str) -> io::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == content.as_bytes()) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, content)?;
    Ok(true)
}

/// The path of `to` as seen from the folder `from_dir`, with `/` separators and a leading `./`
/// when it does not climb (`stubs` → `out/tools.js` gives `../out/tools.js`): what an ES module
/// `import` needs. Both paths are taken relative to the current directory when not absolute.
pub fn relative_import(from_dir: &Path, to: &Path) -> String {
    let absolute = |p: &Path| {
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        // Drop `.` and resolve `..` lexically: the folders may not exist yet.
        let mut parts: Vec<std::path::Component> = Vec::new();
        for c in joined.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir if parts.len() > 1 => {
                    parts.pop();
                }
                other => parts.push(other),
            }
        }
        parts.into_iter().collect::<PathBuf>()
    };
    let (from, to) = (absolute(from_dir), absolute(to));
    let from_parts: Vec<_> = from.components().collect();
    let to_parts: Vec<_> = to.components().collect();
    let common = from_parts
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut segments: Vec<String> = vec!["..".into(); from_parts.len() - common];
    segments.extend(
        to_parts[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    let joined = segments.join("/");
    if joined.starts_with("..") {
        joined
    } else {
        format!("./{joined}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(pairs: &[(&str, &str)]) -> Outputs {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolc-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_fresh_folder_is_written_whole_and_then_only_changes() {
        let base = scratch("fresh");
        let dir = base.join("nested/out");
        let first = outputs(&[
            ("a.json", "1"),
            ("schemas/b.json", "2"),
            ("schemas/c.json", "3"),
        ]);
        let report = write_outputs(&dir, &first).unwrap();
        assert_eq!(report.written.len(), 3);
        assert!(report.unchanged.is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.join("schemas/c.json")).unwrap(),
            "3"
        );
        // Nothing but the outputs: no staging folder left beside the output folder.
        let siblings: Vec<_> = std::fs::read_dir(base.join("nested")).unwrap().collect();
        assert_eq!(siblings.len(), 1);

        let second = outputs(&[
            ("a.json", "1"),
            ("schemas/b.json", "two"),
            ("schemas/c.json", "3"),
        ]);
        let report = write_outputs(&dir, &second).unwrap();
        assert_eq!(report.written, vec![dir.join("schemas/b.json")]);
        assert_eq!(report.unchanged.len(), 2);
        assert_eq!(
            std::fs::read_to_string(dir.join("schemas/b.json")).unwrap(),
            "two"
        );
        let files: Vec<_> = std::fs::read_dir(dir.join("schemas")).unwrap().collect();
        assert_eq!(files.len(), 2, "no temporary files are left");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_failed_fresh_write_leaves_nothing() {
        let base = scratch("failed");
        std::fs::create_dir_all(&base).unwrap();
        // A file where a folder must go makes the write fail half-way.
        let bad = outputs(&[("a.json", "1"), ("a.json/b.json", "2")]);
        let dir = base.join("out");
        assert!(write_outputs(&dir, &bad).is_err());
        assert!(!dir.exists());
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn files_added_in_parts_appear_only_at_commit() {
        let base = scratch("parts");
        for existing in [false, true] {
            let dir = base.join(format!("out-{existing}"));
            if existing {
                write_outputs(&dir, &outputs(&[("a.json", "old"), ("keep.json", "k")])).unwrap();
            }
            let mut writer = OutputWriter::begin(&dir).unwrap();
            writer
                .add(&outputs(&[("schemas/b.json", "2"), ("keep.json", "k")]))
                .unwrap();
            assert!(
                !dir.join("schemas/b.json").exists(),
                "nothing is in place yet"
            );
            writer.add(&outputs(&[("a.json", "1")])).unwrap();
            let report = writer.commit().unwrap();
            let mut written = vec![dir.join("a.json"), dir.join("schemas/b.json")];
            if !existing {
                written.insert(1, dir.join("keep.json"));
            }
            assert_eq!(report.written, written, "existing: {existing}");
            let kept = if existing {
                vec![dir.join("keep.json")]
            } else {
                Vec::new()
            };
            assert_eq!(report.unchanged, kept);
            assert_eq!(std::fs::read_to_string(dir.join("a.json")).unwrap(), "1");
        }
        let leftovers = std::fs::read_dir(&base)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        assert_eq!(leftovers, 0, "no staging folder is left");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_writer_dropped_before_commit_leaves_nothing_behind() {
        let base = scratch("dropped");
        let fresh = base.join("fresh");
        let mut writer = OutputWriter::begin(&fresh).unwrap();
        writer.add(&outputs(&[("a/b.json", "1")])).unwrap();
        drop(writer);
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);

        let existing = base.join("existing");
        write_outputs(&existing, &outputs(&[("a.json", "old")])).unwrap();
        let mut writer = OutputWriter::begin(&existing).unwrap();
        writer
            .add(&outputs(&[("a.json", "new"), ("c.json", "3")]))
            .unwrap();
        drop(writer);
        let names: Vec<_> = std::fs::read_dir(&existing)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
        assert_eq!(
            std::fs::read_to_string(existing.join("a.json")).unwrap(),
            "old"
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_folder_that_appears_during_a_fresh_write_is_written_file_by_file() {
        let base = scratch("appeared");
        let dir = base.join("out");
        let mut writer = OutputWriter::begin(&dir).unwrap();
        writer
            .add(&outputs(&[("a.json", "1"), ("s/b.json", "2")]))
            .unwrap();
        // Another process creates the folder, with a file of its own, before the commit.
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("theirs.txt"), "t").unwrap();
        let report = writer.commit().unwrap();
        assert_eq!(
            report.written,
            vec![dir.join("a.json"), dir.join("s/b.json")]
        );
        assert_eq!(std::fs::read_to_string(dir.join("s/b.json")).unwrap(), "2");
        assert_eq!(
            std::fs::read_to_string(dir.join("theirs.txt")).unwrap(),
            "t"
        );
        assert_eq!(
            std::fs::read_dir(&base).unwrap().count(),
            1,
            "no staging folder left"
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn staging_folders_of_killed_runs_are_swept() {
        let base = scratch("sweep");
        std::fs::create_dir_all(&base).unwrap();
        let backdate = |path: &Path| {
            let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            std::fs::File::open(path)
                .unwrap()
                .set_modified(an_hour_ago)
                .unwrap();
        };
        // A dead process's old folder goes; a recent one, an old one of a running process
        // (pid 1) and another output's stay.
        let dead_old = base.join(".out.toolc-tmp-4000000000");
        let dead_recent = base.join(".out.toolc-tmp-4000000001");
        let running = base.join(".out.toolc-tmp-1");
        let other = base.join(".other.toolc-tmp-4000000002");
        for folder in [&dead_old, &dead_recent, &running, &other] {
            std::fs::create_dir_all(folder.join("schemas")).unwrap();
        }
        for folder in [&dead_old, &running, &other] {
            backdate(folder);
        }
        write_outputs(&base.join("out"), &outputs(&[("a.json", "1")])).unwrap();
        let has_proc = Path::new("/proc/self").exists();
        assert_eq!(dead_old.exists(), !has_proc);
        assert!(dead_recent.exists());
        assert!(running.exists());
        assert!(other.exists());
        assert!(base.join("out/a.json").exists());
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn missing_files_are_written_and_existing_ones_kept() {
        let dir = scratch("missing");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.ts"), "edited by hand").unwrap();
        let files = [
            ("a.ts".to_owned(), "new a".to_owned()),
            ("b.ts".to_owned(), "new b".to_owned()),
        ];
        let done = write_missing(&dir, &files).unwrap();
        assert_eq!(
            done,
            vec![
                (dir.join("a.ts"), Created::Kept),
                (dir.join("b.ts"), Created::Written)
            ]
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("a.ts")).unwrap(),
            "edited by hand"
        );
        assert_eq!(std::fs::read_to_string(dir.join("b.ts")).unwrap(), "new b");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_imports() {
        assert_eq!(
            relative_import(Path::new("/a/stubs"), Path::new("/a/out/tools.js")),
            "../out/tools.js"
        );
        assert_eq!(
            relative_import(Path::new("/a/out"), Path::new("/a/out/tools.js")),
            "./tools.js"
        );
        assert_eq!(
            relative_import(Path::new("/a/b/c"), Path::new("/a/tools.js")),
            "../../tools.js"
        );
        assert_eq!(
            relative_import(Path::new("web/./src"), Path::new("web/gen/../gen/tools.js")),
            "../gen/tools.js"
        );
    }
}
