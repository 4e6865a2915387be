//! One config file being read: the context every parser of its parts (servers, policy, audit)
//! writes its diagnostics through, each with the file, line, server and field it is about.

use std::collections::HashMap;
use std::path::Path;

use super::jsonc::line_of_key;
use super::{Diagnostic, Scope, Severity};

/// One config file being read: where it is, its text (for the line of a field), its scope,
/// the variables its values may use, and where its diagnostics go.
pub(crate) struct FileCtx<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub scope: Scope,
    pub env: &'a HashMap<String, String>,
    pub diagnostics: &'a mut Vec<Diagnostic>,
}

impl FileCtx<'_> {
    /// A diagnostic about this file, at the line of `field` within `server`'s entry (or of the
    /// server, or none).
    pub(crate) fn diag(&mut self, severity: Severity, server: Option<&str>, field: Option<&str>, message: String) {
        let line = field
            .and_then(|f| {
                // The field's line, searched after the server's own line.
                let start = server.and_then(|s| line_of_key(self.text, s)).unwrap_or(1);
                let offset: usize = self.text.split_inclusive('\n').take(start - 1).map(str::len).sum();
                line_of_key(&self.text[offset..], f.split('.').next().unwrap_or(f)).map(|l| l + start - 1)
            })
            .or_else(|| server.and_then(|s| line_of_key(self.text, s)));
        // A name or a key is what the file says: quoted short, whatever its length.
        let short = |s: &str| crate::text::excerpt(s, 80);
        self.diagnostics.push(Diagnostic {
            severity,
            file: self.path.to_path_buf(),
            line,
            column: None,
            server: server.map(short),
            field: field.map(short),
            message,
        });
    }

    /// An override for a server no file of lower precedence defines.
    pub(crate) fn lone_toggle(&mut self, name: &str) {
        self.diag(
            Severity::Warning,
            Some(name),
            None,
            "holds only `enabled`, but no file of lower precedence defines this server: ignored".into(),
        );
    }
}
