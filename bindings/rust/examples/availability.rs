//! Asks whether EPs are usable on this machine before registering one: prints every EP of onyx's
//! table with its availability, then registers the chosen EP only if it is usable, and exits with
//! status 1 (and the reason) when it is not.
//! Usage: availability [MODEL] [EP]   (default: the TensorRT EP)
mod common;

use onyx::{
    ep::{self, ExecutionProvider},
    session::Session,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for name in ep::NAMES {
        let a = ep::availability(name)?;
        let detail = if a.usable { a.version } else { a.reason };
        println!("{name:<13} usable={:<5} {detail}", a.usable);
    }

    let wanted: Box<dyn ExecutionProvider> = match common::arg(1) {
        Some(name) => Box::new(ep::Custom::new(name)),
        None => Box::new(ep::TensorRT::default()),
    };
    if !wanted.is_available() {
        eprintln!("the {} EP is not usable here: {}", wanted.name(), wanted.availability()?.reason);
        std::process::exit(1);
    }
    // Usable now does not guarantee registration: a bad option, for one, still fails it.
    let builder = Session::builder()?;
    wanted.register(&builder)?;
    let session = builder.commit_from_file(common::model_path())?;
    common::print_placement(&session)?;
    Ok(())
}
