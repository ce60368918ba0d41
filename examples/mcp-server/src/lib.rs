//! What the `mcp-server` package's programs share: running one async job on a Tokio runtime
//! and turning its outcome into the process's exit code.

use std::future::Future;
use std::process::ExitCode;

/// Runs `job` to completion on a multi-threaded runtime. `Ok` is success; an `Err` is printed as
/// `error: ...` (with `usage`, when given, on the next line) and is a failure.
pub fn run<F>(usage: Option<&str>, job: F) -> ExitCode
where
    F: Future<Output = Result<(), String>>,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(job) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            if let Some(usage) = usage {
                eprintln!("usage: {usage}");
            }
            ExitCode::FAILURE
        }
    }
}
