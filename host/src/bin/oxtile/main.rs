//! `oxtile`: run the kernels against their references, inspect their machine code, explore layouts, benchmark.

mod bench;
mod check;
mod kernels;
mod layout;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "oxtile", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run every kernel on the GPU against its float64 CPU reference (the default).
    Check(check::Args),
    /// What each kernel compiles to, from ptxas and cuobjdump (no GPU needed).
    Kernels(kernels::Args),
    /// Time kernels beside cuBLAS (and torch_reference.py's rows): gemm, attn, copy, exp2.
    Bench(Box<bench::Args>),
    /// CuTe layouts: draw one (`show`), or run a file of algebra cases (`--batch`).
    Layout(layout::Args),
    /// Measure which kernel variant is fastest per shape and record it for the library's `Auto` choice.
    Tune(tune::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Check(check::Args::default())) {
        Command::Check(args) => check::run(&args),
        Command::Kernels(args) => kernels::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Layout(args) => layout::run(&args),
        Command::Tune(args) => tune::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own consistency checks over every subcommand (duplicate names, conflicting defaults), which a release
    /// build does not run.
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
