//! A real OpenID provider for the team tests: `oidc-provider` (npm, a certified
//! implementation) run by Node 22 on a free loopback port from `peers/oidc_provider.mjs`, with
//! alice (devs) and bob (admins), dynamic registration, PKCE, resource indicators (JWT access
//! tokens for the loopback resource a client names, with `name` and `groups`), and the
//! confidential clients `robot` (client credentials, tokens of an hour) and `brief` (of one
//! second). It ends when dropped (its stdin closes, then it is killed).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The pinned provider.
pub const OIDC_PROVIDER: &str = "oidc-provider@9.13.3";

/// `<workspace>/.peers/oidc`, with the provider installed (once).
pub fn folder() -> PathBuf {
    super::npm_folder("oidc", &[OIDC_PROVIDER])
}

/// A running provider.
pub struct Provider {
    /// Its issuer identifier, `http://127.0.0.1:PORT`.
    pub issuer: String,
    child: Child,
}

impl Provider {
    /// Starts one and waits until it listens.
    pub fn start() -> Provider {
        Provider::start_with(&[])
    }

    /// One that exchanges access tokens of `issuer` (RFC 8693) for the client `exchanger`
    /// (secret `exchanger-secret`); `GET <issuer>/test/exchanges` counts them per `sub`.
    pub fn exchanging_from(issuer: &str) -> Provider {
        Provider::start_with(&["--exchange-from", issuer])
    }

    fn start_with(args: &[&str]) -> Provider {
        let dir = folder();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/oidc_provider.mjs");
        let mut child = Command::new(super::node22_bin().join("node"))
            .arg(script)
            .arg(&dir)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node");
        // Its notices go to stdout too: read to the line that names the issuer, then on.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let issuer = loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "the OpenID provider did not start");
            if let Ok(said) = serde_json::from_str::<serde_json::Value>(&line)
                && let Some(issuer) = said["issuer"].as_str()
            {
                break issuer.to_string();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Provider { issuer, child }
    }

    /// Its token endpoint.
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer)
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
