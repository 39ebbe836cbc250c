//! The image a container world test runs: Debian bookworm made by `debootstrap --variant=minbase`
//! from Debian's packages (no registry pull) with `clangd` (a language server for the lsp tool),
//! docs and apt lists dropped, imported into the engine as `toolhost-world-test:bookworm-clangd`. Built once per machine: the engine's store keeps the
//! image, and the root file system's tarball is kept under `.client-tools/world-image/` for an
//! engine store that was emptied.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

pub const IMAGE: &str = "toolhost-world-test:bookworm-clangd";

fn run(command: &mut Command) {
    let shown = format!("{command:?}");
    let out = command.output().unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(out.status.success(), "{shown}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Makes sure `engine` has [`IMAGE`]; returns its name.
pub fn ensure(engine: &str, workspace_root: &Path) -> &'static str {
    static BUILT: Mutex<bool> = Mutex::new(false);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if *built {
        return IMAGE;
    }
    let exists = Command::new(engine).args(["image", "exists", IMAGE]).status();
    if !exists.is_ok_and(|s| s.success()) {
        let cache = workspace_root.join(".client-tools/world-image");
        let tarball = cache.join("rootfs-clangd.tar");
        if !tarball.is_file() {
            std::fs::create_dir_all(&cache).unwrap();
            let rootfs = cache.join("rootfs.partial");
            let _ = std::fs::remove_dir_all(&rootfs);
            run(Command::new("debootstrap")
                .args(["--variant=minbase", "--include=clangd", "bookworm"])
                .arg(&rootfs)
                .arg("http://deb.debian.org/debian"));
            for dropped in [
                "usr/share/doc",
                "usr/share/man",
                "usr/share/locale",
                "var/lib/apt/lists",
                "var/cache/apt",
            ] {
                let _ = std::fs::remove_dir_all(rootfs.join(dropped));
            }
            let partial = cache.join("rootfs.tar.partial");
            run(Command::new("tar").arg("-C").arg(&rootfs).arg("-cf").arg(&partial).arg("."));
            std::fs::rename(&partial, &tarball).unwrap();
            std::fs::remove_dir_all(&rootfs).unwrap();
        }
        run(Command::new(engine).args(["import", "-q"]).arg(&tarball).arg(IMAGE));
    }
    *built = true;
    IMAGE
}
