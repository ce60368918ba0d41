//! The build.rs entry point, in the style of prost-build. (Filled in by the registry work.)

use std::path::PathBuf;

/// Compiles manifests from a build script into Rust modules in `OUT_DIR`.
#[derive(Debug, Default, Clone)]
pub struct Builder {
    manifests: Vec<PathBuf>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    pub fn manifest(mut self, path: impl Into<PathBuf>) -> Builder {
        self.manifests.push(path.into());
        self
    }
}
