//! The `lendex` binary: the server and the operator tool.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use lendex::config::Config;

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

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging();
    let config = match Config::load(Some(&cli.config)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("lendex: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = actix_rt::System::new().block_on(async move {
        match cli.command {
            Command::Serve => lendex::app::serve(config).await,
            Command::Migrate => lendex::ops::migrate(&config).await,
            Command::Config => lendex::ops::print_config(&config),
            Command::Demo { api, owners } => lendex::demo::run(&config, &api, owners).await,
            Command::Admin { command } => match command {
                AdminCommand::Add {
                    pubkey,
                    role,
                    label,
                } => lendex::ops::admin_add(&config, &pubkey, &role, label).await,
                AdminCommand::Revoke { pubkey } => {
                    lendex::ops::admin_revoke(&config, &pubkey).await
                }
                AdminCommand::List => lendex::ops::admin_list(&config).await,
                AdminCommand::RepairDecimals => lendex::ops::repair_decimals(&config).await,
            },
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lendex: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// tracing to stderr, one line per event; JSON lines when LENDEX_LOG_FORMAT=json.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if std::env::var("LENDEX_LOG_FORMAT").is_ok_and(|v| v == "json") {
        builder.json().init();
    } else {
        builder.init();
    }
}
