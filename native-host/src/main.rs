//! The `unmodal` binary: everything lives in the library (see `cli`).

fn main() -> std::process::ExitCode {
    unmodal::cli::main()
}
