//! An EP that must register: with `error_on_failure()` an EP that cannot be used here makes
//! `with_execution_providers` fail, and the program exits with onyx's reason instead of quietly
//! running on the CPU.
//! Usage: error_on_failure [MODEL] [EP]   (EP: a name as `onyx providers` lists it; default cuda)
mod common;

use onyx::{ep, session::Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let required = match common::arg(1) {
        Some(name) => ep::ExecutionProviderDispatch::new(name),
        None => ep::CUDA::default().build(),
    };
    let session = Session::builder()?
        .with_execution_providers([required.error_on_failure()])?
        .commit_from_file(common::model_path())?;
    common::print_placement(&session)?;
    Ok(())
}
