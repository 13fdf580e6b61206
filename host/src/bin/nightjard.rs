//! The `nightjard` binary: the daemon (`nightjard daemon`) and the offline
//! plugin checks (`nightjard plugins check|test`).

fn main() {
    std::process::exit(nightjar::nightjard::main());
}
