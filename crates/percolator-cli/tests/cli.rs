//! The `percolator` and `percolator-oracle` binaries end to end, against an emulator and an
//! oracle started here: values from files, standard input and hex; deadlines against servers
//! that never answer; `migrate apply` of an adopted table; the percolator families refused;
//! help text on every option; uncoloured logs when standard error is not a terminal.

mod command_line;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use command_line::{assert_documented, assert_security_flags_grouped};
use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
use percolator::HBaseClient;

/// An emulator and an oracle for one test, and their addresses.
struct Servers {
    _emulator: hbase_emulator::EmulatorHandle,
    _oracle: percolator::oracle::OracleHandle,
    hbase: String,
    oracle: String,
    client: HBaseClient,
}

fn servers() -> Servers {
    let emulator = hbase_emulator::start_local().unwrap();
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    let hbase = emulator.local_addr().to_string();
    let client = HBaseClient::connect(percolator::HBaseConfig::new(hbase.clone())).unwrap();
    Servers {
        oracle: oracle.local_addr().to_string(),
        _emulator: emulator,
        _oracle: oracle,
        hbase,
        client,
    }
}

impl Servers {
    /// A transactional table with family `f`.
    fn table(&self, name: &str) -> String {
        percolator::txn::setup::create_table(&self.client, &Default::default(), name, &["f"])
            .unwrap();
        name.to_string()
    }

    /// `command` (a data command and its arguments) with `--hbase ADDR --oracle ADDR`.
    fn args<'a>(&'a self, command: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![command[0], "--hbase", &self.hbase, "--oracle", &self.oracle];
        args.extend_from_slice(&command[1..]);
        args
    }
}

/// Runs `percolator args`: (exit code, stdout, stderr).
fn percolator(args: &[&str]) -> (i32, String, String) {
    percolator_with_stdin(args, None)
}

fn percolator_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_percolator"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        // A writer of its own: the child may refuse the value before reading all of it.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Bytes of every value, 0x00 and 0xff among them, longer than a command-line argument may be.
fn binary_value(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| match i % 5 {
            0 => 0x00,
            1 => 0xff,
            _ => (i as u8).wrapping_mul(31).wrapping_add(seed),
        })
        .collect()
}

#[test]
fn binary_values_round_trip_through_files_and_stdin_and_oversized_ones_are_refused() {
    let s = servers();
    let t = s.table("values");
    let dir = tempfile::tempdir().unwrap();
    let limit = percolator::TxnOptions::default().max_value_size();
    let out = dir.path().join("out.bin");
    let out_path = out.to_str().unwrap();
    let get_to_file = |row: &str| -> Vec<u8> {
        let _ = std::fs::remove_file(&out);
        let (code, stdout, err) =
            percolator(&s.args(&["get", "--output", out_path, &t, row, "f:v"]));
        assert_eq!(code, 0, "{stdout} {err}");
        std::fs::read(&out).unwrap()
    };

    // From a file: 300 KB, more than an argument carries.
    let value = binary_value(300_000, 7);
    let file = dir.path().join("in.bin");
    std::fs::write(&file, &value).unwrap();
    let (code, _, err) = percolator(&s.args(&[
        "put",
        &t,
        "file",
        "f:v",
        "--value-file",
        file.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(get_to_file("file"), value);

    // From standard input: the limit exactly.
    let value = binary_value(limit, 3);
    let (code, _, err) =
        percolator_with_stdin(&s.args(&["put", &t, "stdin", "f:v", "-"]), Some(&value));
    assert_eq!(code, 0, "{err}");
    assert_eq!(get_to_file("stdin"), value);

    // As hex, on the command line and on standard input.
    let (code, _, err) = percolator(&s.args(&["put", "--hex", &t, "hex", "f:v", "00ff41"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(get_to_file("hex"), [0x00, 0xff, 0x41]);
    let (code, _, err) = percolator_with_stdin(
        &s.args(&["put", "--hex", &t, "hexin", "f:v", "-"]),
        Some(b"0xFF00\n"),
    );
    assert_eq!(code, 0, "{err}");
    let (_, got, _) = percolator(&s.args(&["get", "--json", &t, "hexin", "f:v"]));
    assert_eq!(json(&got), serde_json::json!({"value": {"hex": "ff00"}}));

    // One byte over the limit, from a file or from standard input: refused, nothing written.
    let big = binary_value(limit + 1, 5);
    std::fs::write(&file, &big).unwrap();
    let too_big = |code: i32, err: &str| {
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!(
                "value for {t} row big column f:v is {} bytes, over the limit of {limit}",
                limit + 1
            )) && err.lines().count() == 1,
            "{err}"
        );
    };
    let (code, _, err) = percolator(&s.args(&[
        "put",
        &t,
        "big",
        "f:v",
        "--value-file",
        file.to_str().unwrap(),
    ]));
    too_big(code, &err);
    let (code, _, err) =
        percolator_with_stdin(&s.args(&["put", &t, "big", "f:v", "-"]), Some(&big));
    too_big(code, &err);
    let (_, got, _) = percolator(&s.args(&["get", "--json", &t, "big", "f:v"]));
    assert_eq!(json(&got), serde_json::json!({"value": null}));

    // An absent value with --output: exit 1, the file not written.
    let _ = std::fs::remove_file(&out);
    let (code, stdout, _) = percolator(&s.args(&["get", "--output", out_path, &t, "big", "f:v"]));
    assert_eq!((code, stdout.trim()), (1, "(absent)"));
    assert!(!out.exists());

    // A value that is not hex is refused.
    let (code, _, err) = percolator(&s.args(&["put", "--hex", &t, "bad", "f:v", "0g"]));
    assert_eq!(code, 2, "{err}");
}

/// A server that accepts connections and never answers; its address.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    addr
}

/// Runs `args` and checks that it fails within `bound`, its error naming `addr`.
fn fails_in_time_naming(args: &[&str], addr: &str, bound: Duration) {
    let started = Instant::now();
    let (code, out, err) = percolator(args);
    let took = started.elapsed();
    assert_ne!(code, 0, "{out} {err}");
    assert!(took < bound, "{args:?} took {took:?}: {err}");
    assert!(err.contains(addr), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_silent_gateway_or_oracle_fails_the_command_within_its_timeout_naming_it() {
    let (gateway, oracle) = (silent_server(), silent_server());
    let bound = Duration::from_secs(10);
    let started = Instant::now();
    let (code, _, err) = percolator(&[
        "get",
        "--hbase",
        &gateway,
        "--oracle",
        &oracle,
        "--timeout",
        "2",
        "t",
        "r",
        "f:q",
    ]);
    let took = started.elapsed();
    assert_ne!(code, 0);
    assert!(
        took >= Duration::from_secs(2) && took < bound,
        "{took:?}: {err}"
    );
    assert!(
        err.contains(&gateway) && err.contains("timed out after 2"),
        "{err}"
    );
    for command in [
        &[
            "put",
            "--hbase",
            &gateway,
            "--oracle",
            &oracle,
            "--timeout",
            "2",
            "t",
            "r",
            "f:q",
            "v",
        ][..],
        &[
            "scan",
            "--hbase",
            &gateway,
            "--oracle",
            &oracle,
            "--timeout",
            "2",
            "t",
        ],
        &["locks", "--hbase", &gateway, "--timeout", "2", "t"],
        &[
            "migrate",
            "status",
            "--hbase",
            &gateway,
            "--timeout",
            "2",
            "t",
        ],
        &[
            "gc",
            "--hbase",
            &gateway,
            "--oracle",
            &oracle,
            "--timeout",
            "2",
            "--once",
            "t",
        ],
    ] {
        fails_in_time_naming(command, &gateway, bound);
    }

    // A gateway that answers and an oracle that does not: the oracle is named.
    let s = servers();
    let t = s.table("silent");
    fails_in_time_naming(
        &[
            "get",
            "--hbase",
            &s.hbase,
            "--oracle",
            &oracle,
            "--timeout",
            "2",
            &t,
            "r",
            "f:q",
        ],
        &oracle,
        bound,
    );
    fails_in_time_naming(
        &[
            "gc",
            "--hbase",
            &s.hbase,
            "--oracle",
            &oracle,
            "--timeout",
            "2",
            "--once",
            &t,
        ],
        &oracle,
        bound,
    );
}

#[test]
fn migrate_apply_of_an_adopted_table_has_nothing_to_do_and_succeeds() {
    let s = servers();
    let admin = s.client.admin();
    admin
        .create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))
        .unwrap();
    s.client
        .put("legacy", &Put::new("r1").add("f", "q", "v1"))
        .unwrap();
    let hb = s.hbase.as_str();
    let (code, out, err) = percolator(&["migrate", "apply", "--hbase", hb, "--json", "legacy"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)[0]["nothing_to_do"], false, "{out}");

    let (code, out, err) = percolator(&["migrate", "apply", "--hbase", hb, "legacy"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "legacy: nothing to do (already adopted)");
    let (code, out, err) = percolator(&["migrate", "apply", "--hbase", hb, "--json", "legacy"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        json(&out),
        serde_json::json!([{"table": "legacy", "nothing_to_do": true, "state": "adopted"}])
    );

    // Among others: the adopted table is said to have nothing to do, the plain one adopted.
    admin
        .create_table(&TableDescriptor::new("legacy2").family(FamilyDescriptor::new("f")))
        .unwrap();
    let (code, out, err) = percolator(&[
        "migrate", "apply", "--hbase", hb, "--json", "legacy", "legacy2",
    ]);
    assert_eq!(code, 0, "{err}");
    let reports = json(&out);
    assert_eq!(reports[0]["nothing_to_do"], true, "{out}");
    assert_eq!(reports[1]["nothing_to_do"], false, "{out}");
    assert_eq!(reports[1]["table"], "legacy2", "{out}");

    // A table created transactional: nothing to do either.
    let t = s.table("born_transactional");
    let (code, out, err) = percolator(&["migrate", "apply", "--hbase", hb, &t]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("nothing to do"), "{out}");
}

#[test]
fn the_percolator_families_are_refused_to_get_put_delete_and_scan() {
    let s = servers();
    let t = s.table("reserved");
    let (code, _, err) = percolator(&s.args(&["put", &t, "r", "f:q", "v"]));
    assert_eq!(code, 0, "{err}");
    for family in ["_pl", "_pw", "_pn", "_pa"] {
        let column = format!("{family}:q");
        for command in [
            &["get", &t, "r", &column][..],
            &["put", &t, "r", &column, "v"],
            &["delete", &t, "r", &column],
            &["scan", "--family", family, &t],
        ] {
            let (code, out, err) = percolator(&s.args(command));
            assert_eq!(code, 2, "{command:?}: {out} {err}");
            assert!(
                err.contains("percolator family") && err.contains(family),
                "{command:?}: {err}"
            );
        }
    }
    // A user family scans, and --family keeps only its columns.
    let (code, out, err) = percolator(&s.args(&["scan", "--json", "--family", "f", &t]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        json(&out),
        serde_json::json!([{"row": "r", "family": "f", "qualifier": "q", "value": "v"}])
    );
    let (code, out, _) = percolator(&s.args(&["scan", "--json", "--family", "g", &t]));
    assert_eq!((code, json(&out)), (0, serde_json::json!([])));
}

/// Clap turns a type's rustdoc into `--help` text unless told otherwise; the oracle's
/// command-line type documents itself for maintainers, with a code block.
#[test]
fn the_oracles_help_is_not_its_rustdoc() {
    let help = percolator_cli::cli::oracle::Cli::command()
        .render_long_help()
        .to_string();
    assert!(
        help.starts_with("Timestamp oracle for percolator transactions"),
        "{help}"
    );
    for leak in ["```", "percolator_cli::", "command line: serving"] {
        assert!(!help.contains(leak), "{leak:?} in --help:\n{help}");
    }
}

#[test]
fn every_option_and_argument_of_both_binaries_has_help_text() {
    let oracle = percolator_cli::cli::oracle::Cli::command();
    assert_documented([percolator_cli::cli::Cli::command(), oracle], 100);
    let mut cli = percolator_cli::cli::Cli::command();
    cli.build();

    let scan = cli.find_subcommand("scan").unwrap();
    let limit = scan
        .get_arguments()
        .find(|a| a.get_long() == Some("limit"))
        .unwrap();
    assert!(limit.get_help().unwrap().to_string().contains("rows"));

    // And the text shown.
    for args in [
        &["--help"][..],
        &["get", "--help"],
        &["put", "--help"],
        &["gc", "--help"],
    ] {
        let (code, out, _) = percolator(args);
        assert_eq!(code, 0);
        assert!(
            !out.contains("main job") && !out.contains("target"),
            "{out}"
        );
    }
}

#[test]
fn the_oracle_logs_without_colours_when_stderr_is_not_a_terminal() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_percolator-oracle"))
        .args(["--store", "memory", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on "), "{line}");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut stderr = BufReader::new(stderr);
        let mut line = String::new();
        let _ = stderr.read_line(&mut line);
        let _ = tx.send(line);
    });
    let log = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    let log = log.expect("a log line on stderr");
    assert!(log.contains("INFO"), "{log:?}");
    assert!(!log.contains("\x1b["), "ANSI escapes in {log:?}");
}

#[test]
fn create_makes_a_transactional_table_through_an_http_gateway() {
    let emulator = hbase_emulator::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        hbase_emulator::EmulatorConfig {
            http: true,
            ..Default::default()
        },
    )
    .unwrap();
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    let url = format!("http://{}/", emulator.local_addr());
    let oracle = oracle.local_addr().to_string();

    let (code, out, err) = percolator(&["create", "--hbase", &url, "accounts", "f", "g:3"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "created accounts (transactional, cell locks)");
    let client = HBaseClient::connect(percolator::HBaseConfig::new(url.clone())).unwrap();
    let desc = client.admin().table_descriptor("accounts").unwrap();
    let schema = percolator::txn::Schema::default();
    schema.check(&desc).unwrap();
    let versions = |name: &[u8]| {
        desc.families
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.max_versions)
    };
    assert_eq!(versions(b"f"), Some(percolator::txn::ALL_VERSIONS));
    assert_eq!(versions(b"g"), Some(3));

    let (code, out, err) = percolator(&["create", "--hbase", &url, "--json", "accounts", "f"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"created\": false"), "{out}");

    // A table's lock granularity is chosen at creation and kept.
    let rows = [
        "create",
        "--hbase",
        &url,
        "--lock-granularity",
        "row",
        "users",
        "f",
    ];
    let (code, out, err) = percolator(&rows);
    assert_eq!(
        (code, out.trim()),
        (0, "created users (transactional, row locks)"),
        "{err}"
    );
    let (code, _, err) = percolator(&["create", "--hbase", &url, "users", "f"]);
    assert_ne!(code, 0);
    assert!(err.contains("users locks by row, not cell"), "{err}");

    // The data commands go through the same gateway.
    let put = [
        "put", "--hbase", &url, "--oracle", &oracle, "accounts", "r", "f:q", "7",
    ];
    assert_eq!(percolator(&put).0, 0);
    let (code, out, _) = percolator(&[
        "get", "--hbase", &url, "--oracle", &oracle, "accounts", "r", "f:q",
    ]);
    assert_eq!((code, out.trim()), (0, "7"));

    for bad in [
        &["accounts2", "_pl"][..],
        &["accounts2", "f:0"],
        &["accounts2"],
    ] {
        let mut args = vec!["create", "--hbase", &url];
        args.extend_from_slice(bad);
        let (code, _, err) = percolator(&args);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
    assert!(!client.admin().table_exists("accounts2").unwrap());
}

#[test]
fn oracle_fetch_and_stats_give_up_on_a_silent_oracle_within_their_timeout() {
    let oracle = silent_server();
    for command in ["fetch", "stats"] {
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_percolator-oracle"))
            .args([command, "--addr", &oracle, "--timeout", "1"])
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command}: {err}");
        assert!(
            took < Duration::from_secs(8),
            "{command} took {took:?}: {err}"
        );
        assert!(err.contains(&oracle), "{command}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_percolator-oracle"))
        .args(["fetch", "--addr", &oracle, "--timeout", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--timeout 0"));
}

/// Every duration flag reads `5`, `5s`, `500ms`, `10m` alike; `--hbase` defaults to
/// `HBASE_THRIFT`, as the library's `HBaseConfig::with_env` does.
#[test]
fn durations_take_units_and_the_gateway_comes_from_hbase_thrift() {
    let s = servers();
    let t = s.table("units");
    for timeout in ["5", "5s", "1500ms", "1m", "0.5m"] {
        let (code, _, err) =
            percolator(&s.args(&["put", "--timeout", timeout, &t, "r", "f:q", "v"]));
        assert_eq!(code, 0, "--timeout {timeout}: {err}");
    }
    let (code, _, err) = percolator(&s.args(&["put", "--timeout", "5d", &t, "r", "f:q", "v"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("as a duration (e.g. 5, 5s, 0.5, 500ms, 10m, 1h)"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_percolator"))
        .args(["get", "--oracle", &s.oracle, "--json", &t, "r", "f:q"])
        .env("HBASE_THRIFT", &s.hbase)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&text), serde_json::json!({"value": "v"}));
}

/// `migrate status` of a table that does not exist says so and exits 1, like every other
/// problem it finds.
#[test]
fn migrate_status_of_a_missing_table_is_a_problem() {
    let s = servers();
    let (code, out, err) = percolator(&["migrate", "status", "--hbase", &s.hbase, "nosuchtable"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out.trim(), "nosuchtable: missing");
}

/// Every command takes the gateway's and the oracle's security flags; shown among each
/// command's own options they buried them (60 lines of TLS and Kerberos in `get --help`).
#[test]
fn the_shared_security_flags_are_grouped_and_left_out_of_short_help() {
    assert_security_flags_grouped(percolator_cli::cli::Cli::command(), 15);
}

/// Ctrl-C in the middle of `migrate apply` says that nothing is lost and how to go on, and
/// the same command then resumes and finishes the table.
#[test]
fn ctrl_c_during_migrate_apply_says_it_resumes_and_it_does() {
    // A gateway a few milliseconds away, so that the adoption is still running when it is
    // interrupted.
    let config = hbase_emulator::EmulatorConfig {
        service_time: Duration::from_millis(3),
        ..Default::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let emulator = hbase_emulator::start(listener, config).unwrap();
    let hb = emulator.local_addr().to_string();
    let client = HBaseClient::connect(percolator::HBaseConfig::new(hb.clone())).unwrap();
    client
        .admin()
        .create_table(&TableDescriptor::new("big").family(FamilyDescriptor::new("f")))
        .unwrap();
    let rows: Vec<Put> = (0..4000)
        .map(|i| Put::new(format!("r{i:05}")).add("f", "q", format!("v{i}")))
        .collect();
    for chunk in rows.chunks(500) {
        client.put_many("big", chunk).unwrap();
    }

    let apply = [
        "migrate",
        "apply",
        "--hbase",
        &hb,
        "--checkpoint-rows",
        "50",
        "big",
    ];
    let child = Command::new(env!("CARGO_BIN_EXE_percolator"))
        .args(apply)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once its data pass has checkpointed.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, out, _) = percolator(&["migrate", "status", "--hbase", &hb, "--json", "big"]);
        if out.contains("\"after\": \"r") || out.contains("\"after\":\"r") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint within 60 s: {out}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.trim().ends_with(
            "migrate apply interrupted; nothing is lost: the same command resumes from the last \
             checkpoint (migrate status shows it)"
        ),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let (code, out, err) = percolator(&apply);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("big: adopted") && out.contains("resumed"),
        "{out}"
    );
    let (code, out, err) = percolator(&["migrate", "verify", "--hbase", &hb, "big"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// The schema change of `migrate apply` visits no rows; it is said when it starts and ends,
/// so a slow one (HBase reopening regions) is not a silent wait.
#[test]
fn migrate_apply_says_when_it_changes_the_schema() {
    let s = servers();
    s.client
        .admin()
        .create_table(&TableDescriptor::new("noted").family(FamilyDescriptor::new("f")))
        .unwrap();
    let (code, _, err) = percolator(&["migrate", "apply", "--hbase", &s.hbase, "noted"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "schema noted: changing 5 families in one table modification (HBase reopens each \
             region of the table once)"
        ) && err.contains("schema noted: changed in "),
        "{err}"
    );
}

/// A reader that stops reading (`percolator locks t | head -n 1`) ends the command as it ends
/// any Unix tool, by SIGPIPE: no panic, no stack trace. The pipe is closed before the command
/// has reached the gateway, so its first line meets it closed.
#[test]
fn a_closed_standard_output_ends_a_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let s = servers();
    let table = s.table("closed_stdout");
    let mut child = Command::new(env!("CARGO_BIN_EXE_percolator"))
        .args(["locks", "--hbase", &s.hbase, &table])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?} {stderr}",
        out.status
    );
}
