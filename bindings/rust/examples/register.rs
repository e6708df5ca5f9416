//! Registering an EP by hand with `ExecutionProvider::register`, to handle its failure: here the
//! program says why and exits with status 1.
//! Usage: register [MODEL] [EP]   (default: the CUDA EP)
mod common;

use onyx::{
    ep::{self, ExecutionProvider},
    session::Session,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let builder = Session::builder()?;
    let result = match common::arg(1) {
        Some(name) => ep::Custom::new(name).register(&builder),
        None => ep::CUDA::default().register(&builder),
    };
    if let Err(e) = result {
        eprintln!("could not register the EP: {e}");
        std::process::exit(1);
    }
    let session = builder.commit_from_file(common::model_path())?;
    common::print_placement(&session)?;
    Ok(())
}
