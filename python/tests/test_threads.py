"""One session run from many Python threads; the GIL released while a run works."""

from __future__ import annotations

import threading

import numpy as np

import onyx

THREADS = 8
RUNS = 200


def _input_spec(sess):
    (inp,) = sess.get_inputs()
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]  # the batch dim (named) is 1
    assert inp.type == "tensor(float)"
    return inp.name, shape


def _hammer(sess, feeds_per_thread, runs):
    """Runs every thread's feeds `runs` times in all (cycling), concurrently; returns each thread's
    outputs (per run) and the exceptions raised."""
    results = [[] for _ in feeds_per_thread]
    errors = []
    barrier = threading.Barrier(len(feeds_per_thread))

    def work(t):
        try:
            barrier.wait()
            feeds = feeds_per_thread[t]
            for i in range(runs):
                k = i % len(feeds)
                results[t].append((k, sess.run(None, feeds[k])))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(feeds_per_thread))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results, errors


def test_one_session_many_threads(tiny_cnn, ort_run):
    sess = onyx.InferenceSession(str(tiny_cnn))
    name, shape = _input_spec(sess)
    rng = np.random.default_rng(2024)
    # each thread cycles over 4 inputs of its own
    feeds = [[{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)] for _ in range(THREADS)]
    reference = [[sess.run(None, f) for f in thread_feeds] for thread_feeds in feeds]
    # the references are right (onnxruntime agrees) and differ between inputs
    for t in range(THREADS):
        for k, f in enumerate(feeds[t]):
            for got, want in zip(reference[t][k], ort_run(tiny_cnn, f)):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(reference[0][0][0], reference[1][0][0])

    results, errors = _hammer(sess, feeds, RUNS)
    assert errors == []
    for t in range(THREADS):
        assert len(results[t]) == RUNS
        for k, outs in results[t]:
            assert len(outs) == len(reference[t][k])
            for got, want in zip(outs, reference[t][k]):
                assert np.array_equal(got, want), f"thread {t}, input {k}"


def test_one_session_many_threads_heavier_model(matmul_chain_path):
    sess = onyx.InferenceSession(str(matmul_chain_path))
    name, shape = _input_spec(sess)
    rng = np.random.default_rng(7)
    feeds = [[{name: rng.standard_normal(shape).astype(np.float32)}] for _ in range(4)]
    reference = [[sess.run(None, f[0])] for f in feeds]
    results, errors = _hammer(sess, feeds, 10)
    assert errors == []
    for t, per_thread in enumerate(results):
        assert len(per_thread) == 10
        for _, outs in per_thread:
            assert np.array_equal(outs[0], reference[t][0][0]), f"thread {t}"


def test_many_threads_own_io_binding(add_path):
    """Each thread its own IOBinding on one shared session."""
    sess = onyx.InferenceSession(str(add_path))
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            a = rng.standard_normal((4, 3)).astype(np.float32)
            b = rng.standard_normal((4, 3)).astype(np.float32)
            binding = sess.io_binding()
            binding.bind_cpu_input("A", a)
            binding.bind_cpu_input("B", b)
            binding.bind_output("C")
            for i in range(100):
                a[...] = i
                sess.run_with_iobinding(binding)
                if not np.array_equal(binding.copy_outputs_to_cpu()[0], a + b):
                    raise AssertionError(f"thread {seed}, run {i}: wrong output")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def _gil_released_during(start_run, ro):
    """Starts `start_run(ro)` (a long run, seconds when not stopped) on a thread, then, from this
    thread, sets ro.terminate. If the run held the GIL, this thread could not set it until the run
    had finished, and the run would end normally instead of with onyx.Cancelled."""
    outcome = {}
    started = threading.Event()

    def work():
        started.set()
        try:
            start_run(ro)
            outcome["result"] = "finished"
        except onyx.Cancelled:
            outcome["result"] = "cancelled"
        except BaseException as e:  # noqa: BLE001
            outcome["result"] = e

    th = threading.Thread(target=work)
    th.start()
    started.wait()
    # Python work on this thread while the run is (meant to be) in progress
    total = 0
    for i in range(200_000):
        total += i
    threading.Event().wait(0.2)
    ro.terminate = True
    th.join()
    assert total == sum(range(200_000))
    return outcome["result"]


def test_gil_released_during_run(loop_path):
    sess = onyx.InferenceSession(str(loop_path))
    # about 2 microseconds an iteration: several seconds unless stopped
    feed = {"trip_count": np.array(3_000_000, np.int64), "V": np.zeros(4, np.float32)}
    result = _gil_released_during(lambda ro: sess.run(None, feed, ro), onyx.RunOptions())
    assert result == "cancelled", f"the run was not stopped while in progress: {result!r}"


def test_gil_released_during_iobinding_run(loop_path):
    sess = onyx.InferenceSession(str(loop_path))
    binding = sess.io_binding()
    binding.bind_cpu_input("trip_count", np.array(3_000_000, np.int64))
    binding.bind_cpu_input("V", np.zeros(4, np.float32))
    binding.bind_output("V_out")
    result = _gil_released_during(lambda ro: sess.run_with_iobinding(binding, ro), onyx.RunOptions())
    assert result == "cancelled", f"the run was not stopped while in progress: {result!r}"
