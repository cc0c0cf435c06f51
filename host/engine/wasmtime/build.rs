// napi's link setup, and the wasmtime version Cargo.lock pins (it keys precompiled files).
fn main() {
    napi_build::setup();
    let lock = std::fs::read_to_string("Cargo.lock").expect("Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"wasmtime\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .expect("wasmtime in Cargo.lock");
    println!("cargo:rustc-env=KILN_WASMTIME_VERSION={version}");
    println!("cargo:rerun-if-changed=Cargo.lock");
}
