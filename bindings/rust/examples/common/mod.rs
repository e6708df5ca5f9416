//! Helpers shared by the examples: the model path argument and the placement printout.
#![allow(dead_code)]

use onyx::session::Session;

/// The model path: the first argument, or `model.onnx` in the current directory.
pub fn model_path() -> String {
    std::env::args().nth(1).unwrap_or_else(|| "model.onnx".to_string())
}

/// The n-th argument after the model path, if given.
pub fn arg(n: usize) -> Option<String> {
    std::env::args().nth(1 + n)
}

/// Prints the placement summary and the EP of every node.
pub fn print_placement(session: &Session) -> onyx::Result<()> {
    let placement = session.placement()?;
    println!("placement: {}", placement.summary);
    for node in &placement.nodes {
        println!("  {:<40} {:<18} on {}", node.name, node.op_type, node.ep);
    }
    Ok(())
}

/// Prints what became of every requested EP.
pub fn print_registration(session: &Session) -> onyx::Result<()> {
    for r in session.registration()? {
        let detail = if r.reason.is_empty() { r.device.clone() } else { r.reason.clone() };
        println!("  ep {:<10} {:?} ({:?}): {}", r.name, r.outcome, r.source, detail);
    }
    Ok(())
}
