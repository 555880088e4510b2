//! The HTTP server: the actix-web App (routes, request log), with the cache's
//! rendered polls answered ahead of it (`polls`), served by actix-http's
//! HTTP/1 service on sockets wrapped by `json_errors`. This is
//! actix_web::HttpServer's own assembly, done here because HttpServer cannot
//! wrap a connection's socket.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::time::Duration;

use actix_http::{HttpService, Protocol, Request, Response};
use actix_server::Server;
use actix_service::{
    IntoServiceFactory, ServiceFactoryExt, apply_fn_factory, fn_service, map_config,
};
use actix_web::dev::{AppConfig, Service as _};
use actix_web::rt::net::TcpStream;
use actix_web::{App, web};

use futures_util::TryFutureExt;
use futures_util::future::{Either, ready};

use super::json_errors::JsonErrors;
use super::observe::{Answered, Observed, asks_to_wait};
use super::polls;
use super::state::AppState;
use crate::config::ServerConfig;
use crate::error::StartError;

/// A bound, running server and the addresses it listens on.
pub struct Listening {
    pub server: Server,
    pub addrs: Vec<SocketAddr>,
}

/// Binds `config.bind` (every address it resolves to) and starts the workers.
/// SIGINT/SIGTERM are left to the caller (`app::serve` ends the feed streams first).
pub fn start(state: web::Data<AppState>, config: &ServerConfig) -> Result<Listening, StartError> {
    let cannot = |source: std::io::Error| StartError::Listen {
        bind: config.bind.clone(),
        source,
    };
    let mut builder = Server::build()
        .shutdown_timeout(config.shutdown_timeout_seconds)
        .disable_signals();
    if config.workers > 0 {
        builder = builder.workers(config.workers);
    }
    let request_timeout = Duration::from_millis(config.request_timeout_ms);
    let slow_after = Duration::from_millis(config.slow_request_ms);
    let mut addrs = Vec::new();
    for addr in config.bind.to_socket_addrs().map_err(cannot)? {
        let listener = TcpListener::bind(addr).map_err(cannot)?;
        let addr = listener.local_addr().map_err(cannot)?;
        addrs.push(addr);
        let shutdown = builder.graceful_shutdown_signal();
        let state = state.clone();
        builder = builder
            .listen(format!("lendex-{addr}"), listener, move || {
                let shutdown = shutdown.clone();
                let http = HttpService::build()
                    // Idle keep-alive connections close when a graceful stop begins.
                    .graceful_shutdown_signal(move || {
                        let signal = shutdown.clone();
                        async move { signal.notified().await }
                    })
                    .client_request_timeout(request_timeout)
                    .local_addr(addr)
                    .on_connect_ext(|io: &JsonErrors<TcpStream>, ext| {
                        super::socket::on_connect(io.get_ref(), ext)
                    })
                    .finish(apply_fn_factory(
                        map_config(
                            app(state.clone())
                                .into_factory()
                                .map_err(|e| e.error_response()),
                            |_| AppConfig::default(),
                        ),
                        // The polled answers the cache has rendered skip the App.
                        {
                            let state = state.clone();
                            let views = state.views.clone();
                            move |req: Request, app: &_| match polls::answer(
                                &views, &req, slow_after,
                            ) {
                                Some(response) => Either::Left(ready(Ok(response))),
                                None => Either::Right(app.call(req).map_ok(Response::from)),
                            }
                        },
                    ));
                fn_service(|io: TcpStream| async move {
                    let peer = io.peer_addr().ok();
                    Ok::<_, actix_http::error::DispatchError>((
                        JsonErrors::new(io),
                        Protocol::Http1,
                        peer,
                    ))
                })
                .and_then(http)
            })
            .map_err(cannot)?;
    }
    Ok(Listening {
        server: builder.run(),
        addrs,
    })
}

/// The application: shared state, each request observed (`observe`), the routes.
fn app(
    state: web::Data<AppState>,
) -> App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let slow_after = Duration::from_millis(state.config.server.slow_request_ms);
    App::new()
        .app_data(state)
        .wrap_fn(move |req, srv| {
            let observed = Observed::start();
            let response = srv.call(req);
            async move {
                let response = response.await?;
                // Each route is named by its pattern.
                let request = response.request();
                let route = request.match_name().unwrap_or("unmatched");
                observed.finish(
                    Answered {
                        route,
                        polled: polls::is_polled(route),
                        method: request.method(),
                        path: request.path(),
                        held: asks_to_wait(request.query_string()),
                        status: response.status().as_u16(),
                    },
                    slow_after,
                );
                Ok(response)
            }
        })
        .configure(super::routes)
        .default_service(web::to(super::not_found))
}
