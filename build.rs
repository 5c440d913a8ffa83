//! Records the git commit pk is built from, for `pkc --version`.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=PK_GIT_COMMIT={commit}");
    // A new commit changes HEAD or the branch it points at. (In a linked
    // work tree `.git` is a file and these paths do not exist; cargo then
    // reruns the script on every build, which is cheap.)
    for p in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
