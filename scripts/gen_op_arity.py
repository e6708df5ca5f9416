#!/usr/bin/env python3
"""Writes src/model/op_signatures.inc: every op's signature as the schemas define it, per version,
for the load-time checks of src/model/validate.cpp (docs/architecture.md, "Validation").

A signature is what ONNX Runtime checks of a node before it runs anything: how many inputs and
outputs (min/max), which formal inputs and outputs are single, optional or variadic (a single
one may not be given as ""), each attribute's name, type and whether it is required, and
whether the schema accepts attributes it does not declare; and the element types it allows: each
formal's type string (a type variable such as 'T', or a fixed type such as 'tensor(int64)') and
whether a variadic formal is homogeneous (all its values share the variable), and per type string
the tensor element types allowed, as a bitmask over onyx's DType (include/onyx/dtype.hpp). A type
string that also allows sequences, optionals or maps is marked so, and its tensors are then not
checked against the set (the session checks only tensors).

Sources:
  - ai.onnx, ai.onnx.ml, ai.onnx.preview and ai.onnx.preview.training: onnx.defs, every
    version of every op (onnx.defs.get_all_schemas_with_history());
  - com.microsoft: ONNX Runtime's own schemas, for the ops onyx implements (COM_MICROSOFT_OPS
    below; a unit test checks the list covers every com.microsoft op onyx registers).

Whether a schema accepts undeclared attributes is not exposed by either Python API, so it is
probed: onnx's checker (the same OpSchema::Verify that ONNX Runtime runs) is asked about a node
with an undeclared attribute; for com.microsoft, an ONNX Runtime session is.

Run with the ONNX Runtime venv (scripts/ort_venv.sh: onnx 1.23.2, onnxruntime 1.32.0):
    .cache/ort-venv/bin/python scripts/gen_op_arity.py          # rewrite the table
    .cache/ort-venv/bin/python scripts/gen_op_arity.py --check  # exit 1 if it differs
The CTest op_signatures runs --check when the venv is there.
"""

import argparse
import os
import sys

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "model", "op_signatures.inc"))

ONNX_DOMAINS = ("", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")

# The com.microsoft ops onyx implements (src/ops/contrib_quant.cpp, src/ops/quant.cpp,
# src/ops/contrib_transformer.cpp, src/ops/contrib_gqa.cpp, src/ops/contrib_nbits.cpp, src/ops/contrib_rnn.cpp).
COM_MICROSOFT_OPS = (
    "Attention",
    "BiasAdd",
    "BiasGelu",
    "BiasSplitGelu",
    "DynamicQuantizeLSTM",
    "DynamicQuantizeMatMul",
    "EmbedLayerNormalization",
    "FastGelu",
    "FusedConv",
    "FusedMatMul",
    "Gelu",
    "GemmFastGelu",
    "GroupQueryAttention",
    "MatMulIntegerToFloat",
    "MatMulNBits",
    "MultiHeadAttention",
    "NhwcConv",
    "QGemm",
    "QLinearAdd",
    "QLinearAveragePool",
    "QLinearConcat",
    "QLinearGlobalAveragePool",
    "QLinearLeakyRelu",
    "QLinearMul",
    "QLinearSigmoid",
    "QLinearSoftmax",
    "QuickGelu",
    "RotaryEmbedding",
    "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization",
)

# ONNX Runtime's own schemas in the ai.onnx domain that onnx.defs does not have: the contrib
# LayerNormalization-1 (what exporters wrote before opset 17) and SimplifiedLayerNormalization-1
# (RMS normalisation, which ONNX Runtime's LLM tools write), src/ops/contrib_transformer.cpp.
ORT_ONNX_DOMAIN_OPS = (("LayerNormalization", 1), ("SimplifiedLayerNormalization", 1))

ATTR_TYPES = {
    "FLOAT": "kFloat",
    "INT": "kInt",
    "STRING": "kString",
    "TENSOR": "kTensor",
    "GRAPH": "kGraph",
    "FLOATS": "kFloats",
    "INTS": "kInts",
    "STRINGS": "kStrings",
    "TENSORS": "kTensors",
    "GRAPHS": "kGraphs",
    "SPARSE_TENSOR": "kSparseTensor",
    "SPARSE_TENSORS": "kSparseTensors",
    "TYPE_PROTO": "kTypeProto",
    "TYPE_PROTOS": "kTypeProtos",
}

INT_MAX = 2**31 - 1

# onnx's tensor element type names -> onyx's DType values (include/onyx/dtype.hpp). The float6
# types (which onyx does not support) have no entry: no value can have them.
DTYPES = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "string": 8,
    "bool": 9, "float16": 10, "double": 11, "uint32": 12, "uint64": 13, "complex64": 14,
    "complex128": 15, "bfloat16": 16, "float8e4m3fn": 17, "float8e4m3fnuz": 18, "float8e5m2": 19,
    "float8e5m2fnuz": 20, "uint4": 21, "int4": 22, "float4e2m1": 23, "float8e8m0": 24, "uint2": 25,
    "int2": 26,
}
FLOAT6 = ("float6e2m3", "float6e3m2")
PROBE_ATTR = "onyx_undeclared_probe"


def option_letter(formal):
    name = str(formal.option).split(".")[-1]  # FormalParameterOption.Single / Optional / Variadic
    return {"Single": "S", "Optional": "O", "Variadic": "V"}[name]


def formal_type(formal):
    return formal.type_str if hasattr(formal, "type_str") else formal.typeStr


def formal_homogeneous(formal):
    return bool(formal.is_homogeneous if hasattr(formal, "is_homogeneous") else formal.isHomogeneous)


def type_mask(allowed):
    """(bitmask over DType of the tensor types in `allowed`, whether all of `allowed` are tensors)."""
    mask, tensors_only = 0, True
    for t in allowed:
        if not (t.startswith("tensor(") and t.endswith(")")):
            tensors_only = False
            continue
        elem = t[len("tensor(") : -1]
        if elem in FLOAT6:
            continue
        mask |= 1 << DTYPES[elem]  # KeyError: a type onyx does not know; extend DTYPES and dtype.hpp
    return mask, tensors_only


def type_constraints(s):
    """Every type string the formals of `s` use, in order of first use, with its allowed types: a
    type variable's from the schema's constraints, a fixed type string's the type itself."""
    declared = {c.type_param_str: list(c.allowed_type_strs) for c in s.type_constraints}
    out = {}
    for f in list(s.inputs) + list(s.outputs):
        t = formal_type(f)
        if t not in out:
            out[t] = declared.get(t, [t])
    return out


def attr_type_name(attr):
    return ATTR_TYPES[str(attr.type).split(".")[-1]]


def onnx_accepts_undeclared(schema):
    """Whether onnx's checker lets a node of this schema carry an attribute it does not declare."""
    from onnx import checker, helper

    node = helper.make_node(
        schema.name,
        [f"i{k}" for k in range(schema.min_input)],
        [f"o{k}" for k in range(max(1, schema.min_output))],
        domain=schema.domain,
        **{PROBE_ATTR: 1},
    )
    ctx = checker.C.CheckerContext()
    ctx.ir_version = 10
    ctx.opset_imports = {schema.domain: schema.since_version, "" if schema.domain else "ai.onnx.ml": 1}
    try:
        checker.C.check_node(node.SerializeToString(), ctx, checker.C.LexicalScopeContext())
    except Exception as e:  # noqa: BLE001 (the checker raises its own ValidationError)
        return "Unrecognized attribute" not in str(e)
    return True


def ort_accepts_undeclared(schema):
    """Whether an ONNX Runtime session accepts an undeclared attribute on a com.microsoft node."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    ins = [f"i{k}" for k in range(schema.min_input)]
    outs = [f"o{k}" for k in range(max(1, schema.min_output))]
    node = helper.make_node(schema.name, ins, outs, domain=schema.domain, name="probe", **{PROBE_ATTR: 1})
    graph = helper.make_graph(
        [node],
        "probe",
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, None) for i in ins],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(schema.domain, schema.since_version)]
    )
    model.ir_version = 8
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        return "Unrecognized attribute" not in str(e)
    return True


def collect():
    import onnx
    import onnx.defs
    import onnxruntime as ort
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    rows = []
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ONNX_DOMAINS:
            rows.append((s, onnx_accepts_undeclared(s) if not s.deprecated else False))
    ms = {}
    for s in ort_c.get_all_operator_schema():
        if s.domain == "com.microsoft" and s.name in COM_MICROSOFT_OPS:
            ms[(s.name, s.since_version)] = s
        elif s.domain == "" and (s.name, s.since_version) in ORT_ONNX_DOMAIN_OPS:
            rows.append((s, False))
    missing = sorted(set(COM_MICROSOFT_OPS) - {n for n, _ in ms})
    if missing:
        sys.exit(f"gen_op_arity: ONNX Runtime has no com.microsoft schema for {', '.join(missing)}")
    for key in sorted(ms):
        rows.append((ms[key], ort_accepts_undeclared(ms[key])))
    rows.sort(key=lambda r: (r[0].domain, r[0].name, r[0].since_version))
    return rows, onnx.__version__, ort.__version__


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(rows, onnx_version, ort_version):
    formals, attrs, sigs, constraints = [], [], [], []

    def formal(f):
        hom = "true" if formal_homogeneous(f) else "false"
        return f"{{{c_str(f.name)}, '{option_letter(f)}', {c_str(formal_type(f))}, {hom}}}"

    for s, undeclared_ok in rows:
        fi = len(formals)
        for f in s.inputs:
            formals.append(formal(f))
        fo = len(formals)
        for f in s.outputs:
            formals.append(formal(f))
        fc = len(constraints)
        tcs = type_constraints(s)
        for name, allowed in tcs.items():
            mask, tensors_only = type_mask(allowed)
            constraints.append(f"{{{c_str(name)}, 0x{mask:07x}u, {'true' if tensors_only else 'false'}}}")
        fa = len(attrs)
        for name in sorted(s.attributes):
            a = s.attributes[name]
            attrs.append(f"{{{c_str(name)}, AttrType::{attr_type_name(a)}, {'true' if a.required else 'false'}}}")
        flags = []
        if s.deprecated:
            flags.append("kSigDeprecated")
        if undeclared_ok:
            flags.append("kSigUndeclaredAttrsOk")
        sigs.append(
            f"{{{c_str(s.domain)}, {c_str(s.name)}, {s.since_version}, {' | '.join(flags) if flags else 0}, "
            f"{s.min_input}, {min(s.max_input, INT_MAX)}, {s.min_output}, {min(s.max_output, INT_MAX)}, "
            f"{fi}, {len(s.inputs)}, {fo}, {len(s.outputs)}, {fa}, {len(s.attributes)}, {fc}, {len(tcs)}}}"
        )
    out = [
        "// Generated by scripts/gen_op_arity.py from onnx " + onnx_version + " (onnx.defs: ai.onnx, ai.onnx.ml,",
        "// ai.onnx.preview, ai.onnx.preview.training) and onnxruntime " + ort_version + " (com.microsoft ops onyx",
        "// implements). Do not edit; rerun the script. Included by src/model/op_signatures.cpp.",
        "// clang-format off",
        "",
        f"constexpr OpFormal kFormals[{len(formals)}] = {{",
    ]
    out += [f"  {x}," for x in formals]
    out += [
        "};",
        "",
        "// type string (a type variable, or a fixed type), allowed tensor element types (bit d: DType d),",
        "// whether the type string allows only tensors (else sequences, optionals or maps too).",
        f"constexpr OpTypeConstraint kTypeConstraints[{len(constraints)}] = {{",
    ]
    out += [f"  {x}," for x in constraints]
    out += ["};", "", f"constexpr OpAttrSpec kAttrSpecs[{len(attrs)}] = {{"]
    out += [f"  {x}," for x in attrs]
    out += [
        "};",
        "",
        "// domain, op, since_version, flags, min/max inputs, min/max outputs (2147483647: unbounded),",
        "// first formal input and count, first formal output and count (in kFormals), first attribute",
        "// and count (in kAttrSpecs), first type constraint and count (in kTypeConstraints). Sorted by",
        "// domain, op, version.",
        f"constexpr OpSignature kSignatures[{len(sigs)}] = {{",
    ]
    out += [f"  {x}," for x in sigs]
    out += ["};", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e} (run with .cache/ort-venv/bin/python, made by scripts/ort_venv.sh)")
        return 77
    text = render(*collect())
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                have = f.read()
        except FileNotFoundError:
            have = ""
        if have != text:
            print(f"{args.out} differs from what scripts/gen_op_arity.py generates now; rerun it")
            return 1
        print(f"{args.out}: up to date")
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
