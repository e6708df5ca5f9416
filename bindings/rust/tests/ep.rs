//! The EP API: availability, `register`, `error_on_failure`, skipped EPs, typed options reaching
//! onyx under the keys it publishes, priority order and placement on the chosen EP.
mod common;

use common::{assert_close, tiny_cnn, tiny_cnn_reference};
use onyx::ep::{self, ExecutionProvider, ExecutionProviderDispatch};
use onyx::session::{EpOutcome, EpSource, Session, SessionBuilder};
use onyx::value::Tensor;
use onyx::ErrorCode;

fn builder() -> SessionBuilder {
    // Environment defaults are left out so that these tests do not depend on one another.
    Session::builder().unwrap().with_no_environment_execution_providers().unwrap()
}

fn options(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn every_ep_of_the_table_has_a_struct_and_an_availability() {
    fn n(e: impl ExecutionProvider) -> String {
        e.name().to_string()
    }
    let names: Vec<String> = vec![
        n(ep::CPU::default()),
        n(ep::OneDNN::default()),
        n(ep::XNNPACK::default()),
        n(ep::Vulkan::default()),
        n(ep::CUDA::default()),
        n(ep::TensorRT::default()),
        n(ep::TensorRTRTX::default()),
        n(ep::DirectML::default()),
        n(ep::CoreML::default()),
        n(ep::ROCm::default()),
        n(ep::OpenVINO::default()),
        n(ep::QNN::default()),
        n(ep::CANN::default()),
        n(ep::NNAPI::default()),
        n(ep::TVM::default()),
        n(ep::ACL::default()),
        n(ep::ArmNN::default()),
        n(ep::MIGraphX::default()),
        n(ep::VitisAI::default()),
        n(ep::RKNPU::default()),
        n(ep::WebGPU::default()),
        n(ep::Azure::default()),
    ];
    assert_eq!(names, ep::NAMES);
    for name in ep::NAMES {
        let a = ep::availability(name).unwrap();
        assert!(a.usable || !a.reason.is_empty(), "{name}: unusable without a reason");
        assert!(!a.usable || (a.built && a.loadable), "{name}: {a:?}");
        assert!(!a.reason.contains("unknown execution provider"), "{name}: {a:?}");
    }
    assert_eq!(ep::NVRTX::default().build().name(), "tensorrt_rtx");
    assert_eq!(ep::Vitis::default().build().name(), "vitis_ai");
}

#[test]
fn cpu_is_available_and_tensorrt_is_not_built() {
    assert!(ep::CPU::default().is_available());
    let cpu = ep::CPU::default().availability().unwrap();
    assert!(cpu.built && cpu.loadable && cpu.usable && cpu.reason.is_empty(), "{cpu:?}");
    assert_eq!(cpu.version, onyx::version());

    assert!(!ep::TensorRT::default().is_available());
    let trt = ep::TensorRT::default().availability().unwrap();
    assert!(!trt.built && !trt.usable, "{trt:?}");
    assert!(trt.reason.contains("not built"), "{trt:?}");

    let unknown = ep::availability("no_such_ep").unwrap();
    assert!(!unknown.usable && unknown.reason.contains("unknown execution provider"), "{unknown:?}");
    assert!(!ep::Custom::new("no_such_ep").is_available());
}

#[test]
fn register_fails_at_once_for_an_unusable_ep() {
    let b = builder();
    let err = ep::TensorRT::default().register(&b).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAvailable, "{err}");
    assert!(err.message().contains("'tensorrt'") && err.message().contains("not built"), "{err}");

    let err = ep::Custom::new("no_such_ep").register(&b).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAvailable, "{err}");
    assert!(err.message().contains("unknown execution provider 'no_such_ep'"), "{err}");

    let cuda = ep::CUDA::default();
    match cuda.register(&b) {
        Ok(()) => assert!(cuda.is_available()),
        Err(e) => {
            assert!(!cuda.is_available());
            assert!(e.message().contains("'cuda'"), "{e}");
            assert!(e.message().contains(&cuda.availability().unwrap().reason), "{e}");
        }
    }
    // The failed registrations left the builder as it was: only the CPU EP runs.
    let session = b.commit_from_file(tiny_cnn()).unwrap();
    let names: Vec<String> = session.registration().unwrap().into_iter().map(|r| r.name).collect();
    if cuda.is_available() {
        assert_eq!(names, ["cuda", "cpu"]);
    } else {
        assert_eq!(names, ["cpu"]);
    }
}

#[test]
fn register_adds_a_usable_ep_with_error_on_failure() {
    let b = builder();
    ep::XNNPACK::default().with_threads(1).register(&b).unwrap();
    let session = b.commit_from_file(tiny_cnn()).unwrap();
    let r = &session.registration().unwrap()[0];
    assert_eq!((r.name.as_str(), r.outcome, r.source), ("xnnpack", EpOutcome::Registered, EpSource::Session));
    assert!(r.error_on_failure);
    assert!(r.options.contains(&("threads".to_string(), "1".to_string())), "{:?}", r.options);
    assert!(session.placement().unwrap().nodes.iter().any(|n| n.ep == "xnnpack"));
}

#[test]
fn an_ep_that_cannot_register_is_skipped_unless_error_on_failure() {
    // Skipped: the session is made, the report says why.
    let session = builder()
        .with_execution_providers([ExecutionProviderDispatch::new("no_such_ep"), ep::TensorRT::default().build()])
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap();
    let r = session.registration().unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!((r[0].name.as_str(), r[0].outcome), ("no_such_ep", EpOutcome::Skipped));
    assert!(r[0].reason.contains("unknown execution provider"), "{:?}", r[0]);
    assert_eq!((r[1].name.as_str(), r[1].outcome), ("tensorrt", EpOutcome::Skipped));
    assert!(r[1].reason.contains("not built"), "{:?}", r[1]);
    assert!(r[1].priority.is_none() && r[1].options.is_empty());
    assert_eq!((r[2].name.as_str(), r[2].source), ("cpu", EpSource::Implicit));

    // With error_on_failure: an error carrying onyx's reason, at with_execution_providers.
    let err = builder()
        .with_execution_providers([ExecutionProviderDispatch::new("no_such_ep").error_on_failure()])
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAvailable, "{err}");
    assert!(err.message().contains("unknown execution provider 'no_such_ep'"), "{err}");

    let err = builder().with_execution_providers([ep::TensorRT::default().build().error_on_failure()]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAvailable, "{err}");
    assert!(err.message().contains("'tensorrt'") && err.message().contains("not built"), "{err}");

    let cuda = builder().with_execution_providers([ep::CUDA::default().build().error_on_failure()]);
    assert_eq!(cuda.is_ok(), ep::CUDA::default().is_available());
    if let Err(err) = cuda {
        assert!(err.message().contains("'cuda'"), "{err}");
    }
}

#[test]
fn a_bad_option_fails_session_creation_either_way() {
    let err = builder()
        .with_execution_providers([ep::CPU::default().with_option("prefer_nhwc", "maybe").build()])
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("prefer_nhwc") && err.message().contains("maybe"), "{err}");

    let err = builder()
        .with_execution_providers([ep::XNNPACK::default().with_option("no_such_option", "1").build()])
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.message().contains("no_such_option"), "{err}");

    let err = builder()
        .with_execution_providers([ep::CPU::default().with_option("prefer\0nhwc", "1").build()])
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
}

#[test]
fn typed_options_use_onyx_keys() {
    let cuda = ep::CUDA::default()
        .with_device_id(1)
        .with_memory_limit(1 << 30)
        .with_arena_extend_strategy(ep::cuda::ArenaExtendStrategy::SameAsRequested)
        .with_conv_algo_search(ep::cuda::ConvAlgorithmSearch::Heuristic)
        .with_tf32(true)
        .with_prefer_nhwc(true)
        .with_cuda_graph(false)
        .with_device_id(0)
        .build();
    assert_eq!(
        cuda.options(),
        options(&[
            ("device_id", "0"),
            ("gpu_mem_limit", "1073741824"),
            ("arena_extend_strategy", "kSameAsRequested"),
            ("cudnn_conv_algo_search", "HEURISTIC"),
            ("use_tf32", "true"),
            ("prefer_nhwc", "true"),
            ("enable_cuda_graph", "false"),
        ])
    );
    let openvino = ep::OpenVINO::default()
        .with_device_type("CPU")
        .with_precision("FP32")
        .with_num_threads(1)
        .with_num_streams(1)
        .with_cache_dir("")
        .build();
    assert_eq!(
        openvino.options(),
        options(&[
            ("device_type", "CPU"),
            ("precision", "FP32"),
            ("num_of_threads", "1"),
            ("num_streams", "1"),
            ("cache_dir", ""),
        ])
    );
    assert_eq!(ep::OneDNN::default().with_threads(2).build().options(), options(&[("threads", "2")]));
    assert_eq!(ep::XNNPACK::default().with_threads(3).build().options(), options(&[("threads", "3")]));
    assert_eq!(ep::Vulkan::default().with_device_id(0).build().options(), options(&[("device_id", "0")]));
    assert_eq!(
        ep::WebGPU::default().with_device_id(0).with_storage_buffer_cache_mode("disabled").with_validation_mode("full").build().options(),
        options(&[("device_id", "0"), ("storage_buffer_cache_mode", "disabled"), ("validation_mode", "full")])
    );
    assert_eq!(
        ep::CPU::default().with_prefer_nhwc(false).with_half_in_float(true).build().options(),
        options(&[("prefer_nhwc", "false"), ("half_in_float", "true")])
    );
    assert_eq!(
        ep::CoreML::default().with_subgraphs().with_compute_units(ep::coreml::ComputeUnits::CPUAndNeuralEngine).build().options(),
        options(&[("enable_on_subgraphs", "true"), ("compute_units", "CPUAndNeuralEngine")])
    );

    // onyx checks the keys and values of a built EP before looking for its device, so a session
    // asking for these EPs fails on a key onyx does not publish, wherever the EP is usable or not.
    let mut eps = vec![
        ep::CPU::default().with_prefer_nhwc(false).with_half_in_float(true).build(),
        ep::XNNPACK::default().with_threads(1).with_quantized(true).build(),
        ep::OneDNN::default().with_threads(1).with_min_region_nodes(1).with_arena(true).build(),
    ];
    if ep::CUDA::default().availability().unwrap().loadable {
        eps.push(cuda);
    }
    if ep::Vulkan::default().availability().unwrap().loadable {
        eps.push(ep::Vulkan::default().with_device_id(-1).with_memory_limit_mb(0).with_fp16_storage(false).build());
    }
    if ep::OpenVINO::default().availability().unwrap().loadable {
        eps.push(openvino);
    }
    if ep::WebGPU::default().availability().unwrap().loadable {
        eps.push(ep::WebGPU::default().with_device_id(-1).with_storage_buffer_cache_mode("bucket").with_validation_mode("basic").build());
    }
    let wanted: Vec<String> = eps.iter().map(|d| d.name().to_string()).collect();
    let session = builder().with_execution_providers(eps).unwrap().commit_from_file(tiny_cnn()).unwrap();
    let got: Vec<String> = session.registration().unwrap().into_iter().map(|r| r.name).collect();
    assert_eq!(got, wanted);
}

#[test]
fn an_ep_not_built_here_with_options_is_skipped_silently() {
    let session = builder()
        .with_execution_providers([ep::CoreML::default()
            .with_subgraphs()
            .with_compute_units(ep::coreml::ComputeUnits::CPUAndNeuralEngine)
            .build()])
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap();
    let r = session.registration().unwrap();
    let coreml_usable = ep::CoreML::default().is_available();
    assert_eq!(r[0].name, "coreml");
    assert_eq!(r[0].outcome == EpOutcome::Registered, coreml_usable, "{:?}", r[0]);
    if !coreml_usable {
        assert!(session.placement().unwrap().nodes.iter().all(|n| n.ep == "cpu"));
    }
}

#[test]
fn eps_register_in_priority_order_and_nodes_go_to_the_first_that_takes_them() {
    let (input, output) = tiny_cnn_reference();
    let image = Tensor::from_array((input.dims, input.data)).unwrap();
    let session = builder()
        .with_execution_providers([
            ep::TensorRT::default().build(),
            ep::CUDA::default().build(),
            ep::XNNPACK::default().build(),
            ep::CPU::default().build(),
            ep::XNNPACK::default().build(),
        ])
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap();
    let r = session.registration().unwrap();
    let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["tensorrt", "cuda", "xnnpack", "cpu", "xnnpack"]);
    assert_eq!(r[4].outcome, EpOutcome::Duplicate);
    assert!(r.iter().all(|r| r.source == EpSource::Session));
    let first = if ep::CUDA::default().is_available() { "cuda" } else { "xnnpack" };
    let placement = session.placement().unwrap();
    if first == "xnnpack" {
        assert!(placement.nodes.iter().all(|n| n.ep == first), "{placement:?}");
    } else {
        assert!(placement.nodes.iter().any(|n| n.ep == first), "{placement:?}");
    }
    assert!(placement.nodes.iter().all(|n| n.ep != "tensorrt"), "{placement:?}");
    let outputs = session.run([("image", &image)]).unwrap();
    assert_close(outputs["probabilities"].try_extract_tensor::<f32>().unwrap().1, &output.data, 1e-4);
}

#[test]
fn each_usable_cpu_side_ep_gives_the_reference_output() {
    let (input, output) = tiny_cnn_reference();
    let image = Tensor::from_array((input.dims, input.data)).unwrap();
    for dispatch in [ep::OneDNN::default().build(), ep::XNNPACK::default().build(), ep::CPU::default().build()] {
        if !dispatch.is_available() {
            continue;
        }
        let name = dispatch.name().to_string();
        let session = builder()
            .with_execution_providers([dispatch.error_on_failure()])
            .unwrap()
            .with_cpu_fallback(name == "cpu")
            .unwrap()
            .commit_from_file(tiny_cnn())
            .unwrap();
        let placement = session.placement().unwrap();
        assert!(placement.nodes.iter().all(|n| n.ep == name), "{name}: {placement:?}");
        let outputs = session.run([("image", &image)]).unwrap();
        assert_close(outputs["probabilities"].try_extract_tensor::<f32>().unwrap().1, &output.data, 1e-4);
    }
}
