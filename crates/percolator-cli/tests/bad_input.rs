//! docs/cli-errors.md run as a script: every command it shows runs against the servers it
//! names (an emulator as each kind of gateway, an oracle alive, dead or silent), and must end
//! as the document says: one line on stderr, exactly the text shown, a non-zero exit status,
//! no panic, within its timeout.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use percolator::hbase::{FamilyDescriptor, TableDescriptor};
use percolator::HBaseClient;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli-errors.md");

/// One example of the document: the command after `$ percolator`, the exit status, and the
/// line it prints on stderr.
struct Example {
    command: String,
    status: i32,
    stderr: String,
}

/// The ```text blocks of the document that start with `$ percolator`: the command, then
/// `exit N` and the error line.
fn examples(doc: &str) -> Vec<Example> {
    let mut found = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```text" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let Some(command) = block.first().and_then(|l| l.strip_prefix("$ percolator ")) else {
            continue;
        };
        let status = block
            .get(1)
            .and_then(|l| l.strip_prefix("exit "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no `exit N` line after `{command}`"));
        let stderr = block.get(2..).unwrap_or_default().join("\n");
        found.push(Example {
            command: command.to_owned(),
            status,
            stderr,
        });
    }
    found
}

/// A port nothing listens on.
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A server that accepts connections and never answers.
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

fn emulator(config: hbase_emulator::EmulatorConfig) -> hbase_emulator::EmulatorHandle {
    hbase_emulator::start(TcpListener::bind("127.0.0.1:0").unwrap(), config).unwrap()
}

/// Whether `got` is `want`, where `…` in `want` stands for any text (a time, a port).
fn matches(want: &str, got: &str) -> bool {
    let mut parts = want.split('…');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = got.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

#[test]
fn every_bad_input_of_the_document_ends_as_it_says() {
    let doc = std::fs::read_to_string(DOC).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    let examples = examples(&doc);
    assert!(
        examples.len() >= 15,
        "only {} examples in {DOC}",
        examples.len()
    );

    let plain = emulator(Default::default());
    let web = emulator(hbase_emulator::EmulatorConfig {
        http: true,
        ..Default::default()
    });
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let tls = emulator(hbase_emulator::EmulatorConfig {
        http: true,
        tls: Some(
            hbase_emulator::tls_config_from_pem(
                cert.cert.pem().as_bytes(),
                cert.key_pair.serialize_pem().as_bytes(),
                None,
            )
            .unwrap(),
        ),
        ..Default::default()
    });
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    let client =
        HBaseClient::connect(percolator::HBaseConfig::new(plain.local_addr().to_string())).unwrap();
    percolator::txn::setup::create_table(&client, &Default::default(), "accounts", &["f"]).unwrap();
    client
        .admin()
        .create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.bin");
    let limit = percolator::TxnOptions::default().max_value_size();
    std::fs::write(&huge, vec![b'x'; limit + 1]).unwrap();

    // Longer names first: one may begin another.
    let mut names = [
        ("GW_PLAIN", plain.local_addr().to_string()),
        ("GW_WEB", web.local_addr().to_string()),
        ("GW_TLS", tls.local_addr().to_string()),
        ("PORT_CLOSED", closed_port()),
        ("TSO_DEAD", closed_port()),
        ("TSO_SILENT", silent_server()),
        ("TSO", oracle.local_addr().to_string()),
        ("HUGE_FILE", huge.to_str().unwrap().to_owned()),
        ("LIMIT", limit.to_string()),
        ("HUGE", (limit + 1).to_string()),
    ];
    names.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let fill = |text: &str| {
        names
            .iter()
            .fold(text.to_owned(), |t, (name, value)| t.replace(name, value))
    };

    let mut wrong = Vec::new();
    for example in &examples {
        let command = fill(&example.command);
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_percolator"))
            .args(command.split_whitespace())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let took = started.elapsed();
        // What the command said: its error, or for a problem it reports (exit 1), its report.
        let said = [&out.stdout[..], &out.stderr[..]].concat();
        let stderr = String::from_utf8_lossy(&said).trim().to_owned();
        let want = fill(&example.stderr);
        let status = out.status.code().unwrap_or(-1);
        if std::env::var_os("PRINT_ACTUAL").is_some() {
            eprintln!(
                "$ percolator {}\nexit {status}\n{stderr}\n",
                example.command
            );
        }
        // Every example bounds its waits at 5 s; the rest is the process and the emulator.
        if status != example.status
            || status == 0
            || !matches(&want, &stderr)
            || stderr.contains("panicked")
            || took > Duration::from_secs(10)
        {
            wrong.push(format!(
                "$ percolator {command}\n  want: exit {}: {want}\n  got:  exit {status} after {took:?}: {stderr}",
                example.status
            ));
        }
    }
    assert!(wrong.is_empty(), "{DOC}:\n{}", wrong.join("\n"));
}
