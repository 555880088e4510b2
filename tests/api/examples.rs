//! The client examples a dApp or bot developer copies (examples/typescript,
//! examples/python), run against a service this test starts, so they cannot
//! rot: the signed add-admin handshake, the liquidation feed (resuming after a
//! drop with Last-Event-ID) and the conditional long poll of the quotes.
//! scripts/ensure-examples installs their pinned dependencies.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::common::*;
use crate::fixtures::market::{USD, market};
use lendex_testkit::proxy::TcpProxy;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The two ways to run an example: (program, script) per language.
fn runners(kind: &str) -> Vec<(PathBuf, PathBuf)> {
    let node = (
        PathBuf::from("node"),
        root().join(format!("examples/typescript/{kind}.mjs")),
    );
    let python = (
        root().join(".venv-examples/bin/python"),
        root().join(format!("examples/python/{}.py", kind.replace('-', "_"))),
    );
    assert!(
        root()
            .join("examples/typescript/node_modules/@lendex/client")
            .exists()
            && python.0.exists(),
        "run scripts/ensure-examples first (scripts/test does)"
    );
    vec![node, python]
}

async fn run(
    program: &Path,
    script: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> (bool, String, String) {
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::process::Command::new(program)
            .arg(script)
            .args(args)
            .envs(env.iter().copied())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the example finishes within 30 s")
    .expect("the example runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[actix_rt::test]
async fn add_admin_examples_sign_the_handshake() {
    let app = spawn_app().await;
    let dir = std::env::temp_dir().join(format!("lendex-examples-{}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let keypair = dir.join("root.json");
    app.root.save(&keypair);
    let env = [
        ("LENDEX_URL", app.base.as_str()),
        ("KEYPAIR", keypair.to_str().unwrap()),
    ];
    for (program, script) in runners("add-admin") {
        let wallet = Wallet::new().pubkey();
        let (ok, stdout, stderr) = run(
            &program,
            &script,
            &env,
            &[&wallet, "pool_admin", "from an example"],
        )
        .await;
        assert!(ok, "{}: {stderr}", script.display());
        assert_eq!(stdout.trim(), r#"{"ok":true}"#, "{}", script.display());
        let (_, me) = app.get(&format!("/api/admin/me?pubkey={wallet}")).await;
        assert_eq!(me["role"], "pool_admin", "{}", script.display());

        // A stranger's key: the server's error, exit 1.
        let stranger = dir.join("stranger.json");
        let _ = std::fs::remove_file(&stranger);
        Wallet::new().save(&stranger);
        let env = [
            ("LENDEX_URL", app.base.as_str()),
            ("KEYPAIR", stranger.to_str().unwrap()),
        ];
        let (ok, _, stderr) = run(&program, &script, &env, &[&wallet, "super_admin"]).await;
        assert!(!ok, "{}", script.display());
        assert_eq!(
            stderr.trim(),
            r#"{"error":"not authorized"}"#,
            "{}",
            script.display()
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[actix_rt::test]
async fn feed_examples_print_candidates_with_quotes() {
    let m = market(|_| {}).await;
    let owner = m.account(500_000_000, 40_000_000_000).await; // 0.5: under water
    let other = m.account(1_000_000_000, 45_000_000_000).await; // 0.8888...: under water
    let env = [("LENDEX_URL", m.t.app.base.as_str())];
    for (program, script) in runners("feed") {
        let (ok, stdout, stderr) = run(&program, &script, &env, &["2"]).await;
        assert!(ok, "{}: {stderr}", script.display());
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            lines[0].starts_with(&format!("candidate_start {owner} hf 0.5000 repay "))
                && lines[0].contains("profit $"),
            "{}: {stdout}",
            script.display()
        );
        // One rule in both languages: cut to 4 places, as the WAD math floors.
        assert!(
            lines[1].starts_with(&format!("candidate_start {other} hf 0.8888 repay ")),
            "{}: {stdout}",
            script.display()
        );
    }
}

/// An example left running, its output read line by line.
struct Running {
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Running {
    fn start(program: &Path, script: &Path, env: &[(&str, &str)], args: &[&str]) -> Running {
        let mut child = tokio::process::Command::new(program)
            .arg(script)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the example runs");
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Running { child, stdout }
    }

    /// The next `n` lines it prints (within 20 s).
    async fn lines(&mut self, n: usize) -> Vec<String> {
        let mut lines = Vec::new();
        while lines.len() < n {
            match tokio::time::timeout(Duration::from_secs(20), self.stdout.next_line()).await {
                Ok(Ok(Some(line))) => lines.push(line),
                _ => break,
            }
        }
        lines
    }

    /// Its exit status and what it wrote to stderr.
    async fn finish(mut self) -> (bool, String) {
        let mut stderr = String::new();
        let out = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("the example ends")
            .unwrap();
        if let Some(mut err) = self.child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = err.read_to_string(&mut stderr).await;
        }
        (out.success(), stderr)
    }
}

/// Runs a feed example through `link`: its snapshot (3 owners), then 2 price
/// moves while the link is down (6 updates), then the link up again, its
/// reconnects going to `elsewhere` when given (another replica). It must
/// resume with exactly the 6 updates and no reset; returns them.
async fn cut_and_resume(
    m: &mut crate::fixtures::market::Market,
    price: &mut i64,
    link: &TcpProxy,
    elsewhere: Option<&str>,
    (program, script): (&Path, &Path),
) -> Vec<String> {
    let env = [("LENDEX_URL", link.url.as_str())];
    let mut example = Running::start(program, script, &env, &["9"]);
    let snapshot = example.lines(3).await;
    assert!(
        snapshot.len() == 3 && snapshot.iter().all(|l| l.starts_with("candidate_start ")),
        "{}: {snapshot:?}",
        script.display()
    );
    link.down();
    for _ in 0..2 {
        *price += USD / 10;
        m.set_sol_price(*price).await;
    }
    if let Some(base) = elsewhere {
        link.retarget(base);
    }
    link.up();
    let missed = example.lines(6).await;
    let (ok, stderr) = example.finish().await;
    assert!(ok, "{}: {stderr}", script.display());
    assert!(
        stderr.contains("reconnecting after "),
        "{}: {stderr}",
        script.display()
    );
    // A `reset` event is printed as a line of its own ("reset <reason>");
    // the cut itself may read "Connection reset by peer".
    assert!(
        !stderr.lines().any(|l| l.starts_with("reset ")),
        "{}: resumed, not reset: {stderr}",
        script.display()
    );
    // Exactly the 6 updates it missed, the snapshot not again.
    assert_eq!(missed.len(), 6, "{}: {missed:?}", script.display());
    assert!(
        missed.iter().all(|l| l.starts_with("candidate_update ")),
        "{}: {missed:?}",
        script.display()
    );
    missed
}

#[actix_rt::test]
async fn feed_examples_resume_after_a_drop_with_nothing_lost_or_repeated() {
    let mut m = market(|_| {}).await;
    let mut owners = Vec::new();
    for i in 0..3 {
        owners.push(m.account(500_000_000 + i, 40_000_000_000).await);
    }
    owners.sort();
    // Between the example and the service: a link the test cuts.
    let link = TcpProxy::start(&m.t.app.base).await;
    let mut price = 20 * USD;
    for (program, script) in runners("feed") {
        let missed = cut_and_resume(&mut m, &mut price, &link, None, (&program, &script)).await;
        // Each owner twice.
        let mut updated: Vec<String> = missed
            .iter()
            .map(|l| l.split(' ').nth(1).unwrap().to_string())
            .collect();
        updated.sort();
        updated.dedup();
        assert_eq!(updated, owners, "{}", script.display());
    }
}

/// The examples' reconnect lands on another replica (as through a load
/// balancer): it resumes there with exactly what it missed, no reset.
#[actix_rt::test]
async fn feed_examples_resume_on_another_replica() {
    let mut m = market(|_| {}).await;
    for i in 0..3 {
        m.account(500_000_000 + i, 40_000_000_000).await;
    }
    let b = crate::fixtures::replicas::second_replica(&m).await;
    let mut price = 20 * USD;
    for (program, script) in runners("feed") {
        let link = TcpProxy::start(&m.t.app.base).await;
        let elsewhere = Some(b.base.as_str());
        cut_and_resume(&mut m, &mut price, &link, elsewhere, (&program, &script)).await;
    }
}

#[actix_rt::test]
async fn poll_examples_are_woken_by_a_new_quote() {
    let mut m = market(|_| {}).await;
    m.account(500_000_000, 40_000_000_000).await;
    let base = m.t.app.base.clone();
    let env = [("LENDEX_URL", base.as_str())];
    let mut price = 20 * USD;
    for (program, script) in runners("poll") {
        let mut example = Running::start(&program, &script, &env, &["2"]);
        let first = example.lines(1).await;
        assert!(
            first
                .first()
                .is_some_and(|l| l.starts_with("1 quotes, etag \"")),
            "{}: {first:?}",
            script.display()
        );
        // It now holds a long poll (25 s): a new price answers it at once.
        tokio::time::sleep(Duration::from_millis(500)).await;
        price += USD;
        m.set_sol_price(price).await;
        let second = example.lines(1).await;
        let (ok, stderr) = example.finish().await;
        assert!(ok, "{}: {stderr}", script.display());
        assert_eq!(
            second.len(),
            1,
            "{}: woken before its wait ended",
            script.display()
        );
        let tag = |l: &str| {
            l.split("etag ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .to_string()
        };
        assert_ne!(tag(&first[0]), tag(&second[0]), "{}", script.display());
    }
}
