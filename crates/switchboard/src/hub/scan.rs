//! `Hub::scan`: every server's definitions checked again, now that every server's tools are
//! known (a server's findings at connect see only the servers connected before it).

use super::Hub;
use crate::screen::{Finding, Rule};

impl Hub {
    /// The findings of `only` (or every server): the hidden characters removed when its lists
    /// came in, and the text checks ([`crate::screen::Scanner`]) run now against every other
    /// server's tools. Servers that are not connected have no lists and no findings.
    pub fn scan(&self, only: Option<&str>) -> Vec<Finding> {
        let slots = self.inner.all_slots();
        let tools: Vec<(String, String)> =
            self.catalog().tools().iter().map(|t| (t.server.clone(), t.tool.name.to_string())).collect();
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
            found.extend(self.inner.scanner.scan(&slot.name, &lists, instructions.as_deref(), &tools));
        }
        found
    }
}
