//! The packages in clients/ against a real service with a market: the
//! TypeScript client's integration script (clients/typescript/test/
//! integration.mjs) calls every public route and checks the errors, a
//! signed call, a forged one and a reset. Their long polls and resumed
//! feeds are exercised by the examples built on them (examples.rs).

use std::path::PathBuf;

use crate::fixtures::market::market;

#[actix_rt::test]
async fn the_typescript_client_reads_every_route_and_signs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let package = root.join("clients/typescript");
    assert!(
        package.join("node_modules/bs58").exists(),
        "run scripts/ensure-examples first (scripts/test does)"
    );
    let m = market(|_| {}).await;
    m.account(500_000_000, 40_000_000_000).await; // 0.5: under water
    m.account(3_000_000_000, 40_000_000_000).await; // 1.5: healthy
    let dir = std::env::temp_dir().join(format!("lendex-clients-{}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let keypair = dir.join("root.json");
    m.t.app.root.save(&keypair);
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new("node")
            .arg("test/integration.mjs")
            .current_dir(&package)
            .env("LENDEX_URL", &m.t.app.base)
            .env("KEYPAIR", &keypair)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the script finishes within 60 s")
    .expect("node runs");
    std::fs::remove_dir_all(dir).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.starts_with("ok "),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
