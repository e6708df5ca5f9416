//! Sessions through the crate: running tiny_cnn against its reference output, metadata, errors
//! that carry onyx's message, the placement report, concurrent runs and cancellation.
mod common;

use std::sync::Arc;

use common::{assert_close, tiny_cnn, tiny_cnn_reference};
use onyx::session::{GraphOptimizationLevel, RunOptions, Session};
use onyx::value::Tensor;
use onyx::{ElementType, ErrorCode};

fn reference_input() -> (Tensor, Vec<f32>) {
    let (input, output) = tiny_cnn_reference();
    assert_eq!(input.name, "image");
    assert_eq!(input.dims, [1, 3, 32, 32]);
    assert_eq!(output.dims, [1, 10]);
    (Tensor::from_array((input.dims, input.data)).unwrap(), output.data)
}

#[test]
fn runs_tiny_cnn_and_matches_the_reference_output() {
    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let (image, want) = reference_input();
    let outputs = session.run([("image", &image)]).unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["probabilities"]);
    let (shape, got) = outputs["probabilities"].try_extract_tensor::<f32>().unwrap();
    assert_eq!(shape, [1, 10]);
    assert_close(got, &want, 1e-5);
    assert_eq!(outputs[0].to_vec::<f32>().unwrap(), got);
}

#[test]
fn every_optimization_level_gives_the_reference_output() {
    let (image, want) = reference_input();
    for level in [GraphOptimizationLevel::Disable, GraphOptimizationLevel::Basic, GraphOptimizationLevel::All] {
        let session = Session::builder()
            .unwrap()
            .with_optimization_level(level)
            .unwrap()
            .with_intra_threads(1)
            .unwrap()
            .commit_from_file(tiny_cnn())
            .unwrap();
        let outputs = session.run([("image", &image)]).unwrap();
        assert_close(outputs["probabilities"].try_extract_tensor::<f32>().unwrap().1, &want, 1e-5);
    }
}

#[test]
fn commit_from_memory_gives_the_same_session() {
    let bytes = std::fs::read(tiny_cnn()).unwrap();
    let session = Session::builder().unwrap().commit_from_memory(&bytes).unwrap();
    drop(bytes);
    let (image, want) = reference_input();
    let outputs = session.run([("image", &image)]).unwrap();
    assert_close(outputs["probabilities"].try_extract_tensor::<f32>().unwrap().1, &want, 1e-5);
}

#[test]
fn metadata_names_types_and_symbolic_dims() {
    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let inputs = session.inputs();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "image");
    assert_eq!(inputs[0].element_type, ElementType::Float32);
    assert_eq!(inputs[0].shape.as_deref(), Some(&[-1, 3, 32, 32][..]));
    assert_eq!(inputs[0].dim_names, ["batch", "", "", ""]);
    assert_eq!(inputs[0].type_string, "float[batch,3,32,32]");
    assert!(!inputs[0].has_default);
    let outputs = session.outputs();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].name, "probabilities");
    assert_eq!(outputs[0].shape.as_deref(), Some(&[-1, 10][..]));
    assert_eq!(outputs[0].type_string, "float[batch,10]");
}

#[test]
fn a_batch_of_two_runs_each_image_alike() {
    let (input, output) = tiny_cnn_reference();
    let mut batch = input.data.clone();
    batch.extend_from_slice(&input.data);
    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let image = Tensor::from_array(([2, 3, 32, 32], batch)).unwrap();
    let outputs = session.run([("image", &image)]).unwrap();
    let (shape, got) = outputs["probabilities"].try_extract_tensor::<f32>().unwrap();
    assert_eq!(shape, [2, 10]);
    assert_close(&got[..10], &output.data, 1e-5);
    assert_close(&got[10..], &output.data, 1e-5);
}

#[test]
fn selected_outputs_and_run_options() {
    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let (image, want) = reference_input();
    let options = RunOptions::new().unwrap();
    let outputs = session.run_with([("image", &image)], Some(&["probabilities"]), Some(&options)).unwrap();
    assert_close(outputs.get("probabilities").unwrap().try_extract_tensor::<f32>().unwrap().1, &want, 1e-5);
    assert!(outputs.get("nothing").is_none());

    let err = session.run_with([("image", &image)], Some(&["logits"]), None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("logits"), "{err}");

    options.terminate().unwrap();
    let err = session.run_with([("image", &image)], None, Some(&options)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled, "{err}");
    options.reset().unwrap();
    assert!(session.run_with([("image", &image)], None, Some(&options)).is_ok());
}

#[test]
fn errors_carry_onyx_messages() {
    // A missing model file.
    let missing = common::models_dir().join("no_such_model.onnx");
    let err = Session::builder().unwrap().commit_from_file(&missing).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Io, "{err}");
    assert!(err.message().contains("no_such_model.onnx"), "{err}");
    assert!(err.to_string().starts_with("IoError: "), "{err}");

    // Bytes that are no model.
    let err = Session::builder().unwrap().commit_from_memory(b"not an onnx model").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidModel, "{err}");

    // A path with a NUL byte never reaches onyx.
    let err = Session::builder().unwrap().commit_from_file("a\0b.onnx").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");

    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let (image, _) = reference_input();

    // A wrong input name.
    let err = session.run([("picture", &image)]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("picture"), "{err}");

    // No inputs at all: the missing one is named.
    let err = session.run(Vec::<(&str, &Tensor)>::new()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("image"), "{err}");

    // A wrong shape.
    let small = Tensor::from_array(([1, 3, 16, 16], vec![0f32; 3 * 16 * 16])).unwrap();
    let err = session.run([("image", &small)]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("image") && err.message().contains("[1,3,16,16]"), "{err}");

    // A wrong element type.
    let ints = Tensor::from_array(([1, 3, 32, 32], vec![0i64; 3 * 32 * 32])).unwrap();
    let err = session.run([("image", &ints)]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("image"), "{err}");

    // Data that does not fill the shape.
    let err = Tensor::from_array(([2, 2], vec![1f32, 2.0, 3.0])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");

    // Reading elements as the wrong type.
    let outputs = session.run([("image", &image)]).unwrap();
    let err = outputs["probabilities"].try_extract_tensor::<i64>().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("float") && err.message().contains("int64"), "{err}");
}

#[test]
fn tensors_made_by_onyx_and_written_in_place() {
    let mut t = Tensor::zeros::<f32>(&[2, 3]).unwrap();
    assert_eq!(t.element_type(), ElementType::Float32);
    assert_eq!(t.shape(), [2, 3]);
    assert_eq!(t.len(), 6);
    {
        let (shape, data) = t.try_extract_tensor_mut::<f32>().unwrap();
        assert_eq!(shape, [2, 3]);
        assert!(data.iter().all(|&v| v == 0.0));
        data[4] = 2.5;
    }
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0, 0.0, 0.0, 0.0, 2.5, 0.0]);

    let scalar = Tensor::from_array(([0i64; 0], vec![7i64])).unwrap();
    assert!(scalar.shape().is_empty());
    assert_eq!(scalar.to_vec::<i64>().unwrap(), [7]);

    let empty = Tensor::from_array(([0i64, 4], Vec::<u8>::new())).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.try_extract_tensor::<u8>().unwrap().1.len(), 0);
    assert_eq!(format!("{empty:?}"), "Tensor { element_type: Uint8, shape: [0, 4] }");
}

#[test]
fn placement_reports_every_node_on_the_cpu_ep() {
    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let placement = session.placement().unwrap();
    assert!(placement.summary.starts_with("cpu: "), "{}", placement.summary);
    assert!(!placement.nodes.is_empty());
    assert!(placement.nodes.iter().all(|n| n.ep == "cpu"), "{placement:?}");
    assert!(placement.nodes.iter().any(|n| n.op_type.contains("Conv")), "{placement:?}");
    assert!(placement.copies.is_empty());
    let registration = session.registration().unwrap();
    assert_eq!(registration.len(), 1);
    assert_eq!(registration[0].name, "cpu");
    assert_eq!(registration[0].source, onyx::session::EpSource::Implicit);
    assert_eq!(registration[0].outcome, onyx::session::EpOutcome::Registered);
    assert_eq!(registration[0].priority, Some(0));
}

#[test]
fn four_threads_running_one_session_get_identical_outputs() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Session>();
    assert_send_sync::<Tensor>();
    assert_send_sync::<RunOptions>();

    let session = Arc::new(Session::builder().unwrap().with_intra_threads(1).unwrap().commit_from_file(tiny_cnn()).unwrap());
    let (image, want) = reference_input();
    let image = Arc::new(image);
    let first = session.run([("image", &*image)]).unwrap()["probabilities"].to_vec::<f32>().unwrap();
    assert_close(&first, &want, 1e-5);

    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (session, image) = (Arc::clone(&session), Arc::clone(&image));
            std::thread::spawn(move || {
                (0..20)
                    .map(|_| session.run([("image", &*image)]).unwrap()["probabilities"].to_vec::<f32>().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for got in h.join().unwrap() {
            assert_eq!(got, first, "a concurrent run differs from the single-threaded one");
        }
    }
}

#[test]
fn library_version_and_error_traits() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<onyx::Error>();
    let e = onyx::Error::new(ErrorCode::NotAvailable, "no device");
    assert_eq!(e.to_string(), "NotAvailable: no device");
    assert_eq!(ErrorCode::from_raw(ErrorCode::Io.raw()), ErrorCode::Io);
    assert_eq!(ErrorCode::from_raw(99), ErrorCode::Other(99));
    let boxed: Box<dyn std::error::Error> = e.into();
    assert!(boxed.to_string().contains("no device"));

    assert_eq!(onyx::version(), "0.1.0");
    assert!(onyx::api_version() >= onyx::sys::ONYX_C_API_VERSION);
    onyx::set_log_level(onyx::LogLevel::Warning).unwrap();
}
