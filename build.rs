//! With the `split` feature, the wasm32 link keeps its relocations (`--emit-relocs`):
//! the splitter that `cargo xtask` runs afterwards (xtask/src/split.rs) needs them to
//! move functions and data between modules. Only this package's link sees the flag,
//! so the dependencies stay cached across split and unsplit builds.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let split = std::env::var_os("CARGO_FEATURE_SPLIT").is_some();
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32");
    if split && wasm {
        println!("cargo::rustc-link-arg=--emit-relocs");
    }
}
