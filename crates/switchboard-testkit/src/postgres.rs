//! A real PostgreSQL server for the tests of a team's store: Debian's `postgresql` package
//! (`/usr/lib/postgresql/<version>/bin`; `.ci/run` installs it when missing), a cluster made
//! by `initdb` in a temporary folder and the postmaster run in the foreground on a free
//! loopback port, as the test's own user. PostgreSQL refuses to run as root: a root test runs
//! it in a user namespace where it is an ordinary user (`unshare -U --map-user`), its files
//! still the test's own. It is stopped (fast shutdown, then killed) and its folder removed when
//! dropped; a test can check through `/proc` that nothing of it is left.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binaries of the newest PostgreSQL installed.
pub fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    match versions.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): `apt-get install postgresql` \
             (.ci/run does it)"
        ),
    }
}

/// A running PostgreSQL server; stopped and removed when dropped.
pub struct Postgres {
    child: Child,
    port: u16,
    bin: PathBuf,
    folder: PathBuf,
}

/// `command` run as an ordinary user: as it is for one, in a user namespace for root.
fn as_user(program: &Path) -> Command {
    // SAFETY: geteuid only reads the process's user id.
    if unsafe { libc::geteuid() } == 0 {
        let mut cmd = Command::new("unshare");
        cmd.args(["-U", "--map-user=65534", "--map-group=65534"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

impl Postgres {
    /// A new cluster (superuser `postgres`, trusted on loopback), started and ready.
    pub fn start() -> Postgres {
        let bin = bin_dir();
        let folder = std::env::temp_dir().join(format!("sb-pg-{}-{}", std::process::id(), super::free_port()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        let data = folder.join("data");
        let out = as_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
            .output()
            .unwrap_or_else(|e| panic!("initdb: {e}"));
        assert!(
            out.status.success(),
            "initdb failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let port = super::free_port();
        let log = std::fs::File::create(folder.join("postgres.log")).unwrap_or_else(|e| panic!("the log: {e}"));
        // In the foreground, so that this process is the postmaster and killing it ends it.
        // Durability is not what these tests are about: no fsync.
        let child = as_user(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-k"])
            .arg(&folder)
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("postgres: {e}"));
        let pg = Postgres { child, port, bin, folder };
        pg.wait_ready(Duration::from_secs(60));
        pg
    }

    fn wait_ready(&self, limit: Duration) {
        let start = Instant::now();
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(start.elapsed() < limit, "postgres did not get ready in {limit:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The URL of database `db` as the superuser.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Makes a database and returns its URL.
    pub fn database(&self, name: &str) -> String {
        self.sql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }

    /// Runs `sql` in `db` with `psql` and returns what it printed (unaligned, tuples only).
    pub fn sql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "postgres"])
            .args(["-p", &self.port.to_string(), "-d", db, "-c", sql])
            .output()
            .unwrap_or_else(|e| panic!("psql: {e}"));
        assert!(out.status.success(), "psql `{sql}`: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("postgres.log")).unwrap_or_default()
    }

    /// Its processes now: the postmaster and every child of it (through `/proc`).
    pub fn processes(&self) -> Vec<i32> {
        let root = self.child.id() as i32;
        let mut all = vec![root];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let parent = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if parent == Some(root) && super::alive(pid) {
                all.push(pid);
            }
        }
        all.retain(|p| super::alive(*p));
        all
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            eprintln!(
                "postgres on port {}: the end of its log:\n{}",
                self.port,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        let pid = self.child.id() as i32;
        // SAFETY: a signal to our own child, which has not been waited for (its pid is ours).
        unsafe { libc::kill(pid, libc::SIGINT) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if self.child.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}
