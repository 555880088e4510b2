//! The packages in clients/ against a real service with a market: each
//! one's integration script (clients/typescript/test/integration.mjs,
//! clients/python/tests/integration.py) calls every public route and checks
//! the errors, a signed call, a stranger's, a forged one and a reset. Their
//! long polls and resumed feeds are exercised by the examples built on them
//! (examples.rs).

use std::path::{Path, PathBuf};

use crate::fixtures::market::market;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[actix_rt::test]
async fn the_typescript_client_reads_every_route_and_signs() {
    let package = root().join("clients/typescript");
    assert!(
        package.join("node_modules/bs58").exists(),
        "run scripts/ensure-examples first (scripts/test does)"
    );
    run_against_a_market(Path::new("node"), "test/integration.mjs", &package).await;
}

#[actix_rt::test]
async fn the_python_client_reads_every_route_and_signs() {
    let python = root().join(".venv-examples/bin/python");
    assert!(
        python.exists(),
        "run scripts/ensure-examples first (scripts/test does)"
    );
    let package = root().join("clients/python");
    run_against_a_market(&python, "tests/integration.py", &package).await;
}

/// Runs `script` of `package` with `program` against a market with an owner
/// under water and a healthy one; it must end with "ok <n> checks".
async fn run_against_a_market(program: &Path, script: &str, package: &Path) {
    let m = market(|_| {}).await;
    m.account(500_000_000, 40_000_000_000).await; // 0.5: under water
    m.account(3_000_000_000, 40_000_000_000).await; // 1.5: healthy
    let dir = std::env::temp_dir().join(format!("lendex-clients-{}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let keypair = dir.join("root.json");
    m.t.app.root.save(&keypair);
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(program)
            .arg(script)
            .current_dir(package)
            .env("LENDEX_URL", &m.t.app.base)
            .env("KEYPAIR", &keypair)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the script finishes within 60 s")
    .expect("the script runs");
    std::fs::remove_dir_all(dir).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.starts_with("ok "),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
