"""The onyx Triton backend on a real server (docs/serving.md), on loopback through tritonclient
over HTTP and gRPC: readiness and metadata, outputs equal to `onyx run`'s, 16 concurrent clients
x 200 requests, dynamic batching in the statistics, errors as 400 carrying onyx's message while
the server keeps serving, load/unload under traffic, short throughput points beside ONNX Runtime
in Triton's Python backend, and a clean shutdown. The server is stopped on every way out.

Usage: triton_serving_test.py ONYX_CLI BACKEND_SO E2E_MODELS_DIR WORK_DIR
Run by tests/serving/triton_serving_test.sh with .cache/triton-venv's Python."""
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(REPO / "serving" / "triton"))
import triton_local as tl  # noqa: E402

import tritonclient.grpc as grpc  # noqa: E402
import tritonclient.http as http  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402

ONYX, BACKEND, E2E, WORK = (pathlib.Path(a) for a in sys.argv[1:5])
TINY = REPO / "examples" / "models" / "tiny_cnn.onnx"
TINY_DATA = REPO / "examples" / "models" / "tiny_cnn_test_data"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def http_inputs(feeds):
    out = []
    for name, a in feeds:
        i = http.InferInput(name, list(a.shape), tl_dtype(a))
        i.set_data_from_numpy(a)
        out.append(i)
    return out


def grpc_inputs(feeds):
    out = []
    for name, a in feeds:
        i = grpc.InferInput(name, list(a.shape), tl_dtype(a))
        i.set_data_from_numpy(a)
        out.append(i)
    return out


def tl_dtype(a):
    from tritonclient.utils import np_to_triton_dtype
    return np_to_triton_dtype(a.dtype)


def cli_outputs(model, data_dir, out_dir):
    """`onyx run MODEL --inputs DIR --save DIR` (one intra-op thread, as the backend's config)."""
    subprocess.run([str(ONYX), "run", str(model), "--inputs", str(data_dir), "--save", str(out_dir), "--threads", "1",
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    return tl.read_data_set(out_dir, "output")


def main():
    WORK.mkdir(parents=True, exist_ok=True)
    backends = tl.make_backend_dir(WORK / "backends", BACKEND)
    repo = WORK / "models"
    import shutil
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir()
    resnet, bert = E2E / "resnet50", E2E / "bert_like"
    one_thread = {"threads": 1}
    # tiny_cnn (float[batch,3,32,32] -> float[batch,10]): dynamic batching up to 8.
    tl.add_model(repo, "tiny", tl.onyx_config("tiny", 8, [("image", "TYPE_FP32", [3, 32, 32])],
                                              [("probabilities", "TYPE_FP32", [10])], 1, parameters=one_thread,
                                              dynamic_batching=2000), TINY)
    tl.add_model(repo, "tiny_auto", 'backend: "onyx"\n', TINY)  # completed from the model
    tl.add_model(repo, "tiny_lu", tl.onyx_config("tiny_lu", 8, parameters=one_thread, dynamic_batching=500), TINY)
    # dims left free, so that a wrong spatial size reaches onyx and comes back with its message
    tl.add_model(repo, "tiny_relaxed", tl.onyx_config("tiny_relaxed", 8, [("image", "TYPE_FP32", [-1, -1, -1])],
                                                      [("probabilities", "TYPE_FP32", [10])], 1,
                                                      parameters=one_thread, dynamic_batching=1000), TINY)
    tl.add_model(repo, "bad_config", tl.onyx_config("bad_config", 8, [("pixels", "TYPE_FP32", [3, 32, 32])],
                                                    [("probabilities", "TYPE_FP32", [10])]), TINY)
    tl.add_model(repo, "bad_parameter", tl.onyx_config("bad_parameter", parameters={"thread": 2}), TINY)
    # every session parameter, and an EP option onyx refuses
    tl.add_model(repo, "tiny_opts", tl.onyx_config("tiny_opts", parameters={
        "execution_providers": "cpu", "ep_option.cpu.prefer_nhwc": "false", "require_ep": "true",
        "optimization_level": "basic", "threads": 1, "intra_op_spinning": "false", "memory_limit_mb": 256}), TINY)
    tl.add_model(repo, "bad_ep_option", tl.onyx_config("bad_ep_option", parameters={
        "execution_providers": "cpu", "ep_option.cpu.prefer_nhwc": "maybe"}), TINY)
    tl.add_model(repo, "bad_strict", tl.onyx_config("bad_strict", parameters={"execution_providers": "cpu",
                                                                               "strict": "true"}), TINY)
    # ResNet-50 and the BERT-shaped encoder (batch 1 fixed by the export): two instances of one
    # thread each, on onyx and on ONNX Runtime in the Python backend.
    for name, d in (("resnet50", resnet), ("bert", bert)):
        m = d / "model.onnx"
        tl.add_model(repo, f"{name}_onyx", tl.onyx_config(f"{name}_onyx", instances=2, parameters=one_thread), m)
        ins = [(n, "TYPE_INT64" if a.dtype == np.int64 else "TYPE_FP32", list(a.shape))
               for n, a in tl.read_data_set(d / "test_data_set_0", "input")]
        outs = [(n, "TYPE_FP32", list(a.shape)) for n, a in tl.read_data_set(d / "test_data_set_0", "output")]
        tl.add_model(repo, f"{name}_ort", tl.python_ort_config(f"{name}_ort", ins, outs, instances=2, threads=1), m,
                     python_model=True)
    startup = ["tiny", "tiny_auto", "tiny_lu", "tiny_relaxed", "tiny_opts", "resnet50_onyx", "resnet50_ort", "bert_onyx", "bert_ort"]

    t_start = time.time()
    server = tl.Server(repo, backends, startup, WORK / "server.log")
    with server:
        print(f"server ready in {time.time() - t_start:.1f} s (HTTP {server.http_url}, gRPC {server.grpc_url})", flush=True)
        hc, gc = http.InferenceServerClient(server.http_url), grpc.InferenceServerClient(server.grpc_url)

        # --- readiness and metadata
        check(hc.is_server_live() and hc.is_server_ready() and gc.is_server_live() and gc.is_server_ready(),
              "server live and ready over HTTP and gRPC")
        check(all(hc.is_model_ready(m) and gc.is_model_ready(m) for m in startup), "every model ready over HTTP and gRPC")
        md = hc.get_model_metadata("tiny_auto")
        check(md["platform"] == "onyx" or md.get("versions") == ["1"], "HTTP metadata of tiny_auto")
        check(md["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 32, 32]}] and
              md["outputs"] == [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]}],
              f"auto-completed config: inputs/outputs from the model, batching on ({md['inputs']}, {md['outputs']})")
        cfg = hc.get_model_config("tiny_auto")
        check(cfg["max_batch_size"] == 4 and "dynamic_batching" in cfg,
              "auto-completed max_batch_size (Triton's default-max-batch-size, 4) and dynamic batching")
        gmd = gc.get_model_metadata("bert_onyx", as_json=True)
        check([(i["name"], i["datatype"], i["shape"]) for i in gmd["inputs"]] ==
              [("input_ids", "INT64", ["1", "32"]), ("attention_mask", "INT64", ["1", "32"])],
              "gRPC metadata of bert_onyx (batch 1 fixed: max_batch_size 0)")
        log = server.log_text()
        placements = [line.split('"')[1] for line in log.splitlines() if "model 'resnet50_onyx' version 1 instance" in line]
        check(len(placements) == 2 and all("placement cpu: " in p for p in placements),
              f"placement report logged at load, per instance: {placements[:1]}")

        # --- outputs equal to the CLI's
        for model, d, url_kind in (("tiny", TINY_DATA, "http"), ("resnet50_onyx", resnet / "test_data_set_0", "grpc"),
                                   ("bert_onyx", bert / "test_data_set_0", "http")):
            onnx_path = TINY if model == "tiny" else d.parent / "model.onnx"
            want = cli_outputs(onnx_path, d, WORK / f"cli_{model}")
            feeds = tl.read_data_set(d, "input")
            if url_kind == "http":
                r = hc.infer(model, http_inputs(feeds))
            else:
                r = gc.infer(model, grpc_inputs(feeds))
            got = [r.as_numpy(n) for n, _ in want]
            same = all(np.array_equal(g, w) for g, (_, w) in zip(got, want))
            diff = max(float(np.max(np.abs(g - w))) for g, (_, w) in zip(got, want))
            check(same, f"{model} over {url_kind}: outputs identical to `onyx run`'s (max |diff| {diff:g})")
            if model == "bert_onyx":
                r = gc.infer(model, grpc_inputs(feeds), outputs=[grpc.InferRequestedOutput("pooler_output")])
                check(r.as_numpy("last_hidden_state") is None and np.array_equal(r.as_numpy("pooler_output"), dict(want)["pooler_output"]),
                      "bert_onyx: a request for one output gets that output alone")
        for model, d in (("resnet50_ort", resnet), ("bert_ort", bert)):
            feeds = tl.read_data_set(d / "test_data_set_0", "input")
            want = tl.read_data_set(d / "test_data_set_0", "output")
            r = gc.infer(model, grpc_inputs(feeds))
            ok = all(np.allclose(r.as_numpy(n), w, rtol=1e-3, atol=1e-3 * float(np.max(np.abs(w)))) for n, w in want)
            check(ok, f"{model} (ONNX Runtime in the Python backend) matches the exported outputs")

        # --- 16 concurrent clients x 200 requests, dynamic batching
        rng = np.random.default_rng(7)
        samples = [rng.random((1, 3, 32, 32), dtype=np.float32) for _ in range(16)]
        refs = [hc.infer("tiny", http_inputs([("image", s)])).as_numpy("probabilities") for s in samples]
        time.sleep(0.5)  # the backend reports a request's statistics just after sending its response
        before = hc.get_inference_statistics("tiny")["model_stats"][0]
        errors, mismatches, done = [], [0] * 16, [0] * 16

        def client(k):
            try:
                c = http.InferenceServerClient(server.http_url) if k % 2 else grpc.InferenceServerClient(server.grpc_url)
                mk = http_inputs if k % 2 else grpc_inputs
                for _ in range(200):
                    out = c.infer("tiny", mk([("image", samples[k])])).as_numpy("probabilities")
                    mismatches[k] += not np.array_equal(out, refs[k])
                    done[k] += 1
            except Exception as e:  # noqa: BLE001
                errors.append(str(e))

        t0 = time.time()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - t0
        check(not errors and sum(done) == 3200,
              f"16 clients x 200 requests (8 HTTP, 8 gRPC): {sum(done)} done, {len(errors)} errors in {elapsed:.1f} s "
              f"({sum(done) / elapsed:.0f}/s){': ' + errors[0] if errors else ''}")
        check(sum(mismatches) == 0, f"every output identical to the sample's alone ({sum(mismatches)} differ)")
        time.sleep(0.5)
        after = hc.get_inference_statistics("tiny")["model_stats"][0]
        batches = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in after["batch_stats"]}
        for b in before["batch_stats"]:
            batches[int(b["batch_size"])] -= int(b["compute_infer"]["count"])
        batched = {k: v for k, v in sorted(batches.items()) if v}
        n_exec = int(after["execution_count"]) - int(before["execution_count"])
        n_inf = int(after["inference_count"]) - int(before["inference_count"])
        check(any(k > 1 for k in batched) and n_inf == 3200 and n_exec < n_inf,
              f"dynamic batching in the statistics: {n_inf} inferences in {n_exec} executions, batch sizes {batched}")

        # --- errors: 400 with onyx's message, the server keeps serving
        good = rng.random((1, 3, 32, 32), dtype=np.float32)
        cases = [("tiny_relaxed", [("image", rng.random((1, 3, 31, 31), dtype=np.float32))], "onyx"),
                 ("tiny", [("image", rng.random((1, 3, 31, 31), dtype=np.float32))], "shape"),
                 ("tiny", [("image", good.astype(np.float64))], "FP64"),
                 ("tiny", [("pixels", good)], "pixels")]
        for model, feeds, needle in cases:
            try:
                hc.infer(model, http_inputs(feeds))
                check(False, f"{model} {needle}: HTTP request accepted")
            except InferenceServerException as e:
                check(e.status() == "400" and needle in e.message(), f"HTTP 400 for {needle}: {e.message()}")
            try:
                gc.infer(model, grpc_inputs(feeds))
                check(False, f"{model} {needle}: gRPC request accepted")
            except InferenceServerException as e:
                check(e.status() == "StatusCode.INVALID_ARGUMENT" and needle in e.message(),
                      f"gRPC INVALID_ARGUMENT for {needle}")
        # a bad request batched beside good ones fails alone
        res = {}

        def relaxed(k):
            shape = (1, 3, 31, 31) if k == 0 else (1, 3, 32, 32)
            try:
                http.InferenceServerClient(server.http_url).infer(
                    "tiny_relaxed", http_inputs([("image", np.ones(shape, np.float32))]))
                res[k] = "ok"
            except InferenceServerException as e:
                res[k] = e.status()

        threads = [threading.Thread(target=relaxed, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(res[0] == "400" and all(res[k] == "ok" for k in range(1, 6)),
              f"a bad request among good ones fails alone ({res})")
        try:
            hc.load_model("bad_config")
            check(False, "bad_config loaded")
        except InferenceServerException as e:
            check("config.pbtxt input 'pixels' is not an input" in e.message(), f"bad config refused at load: {e.message()}")
        try:
            hc.load_model("bad_parameter")
            check(False, "bad_parameter loaded")
        except InferenceServerException as e:
            check("unknown parameter 'thread'" in e.message(), "unknown parameter refused at load")
        # (a model that failed to load stays UNAVAILABLE in the index, and Triton's server readiness,
        # strict by default, reports not ready from then on: the models themselves stay ready)
        try:
            hc.load_model("bad_ep_option")
            check(False, "bad_ep_option loaded")
        except InferenceServerException as e:
            check("option 'prefer_nhwc' must be bool" in e.message(), "an EP option onyx refuses fails the load with its message")
        try:
            hc.load_model("bad_strict")
            check(False, "bad_strict loaded")
        except InferenceServerException as e:
            check("with_cpu_fallback(false) cannot be combined" in e.message(), "strict reaches onyx (refused with the CPU EP listed)")
        r = hc.infer("tiny_opts", http_inputs([("image", samples[0])])).as_numpy("probabilities")
        check(np.allclose(r, refs[0], rtol=1e-5, atol=1e-6),
              "tiny_opts (execution_providers, ep_option, require_ep, optimization_level, threads, "
              "intra_op_spinning, memory_limit_mb) serves the same outputs")
        r = gc.infer("tiny", grpc_inputs([("image", samples[0])])).as_numpy("probabilities")
        check(np.array_equal(r, refs[0]) and hc.is_model_ready("tiny") and gc.is_model_ready("tiny_relaxed"),
              f"server still serving after the errors (max |diff| {float(np.max(np.abs(r - refs[0]))):g})")

        # --- load / unload / reload under traffic
        stop, lu_errors, lu_ok, lu_bad = threading.Event(), [], [0], [0]
        ref_lu = hc.infer("tiny_lu", http_inputs([("image", samples[1])])).as_numpy("probabilities")

        def traffic():
            c = grpc.InferenceServerClient(server.grpc_url)
            while not stop.is_set():
                try:
                    out = c.infer("tiny_lu", grpc_inputs([("image", samples[1])])).as_numpy("probabilities")
                    lu_ok[0] += 1
                    lu_bad[0] += not np.array_equal(out, ref_lu)
                except InferenceServerException as e:
                    lu_errors.append(e.message())
                    time.sleep(0.01)

        threads = [threading.Thread(target=traffic) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        for _ in range(2):
            hc.load_model("tiny_lu")  # reload: the old version serves until the new one is ready
            time.sleep(0.3)
        reload_errors = len(lu_errors)
        ok_before_unload = lu_ok[0]
        hc.unload_model("tiny_lu")
        time.sleep(0.5)
        hc.load_model("tiny_lu")
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        rejected = [m for m in lu_errors if "unavailable" in m.lower() or "not found" in m.lower() or "not ready" in m.lower()
                    or "unknown" in m.lower()]
        check(reload_errors == 0 and ok_before_unload > 0,
              f"reload twice under traffic: {ok_before_unload} requests served, {reload_errors} failed")
        check(lu_bad[0] == 0 and len(rejected) == len(lu_errors) and lu_ok[0] > ok_before_unload,
              f"unload/load under traffic: {lu_ok[0]} served correctly, {len(lu_errors)} refused while unloaded "
              f"(none accepted then lost){': ' + lu_errors[0] if lu_errors else ''}")

        # --- throughput (short points; bench/triton_throughput.py measures longer)
        print("throughput (inferences/s, gRPC, 1.5 s windows; this is a smoke figure, see docs/serving.md):")
        print(f"  {'model':10} {'c':>3} {'onyx':>8} {'ORT(python)':>12}")
        for name, d in (("resnet50", resnet), ("bert", bert)):
            feeds = tl.read_data_set(d / "test_data_set_0", "input")
            for c in (1, 4, 16):
                row = []
                for backend in ("onyx", "ort"):
                    ips, _, errs = tl.measure(server.grpc_url, f"{name}_{backend}", feeds, c, 1.5, warmup=0.3)
                    check(not errs, f"{name}_{backend} c={c} without errors") if errs else None
                    row.append(ips)
                print(f"  {name:10} {c:>3} {row[0]:>8.1f} {row[1]:>12.1f}", flush=True)

        stats = hc.get_inference_statistics("resnet50_onyx")["model_stats"][0]
        check(int(stats["inference_count"]) > 0 and int(stats["inference_stats"]["fail"]["count"]) == 0,
              f"per-model statistics: resnet50_onyx {stats['inference_count']} inferences, 0 failed")
        hc.close()
        gc.close()
        rc = server.stop()
    check(rc == 0, f"server shut down cleanly (exit status {rc})")
    log = (WORK / "server.log").read_text(errors="replace")
    check(not any(w in log for w in ("Signal (11)", "Signal (6)", "Segmentation", "core dumped")),
          "no crash in the server log")
    print(f"total {time.time() - t_start:.1f} s")
    if failures:
        print(f"{len(failures)} checks failed; server log: {WORK / 'server.log'}")
        return 1
    return 0


if __name__ == "__main__":
    import signal
    # SIGTERM / SIGINT (a runner stopping the test) unwind through the server's context manager,
    # which stops it; on SIGKILL the kernel kills the server (triton_local's parent-death signal).
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit("stopped by a signal (the server is stopped)"))
    try:
        sys.exit(main())
    except tl.Unavailable as e:
        print(f"skipped: {e}")
        sys.exit(77)
