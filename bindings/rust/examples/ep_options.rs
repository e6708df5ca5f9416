//! EPs with options set through their typed methods (and one by key). Core ML is not built into
//! this onyx, so it is skipped; the others print their effective options once registered.
//! Usage: ep_options [MODEL]
mod common;

use onyx::{ep, session::Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::builder()?
        .with_execution_providers([
            ep::CoreML::default()
                .with_subgraphs()
                .with_compute_units(ep::coreml::ComputeUnits::CPUOnly)
                .build(),
            ep::CUDA::default()
                .with_device_id(0)
                .with_memory_limit(1 << 30)
                .with_conv_algo_search(ep::cuda::ConvAlgorithmSearch::Heuristic)
                .with_tf32(false)
                .build(),
            ep::XNNPACK::default().with_threads(1).with_quantized(false).build(),
            ep::CPU::default().with_prefer_nhwc(false).with_option("half_in_float", "true").build(),
        ])?
        .with_intra_threads(1)?
        .commit_from_file(common::model_path())?;
    for r in session.registration()? {
        let options: Vec<String> = r.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("  ep {:<8} {:?}: {}", r.name, r.outcome, if r.reason.is_empty() { options.join(" ") } else { r.reason });
    }
    common::print_placement(&session)?;
    Ok(())
}
