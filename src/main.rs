//! The `wit` binary: hands over to [`wit::cli`].
use std::process::ExitCode;

fn main() -> ExitCode {
    wit::cli::main()
}
