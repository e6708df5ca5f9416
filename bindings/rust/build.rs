//! Links libonyx.so: from the directory in ONYX_LIB_DIR, or else from the repository's build tree
//! (`../../build/bin` relative to this crate). The crate's own tests and examples get an rpath to
//! that directory, so they run without LD_LIBRARY_PATH; dependents read it as DEP_ONYX_LIB_DIR.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=ONYX_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");

    let dir = match env::var_os("ONYX_LIB_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
            manifest.join("..").join("..").join("build").join("bin")
        }
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if !dir.join("libonyx.so").exists() && !dir.join("libonyx.dylib").exists() {
        println!(
            "cargo:warning=libonyx not found in {} (build onyx first, or set ONYX_LIB_DIR to the directory holding it)",
            dir.display()
        );
    }
    let shown = dir.display();
    println!("cargo:rustc-link-search=native={shown}");
    println!("cargo:rustc-link-lib=dylib=onyx");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{shown}");
    // Metadata for dependents' build scripts (DEP_ONYX_LIB_DIR, thanks to `links = "onyx"`).
    println!("cargo:lib_dir={shown}");
}
