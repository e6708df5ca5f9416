//! Default EPs for every session of the process, set once with `onyx::init()`. A session's own EPs
//! come first and the environment's after them; a session can also leave them out.
//! Usage: environment [MODEL]
mod common;

use onyx::{ep, session::Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let committed = onyx::init()
        .with_execution_providers([ep::XNNPACK::default().build(), ep::CUDA::default().build()])
        .commit();
    println!("environment committed: {committed}");

    let session = Session::builder()?.commit_from_file(common::model_path())?;
    println!("a session with the environment's EPs:");
    common::print_registration(&session)?;
    common::print_placement(&session)?;

    let own = Session::builder()?
        .with_no_environment_execution_providers()?
        .commit_from_file(common::model_path())?;
    println!("a session without them:");
    common::print_registration(&own)?;
    common::print_placement(&own)?;
    Ok(())
}
