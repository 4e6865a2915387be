//! Rules: which calls are allowed, asked about or denied, and which rule of which file said so.
//!
//! Each file's `policy` section is one [`PolicyLayer`]. Layers are grouped by authority: the
//! managed file, the person's own files (the user file and `--config` files), project files.
//! Within a group the strongest matching rule counts (deny beats ask beats allow); a group
//! with no matching rule falls back to its `default` (the last file of the group that sets
//! one). The call gets the strongest verdict of all groups, so no group can loosen another:
//! a user `allow` never lifts a managed `ask`, and a project (which may only add `ask` and
//! `deny`) can only tighten. With no `policy` anywhere every call is allowed.
//!
//! Ties (the same verdict from several rules) name one rule, the most specific: a pattern
//! before a `default`, then the pattern with the most literal characters
//! (`mcp__github__create_issue` before `mcp__github__*`), then the more authoritative source
//! (managed, then `--config`, user, project), then the first in its file.

use std::fmt;
use std::path::PathBuf;

use rmcp::model::ToolAnnotations;
use serde::{Deserialize, Serialize};

use crate::glob::GlobList;

pub use crate::config::{DefaultRule, PolicyLayer, PolicyRules, RuleSource};

/// What the policy says of a call, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// The call goes ahead.
    Allow,
    /// Someone is asked first (an [`super::Approver`]).
    Ask,
    /// The call is refused.
    Deny,
}

impl Verdict {
    /// `allow`, `ask`, `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a rule applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleKind {
    /// A glob of the `allow`, `ask` or `deny` list.
    Pattern {
        /// The glob as written.
        pattern: String,
    },
    /// A rule of those lists for some callers only (`{"tool": GLOB, "groups": […]}`).
    ForCallers {
        /// The glob as written.
        pattern: String,
        /// Whom it holds for, as people read it (`unless in group admins`).
        who: String,
    },
    /// The file's `default`.
    Default {
        /// Its value.
        default: DefaultRule,
    },
    /// `default: annotations`, and what the annotations said.
    Annotations {
        /// `readOnlyHint: true`, `destructiveHint: true (the spec's default)`, ...
        reason: String,
    },
    /// No `policy` anywhere: every call is allowed.
    NoPolicy,
    /// Rules exist, none matches this tool, and no file sets a `default`: allowed.
    NoMatch,
    /// `findings`: the tool's definition (or its server's instructions) raised a finding.
    Findings {
        /// The least severity the rule takes.
        at: crate::screen::Severity,
        /// What was found: the worst severity and its rules (`high: instructions_to_model`).
        found: String,
    },
    /// The managed file could not be read: every call is refused until it is fixed.
    ManagedUnreadable {
        /// What is wrong with it.
        message: String,
    },
}

/// The rule that made a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Rule {
    /// Its verdict.
    pub verdict: Verdict,
    /// What it is.
    #[serde(flatten)]
    pub kind: RuleKind,
    /// The file that holds it (`None` for [`RuleKind::NoPolicy`] and [`RuleKind::NoMatch`]).
    pub file: Option<PathBuf>,
    /// The kind of file.
    pub source: Option<RuleSource>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            RuleKind::Pattern { pattern } => write!(f, "rule `{}: {pattern}`", self.verdict)?,
            RuleKind::ForCallers { pattern, who } => write!(f, "rule `{}: {pattern}` ({who})", self.verdict)?,
            RuleKind::Default { default } => write!(f, "`default: {}`", default.as_str())?,
            RuleKind::Annotations { reason } => write!(f, "`default: annotations` ({reason})")?,
            RuleKind::NoPolicy => return f.write_str("no policy (every call is allowed)"),
            RuleKind::NoMatch => {
                return f.write_str("no rule matches this tool, and no file sets a `default` (allowed)");
            }
            RuleKind::ManagedUnreadable { message } => write!(f, "the managed policy is unreadable ({message})")?,
            RuleKind::Findings { found, .. } => {
                write!(f, "`findings: {}` (its definition raised {found}; `switchboard scan` says what)", self.verdict)?
            }
        }
        if let Some(file) = &self.file {
            write!(f, " of {}", file.display())?;
            if let Some(source) = self.source {
                write!(f, " ({} file)", source.as_str())?;
            }
        }
        Ok(())
    }
}

/// What the policy decided for a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// The rule that made it.
    pub rule: Rule,
    /// The managed file asks too: a person's own request does not satisfy this `ask`.
    pub managed: bool,
}

/// A tool, as the rules see it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolRef<'a> {
    /// The model-visible name (`mcp__github__create_issue`).
    pub name: &'a str,
    /// The server.
    pub server: &'a str,
    /// The tool's own name.
    pub tool: &'a str,
    /// Its annotations.
    pub annotations: Option<&'a ToolAnnotations>,
    /// Whether the server is trusted (user-file and `--config` servers, trusted project
    /// servers): only then do `default: annotations` decisions believe the hints.
    pub trusted: bool,
    /// Who is calling, when they signed in (rules for some callers hold or not by it).
    pub caller: Option<&'a crate::identity::Principal>,
}

impl<'a> ToolRef<'a> {
    /// A tool of `server` named `tool`, seen by the model as `name`.
    pub fn new(name: &'a str, server: &'a str, tool: &'a str) -> Self {
        ToolRef { name, server, tool, annotations: None, trusted: true, caller: None }
    }
    /// Every name a rule may call it by: the catalog's (`mcp__github__create_issue`), the
    /// server and the tool's own (`github/create_issue`), and the gateway's short one
    /// (`github__create_issue`).
    pub fn spellings(&self) -> [String; 3] {
        [
            self.name.to_string(),
            format!("{}/{}", self.server, self.tool),
            crate::catalog::naming::short_base(self.server, self.tool),
        ]
    }
    /// Called by `caller` (who signed in), or by someone who did not.
    pub fn by(mut self, caller: Option<&'a crate::identity::Principal>) -> Self {
        self.caller = caller;
        self
    }

    /// With annotations, from a server trusted or not.
    pub fn annotated(mut self, annotations: Option<&'a ToolAnnotations>, trusted: bool) -> Self {
        self.annotations = annotations;
        self.trusted = trusted;
        self
    }
}

/// One list of a file's rules (deny, ask or allow).
struct Globs(GlobList);

impl Globs {
    fn new(patterns: &[String]) -> Globs {
        // Globs were checked when the file was read; one that does not compile matches
        // nothing.
        Globs(GlobList::lenient(patterns))
    }

    /// The most specific pattern matching any of a tool's `spellings` (the most literal
    /// characters; the first written on a tie).
    fn best(&self, spellings: &[&str]) -> Option<&str> {
        if self.0.is_empty() {
            return None;
        }
        self.0.matching(spellings).min_by_key(|(i, p)| (std::cmp::Reverse(literal_len(p)), *i)).map(|(_, p)| p)
    }
}

fn literal_len(p: &str) -> usize {
    p.chars().filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}')).count()
}

struct Compiled {
    source: RuleSource,
    file: PathBuf,
    lists: [(Verdict, Globs); 3],
    /// Rules for some callers: (verdict, the glob, whom for).
    conditional: Vec<(Verdict, Globs, crate::config::ConditionalRule)>,
    default: Option<DefaultRule>,
    findings: Option<crate::config::FindingsRule>,
    secrets: Option<crate::screen::secrets::SecretsMode>,
}

/// Every file's rules, compiled.
pub struct Policy {
    layers: Vec<Compiled>,
    managed_error: Option<(PathBuf, String)>,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("files", &self.layers.iter().map(|l| &l.file).collect::<Vec<_>>())
            .field("managed_error", &self.managed_error)
            .finish()
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(&[], None)
    }
}

impl Policy {
    /// Compiles `layers`. `managed_error`: the managed file exists but could not be read
    /// (the file and why): every call is then refused, saying so.
    pub fn new(layers: &[PolicyLayer], managed_error: Option<(PathBuf, String)>) -> Policy {
        let layers = layers
            .iter()
            .map(|l| Compiled {
                source: l.source,
                file: l.file.clone(),
                lists: [
                    (Verdict::Deny, Globs::new(&l.rules.deny)),
                    (Verdict::Ask, Globs::new(&l.rules.ask)),
                    // A project cannot allow its own tools (refused when read; held here too).
                    (Verdict::Allow, Globs::new(if l.source == RuleSource::Project { &[] } else { &l.rules.allow })),
                ],
                default: l
                    .rules
                    .default
                    .filter(|d| l.source != RuleSource::Project || matches!(d, DefaultRule::Ask | DefaultRule::Deny)),
                findings: l.rules.findings,
                secrets: l.rules.secrets,
                conditional: l
                    .rules
                    .conditional
                    .iter()
                    // A project cannot allow its own tools, for anyone.
                    .filter(|c| l.source != RuleSource::Project || c.verdict != Verdict::Allow)
                    .map(|c| (c.verdict, Globs::new(std::slice::from_ref(&c.tool)), c.clone()))
                    .collect(),
            })
            .collect();
        Policy { layers, managed_error }
    }

    /// Whether a decision can depend on who is calling (some file has a rule for some
    /// callers only).
    pub fn depends_on_caller(&self) -> bool {
        self.layers.iter().any(|l| !l.conditional.is_empty())
    }

    /// Whether any file has a `policy` (without one every call is allowed).
    pub fn is_active(&self) -> bool {
        !self.layers.is_empty() || self.managed_error.is_some()
    }

    /// What `findings` says of a tool whose worst finding is `worst` (`found`: it and its
    /// rules, for the message): the strictest file's verdict, `None` when no file's rule takes
    /// that severity.
    pub fn findings(&self, worst: crate::screen::Severity, found: &str) -> Option<Decision> {
        let (layer, rule) = self
            .layers
            .iter()
            .filter_map(|l| l.findings.filter(|r| worst >= r.at).map(|r| (l, r)))
            .max_by_key(|(_, r)| r.action)?;
        Some(Decision {
            verdict: rule.action,
            rule: Rule {
                verdict: rule.action,
                kind: RuleKind::Findings { at: rule.at, found: found.to_string() },
                file: Some(layer.file.clone()),
                source: Some(layer.source),
            },
            managed: layer.source == RuleSource::Managed,
        })
    }

    /// What becomes of secrets in results: the strictest file's `secrets` (`redact` when
    /// none says).
    pub fn secrets(&self) -> crate::screen::secrets::SecretsMode {
        self.layers.iter().filter_map(|l| l.secrets).max().unwrap_or_default()
    }

    /// The decision for `tool`.
    pub fn decide(&self, tool: ToolRef<'_>) -> Decision {
        if let Some((file, message)) = &self.managed_error {
            let rule = Rule {
                verdict: Verdict::Deny,
                kind: RuleKind::ManagedUnreadable { message: message.clone() },
                file: Some(file.clone()),
                source: Some(RuleSource::Managed),
            };
            return Decision { verdict: Verdict::Deny, rule, managed: true };
        }
        if self.layers.is_empty() {
            let rule = Rule { verdict: Verdict::Allow, kind: RuleKind::NoPolicy, file: None, source: None };
            return Decision { verdict: Verdict::Allow, rule, managed: false };
        }
        let spellings = tool.spellings();
        let spellings: Vec<&str> = spellings.iter().map(String::as_str).collect();
        // Per group: (verdict, is a pattern, literal length, rule).
        let mut per_group: [Option<(Verdict, bool, usize, Rule)>; 3] = [None, None, None];
        for layer in &self.layers {
            // The lists, then the rules for some callers that hold for this one.
            let lists = layer.lists.iter().map(|(v, g)| (v, g, None)).chain(
                layer
                    .conditional
                    .iter()
                    .filter(|(_, _, c)| c.who.holds_for(tool.caller))
                    .map(|(v, g, c)| (v, g, Some(c))),
            );
            for (verdict, globs, conditional) in lists {
                let Some(pattern) = globs.best(&spellings) else { continue };
                let len = literal_len(pattern);
                let slot = &mut per_group[layer.source.group()];
                let better = match slot {
                    None => true,
                    Some((v, _, l, r)) => {
                        (*verdict, len, std::cmp::Reverse(layer.source))
                            > (*v, *l, std::cmp::Reverse(r.source.unwrap_or(RuleSource::Project)))
                    }
                };
                if better {
                    let rule = Rule {
                        verdict: *verdict,
                        kind: match conditional {
                            None => RuleKind::Pattern { pattern: pattern.to_string() },
                            Some(c) => RuleKind::ForCallers { pattern: pattern.to_string(), who: c.who.to_string() },
                        },
                        file: Some(layer.file.clone()),
                        source: Some(layer.source),
                    };
                    *slot = Some((*verdict, true, len, rule));
                }
            }
        }
        for (group, slot) in per_group.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            // The group's default: its last file that sets one.
            let Some(layer) = self.layers.iter().rev().find(|l| l.source.group() == group && l.default.is_some())
            else {
                continue;
            };
            let Some(default) = layer.default else { continue };
            let (verdict, kind) = match default {
                DefaultRule::Allow => (Verdict::Allow, RuleKind::Default { default }),
                DefaultRule::Ask => (Verdict::Ask, RuleKind::Default { default }),
                DefaultRule::Deny => (Verdict::Deny, RuleKind::Default { default }),
                DefaultRule::Annotations => {
                    let (verdict, reason) = from_annotations(tool.annotations, tool.trusted);
                    (verdict, RuleKind::Annotations { reason })
                }
            };
            let rule = Rule { verdict, kind, file: Some(layer.file.clone()), source: Some(layer.source) };
            *slot = Some((verdict, false, 0, rule));
        }
        let managed_verdict = per_group[0].as_ref().map(|s| s.0);
        let best = per_group.into_iter().flatten().max_by_key(|(v, pattern, len, r)| {
            (*v, *pattern, *len, std::cmp::Reverse(r.source.unwrap_or(RuleSource::Project)))
        });
        match best {
            Some((verdict, _, _, rule)) => {
                Decision { verdict, rule, managed: verdict == Verdict::Ask && managed_verdict == Some(Verdict::Ask) }
            }
            // Rules exist, none matched, no default: allowed (a policy adds rules to today's
            // behaviour; `default` changes the rest).
            None => {
                let rule = Rule { verdict: Verdict::Allow, kind: RuleKind::NoMatch, file: None, source: None };
                Decision { verdict: Verdict::Allow, rule, managed: false }
            }
        }
    }
}

/// `default: annotations`: `readOnlyHint: true` → allow; `destructiveHint: true` → ask;
/// otherwise ask unless `destructiveHint: false` and `openWorldHint: false`. Missing hints take
/// the spec's defaults (`readOnlyHint` false, `destructiveHint` true, `openWorldHint` true).
/// An untrusted server's hints are not believed: ask.
pub fn from_annotations(annotations: Option<&ToolAnnotations>, trusted: bool) -> (Verdict, String) {
    if !trusted {
        return (Verdict::Ask, "the server is not trusted, so its annotations are not believed".into());
    }
    let a = annotations.cloned().unwrap_or_default();
    let spec = |v: Option<bool>| if v.is_some() { "" } else { " (the spec's default)" };
    if a.read_only_hint == Some(true) {
        return (Verdict::Allow, "readOnlyHint: true".into());
    }
    let destructive = a.destructive_hint.unwrap_or(true);
    if destructive {
        return (Verdict::Ask, format!("destructiveHint: true{}", spec(a.destructive_hint)));
    }
    let open = a.open_world_hint.unwrap_or(true);
    if open {
        return (Verdict::Ask, format!("destructiveHint: false, openWorldHint: true{}", spec(a.open_world_hint)));
    }
    (Verdict::Allow, "destructiveHint: false, openWorldHint: false".into())
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
