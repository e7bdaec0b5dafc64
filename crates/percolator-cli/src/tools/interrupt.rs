//! What Ctrl-C says during long work that is safe to stop anywhere.

/// From now until the process ends, Ctrl-C (SIGINT) prints `message` on stderr and exits with
/// status 130, as the shell's default would, instead of ending the process in silence. Only
/// for work that a kill at any point leaves resumable: the process stops where it is.
///
/// ```no_run
/// percolator_cli::tools::interrupt::explain_ctrl_c("interrupted: run the same command again");
/// ```
pub fn explain_ctrl_c(message: &'static str) {
    // A thread of its own, since the commands that use it are blocking: it outlives them
    // and ends with the process.
    let spawned = std::thread::Builder::new()
        .name("ctrl-c".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
                // The progress bar, if any, leaves the cursor at the end of its line.
                eprintln!("\n{message}");
                std::process::exit(130);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "Ctrl-C will end the command without a word");
    }
}
