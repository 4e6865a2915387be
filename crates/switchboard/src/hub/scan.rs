//! `Hub::scan`: every server's definitions checked again, now that every server's tools are
//! known (a server's findings at connect see only the servers connected before it).

use super::Hub;
use crate::policy::approvals::{definition_digest, definition_of, what_changed};
use crate::screen::{Finding, Rule, Severity, Target};

impl Hub {
    /// The findings of `only` (or every server): the hidden characters removed when its lists
    /// came in, the text checks ([`crate::screen::Scanner`]) run now against every other
    /// server's tools, and tools approved "always" whose definition changed since (with what
    /// changed). Servers that are not connected have no lists and no findings.
    pub async fn scan(&self, only: Option<&str>) -> Vec<Finding> {
        let slots = self.inner.all_slots();
        // A tool approved "always" whose definition changed since (the approvals file, or the
        // team's store's).
        let approvals = self.approvals().await.ok();
        let tools = self.inner.tool_names();
        let mut found = Vec::new();
        for slot in slots.iter().filter(|s| only.is_none_or(|o| o == s.name)) {
            let (lists, hidden, instructions) = {
                let st = slot.state();
                let hidden: Vec<Finding> =
                    st.findings.iter().filter(|f| f.rule == Rule::HiddenCharacters).cloned().collect();
                let instructions = st.conn.as_ref().and_then(|c| c.identity.instructions.clone());
                (st.lists.clone(), hidden, instructions)
            };
            found.extend(hidden);
            found.extend(self.inner.checks.scanner().scan(&slot.name, &lists, instructions.as_deref(), &tools));
            if let (Some(store), Some(config)) = (&approvals, slot.config()) {
                let launch = crate::trust::launch_digest(&config);
                for tool in &lists.tools {
                    let digest = definition_digest(tool);
                    let Some(was) = store.changed(&launch, &tool.name, &digest) else { continue };
                    let change = match &was.approved {
                        Some(old) => what_changed(old, &definition_of(tool)),
                        None => "the definition changed (the one approved was not kept)".into(),
                    };
                    found.push(Finding {
                        rule: Rule::DefinitionChanged,
                        severity: Severity::High,
                        server: slot.name.clone(),
                        target: Target::Tool(tool.name.to_string()),
                        field: "definition".into(),
                        why: format!("changed since you approved it \"always\" as `{}`", was.name),
                        hidden: None,
                        evidence: Some(change),
                    });
                }
            }
        }
        found
    }
}
