//! `onyx::init()`: default EPs for sessions created after the commit. The environment is
//! process-wide, so this file (its own test process) checks it in one sequential test.
mod common;

use common::tiny_cnn;
use onyx::ep;
use onyx::session::{EpOutcome, EpSource, Session};
use onyx::ErrorCode;

fn names_and_sources(session: &Session) -> Vec<(String, EpSource)> {
    session.registration().unwrap().into_iter().map(|r| (r.name, r.source)).collect()
}

#[test]
fn environment_defaults_apply_to_sessions_created_after_the_commit() {
    let before = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    assert_eq!(names_and_sources(&before), [("cpu".to_string(), EpSource::Implicit)]);

    assert!(onyx::init()
        .with_execution_providers([ep::TensorRT::default().build(), ep::XNNPACK::default().with_threads(1).build()])
        .commit());

    // A new session gets the defaults; the one made before keeps what it captured.
    let session = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    let r = session.registration().unwrap();
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!((r[0].name.as_str(), r[0].source, r[0].outcome), ("tensorrt", EpSource::Environment, EpOutcome::Skipped));
    assert_eq!((r[1].name.as_str(), r[1].source, r[1].outcome), ("xnnpack", EpSource::Environment, EpOutcome::Registered));
    assert!(r[1].options.contains(&("threads".to_string(), "1".to_string())));
    assert!(session.placement().unwrap().nodes.iter().all(|n| n.ep == "xnnpack"));
    assert_eq!(names_and_sources(&before), [("cpu".to_string(), EpSource::Implicit)]);

    // A session's own EPs come first; the defaults extend them.
    let own = Session::builder()
        .unwrap()
        .with_execution_providers([ep::CPU::default().build()])
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap();
    assert_eq!(
        names_and_sources(&own),
        [
            ("cpu".to_string(), EpSource::Session),
            ("tensorrt".to_string(), EpSource::Environment),
            ("xnnpack".to_string(), EpSource::Environment),
        ]
    );
    assert!(own.placement().unwrap().nodes.iter().all(|n| n.ep == "cpu"));

    // ... unless the session leaves them out.
    let without = Session::builder()
        .unwrap()
        .with_no_environment_execution_providers()
        .unwrap()
        .commit_from_file(tiny_cnn())
        .unwrap();
    assert_eq!(names_and_sources(&without), [("cpu".to_string(), EpSource::Implicit)]);

    // A default EP with error_on_failure that cannot register fails session creation.
    assert!(onyx::init().with_execution_providers([ep::TensorRT::default().build().error_on_failure()]).commit());
    let err = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAvailable, "{err}");
    assert!(err.message().contains("'tensorrt'") && err.message().contains("environment"), "{err}");

    // An empty commit restores the defaults.
    onyx::init().try_commit().unwrap();
    let after = Session::builder().unwrap().commit_from_file(tiny_cnn()).unwrap();
    assert_eq!(names_and_sources(&after), [("cpu".to_string(), EpSource::Implicit)]);

    // A name with a NUL byte cannot be committed.
    let err = onyx::init().with_execution_providers([ep::Custom::new("x\0y").build()]).try_commit().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(!onyx::init().with_execution_providers([ep::Custom::new("x\0y").build()]).commit());
}
