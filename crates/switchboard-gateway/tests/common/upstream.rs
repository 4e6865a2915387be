//! An upstream each person signs in to as themselves: `whoami_upstream.mjs`, the TypeScript
//! SDK's server with its bearer middleware, tokens of a separate authorization server checked
//! with `jose`; its `whoami` tool says whose token each request carried.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The upstream each person signs in to, protected by `issuer`.
pub struct Upstream {
    /// Its `/mcp` URL.
    pub url: String,
    child: Child,
}

impl Upstream {
    /// Starts one whose tokens `issuer` gives.
    pub fn start(issuer: &str) -> Upstream {
        let mut child = Command::new(switchboard_testkit::node22_bin().join("node"))
            .arg(super::script("whoami_upstream.mjs"))
            .arg(switchboard_testkit::node_peers())
            .arg(issuer)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let said: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("the upstream did not start: {line}"));
        Upstream { url: said["url"].as_str().unwrap().to_string(), child }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
