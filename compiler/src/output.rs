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
pub fn write_outputs(dir: &Path, outputs: &Outputs) -> io::Result<WriteReport> {
    let mut report = WriteReport::default();
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let result = (|| {
        for (relative, content) in outputs {
            let target = dir.join(relative);
            if std::fs::read(&target).is_ok_and(|old| old == content.as_bytes()) {
                report.unchanged.push(target);
                continue;
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
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
