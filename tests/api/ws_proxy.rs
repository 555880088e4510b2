//! A TCP proxy in front of surfpool's websocket, to cut connections, refuse
//! new ones, or freeze them (no close, nothing delivered either way).

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct WsProxy {
    pub url: String,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    refusing: bool,
    /// One per live connection: send true to freeze it; dropped to cut it.
    connections: Vec<(watch::Sender<bool>, tokio::task::JoinHandle<()>)>,
}

impl WsProxy {
    /// Forwards ws://127.0.0.1:<port> to `upstream` (a ws:// URL).
    pub async fn start(upstream: &str) -> WsProxy {
        let target = upstream
            .trim_start_matches("ws://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let accepting = state.clone();
        actix_rt::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if accepting.lock().unwrap().refusing {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                let (freeze, frozen) = watch::channel(false);
                let task = actix_rt::spawn(pipe(client, server, frozen));
                accepting.lock().unwrap().connections.push((freeze, task));
            }
        });
        WsProxy { url, state }
    }

    /// Closes every open connection.
    pub fn cut(&self) {
        for (_, task) in self.state.lock().unwrap().connections.drain(..) {
            task.abort();
        }
    }

    /// Cuts every connection and refuses new ones until `up`.
    pub fn down(&self) {
        self.state.lock().unwrap().refusing = true;
        self.cut();
    }

    pub fn up(&self) {
        self.state.lock().unwrap().refusing = false;
    }

    /// Open connections stay open but carry nothing more, either way.
    pub fn freeze(&self) {
        for (freeze, _) in &self.state.lock().unwrap().connections {
            let _ = freeze.send(true);
        }
    }
}

async fn pipe(client: TcpStream, server: TcpStream, frozen: watch::Receiver<bool>) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let copy = |mut from: tokio::net::tcp::OwnedReadHalf,
                mut to: tokio::net::tcp::OwnedWriteHalf,
                mut frozen: watch::Receiver<bool>| async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if *frozen.borrow() {
                // Hold the socket open and deliver nothing, forever.
                let _ = frozen.changed().await;
                std::future::pending::<()>().await;
            }
            if to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let up = copy(client_read, server_write, frozen.clone());
    let down = copy(server_read, client_write, frozen);
    tokio::join!(up, down);
}
