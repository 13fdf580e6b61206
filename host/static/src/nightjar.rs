//! `nightjar`, the client, as the package ships it (static, musl): the same
//! `nightjar-cli` code as the glibc build `host/src/main.rs`.

fn main() {
    std::process::exit(nightjar_cli::main());
}
