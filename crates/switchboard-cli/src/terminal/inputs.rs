//! Asking the person at the terminal, once, for the values of the inputs servers need
//! (`${input:ID}` in VS Code's config), and keeping each answer in the data folder.

use std::io::{IsTerminal, Write};

use switchboard::config::{self, InputStore, MissingInput};

use crate::render::{safe, shown};

/// Asks the person at the terminal for each input that servers need and has no value yet,
/// once; keeps each answer. Returns whether any was given (the config is then loaded again).
pub(crate) fn ask_missing(paths: &switchboard::Paths, missing: &[MissingInput]) -> bool {
    if missing.is_empty() || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
    let store = InputStore::new(&paths.data_dir);
    let term = console::Term::stderr();
    let mut given = false;
    for m in missing {
        let _ = writeln!(&term, "{} needs `{}`{}", shown(&m.file), m.input.id, described(&m.input));
        if !m.input.options.is_empty() {
            let _ =
                writeln!(&term, "  one of: {}", m.input.options.iter().map(|o| safe(o)).collect::<Vec<_>>().join(", "));
        }
        let default = m.input.default.as_deref().map(|d| format!(" [{}]", safe(d))).unwrap_or_default();
        let _ = write!(&term, "  value{default} (Enter to skip): ");
        let read = if m.input.password { term.read_secure_line() } else { term.read_line() };
        let Ok(value) = read else { break };
        let value = if value.is_empty() { m.input.default.clone().unwrap_or_default() } else { value };
        if value.is_empty() {
            continue;
        }
        match store.set(&m.file, &m.input.id, &value) {
            Ok(()) => given = true,
            Err(e) => note!("warning: the value of `{}` is not kept: {e}", m.input.id),
        }
    }
    given
}

/// An input's description, as `: …` after its name (nothing without one).
pub(crate) fn described(input: &config::InputDecl) -> String {
    input.description.as_deref().map(|d| format!(": {}", safe(d))).unwrap_or_default()
}
