//! The client examples a dApp or bot developer copies (examples/typescript,
//! examples/python), run against a service this test starts, so they cannot
//! rot: the signed add-admin handshake and the liquidation feed.
//! scripts/ensure-examples installs their pinned dependencies.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::health_feed::market;

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
            .join("examples/typescript/node_modules/tweetnacl")
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
    let env = [("LENDEX_URL", m.t.app.base.as_str())];
    for (program, script) in runners("feed") {
        let (ok, stdout, stderr) = run(&program, &script, &env, &["1"]).await;
        assert!(ok, "{}: {stderr}", script.display());
        let line = stdout.lines().next().unwrap_or_default();
        assert!(
            line.starts_with(&format!("candidate_start {owner} hf 0.5000 repay "))
                && line.contains("profit $"),
            "{}: {stdout}",
            script.display()
        );
    }
}
