//! The `lendex` binary: the server and the operator tool.

use std::path::PathBuf;

use std::io::Write as _;

use clap::{Parser, Subcommand};
use lendex::config::Config;
use lendex::error::CliResult;

#[derive(Parser)]
#[command(
    name = "lendex",
    version,
    about = "Live index of a Solana lending program"
)]
struct Cli {
    /// Settings file; its keys override the built-in defaults, and environment
    /// variables (LENDEX_<SECTION>__<KEY>, DATABASE_URL, RPC_URL, ...) override it.
    #[arg(long, global = true, default_value = "config.toml")]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Local(LocalCommand),
    /// Write a new keypair file (Solana CLI format) and print its pubkey.
    Keygen {
        /// Where to write it; an existing file is never overwritten.
        #[arg(long, default_value_os_t = lendex_client::keypair::default_path())]
        outfile: PathBuf,
    },
    /// Print the OpenAPI document GET /api/openapi.json serves (the clients
    /// in clients/ are generated from it).
    Openapi,
    /// Signed admin calls to a running service: the whole nonce handshake over HTTP.
    Remote {
        /// The service's base URL (default: the configured bind address).
        #[arg(long, env = "LENDEX_URL")]
        url: Option<String>,
        /// Solana CLI keypair file (JSON array of 64 bytes).
        #[arg(long, default_value_os_t = lendex_client::keypair::default_path())]
        keypair: PathBuf,
        #[command(subcommand)]
        command: RemoteCommand,
    },
}

/// The commands that run against this machine's settings and database.
#[derive(Subcommand)]
enum LocalCommand {
    /// Run the HTTP API (migrates first). Stops gracefully on SIGINT/SIGTERM.
    Serve,
    /// Apply the SQL migrations and seed the bootstrap super-admin (SUPER_ADMIN_PUBKEY).
    Migrate,
    /// Seed a demo market on the local chain and register it with the running service (localnet only).
    Demo {
        /// Base URL of the running service.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        api: String,
        /// Number of owners (each has 1 to 7 positions).
        #[arg(long, default_value_t = 600)]
        owners: usize,
        /// Write the demo authority's keypair here (a Solana CLI keypair file),
        /// to register the demo's unregistered pool with `lendex remote`.
        #[arg(long)]
        keypair_out: Option<std::path::PathBuf>,
        /// Then keep the oracles alive: walk every pool's price, until stopped.
        #[arg(long)]
        walk: bool,
        /// Only walk the prices of a demo market already seeded.
        #[arg(long, conflicts_with = "walk")]
        walk_only: bool,
    },
    /// Print the effective settings (defaults, file and environment merged) as TOML.
    Config,
    /// Operator recovery: change the admin allowlist directly, with no nonce.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Add an admin, or re-activate and update an existing entry.
    Add {
        /// Base58 wallet address.
        pubkey: String,
        /// pool_admin or super_admin.
        role: String,
        /// Human label for the entry.
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke an active admin (soft: the row stays with revoked_at set).
    Revoke {
        /// Base58 wallet address.
        pubkey: String,
    },
    /// List every allowlist entry, revoked ones included.
    List,
    /// Re-read every pool's mint from chain and fix stored decimals that differ.
    RepairDecimals,
}

#[derive(Subcommand)]
enum RemoteCommand {
    /// Add an admin (super_admin only): signed add_admin:<pubkey>:<role>.
    AddAdmin {
        pubkey: String,
        /// pool_admin or super_admin.
        role: String,
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke an admin (super_admin only): signed revoke_admin:<pubkey>.
    RevokeAdmin { pubkey: String },
    /// Register a pool initialised on chain: the service reads its fields
    /// from its chain (GET /api/pools/{address}/chain) and checks its address
    /// is the mint's PDA.
    RegisterPool {
        pool_address: String,
        /// The transaction signature that initialised it (default: the one
        /// the service finds on chain, when the chain can tell).
        #[arg(long)]
        init_signature: Option<String>,
        #[arg(long)]
        symbol: Option<String>,
    },
    /// Read the audit log as a table (no keypair needed where the cluster
    /// makes it public; signed read_audit when the cluster asks for it).
    Audit {
        #[arg(long)]
        actor: Option<String>,
        #[arg(long)]
        action: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
        /// Print the server's JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Create a webhook (any admin): signed create_webhook. Prints it with
    /// its secret, shown this once (docs/webhooks.md).
    CreateWebhook {
        url: String,
        /// The line, a WAD as a decimal string (default 1 WAD: under water).
        #[arg(long)]
        below_wad: Option<String>,
        /// An owner to follow (repeat; none: every owner).
        #[arg(long = "owner")]
        owners: Vec<String>,
        /// A pool whose holders to follow (repeat; none: any pool).
        #[arg(long = "pool")]
        pools: Vec<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// List the webhooks this keypair may see: signed read_webhooks.
    Webhooks,
    /// A webhook's deliveries, newest first: signed read_webhooks.
    WebhookDeliveries {
        id: String,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Delete a webhook: signed delete_webhook:<id>.
    DeleteWebhook { id: String },
    /// Send a delivery again, with its id: signed redeliver_webhook:<id>:<delivery_id>.
    RedeliverWebhook { id: String, delivery_id: String },
}

impl From<RemoteCommand> for lendex::remote::Remote {
    fn from(c: RemoteCommand) -> Self {
        use lendex::remote::Remote;
        use lendex::remote::webhooks::WebhookCall;
        use lendex_client::NewWebhook;
        match c {
            RemoteCommand::AddAdmin {
                pubkey,
                role,
                label,
            } => Remote::AddAdmin {
                pubkey,
                role,
                label,
            },
            RemoteCommand::RevokeAdmin { pubkey } => Remote::RevokeAdmin { pubkey },
            RemoteCommand::CreateWebhook {
                url,
                below_wad,
                owners,
                pools,
                description,
            } => Remote::Webhook(WebhookCall::Create(NewWebhook {
                url,
                below_wad,
                owners: (!owners.is_empty()).then_some(owners),
                pools: (!pools.is_empty()).then_some(pools),
                description,
            })),
            RemoteCommand::Webhooks => Remote::Webhook(WebhookCall::List),
            RemoteCommand::WebhookDeliveries { id, limit } => {
                Remote::Webhook(WebhookCall::Deliveries { id, limit })
            }
            RemoteCommand::DeleteWebhook { id } => Remote::Webhook(WebhookCall::Delete { id }),
            RemoteCommand::RedeliverWebhook { id, delivery_id } => {
                Remote::Webhook(WebhookCall::Redeliver { id, delivery_id })
            }
            RemoteCommand::RegisterPool {
                pool_address,
                init_signature,
                symbol,
            } => Remote::RegisterPool {
                pool_address,
                init_signature,
                symbol,
            },
            RemoteCommand::Audit {
                actor,
                action,
                limit,
                json,
            } => Remote::Audit {
                actor,
                action,
                limit,
                json,
            },
        }
    }
}

/// The service's URL from its bind address (an unspecified host is this machine).
fn default_url(bind: &str) -> String {
    let bind = bind
        .replace("0.0.0.0", "127.0.0.1")
        .replace("[::]", "[::1]");
    format!("http://{bind}")
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    lendex::logging::init();
    match cli.command {
        // Needs no settings: works anywhere, before any config exists.
        Command::Keygen { outfile } => {
            exit(lendex::remote::keygen(Some(&outfile)).map_err(Into::into))
        }
        Command::Openapi => {
            let text = lendex::http::openapi::document_json();
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{text}") {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(_) => std::process::ExitCode::FAILURE,
            }
        }
        Command::Local(local) => match load(&cli.config) {
            Ok(config) => exit(actix_rt::System::new().block_on(run(local, config))),
            Err(code) => code,
        },
        Command::Remote {
            url,
            keypair,
            command,
        } => match load(&cli.config) {
            Ok(config) => remote(&config, url, &keypair, command),
            Err(code) => code,
        },
    }
}

/// The merged settings, or exit code 2 with the reason on stderr.
fn load(path: &std::path::Path) -> Result<Config, std::process::ExitCode> {
    Config::load(Some(path)).map_err(|e| {
        say(format_args!("lendex: {e}"));
        std::process::ExitCode::from(2)
    })
}

/// `lendex remote`: the server's JSON on stdout, or its error body on stderr.
fn remote(
    config: &Config,
    url: Option<String>,
    keypair: &std::path::Path,
    command: RemoteCommand,
) -> std::process::ExitCode {
    let url = url.unwrap_or_else(|| default_url(&config.server.bind));
    let answer =
        actix_rt::System::new().block_on(lendex::remote::run(&url, keypair, command.into()));
    match answer {
        Ok(body) => {
            let _ = writeln!(std::io::stdout(), "{body}");
            std::process::ExitCode::SUCCESS
        }
        // The server's error body, as it sent it.
        Err(lendex::remote::Failure::Answer(body)) => {
            say(format_args!("{body}"));
            std::process::ExitCode::FAILURE
        }
        Err(lendex::remote::Failure::Other(e)) => exit(Err(e.into())),
    }
}

async fn run(command: LocalCommand, config: Config) -> CliResult {
    match command {
        LocalCommand::Serve => Ok(lendex::app::serve(config).await?),
        LocalCommand::Migrate => lendex::operator::migrate(&config).await,
        LocalCommand::Config => lendex::operator::print_config(&config),
        LocalCommand::Demo {
            api,
            owners,
            keypair_out,
            walk,
            walk_only,
        } => {
            let options = lendex::demo::DemoOptions {
                api: &api,
                owners,
                keypair_out: keypair_out.as_deref(),
                seed: !walk_only,
                walk: walk || walk_only,
            };
            lendex::demo::run(&config, options).await
        }
        LocalCommand::Admin { command } => match command {
            AdminCommand::Add {
                pubkey,
                role,
                label,
            } => lendex::operator::admin_add(&config, &pubkey, &role, label).await,
            AdminCommand::Revoke { pubkey } => {
                lendex::operator::admin_revoke(&config, &pubkey).await
            }
            AdminCommand::List => lendex::operator::admin_list(&config).await,
            AdminCommand::RepairDecimals => lendex::operator::repair_decimals(&config).await,
        },
    }
}

fn exit(result: CliResult) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            say(format_args!("lendex: {e}"));
            std::process::ExitCode::FAILURE
        }
    }
}

/// A line on stderr for the operator; a stderr that cannot be written (its
/// reader gone) is not a reason to panic.
fn say(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
