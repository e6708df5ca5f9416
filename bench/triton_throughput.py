"""Throughput of the onyx Triton backend beside ONNX Runtime in Triton's Python backend, on one
server, the same models and the same instance groups (docs/serving.md).

Closed-loop load as perf_analyzer makes it (tritonclient gRPC, one connection per client, each
sending the next request when the last returns), at each concurrency; the median over --windows
windows of --seconds each. Run with .cache/triton-venv's Python after building libtriton_onyx.so:

  .cache/triton-venv/bin/python bench/triton_throughput.py [--models resnet50,bert]
      [--concurrency 1,4,16] [--windows 5] [--seconds 3] [--instances 2] [--threads 1]

Models are the end-to-end exports (build/e2e-models/{resnet50,bert_like}: tests/models/export_models.py).
Prints a Markdown table (inferences/s and median latency) for docs/serving.md."""
import argparse
import os
import pathlib
import platform
import statistics
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(REPO / "serving" / "triton"))
import triton_local as tl  # noqa: E402

MODELS = {"resnet50": "resnet50", "bert": "bert_like", "mobilenet_v2": "mobilenet_v2"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--instances", type=int, default=2, help="instances per model (both backends)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per instance (both backends)")
    ap.add_argument("--onyx-parameters", default="", help="more onyx parameters: KEY=VALUE,...")
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--e2e", default=None, help="exported models (default BUILD/e2e-models)")
    ap.add_argument("--work", default=None, help="scratch directory (default BUILD/triton-bench)")
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    e2e = pathlib.Path(args.e2e) if args.e2e else build / "e2e-models"
    work = pathlib.Path(args.work) if args.work else build / "triton-bench"
    work.mkdir(parents=True, exist_ok=True)
    backends = tl.make_backend_dir(work / "backends", build / "serving" / "triton" / "onyx" / "libtriton_onyx.so")
    repo = work / "models"
    names = args.models.split(",")
    onyx_params = {"threads": args.threads}
    for kv in filter(None, args.onyx_parameters.split(",")):
        k, v = kv.split("=", 1)
        onyx_params[k] = v
    feeds = {}
    for name in names:
        d = e2e / MODELS[name]
        feeds[name] = tl.read_data_set(d / "test_data_set_0", "input")
        outs = tl.read_data_set(d / "test_data_set_0", "output")
        tl.add_model(repo, f"{name}_onyx", tl.onyx_config(f"{name}_onyx", instances=args.instances, parameters=onyx_params),
                     d / "model.onnx")
        ins = [(n, "TYPE_INT64" if a.dtype.kind == "i" else "TYPE_FP32", list(a.shape)) for n, a in feeds[name]]
        outs = [(n, "TYPE_FP32", list(a.shape)) for n, a in outs]
        tl.add_model(repo, f"{name}_ort", tl.python_ort_config(f"{name}_ort", ins, outs, instances=args.instances,
                                                               threads=args.threads), d / "model.onnx", python_model=True)
    models = [f"{n}_{b}" for n in names for b in ("onyx", "ort")]
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    with tl.Server(repo, backends, models, work / "server.log") as server:
        for name in names:
            for c in levels:
                row = [name, c]
                for backend in ("onyx", "ort"):
                    tl.measure(server.grpc_url, f"{name}_{backend}", feeds[name], c, 1.0, warmup=0.2)  # warm-up
                    ips, lat = [], []
                    for _ in range(args.windows):
                        r, p50, errors = tl.measure(server.grpc_url, f"{name}_{backend}", feeds[name], c, args.seconds,
                                                    warmup=0.2)
                        if errors:
                            sys.exit(f"errors: {errors[:3]}")
                        ips.append(r)
                        lat.append(p50)
                    row += [statistics.median(ips), statistics.median(lat)]
                rows.append(row)
                print(f"{name} c={c}: onyx {row[2]:.1f}/s ({row[3]:.1f} ms), ORT python backend {row[4]:.1f}/s "
                      f"({row[5]:.1f} ms)", flush=True)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"\n{os.cpu_count()} cores ({cpu}); {args.instances} instances x {args.threads} thread(s) per model on both "
          f"backends; median of {args.windows} windows of {args.seconds:g} s; gRPC, closed loop\n")
    print("| model | concurrency | onyx (inf/s) | onyx p50 (ms) | ORT in Python backend (inf/s) | ORT p50 (ms) | onyx / ORT |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, c, a, al, b, bl in rows:
        print(f"| {name} | {c} | {a:.1f} | {al:.1f} | {b:.1f} | {bl:.1f} | {a / b:.2f} |")


if __name__ == "__main__":
    try:
        main()
    except tl.Unavailable as e:
        sys.exit(f"unavailable: {e}")
