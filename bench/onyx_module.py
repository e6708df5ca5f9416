"""Finding onyx's Python module for the benchmark scripts (compare_ort.py, compare_nodes.py,
compare_sklearn.py, concurrency_bench.py), which take the onyx binary's path first."""
import os
import sys


def import_onyx(binary):
    """onyx's Python module: the build's package beside BINARY (its folder's ../python) when it is
    there, else whatever `import onyx` finds."""
    pkg = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(binary)), os.pardir, "python"))
    if os.path.isfile(os.path.join(pkg, "onyx", "__init__.py")):
        sys.path.insert(0, pkg)
    try:
        import onyx
    except ImportError as e:
        sys.exit(f"cannot import onyx's Python module ({e}): build it (docs/python.md) or put it on PYTHONPATH; "
                 f"its extension must be built for this Python ({sys.version.split()[0]})")
    return onyx
