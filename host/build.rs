//! Builds the stand-in NVML library (tests/nvml-standin) that the tests load
//! through nvml-wrapper's library path, so the real NVML code path runs on
//! machines without a GPU. The daemon itself never loads it unless told to.

use std::path::PathBuf;

fn main() {
    let src = PathBuf::from("../tests/nvml-standin/nvml_standin.c");
    println!("cargo:rerun-if-changed={}", src.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"))
        .join("libnvidia-ml-standin.so");
    let compiler = cc::Build::new().get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lpthread")
        .status()
        .expect("run the C compiler for the NVML stand-in");
    assert!(status.success(), "building the NVML stand-in failed");
    println!("cargo:rustc-env=NIGHTJAR_NVML_STANDIN={}", out.display());
}
