//! HAProxy with the shipped configuration (`ops/haproxy/haproxy.cfg`) in
//! front of replicas on loopback ports: what the balancer tests run against.
//! Debian's `haproxy`, installed by `scripts/ensure-haproxy`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the shipped configuration says the servers go.
const SERVERS_MARKER: &str = "    # Servers: appended by scripts/cluster.";

/// A running HAProxy; stopped when dropped.
pub struct Balancer {
    child: Child,
    /// The front: `http://127.0.0.1:<port>`.
    pub url: String,
    /// The stats page's port (`/;csv`).
    pub stats_port: u16,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Balancer {
    /// The configuration `shipped` (the text of `ops/haproxy/haproxy.cfg`) with
    /// `ports` as its servers r1, r2, ..., started, and returned once every
    /// server is in rotation (or after 20 s, with a panic).
    pub async fn start(shipped: &str, ports: &[u16]) -> Balancer {
        assert!(
            shipped.contains(SERVERS_MARKER),
            "the shipped configuration names where servers go"
        );
        let [front, stats_port] = free_ports();
        let servers: String = ports
            .iter()
            .enumerate()
            .map(|(i, port)| format!("    server r{} 127.0.0.1:{port} check\n", i + 1))
            .collect();
        let path = std::env::temp_dir().join(format!("lendex-haproxy-{front}.cfg"));
        std::fs::write(&path, shipped.replace(SERVERS_MARKER, &servers)).unwrap();
        let balancer = Balancer {
            child: spawn(&path, front, stats_port),
            url: format!("http://127.0.0.1:{front}"),
            stats_port,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        for i in 1..=ports.len() {
            let server = format!("r{i}");
            while !balancer.in_rotation(&server).await {
                assert!(Instant::now() < deadline, "{server} never came in rotation");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        balancer
    }

    /// Whether HAProxy holds `server` in rotation (its stats CSV says UP).
    pub async fn in_rotation(&self, server: &str) -> bool {
        let Some(csv) = get(self.stats_port, "/;csv").await else {
            return false;
        };
        // Columns: pxname, svname, ... status is the 18th.
        csv.lines().any(|line| {
            let cols: Vec<&str> = line.split(',').collect();
            cols.len() > 17 && cols[0] == "lendex" && cols[1] == server && cols[17] == "UP"
        })
    }
}

fn spawn(config: &Path, front: u16, stats: u16) -> Child {
    Command::new("haproxy")
        .args(["-db", "-f"])
        .arg(config)
        .env("LENDEX_LB_BIND", format!("127.0.0.1:{front}"))
        .env("LENDEX_LB_STATS", format!("127.0.0.1:{stats}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("haproxy (scripts/ensure-haproxy installs it)")
}

/// Loopback ports free now, all different (each picked while the others
/// are held).
fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port"))
        .collect();
    std::array::from_fn(|i| held[i].local_addr().expect("a bound port").port())
}

/// The body of `GET path` on a loopback port, HTTP/1.0 (the stats page
/// closes after it), or None when it cannot be had.
async fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut response))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.0 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.1 200").then(|| body.to_string()))
}
