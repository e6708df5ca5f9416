"""onnxruntime's ``capi`` package names, for scripts that import exceptions from there."""
