//! Several EPs in priority order. Those that cannot register on this machine are skipped without
//! an error (the registration report says why), and nodes fall through to the next EP, then to the
//! CPU EP.
//! Usage: fallback [MODEL]
mod common;

use onyx::{ep, session::Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::builder()?
        .with_execution_providers([
            // NVIDIA first, where there is an NVIDIA GPU ...
            ep::TensorRT::default().build(),
            ep::CUDA::default().build(),
            // ... else oneDNN on the CPU, else onyx's own CPU kernels.
            ep::OneDNN::default().build(),
            ep::CPU::default().build(),
        ])?
        .commit_from_file(common::model_path())?;
    common::print_registration(&session)?;
    common::print_placement(&session)?;
    Ok(())
}
