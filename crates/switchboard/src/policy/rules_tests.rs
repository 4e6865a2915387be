use super::*;

fn layer(
    source: RuleSource,
    file: &str,
    allow: &[&str],
    ask: &[&str],
    deny: &[&str],
    default: Option<DefaultRule>,
) -> PolicyLayer {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    PolicyLayer::new(
        source,
        file.into(),
        PolicyRules {
            allow: v(allow),
            ask: v(ask),
            deny: v(deny),
            default,
            findings: None,
            secrets: None,
            conditional: Vec::new(),
            rate_limits: Vec::new(),
        },
    )
}

fn tool<'a>(name: &'a str, server: &'a str, raw: &'a str) -> ToolRef<'a> {
    ToolRef::new(name, server, raw)
}

#[test]
fn no_policy_allows_everything() {
    let p = Policy::new(&[], None);
    assert!(!p.is_active());
    let d = p.decide(tool("mcp__a__b", "a", "b"));
    assert_eq!((d.verdict, &d.rule.kind), (Verdict::Allow, &RuleKind::NoPolicy));
}

#[test]
fn deny_beats_ask_beats_allow_and_raw_names_match() {
    let p = Policy::new(
        &[layer(RuleSource::User, "/u.json", &["mcp__gh__*"], &["gh/create_*"], &["mcp__*__delete_*"], None)],
        None,
    );
    assert_eq!(p.decide(tool("mcp__gh__get_issue", "gh", "get_issue")).verdict, Verdict::Allow);
    let ask = p.decide(tool("mcp__gh__create_issue", "gh", "create_issue"));
    assert_eq!(ask.verdict, Verdict::Ask);
    assert_eq!(ask.rule.kind, RuleKind::Pattern { pattern: "gh/create_*".into() });
    let deny = p.decide(tool("mcp__gh__delete_repo", "gh", "delete_repo"));
    assert_eq!(deny.verdict, Verdict::Deny);
    assert_eq!(deny.rule.to_string(), "rule `deny: mcp__*__delete_*` of /u.json (user file)");
    // Unmatched, no default: allowed, and said so (not "no policy": there is one).
    let none = p.decide(tool("mcp__fs__read", "fs", "read"));
    assert_eq!((none.verdict, &none.rule.kind), (Verdict::Allow, &RuleKind::NoMatch));
    assert_eq!(none.rule.to_string(), "no rule matches this tool, and no file sets a `default` (allowed)");
}

#[test]
fn rules_match_the_gateway_s_short_names_too() {
    let p = Policy::new(&[layer(RuleSource::User, "/u.json", &[], &[], &["memory__create_*", "gh__*"], None)], None);
    for (server, raw) in [("memory", "create_entities"), ("gh", "delete_repo")] {
        let name = format!("mcp__{server}__{raw}");
        assert_eq!(p.decide(tool(&name, server, raw)).verdict, Verdict::Deny, "{server}/{raw}");
    }
    assert_eq!(p.decide(tool("mcp__memory__read_graph", "memory", "read_graph")).verdict, Verdict::Allow);
    // A server whose name needs sanitising: its short spelling is the sanitised one.
    let q = Policy::new(&[layer(RuleSource::User, "/u.json", &[], &[], &["my_srv__x"], None)], None);
    assert_eq!(q.decide(tool("mcp__my_srv__x", "my.srv", "x")).verdict, Verdict::Deny);
}

#[test]
fn the_most_specific_pattern_is_named() {
    let p = Policy::new(
        &[layer(RuleSource::User, "/u.json", &[], &["mcp__*", "mcp__gh__create_issue", "mcp__gh__*"], &[], None)],
        None,
    );
    let d = p.decide(tool("mcp__gh__create_issue", "gh", "create_issue"));
    assert_eq!(d.rule.kind, RuleKind::Pattern { pattern: "mcp__gh__create_issue".into() });
}

#[test]
fn users_cannot_loosen_the_managed_file_and_projects_only_tighten() {
    let managed =
        layer(RuleSource::Managed, "/etc/m.json", &[], &["mcp__gh__*"], &["mcp__shell__*"], Some(DefaultRule::Deny));
    let user = layer(RuleSource::User, "/u.json", &["mcp__*"], &[], &[], Some(DefaultRule::Allow));
    let project = layer(
        RuleSource::Project,
        "/p/switchboard.json",
        &["mcp__fs__*"],
        &["mcp__docs__*"],
        &[],
        Some(DefaultRule::Allow),
    );
    let p = Policy::new(&[project, managed.clone(), user.clone()], None);
    // The managed ask holds against the user's allow, and is marked managed.
    let d = p.decide(tool("mcp__gh__x", "gh", "x"));
    assert_eq!((d.verdict, d.managed), (Verdict::Ask, true));
    assert_eq!(d.rule.source, Some(RuleSource::Managed));
    // The managed default deny holds against the user's allow.
    let d = p.decide(tool("mcp__fs__read", "fs", "read"));
    assert_eq!((d.verdict, d.rule.kind.clone()), (Verdict::Deny, RuleKind::Default { default: DefaultRule::Deny }));
    // Without the managed file, the project's ask tightens the user's allow; its allow and
    // its `default: allow` are ignored.
    let project_only = layer(
        RuleSource::Project,
        "/p/switchboard.json",
        &["mcp__fs__*"],
        &["mcp__docs__*"],
        &[],
        Some(DefaultRule::Allow),
    );
    let user_ask = layer(RuleSource::User, "/u.json", &[], &[], &[], Some(DefaultRule::Ask));
    let p = Policy::new(&[project_only, user_ask, user.clone()], None);
    let d = p.decide(tool("mcp__docs__search", "docs", "search"));
    assert_eq!((d.verdict, d.managed, d.rule.source), (Verdict::Ask, false, Some(RuleSource::Project)));
    // The user's allow pattern (later user file) wins over the user default ask for fs.
    assert_eq!(p.decide(tool("mcp__fs__read", "fs", "read")).verdict, Verdict::Allow);
}

#[test]
fn defaults_of_later_files_win_within_the_person_group() {
    let user = layer(RuleSource::User, "/u.json", &[], &[], &[], Some(DefaultRule::Deny));
    let cli = layer(RuleSource::Cli, "/c.json", &[], &[], &[], Some(DefaultRule::Ask));
    let d = Policy::new(&[user, cli], None).decide(tool("mcp__a__b", "a", "b"));
    assert_eq!((d.verdict, d.rule.file.as_deref()), (Verdict::Ask, Some(std::path::Path::new("/c.json"))));
}

#[test]
fn annotations_decide_for_trusted_servers_only() {
    let p = Policy::new(&[layer(RuleSource::User, "/u.json", &[], &[], &[], Some(DefaultRule::Annotations))], None);
    let ann = |ro: Option<bool>, de: Option<bool>, ow: Option<bool>| {
        let mut a = ToolAnnotations::new();
        a.read_only_hint = ro;
        a.destructive_hint = de;
        a.open_world_hint = ow;
        a
    };
    let cases = [
        (ann(Some(true), None, None), true, Verdict::Allow),
        (ann(Some(true), None, None), false, Verdict::Ask),
        (ann(None, Some(true), None), true, Verdict::Ask),
        (ann(None, None, None), true, Verdict::Ask),
        (ann(None, Some(false), None), true, Verdict::Ask),
        (ann(None, Some(false), Some(false)), true, Verdict::Allow),
        (ann(Some(false), Some(false), Some(true)), true, Verdict::Ask),
    ];
    for (a, trusted, want) in cases {
        let d = p.decide(tool("mcp__a__b", "a", "b").annotated(Some(&a), trusted));
        assert_eq!(d.verdict, want, "{a:?} trusted={trusted}: {}", d.rule);
        assert!(matches!(d.rule.kind, RuleKind::Annotations { .. }));
    }
    // No annotations at all: the spec's defaults (destructive, open world) → ask.
    let d = p.decide(tool("mcp__a__b", "a", "b"));
    assert_eq!(d.verdict, Verdict::Ask);
    assert_eq!(d.rule.kind, RuleKind::Annotations { reason: "destructiveHint: true (the spec's default)".into() });
}

#[test]
fn an_unreadable_managed_file_refuses_every_call() {
    let p = Policy::new(&[], Some(("/etc/m.json".into(), "line 3: expected `,`".into())));
    assert!(p.is_active());
    let d = p.decide(tool("mcp__a__b", "a", "b"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.rule.to_string().contains("/etc/m.json"), "{}", d.rule);
}

fn principal(subject: &str, groups: &[&str]) -> crate::identity::Principal {
    serde_json::from_value(serde_json::json!({"subject": subject, "issuer": "https://idp.example", "groups": groups}))
        .expect("a principal")
}

fn for_callers(verdict: Verdict, tool: &str, who: serde_json::Value) -> crate::config::ConditionalRule {
    let mut w = crate::config::Who::default();
    let names = |k: &str| -> Vec<String> {
        who[k].as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
    };
    w.groups = names("groups");
    w.unless_groups = names("unless_groups");
    w.principals = names("principals");
    crate::config::ConditionalRule { verdict, tool: tool.into(), who: w }
}

#[test]
fn rules_for_some_callers_hold_by_who_signed_in() {
    let mut l = layer(RuleSource::User, "/u.json", &[], &[], &[], Some(DefaultRule::Ask));
    l.rules.conditional = vec![
        for_callers(Verdict::Deny, "mcp__gh__delete_*", serde_json::json!({"unless_groups": ["admins"]})),
        for_callers(Verdict::Allow, "mcp__db__*", serde_json::json!({"groups": ["data", "admins"]})),
        for_callers(Verdict::Allow, "mcp__db__drop", serde_json::json!({"principals": ["carol"]})),
    ];
    let p = Policy::new(&[l], None);
    assert!(p.depends_on_caller());
    let (alice, bob, carol) = (principal("alice", &["devs"]), principal("bob", &["admins"]), principal("carol", &[]));
    let delete = tool("mcp__gh__delete_repo", "gh", "delete_repo");
    let d = p.decide(delete.by(Some(&alice)));
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(d.rule.to_string(), "rule `deny: mcp__gh__delete_*` (unless in group admins) of /u.json (user file)");
    // Not for an admin: the file's default holds for them.
    assert_eq!(p.decide(delete.by(Some(&bob))).verdict, Verdict::Ask);
    // Someone who did not sign in is in no group: the rule holds.
    assert_eq!(p.decide(delete).verdict, Verdict::Deny);
    let query = tool("mcp__db__query", "db", "query");
    assert_eq!(p.decide(query.by(Some(&bob))).verdict, Verdict::Allow);
    assert_eq!(p.decide(query.by(Some(&alice))).verdict, Verdict::Ask);
    assert_eq!(p.decide(query).verdict, Verdict::Ask);
    let drop = tool("mcp__db__drop", "db", "drop");
    assert_eq!(p.decide(drop.by(Some(&carol))).verdict, Verdict::Allow);
    assert_eq!(p.decide(drop.by(Some(&alice))).verdict, Verdict::Ask);
    // A project cannot allow, for anyone.
    let mut project = layer(RuleSource::Project, "/p/.mcp.json", &[], &[], &[], None);
    project.rules.conditional = vec![for_callers(Verdict::Allow, "*", serde_json::json!({"groups": ["devs"]}))];
    let p = Policy::new(&[layer(RuleSource::User, "/u.json", &[], &["*"], &[], None), project], None);
    assert_eq!(p.decide(query.by(Some(&alice))).verdict, Verdict::Ask);
    assert!(!Policy::new(&[layer(RuleSource::User, "/u.json", &[], &["*"], &[], None)], None).depends_on_caller());
}
