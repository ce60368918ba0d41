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

/// Writes every output under `dir`. Each changed file is first written beside its target under a
/// temporary name; only when all of them are written are they renamed into place.
///
/// When `dir` does not exist yet, the whole tree is written into a hidden sibling folder that is
/// then renamed to `dir`: one rename instead of one per file, and still all or nothing.
pub fn write_outputs(dir: &Path, outputs: &Outputs) -> io::Result<WriteReport> {
    if std::fs::symlink_metadata(dir).is_err() {
        if let Some(report) = write_fresh(dir, outputs)? {
            return Ok(report);
        }
    }
    let mut report = WriteReport::default();
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut created = Folders::default();
    let result = (|| {
        for (relative, content) in outputs {
            let target = dir.join(relative);
            if same_content(&target, content) {
                report.unchanged.push(target);
                continue;
            }
            if let Some(parent) = target.parent() {
                created.ensure(parent)?;
            }
            let file_name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let temp = target.with_file_name(format!(".{file_name}.toolc-tmp"));
            std::fs::write(&temp, content)?;
            staged.push((temp, target));
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (temp, _) in &staged {
            let _ = std::fs::remove_file(temp);
        }
        return Err(e);
    }
    for (temp, target) in staged {
        std::fs::rename(&temp, &target)?;
        report.written.push(target);
    }
    Ok(report)
}

/// The fresh-folder case of [`write_outputs`]. Returns `None` when `dir` appeared meanwhile (the
/// caller then writes file by file) and an error when the staging folder cannot be written.
fn write_fresh(dir: &Path, outputs: &Outputs) -> io::Result<Option<WriteReport>> {
    let Some(name) = dir.file_name() else {
        return Ok(None); // `..` or a root: not a folder we would create
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
    let written = (|| {
        let mut created = Folders::default();
        created.ensure(&staging)?;
        let files: Vec<(PathBuf, &str)> = outputs
            .iter()
            .map(|(relative, content)| (staging.join(relative), content.as_str()))
            .collect();
        for (path, _) in &files {
            if let Some(folder) = path.parent() {
                created.ensure(folder)?;
            }
        }
        // One thread: creating files contends on the file system's allocation locks, and on
        // this machine several writer threads measured no faster, only busier.
        for (path, content) in &files {
            std::fs::write(path, content)?;
        }
        std::fs::rename(&staging, dir)
    })();
    match written {
        Ok(()) => Ok(Some(WriteReport {
            written: outputs.keys().map(|relative| dir.join(relative)).collect(),
            unchanged: Vec::new(),
        })),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            if std::fs::symlink_metadata(dir).is_ok() {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// Whether the file at `path` holds exactly `content`; the length is compared before reading.
fn same_content(path: &Path, content: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == content.len() as u64)
        && std::fs::read(path).is_ok_and(|old| old == content.as_bytes())
}

/// Folders already created in this write, so that each is created once, not once per file.
#[derive(Default)]
struct Folders(std::collections::HashSet<PathBuf>);

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
