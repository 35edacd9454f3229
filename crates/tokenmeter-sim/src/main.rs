//! The simulator's command line: `tokenmeter-sim --help`.

use clap::Parser;
use tokenmeter_sim::{SimConfig, SimServer};

fn main() -> std::process::ExitCode {
    let config = SimConfig::parse();
    // Two workers: these machines have two cores, and the engine has its own thread.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let models = config.models.join(", ");
        let faults: Vec<&str> = config.faults.iter().map(|f| f.name()).collect();
        let server = match SimServer::start(config).await {
            Ok(server) => server,
            Err(err) => {
                eprintln!("tokenmeter-sim: cannot start: {err}");
                return std::process::ExitCode::FAILURE;
            }
        };
        println!(
            "tokenmeter-sim listening: base URL {} (models: {models}{})",
            server.base_url(),
            if faults.is_empty() {
                String::new()
            } else {
                format!("; faults on every request: {}", faults.join(","))
            }
        );
        wait_for_stop().await;
        println!("tokenmeter-sim: stopping");
        server.shutdown().await;
        std::process::ExitCode::SUCCESS
    })
}

/// Ctrl-C, or SIGTERM from a process manager.
async fn wait_for_stop() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
