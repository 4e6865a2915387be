//! The person at the terminal: asked one thing at a time (an input a server needs, a server's
//! question, a tool call to approve, a completion to write as the model), with what is drawn
//! on screen set aside while they answer; and the desktop's browser. Commands use this; it
//! uses no command.

mod approve;
mod elicit;
mod inputs;
mod sample;

use std::sync::{Arc, Mutex, PoisonError};

pub(crate) use approve::TerminalApprover;
pub(crate) use elicit::TerminalElicitor;
pub(crate) use inputs::{ask_missing, described};
pub(crate) use sample::TerminalSampler;

/// The spinner or progress bar on screen, if any, so a question is not drawn over.
#[derive(Clone, Default)]
pub struct Screen(Arc<Mutex<Option<indicatif::ProgressBar>>>);

impl Screen {
    /// Records the bar being drawn now (`None`: nothing).
    pub fn set(&self, bar: Option<indicatif::ProgressBar>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = bar;
    }

    pub(crate) fn current(&self) -> Option<indicatif::ProgressBar> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The person at the terminal, asked one thing at a time (by the elicitor, the approver and the
/// sampler alike): what is drawn (a spinner) is set aside while they answer.
#[derive(Clone)]
pub struct Terminal {
    screen: Screen,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Terminal {
    /// Asking on the terminal, clear of what `screen` draws.
    pub fn new(screen: Screen) -> Self {
        Terminal { screen, turn: Arc::default() }
    }

    /// Runs `ask` with stdin and stderr on a blocking thread, when it is this question's
    /// turn; `None` if it could not run.
    pub async fn ask<R: Send + 'static>(
        &self,
        ask: impl FnOnce(&mut std::io::StdinLock<'static>, &mut std::io::Stderr) -> R + Send + 'static,
    ) -> Option<R> {
        let _turn = self.turn.lock().await;
        let bar = self.screen.current();
        tokio::task::spawn_blocking(move || {
            let mut input = std::io::stdin().lock();
            let mut err = std::io::stderr();
            match &bar {
                Some(bar) => bar.suspend(|| ask(&mut input, &mut err)),
                None => ask(&mut input, &mut err),
            }
        })
        .await
        .ok()
    }
}

/// A graphical session is there to show a browser.
pub(crate) fn has_display() -> bool {
    cfg!(target_os = "macos") || std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
}

/// Asks the desktop to open `url`; false if it could not.
pub(crate) fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}
