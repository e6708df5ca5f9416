//! Runs a model on made-up inputs and prints its inputs, outputs and where each node ran. Symbolic
//! dimensions are taken as 1; float inputs are filled with a ramp in [0, 1), integer ones with 0.
//! Usage: run_model [MODEL]
mod common;

use onyx::{session::Session, value::Tensor, ElementType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("onyx {} (C API version {})", onyx::version(), onyx::api_version());
    let session = Session::builder()?.with_intra_threads(2)?.commit_from_file(common::model_path())?;
    for i in session.inputs() {
        println!("input  {:<24} {}", i.name, i.type_string);
    }
    for o in session.outputs() {
        println!("output {:<24} {}", o.name, o.type_string);
    }

    let mut inputs = Vec::new();
    for info in session.inputs() {
        let shape: Vec<i64> = info.shape.clone().unwrap_or_default().iter().map(|&d| if d < 0 { 1 } else { d }).collect();
        let count = shape.iter().product::<i64>() as usize;
        let tensor = match info.element_type {
            ElementType::Float32 => Tensor::from_array((&shape, (0..count).map(|k| (k % 97) as f32 / 97.0).collect::<Vec<f32>>()))?,
            ElementType::Int64 => Tensor::from_array((&shape, vec![0i64; count]))?,
            other => return Err(format!("input '{}' is {other}: this example feeds float and int64 only", info.name).into()),
        };
        inputs.push((info.name.clone(), tensor));
    }

    let outputs = session.run(inputs.iter().map(|(name, t)| (name.as_str(), t)))?;
    for (name, value) in outputs.iter() {
        let Some(tensor) = value else {
            println!("result {name}: empty");
            continue;
        };
        match tensor.element_type() {
            ElementType::Float32 => {
                let (shape, data) = tensor.try_extract_tensor::<f32>()?;
                let first: Vec<String> = data.iter().take(5).map(|v| format!("{v:.5}")).collect();
                println!("result {name} float{shape:?}: {} (sum {:.4})", first.join(" "), data.iter().sum::<f32>());
            }
            ElementType::Int64 => {
                let (shape, data) = tensor.try_extract_tensor::<i64>()?;
                println!("result {name} int64{shape:?}: {:?}", &data[..data.len().min(5)]);
            }
            other => println!("result {name} {other}{:?}", tensor.shape()),
        }
    }
    common::print_placement(&session)?;
    Ok(())
}
