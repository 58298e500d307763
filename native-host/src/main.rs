fn main() -> std::process::ExitCode {
    unmodal::cli::main()
}
