//! "Everything under these roots but those paths", as the list of subtrees an allow-only rule
//! set (Landlock) can grant.

use std::path::{Path, PathBuf};

/// The most paths one carving may give (a folder beside a hidden path with more entries than
/// this is refused rather than granted whole).
const MAX_PATHS: usize = 20_000;

/// Subtrees whose union is everything under `roots` but what lies in `hidden`.
///
/// A root is granted whole unless a hidden path lies strictly inside it (a root inside a
/// hidden path is granted: it was named on purpose). Otherwise its entries are taken one by
/// one: those that hold no hidden path are granted whole, hidden ones are left out, and those
/// that hold one are carved in turn. A symbolic link is granted only when its target holds no
/// hidden path and lies in none (a rule follows the link). Missing roots, and hidden paths
/// that do not exist, are skipped.
/// Paths are compared after resolving links, so `hidden` may name them through one.
pub fn carve(roots: &[PathBuf], hidden: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    // What does not exist cannot be read; carving around it would only take from the server
    // the new files of a folder it may write (rules are made again at each start).
    let hidden: Vec<PathBuf> = hidden.iter().filter_map(|h| h.canonicalize().ok()).collect();
    let mut out = Vec::new();
    for root in roots {
        let Ok(root) = root.canonicalize() else { continue };
        let inside: Vec<&PathBuf> = hidden.iter().filter(|h| h.starts_with(&root) && **h != root).collect();
        go(&root, &inside, &hidden, &mut out)?;
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn go(dir: &Path, inside: &[&PathBuf], hidden: &[PathBuf], out: &mut Vec<PathBuf>) -> Result<(), String> {
    if inside.is_empty() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if hidden.contains(&path) {
            continue;
        }
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            let Ok(target) = path.canonicalize() else { continue };
            let touches = hidden.iter().any(|h| target.starts_with(h) || h.starts_with(&target));
            if !touches {
                out.push(path);
            }
            continue;
        }
        let deeper: Vec<&PathBuf> = inside.iter().copied().filter(|h| h.starts_with(&path)).collect();
        if deeper.is_empty() || !kind.is_dir() {
            out.push(path);
        } else {
            go(&path, &deeper, hidden, out)?;
        }
        if out.len() > MAX_PATHS {
            return Err(format!("more than {MAX_PATHS} entries beside a hidden path under {}", dir.display()));
        }
    }
    Ok(())
}

/// `path` with its links resolved, as far as it exists (a hidden path that does not exist yet
/// is still kept out of its folder).
pub(super) fn real(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if parent != path => real(parent).join(name),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_path_is_carved_out_of_its_ancestors() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        for d in ["home/.ssh", "home/code/x", "other"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("home/notes.txt"), "n").unwrap();
        std::os::unix::fs::symlink(base.join("home/.ssh"), base.join("home/keys")).unwrap();
        std::os::unix::fs::symlink(base.join("home/code"), base.join("home/work")).unwrap();
        let got = carve(std::slice::from_ref(&base), &[base.join("home/.ssh")]).unwrap();
        let want: Vec<PathBuf> =
            ["home/code", "home/notes.txt", "home/work", "other"].iter().map(|p| base.join(p)).collect();
        assert_eq!(got, want, "the link to .ssh is left out, the one to code kept");
    }

    #[test]
    fn a_root_is_whole_when_nothing_hidden_lies_inside_and_missing_ones_count() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        let got = carve(&[base.join("a"), base.join("nope")], &[base.join("elsewhere")]).unwrap();
        assert_eq!(got, [base.join("a")]);
        // A root inside a hidden path is named on purpose: granted.
        assert_eq!(carve(&[base.join("a/b")], &[base.join("a")]).unwrap(), [base.join("a/b")]);
        // A hidden path that does not exist takes nothing.
        let got = carve(std::slice::from_ref(&base), &[base.join("a/later")]).unwrap();
        assert_eq!(got, vec![base]);
    }
}
