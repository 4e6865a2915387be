//! What ships for running replicas (the `Dockerfile`, `deploy/kubernetes/switchboard.yaml`),
//! checked by what can be run here (no container runtime, no cluster): the image builds the
//! binary README's first command builds, from the lock file, and holds it alone, run as a user
//! that is not root; the manifests are valid YAML with the objects and fields README names,
//! consistent with one another, and the command lines and config they give are ones this
//! switchboard takes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `switchboard ARGS… --help` succeeds: clap took every flag and value before it.
fn takes(args: &[String]) {
    let mut all: Vec<String> = args.to_vec();
    all.push("--help".into());
    let out = Command::new(switchboard_testkit::cli()).args(&all).env_remove("RUST_LOG").output().unwrap();
    assert!(
        out.status.success(),
        "`switchboard {}` is refused: {}",
        all.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A JSON array in a Dockerfile instruction (`CMD ["a", "b"]`).
fn exec_form(line: &str) -> Vec<String> {
    let (_, json) = line.split_once(' ').unwrap();
    serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("`{line}`: not the exec form: {e}"))
}

#[test]
fn the_image_builds_the_binary_readme_builds_and_holds_it_alone_as_no_root() {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    // Instructions, continuation lines joined.
    let joined = text.replace("\\\n", " ");
    let lines: Vec<&str> = joined.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let stages: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.starts_with("FROM ")).map(|(i, _)| i).collect();
    assert_eq!(stages.len(), 2, "two stages: build, then the binary alone");
    let (build, last) = (&lines[stages[0]..stages[1]], &lines[stages[1]..]);
    let build_name = lines[stages[0]].rsplit(' ').next().unwrap();
    assert!(lines[stages[0]].contains(" AS "), "the build stage is named");

    // The build: the package and binary README's command builds, in release, from the lock file.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let first = readme.lines().find(|l| l.starts_with("cargo build")).unwrap();
    assert!(first.contains("--workspace"), "README builds the workspace: {first}");
    let manifest = std::fs::read_to_string(repo().join("crates/switchboard-cli/Cargo.toml")).unwrap();
    assert!(manifest.contains("[[bin]]\nname = \"switchboard\""), "the CLI's binary is `switchboard`");
    let cargo = build.iter().find(|l| l.contains("cargo build")).expect("a cargo build in the build stage");
    for flag in ["--release", "--locked", "-p switchboard-cli", "--bin switchboard"] {
        assert!(cargo.contains(flag), "`{cargo}` lacks {flag}");
    }

    // The image: one thing copied, the binary, from the build stage; not root; runs it.
    let copies: Vec<&&str> = last.iter().filter(|l| l.starts_with("COPY") || l.starts_with("ADD")).collect();
    assert_eq!(copies.len(), 1, "the binary alone: {copies:?}");
    let copy: Vec<&str> = copies[0].split_whitespace().collect();
    assert_eq!(copy[1], format!("--from={build_name}"));
    assert_eq!(copy[2], "/src/target/release/switchboard");
    assert!(!last.iter().any(|l| l.starts_with("RUN")), "no package manager nor shell in the image");
    let user = last.iter().find_map(|l| l.strip_prefix("USER ")).expect("a USER");
    let name = user.split(':').next().unwrap();
    assert!(!["root", "0"].contains(&name), "runs as {user}");
    let entry = exec_form(last.iter().find(|l| l.starts_with("ENTRYPOINT")).unwrap());
    assert_eq!(entry, vec![copy[3].to_string()], "the entry point is the binary copied");
    takes(&exec_form(last.iter().find(|l| l.starts_with("CMD")).unwrap()));

    // What the build context leaves out (the build folder and the test peers are large).
    let ignored = std::fs::read_to_string(repo().join(".dockerignore")).unwrap();
    for path in ["target", ".peers", ".git"] {
        assert!(ignored.lines().any(|l| l.trim() == path), ".dockerignore lacks {path}");
    }
}

/// The documents of a multi-document YAML file, as JSON.
fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    yaml_serde::Deserializer::from_str(text).map(|d| Value::deserialize(d).unwrap()).collect()
}

#[test]
fn the_kubernetes_manifests_hold_what_the_docs_name_and_agree_with_each_other() {
    let text = std::fs::read_to_string(repo().join("deploy/kubernetes/switchboard.yaml")).unwrap();
    let docs = documents(&text);
    let of = |kind: &str| docs.iter().find(|d| d["kind"] == kind).unwrap_or_else(|| panic!("no {kind}")).clone();
    let (secret, config, deployment, service, budget) =
        (of("Secret"), of("ConfigMap"), of("Deployment"), of("Service"), of("PodDisruptionBudget"));
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(&deployment["spec"]["selector"]["matchLabels"], labels);
    assert_eq!(&service["spec"]["selector"], labels, "the Service selects the pods");
    assert_eq!(&budget["spec"]["selector"]["matchLabels"], labels, "the budget covers the pods");
    assert_eq!(service["spec"]["sessionAffinity"], "None", "no affinity");
    let replicas = deployment["spec"]["replicas"].as_u64().unwrap();
    let min = budget["spec"]["minAvailable"].as_u64().unwrap();
    assert!(replicas >= 2 && min < replicas && min >= 1, "{replicas} replicas, {min} kept through a disruption");

    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let container = &pod["containers"][0];
    let port = container["ports"].as_array().unwrap().iter().find(|p| p["name"] == "http").unwrap();
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], "http");
    let args: Vec<String> =
        container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let after = |flag: &str| args.iter().position(|a| a == flag).map(|i| args[i + 1].clone());
    let listen = after("--http").expect("--http");
    assert_eq!(listen.rsplit(':').next().unwrap(), port["containerPort"].to_string(), "--http is the container's port");
    assert_eq!(after("--advertise").as_deref(), Some(format!("http://$(POD_IP):{}", port["containerPort"]).as_str()));
    let drain: u64 = after("--drain").expect("--drain").parse().unwrap();
    assert!(drain < pod["terminationGracePeriodSeconds"].as_u64().unwrap(), "the drain ends before the kubelet's kill");
    // Every `$(VAR)` in the arguments is set, from the pod or the Secret.
    let env = container["env"].as_array().unwrap();
    let set = |name: &str| env.iter().find(|e| e["name"] == name).cloned().unwrap_or_else(|| panic!("{name} not set"));
    assert_eq!(set("POD_IP")["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
    for key in ["url", "keys"] {
        assert!(secret["stringData"][key].is_string(), "the Secret has {key}");
    }
    assert_eq!(set("SWITCHBOARD_STORE_KEYS")["valueFrom"]["secretKeyRef"]["name"], secret["metadata"]["name"]);
    assert_eq!(set("SWITCHBOARD_STORE_URL")["valueFrom"]["secretKeyRef"]["key"], "url");
    for arg in &args {
        if let Some(var) = arg.split("$(").nth(1).and_then(|r| r.split(')').next()) {
            set(var);
        }
    }

    // The config file mounted is one switchboard reads without an error, and the command line
    // is one it takes.
    let mount = container["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "config").unwrap();
    assert_eq!(after("--config"), Some(format!("{}/config.json", mount["mountPath"].as_str().unwrap())));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.json");
    std::fs::write(&file, config["data"]["config.json"].as_str().unwrap()).unwrap();
    let out = Command::new(switchboard_testkit::cli())
        .arg("--config")
        .arg(&file)
        .args(["config", "check", "--json"])
        .env("SWITCHBOARD_DATA_DIR", dir.path().join("data"))
        .env("SWITCHBOARD_CONFIG", dir.path().join("none.json"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let checked: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let errors: Vec<&Value> = checked["diagnostics"]
        .as_array()
        .map(|d| d.iter().filter(|d| d["severity"] == "error").collect())
        .unwrap_or_default();
    assert!(errors.is_empty() && checked.is_object(), "the ConfigMap's config: {checked}");
    let mut given = args.clone();
    let config_at = given.iter().position(|a| a == "--config").unwrap() + 1;
    given[config_at] = file.display().to_string();
    takes(&given);
}
