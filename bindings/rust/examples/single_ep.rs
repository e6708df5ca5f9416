//! One EP for a session: XNNPACK takes the nodes it supports, the CPU EP the rest.
//! Usage: single_ep [MODEL]
mod common;

use onyx::{ep::XNNPACK, session::Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::builder()?
        .with_execution_providers([XNNPACK::default().build()])?
        .commit_from_file(common::model_path())?;
    common::print_registration(&session)?;
    common::print_placement(&session)?;
    Ok(())
}
