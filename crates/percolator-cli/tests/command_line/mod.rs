//! The project's binaries from a test: a run's exit code and output, and help text on every
//! option and argument of a command line, as clap builds it.
#![allow(dead_code)] // each test file uses a different subset

/// Runs `bin args`: (exit code, stdout, stderr).
pub fn run(bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(bin).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every argument of `command` and of its subcommands without help text, as
/// `percolator get <TABLE>`.
fn undocumented(command: &clap::Command, path: &str, missing: &mut Vec<String>, seen: &mut usize) {
    let path = format!("{path} {}", command.get_name()).trim().to_string();
    for arg in command.get_arguments() {
        *seen += 1;
        let text = arg
            .get_help()
            .or(arg.get_long_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        if text.trim().is_empty() {
            let name = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => format!("<{}>", arg.get_id().as_str().to_uppercase()),
            };
            missing.push(format!("{path} {name}"));
        }
    }
    for sub in command.get_subcommands() {
        if sub.get_about().is_none() && sub.get_long_about().is_none() {
            missing.push(format!("{path} {} (no about)", sub.get_name()));
        }
        undocumented(sub, &path, missing, seen);
    }
}

/// Asserts that every option and argument of `commands` and of their subcommands has help
/// text (and every subcommand an about), and that the walk saw more than `more_than` of them.
pub fn assert_documented(commands: impl IntoIterator<Item = clap::Command>, more_than: usize) {
    let (mut missing, mut seen) = (Vec::new(), 0);
    for mut command in commands {
        command.build();
        undocumented(&command, "", &mut missing, &mut seen);
    }
    assert!(seen > more_than, "walked only {seen} arguments");
    assert!(
        missing.is_empty(),
        "without help text:\n{}",
        missing.join("\n")
    );
}

/// Asserts that in `cli` and in every one of its subcommands (more than `more_than` of them)
/// the gateway's and the oracle's security flags are left out of the short help and grouped
/// under their own headings, after the command's own options, in the long help: shown among
/// each command's own options they buried them (60 lines of TLS and Kerberos in `get --help`).
pub fn assert_security_flags_grouped(mut cli: clap::Command, more_than: usize) {
    cli.build();
    let mut commands = vec![(String::new(), cli)];
    let mut checked = 0;
    while let Some((path, mut command)) = commands.pop() {
        let short = command.render_help().to_string();
        let long = command.render_long_help().to_string();
        for flag in [
            "--hbase-ca",
            "--kerberos-keytab",
            "--sasl-qop",
            "--oracle-tls-ca",
        ] {
            assert!(!short.contains(flag), "{flag} in `{path} -h`:\n{short}");
            assert!(long.contains(flag), "{flag} missing from `{path} --help`");
        }
        let heading = |name: &str| {
            long.find(&format!("\n{name}:\n"))
                .unwrap_or_else(|| panic!("no {name:?} heading in `{path} --help`:\n{long}"))
        };
        let gateway = heading("Gateway TLS, Kerberos and impersonation");
        let oracle = heading("Oracle TLS and token");
        assert!(
            long.find("--hbase-ca").unwrap() > gateway,
            "`{path} --help`"
        );
        assert!(
            long.find("--oracle-tls-ca").unwrap() > oracle,
            "`{path} --help`"
        );
        if let Some(own) = long.find("\nOptions:\n") {
            assert!(
                own < gateway.min(oracle),
                "`{path} --help`: own options last"
            );
        }
        checked += 1;
        for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
            commands.push((format!("{path} {}", sub.get_name()), sub.clone()));
        }
    }
    assert!(checked > more_than, "checked only {checked} commands");
}
