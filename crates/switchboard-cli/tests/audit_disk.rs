//! The audit log on a disk that fills up: a real 1 MiB file system (tmpfs, mounted by the
//! test's own user in a user and mount namespace of its own, `unshare -rm`) under the log's
//! folder, 40 calls whose records (arguments kept) take 40 KB each. Every record in the files
//! is whole, the ones that did not fit are counted as lost and `audit` says how many, the
//! calls themselves went on; with the room back the count is written into the log; and with
//! `audit.required` a call is refused while the log cannot be written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use switchboard_testkit::{cli, fixture};

/// Runs `script` in a user and mount namespace of its own, as root there, with `$SB`,
/// `$DATA` and `$OUT` set; its stdout and stderr.
fn in_namespace(home: &Path, script: &str) -> String {
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-euc", script])
        .env("SB", cli())
        .env("DATA", switchboard_testkit::data_dir(home))
        .env("OUT", home)
        .env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home))
        .env("SWITCHBOARD_MANAGED_CONFIG", home.join("no-managed.json"))
        .env_remove("RUST_LOG")
        .current_dir(home)
        .output()
        .expect("unshare (util-linux) runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "the script failed (a kernel without unprivileged user namespaces cannot run this test: \
         /proc/sys/user/max_user_namespaces must be > 0): {text}"
    );
    text
}

fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn a_full_disk_keeps_records_whole_counts_the_lost_and_calls_go_on() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = json!({
        "servers": {"demo": {"command": fixture().display().to_string()}},
        "audit": {"arguments": true},
    });
    std::fs::write(h.join("user.json"), config.to_string()).unwrap();
    std::fs::write(h.join("required.json"), json!({"audit": {"required": true}}).to_string()).unwrap();
    let shown = in_namespace(
        h,
        r#"
        mkdir -p "$DATA/audit"
        mount -t tmpfs -o size=1m none "$DATA/audit"
        "$SB" call mcp__demo__echo --arg text=first > /dev/null
        head -c 600000 /dev/zero > "$DATA/audit/filler"
        big=$(head -c 40000 /dev/zero | tr '\0' x)
        ok=0
        for i in $(seq 1 40); do
            if "$SB" call mcp__demo__echo --arg "text=$i-$big" > /dev/null 2>> "$OUT/calls.err"; then ok=$((ok + 1)); fi
        done
        echo "calls ok: $ok"
        "$SB" audit --json > "$OUT/full.json"
        "$SB" audit > "$OUT/full.txt"
        cat "$DATA/audit/"*.jsonl > "$OUT/full.jsonl"
        # Not a byte left: the losses are counted in lost.json, in place.
        cat /dev/zero > "$DATA/audit/filler2" 2> /dev/null || true
        # A log that must be written refuses the call while it cannot be.
        if SWITCHBOARD_MANAGED_CONFIG="$OUT/required.json" "$SB" call mcp__demo__echo --arg text=refused \
            > "$OUT/required.out" 2>&1; then echo "required: called"; else echo "required: refused"; fi
        for i in 1 2 3; do "$SB" call mcp__demo__echo --arg "text=$i-$big" > /dev/null 2>> "$OUT/calls.err"; done
        "$SB" audit --json > "$OUT/pending.json"
        # Room again: the next call's process says the loss in the log.
        rm "$DATA/audit/filler" "$DATA/audit/filler2"
        "$SB" call mcp__demo__echo --arg text=after > /dev/null
        "$SB" audit --json > "$OUT/after.json"
        "#,
    );
    assert!(
        shown.contains("calls ok: 40"),
        "every call went on: {shown}\n{}",
        std::fs::read_to_string(h.join("calls.err")).unwrap_or_default()
    );
    // Whole or absent: every line of the file is a record.
    let raw = std::fs::read_to_string(h.join("full.jsonl")).unwrap();
    for (n, line) in raw.lines().enumerate() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "line {} is torn: {}…",
            n + 1,
            &line[..line.len().min(80)]
        );
    }
    assert!(raw.ends_with('\n'));
    let full = json_file(&h.join("full.json"));
    let kept = full["calls"].as_array().unwrap().len() as u64;
    let lost = full["lost_records"].as_u64().unwrap();
    assert!((3..40).contains(&kept), "some 40 KB records fit in the room left, not all: {kept} kept");
    assert_eq!(kept + lost, 41, "each record is kept or counted as lost: {}", brief(&full));
    assert!(full["unreadable"].as_array().unwrap().is_empty(), "{}", brief(&full));
    assert!(full["lost"][0]["error"].as_str().unwrap().contains("No space left"), "{}", brief(&full));
    let text = std::fs::read_to_string(h.join("full.txt")).unwrap();
    assert!(
        text.contains(&format!("Lost: {lost} records made between")) && text.contains("No space left"),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    // Required: refused, saying why, and nothing was sent.
    assert!(shown.contains("required: refused"), "{shown}");
    let refused = std::fs::read_to_string(h.join("required.out")).unwrap();
    assert!(refused.contains("the audit log cannot be written") && refused.contains("audit.required"), "{refused}");
    // With no byte left but the slack of the file's last page (a count line fits there, a
    // 40 KB record does not), the three calls' records are lost and counted; the refused
    // call's small record may fit. (`write.rs`'s unit test covers a log that takes nothing:
    // the count waits in lost.json.)
    let pending = json_file(&h.join("pending.json"));
    let pending_lost = pending["lost_records"].as_u64().unwrap();
    assert!(pending_lost >= lost + 3, "{}", brief(&pending));
    // With room again the count is a line of the log, and lost.json is empty.
    let after = json_file(&h.join("after.json"));
    assert_eq!(after["lost_records"].as_u64().unwrap(), pending_lost, "{}", brief(&after));
    assert!(
        after["lost"].as_array().unwrap().iter().all(|l| l["time"].is_string()),
        "all in the log now: {}",
        brief(&after)
    );
    let calls = |v: &Value| v["calls"].as_array().unwrap().len();
    assert_eq!(calls(&after), calls(&pending) + 1, "{}", brief(&after));
}

/// The end of a long JSON value, for a failure message (the records hold 40 KB arguments).
fn brief(v: &Value) -> String {
    let text = v.to_string();
    let cut = text.len().saturating_sub(1500);
    let start = (cut..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    format!("…{}", &text[start..])
}
