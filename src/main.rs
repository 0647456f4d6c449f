//! The `loopx` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    loopx::main()
}
