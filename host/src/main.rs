//! The `nightjar` binary: parse the command line, call into the library.

fn main() {
    std::process::exit(nightjar::cli::main());
}
