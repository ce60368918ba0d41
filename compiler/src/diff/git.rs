//! Reading manifests as they were at a git revision, without a checkout: `toolc diff
//! --against-git REF` and [`crate::Builder`] baselines compare the working tree with them.
//!
//! git is run as a program (`git cat-file`, `git ls-tree`), the way cargo and every other tool
//! reads a repository it does not own, in the folder of each path with `REF:./name`, so that
//! relative and absolute paths, from any folder of the repository, work alike.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the files at a revision could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    /// What went wrong, for the user; git's own error text where git gave one.
    pub message: String,
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GitError {}

/// The manifests `paths` name (files, or folders of `*.tools.yaml`, as for every command) as
/// they were at `revision`: `(name, text)` pairs, where the name is `REVISION:path`. A path that
/// did not exist then contributes nothing (its tools are all new); a revision that does not
/// exist, or a folder that has no manifests at either version, is an error.
pub fn files_at_revision(
    paths: &[PathBuf],
    revision: &str,
) -> Result<Vec<(String, Vec<u8>)>, GitError> {
    if revision.is_empty() || revision.starts_with('-') {
        return Err(GitError {
            message: format!("`{revision}` is not a git revision"),
        });
    }
    let commit = format!("{revision}^{{commit}}");
    let mut verified = std::collections::HashSet::new();
    let mut out = Vec::new();
    for path in paths {
        // git runs in the folder that holds the path, so that absolute paths and paths from
        // outside the repository's root work alike.
        let (dir, name) = if path.is_dir() {
            (path.clone(), ".".to_owned())
        } else {
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (dir, name)
        };
        if !dir.is_dir() {
            continue;
        }
        if verified.insert(dir.clone()) {
            git(&dir, &["rev-parse", "--verify", "--quiet", &commit]).map_err(|e| GitError {
                message: format!(
                    "`{revision}` is not a commit of the git repository of {} ({e})",
                    dir.display()
                ),
            })?;
        }
        let spec = format!("{revision}:./{name}");
        let Ok(kind) = git(&dir, &["cat-file", "-t", &spec]) else {
            continue;
        };
        match String::from_utf8_lossy(&kind).trim() {
            "blob" => out.push((display_name(revision, path), blob(&dir, &spec)?)),
            "tree" => {
                // `--full-tree`: without it, ls-tree lists only what lies under the current
                // folder *inside* the tree it was given, which is nothing for a subfolder.
                let listing = git(
                    &dir,
                    &["ls-tree", "--full-tree", "--name-only", "-z", &spec],
                )?;
                let mut names: Vec<String> = listing
                    .split(|&b| b == 0)
                    .filter(|n| !n.is_empty())
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .filter(|n| n.ends_with(".tools.yaml"))
                    .collect();
                names.sort();
                for file in names {
                    let spec = format!("{revision}:./{file}");
                    out.push((
                        display_name(revision, &path.join(&file)),
                        blob(&dir, &spec)?,
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

fn blob(dir: &Path, spec: &str) -> Result<Vec<u8>, GitError> {
    git(dir, &["cat-file", "blob", spec])
}

fn display_name(revision: &str, path: &Path) -> String {
    let shown = path.to_string_lossy().replace('\\', "/");
    format!("{revision}:{}", shown.trim_start_matches("./"))
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| GitError {
            message: format!("cannot run git: {e}"),
        })?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(GitError {
            message: stderr
                .trim()
                .lines()
                .next()
                .unwrap_or("no such revision")
                .to_owned(),
        })
    }
}
