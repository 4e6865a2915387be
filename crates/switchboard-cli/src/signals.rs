//! The signals that end a command: SIGINT (Ctrl-C), SIGTERM (`kill`, a service manager),
//! SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\). Each is caught so the hub can close every
//! server before the process ends, and the exit code says which (128 + its number).

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

pub const SIGINT: i32 = 2;
/// A service manager's (systemd's, Kubernetes') request to stop: the HTTP fronts drain first.
pub const SIGTERM: i32 = 15;

/// The signals caught for one command, in the order they arrive.
pub struct Stop {
    arrived: mpsc::UnboundedReceiver<i32>,
}

impl Stop {
    /// Starts catching the four signals (one that cannot be registered is left as it is).
    pub fn listen() -> Stop {
        let (tx, arrived) = mpsc::unbounded_channel();
        let kinds = [
            (SIGINT, SignalKind::interrupt()),
            (SIGTERM, SignalKind::terminate()),
            (1, SignalKind::hangup()),
            (3, SignalKind::quit()),
        ];
        for (number, kind) in kinds {
            let Ok(mut stream) = signal(kind) else { continue };
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(number).is_err() {
                        return;
                    }
                }
            });
        }
        Stop { arrived }
    }

    /// Resolves with the number of the next signal to arrive.
    pub async fn next(&mut self) -> i32 {
        match self.arrived.recv().await {
            Some(n) => n,
            None => std::future::pending().await,
        }
    }
}

/// The exit code for a command ended by `signal`.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(255)
}
