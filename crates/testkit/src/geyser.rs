//! A scripted Yellowstone gRPC (Geyser) server: the proto crate's generated
//! `Geyser` service, speaking the real protocol to the service's real client.
//! A test sends updates (kept, by slot, for replays), sets what
//! `SubscribeReplayInfo` answers, requires a token, drops its clients, stalls,
//! goes down and comes back on its port, and reads every request a client
//! made. The load generator's bridge serves the chain's writes through the
//! same server (`Options`: its own address, no replay kept, pings).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::Stream;
use lendex_domain::pubkey::Pubkey;
use tokio::sync::{mpsc, oneshot};
use yellowstone_grpc_proto::prelude::geyser_server::{Geyser, GeyserServer};
use yellowstone_grpc_proto::prelude::*;
use yellowstone_grpc_proto::tonic::{self, Request, Response, Status, Streaming};

type Updates = Pin<Box<dyn Stream<Item = Result<SubscribeUpdate, Status>> + Send>>;

/// How a server is started (`ScriptedGeyser::start_with`).
#[derive(Debug, Clone)]
pub struct Options {
    /// Where it listens; port 0 picks a free one.
    pub listen: String,
    /// Keep every update sent, for replays (a long run keeps none).
    pub keep_sent: bool,
    /// Updates a subscriber may have unread before it is dropped.
    pub capacity: usize,
    /// Send every subscriber a ping this often, as Yellowstone servers do.
    pub ping_every: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: "127.0.0.1:0".into(),
            keep_sent: true,
            capacity: 4096,
            ping_every: None,
        }
    }
}

#[derive(Default)]
struct Script {
    options: Options,
    token: Option<String>,
    /// What SubscribeReplayInfo answers (None: replay not kept).
    first_available: Option<u64>,
    /// A from_slot is refused even when first_available says it is held.
    refuse_replay: bool,
    /// Every update sent, with its slot, for replays.
    sent: Vec<(u64, SubscribeUpdate)>,
    /// Live subscribers.
    clients: Vec<mpsc::Sender<Result<SubscribeUpdate, Status>>>,
    /// Every request clients made, in order (the subscriptions and pings).
    requests: Vec<(Instant, SubscribeRequest)>,
    /// Subscribe calls, refused ones included.
    attempts: Vec<Instant>,
}

#[derive(Clone, Default)]
struct Service(Arc<Mutex<Script>>);

/// The server; shut down when dropped.
pub struct ScriptedGeyser {
    pub url: String,
    port: u16,
    script: Service,
    stop: Option<oneshot::Sender<()>>,
}

impl ScriptedGeyser {
    pub async fn start() -> ScriptedGeyser {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> ScriptedGeyser {
        let script = Service::default();
        let (listen, ping_every) = (options.listen.clone(), options.ping_every);
        script.0.lock().unwrap().options = options;
        let server = Self::start_on(&listen, script).await;
        if let Some(every) = ping_every {
            let script = Arc::downgrade(&server.script.0);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Some(script) = script.upgrade() else {
                        break;
                    };
                    let mut script = script.lock().unwrap();
                    script.clients.retain(|c| c.try_send(Ok(ping())).is_ok());
                }
            });
        }
        server
    }

    /// Requires this `x-token` of every client.
    pub async fn with_token(token: &str) -> ScriptedGeyser {
        let server = Self::start().await;
        server.script().token = Some(token.to_string());
        server
    }

    async fn start_on(listen: &str, script: Service) -> ScriptedGeyser {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .expect("bind the scripted gRPC server");
        let addr = listener.local_addr().unwrap();
        let port = addr.port();
        let (stop, stopped) = oneshot::channel();
        let service = GeyserServer::new(script.clone());
        // An accept that fails (a client gone before it was taken, no file
        // descriptor for a moment) is passed over: handed to the server, it
        // would end it, and with it every connection.
        let incoming = futures_util::stream::unfold(listener, |listener| async move {
            loop {
                match listener.accept().await {
                    Ok((socket, _)) => return Some((Ok::<_, std::io::Error>(socket), listener)),
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await
                .ok();
        });
        ScriptedGeyser {
            url: format!("http://{addr}"),
            port,
            script,
            stop: Some(stop),
        }
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.0.lock().unwrap()
    }

    /// Sends an update to every subscriber, and keeps it for replays.
    pub fn send(&self, slot: u64, update: SubscribeUpdate) {
        let mut script = self.script();
        if script.options.keep_sent {
            script.sent.push((slot, update.clone()));
        }
        script
            .clients
            .retain(|c| c.try_send(Ok(update.clone())).is_ok());
    }

    /// Keeps an update for replays without sending it (a write made while a
    /// client was away).
    pub fn keep(&self, slot: u64, update: SubscribeUpdate) {
        self.script().sent.push((slot, update));
    }

    /// Ends every subscriber's stream with this status.
    pub fn fail_clients(&self, status: Status) {
        for c in self.script().clients.drain(..) {
            let _ = c.try_send(Err(status.clone()));
        }
    }

    /// Ends every subscriber's stream (the server closes it).
    pub fn drop_clients(&self) {
        self.script().clients.clear();
    }

    pub fn set_first_available(&self, slot: Option<u64>) {
        self.script().first_available = slot;
    }

    pub fn refuse_replay(&self) {
        self.script().refuse_replay = true;
    }

    pub fn subscribers(&self) -> usize {
        self.script()
            .clients
            .iter()
            .filter(|c| !c.is_closed())
            .count()
    }

    /// The subscriptions made (requests with filters), in order.
    pub fn subscriptions(&self) -> Vec<SubscribeRequest> {
        self.script()
            .requests
            .iter()
            .filter(|(_, r)| !r.accounts.is_empty())
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// When each ping answer arrived.
    pub fn ping_answers(&self) -> Vec<Instant> {
        self.script()
            .requests
            .iter()
            .filter(|(_, r)| r.ping.is_some())
            .map(|(at, _)| *at)
            .collect()
    }

    pub fn attempts(&self) -> Vec<Instant> {
        self.script().attempts.clone()
    }

    /// Stops listening and drops every client (a node gone), keeping the script.
    pub fn down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.drop_clients();
    }

    /// Listens again on the same port.
    pub async fn up(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // The old listener may take a moment to let the port go.
            let bound = tokio::net::TcpListener::bind(("127.0.0.1", self.port)).await;
            if bound.is_ok() {
                drop(bound);
                break;
            }
            assert!(Instant::now() < deadline, "port {} stays taken", self.port);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let again = Self::start_on(&format!("127.0.0.1:{}", self.port), self.script.clone()).await;
        self.stop = Some(again.stop_now());
    }

    fn stop_now(mut self) -> oneshot::Sender<()> {
        self.stop.take().unwrap()
    }
}

impl Drop for ScriptedGeyser {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[tonic::async_trait]
impl Geyser for Service {
    type SubscribeStream = Updates;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Updates>, Status> {
        let token = request
            .metadata()
            .get("x-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (expected, mut incoming) = {
            let mut script = self.0.lock().unwrap();
            script.attempts.push(Instant::now());
            (script.token.clone(), request.into_inner())
        };
        if expected.is_some() && token != expected {
            return Err(Status::unauthenticated("x-token is not valid"));
        }
        let first = incoming
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("no request"))?;
        let capacity = self.0.lock().unwrap().options.capacity;
        let (tx, rx) = mpsc::channel(capacity);
        {
            let mut script = self.0.lock().unwrap();
            script.requests.push((Instant::now(), first.clone()));
            if let Some(from) = first.from_slot {
                let held = script.first_available.is_some_and(|f| f <= from);
                if !held || script.refuse_replay {
                    let _ = tx.try_send(Err(Status::out_of_range(format!(
                        "broadcast from {from} is not available"
                    ))));
                    return Ok(Response::new(stream_of(rx)));
                }
                for (slot, update) in &script.sent {
                    if *slot >= from {
                        let _ = tx.try_send(Ok(update.clone()));
                    }
                }
            }
            script.clients.push(tx);
        }
        // Later requests: pings (answered here with a pong) or new filters.
        let script = self.0.clone();
        tokio::spawn(async move {
            while let Ok(Some(request)) = incoming.message().await {
                script
                    .lock()
                    .unwrap()
                    .requests
                    .push((Instant::now(), request));
            }
        });
        Ok(Response::new(stream_of(rx)))
    }

    type SubscribeDeshredStream =
        Pin<Box<dyn Stream<Item = Result<SubscribeUpdateDeshred, Status>> + Send>>;

    async fn subscribe_deshred(
        &self,
        _: Request<Streaming<SubscribeDeshredRequest>>,
    ) -> Result<Response<Self::SubscribeDeshredStream>, Status> {
        Err(Status::unimplemented("not scripted"))
    }

    type SubscribeGossipStream =
        Pin<Box<dyn Stream<Item = Result<SubscribeUpdateGossip, Status>> + Send>>;

    async fn subscribe_gossip(
        &self,
        _: Request<SubscribeGossipRequest>,
    ) -> Result<Response<Self::SubscribeGossipStream>, Status> {
        Err(Status::unimplemented("not scripted"))
    }

    async fn subscribe_replay_info(
        &self,
        _: Request<SubscribeReplayInfoRequest>,
    ) -> Result<Response<SubscribeReplayInfoResponse>, Status> {
        Ok(Response::new(SubscribeReplayInfoResponse {
            first_available: self.0.lock().unwrap().first_available,
        }))
    }

    async fn ping(&self, r: Request<PingRequest>) -> Result<Response<PongResponse>, Status> {
        Ok(Response::new(PongResponse {
            count: r.into_inner().count,
        }))
    }

    async fn get_latest_blockhash(
        &self,
        _: Request<GetLatestBlockhashRequest>,
    ) -> Result<Response<GetLatestBlockhashResponse>, Status> {
        Err(Status::unimplemented("not scripted"))
    }

    async fn get_block_height(
        &self,
        _: Request<GetBlockHeightRequest>,
    ) -> Result<Response<GetBlockHeightResponse>, Status> {
        Err(Status::unimplemented("not scripted"))
    }

    async fn get_slot(
        &self,
        _: Request<GetSlotRequest>,
    ) -> Result<Response<GetSlotResponse>, Status> {
        Err(Status::unimplemented("not scripted"))
    }

    async fn is_blockhash_valid(
        &self,
        _: Request<IsBlockhashValidRequest>,
    ) -> Result<Response<IsBlockhashValidResponse>, Status> {
        Err(Status::unimplemented("not scripted"))
    }

    async fn get_version(
        &self,
        _: Request<GetVersionRequest>,
    ) -> Result<Response<GetVersionResponse>, Status> {
        Err(Status::unimplemented("not scripted"))
    }
}

fn stream_of(rx: mpsc::Receiver<Result<SubscribeUpdate, Status>>) -> Updates {
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// An account write as a Geyser server sends it.
pub fn account_update(
    key: &Pubkey,
    owner: &Pubkey,
    lamports: u64,
    data: Vec<u8>,
    slot: u64,
    write_version: u64,
) -> SubscribeUpdate {
    SubscribeUpdate {
        filters: vec!["lendex_positions".into()],
        update_oneof: Some(subscribe_update::UpdateOneof::Account(
            SubscribeUpdateAccount {
                account: Some(SubscribeUpdateAccountInfo {
                    pubkey: key.to_bytes().to_vec(),
                    lamports,
                    owner: owner.to_bytes().to_vec(),
                    data,
                    write_version,
                    ..Default::default()
                }),
                slot,
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

pub fn slot_update(slot: u64) -> SubscribeUpdate {
    SubscribeUpdate {
        filters: vec!["lendex_slots".into()],
        update_oneof: Some(subscribe_update::UpdateOneof::Slot(SubscribeUpdateSlot {
            slot,
            status: SlotStatus::SlotConfirmed as i32,
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// A slot status with its parent, as a server at `processed` sends them.
pub fn slot_status(slot: u64, parent: Option<u64>, status: SlotStatus) -> SubscribeUpdate {
    SubscribeUpdate {
        filters: vec!["lendex_slots".into()],
        update_oneof: Some(subscribe_update::UpdateOneof::Slot(SubscribeUpdateSlot {
            slot,
            parent,
            status: status as i32,
            ..Default::default()
        })),
        ..Default::default()
    }
}

pub fn ping() -> SubscribeUpdate {
    SubscribeUpdate {
        update_oneof: Some(subscribe_update::UpdateOneof::Ping(SubscribeUpdatePing {})),
        ..Default::default()
    }
}
