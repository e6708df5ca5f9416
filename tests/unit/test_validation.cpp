// Validation at ONNX Runtime's level (issue 21, item 3): node arity and attribute types against
// the schemas at load (model/validate.cpp, the table of model/op_signatures.inc), window
// attributes against the spatial rank (ops/nn.cpp), and initializer sizes checked before anything
// is allocated (model/tensor_proto.cpp). Each refusal is an onyx::Error naming the node; what ORT
// accepts (optional inputs given as "", "__" attributes, ...) stays accepted.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <tuple>

#include "core/common.hpp"
#include "model/loader.hpp"
#include "model/op_signatures.hpp"
#include "capped_child.hpp"
#include "model_builder.hpp"
#include "ops/schema.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

/// One node over float inputs x0..xn of shape `dims`, its outputs left to inference.
GraphSpec one_node(NodeSpec n, std::vector<int64_t> dims = {2, 3}) {
  GraphSpec g;
  for (const auto& in : n.inputs)
    if (!in.empty() && std::none_of(g.inputs.begin(), g.inputs.end(), [&](const ValueSpec& v) { return v.name == in; }))
      g.inputs.push_back({in, DType::kFloat, dims});
  for (const auto& out : n.outputs)
    if (!out.empty()) g.outputs.push_back(any_out(out));
  g.nodes.push_back(std::move(n));
  return g;
}

/// The error loading `bytes` gives (load only: no session), or "" when it loads.
std::string load_error(const std::string& bytes) {
  try {
    load_model_memory(bytes.data(), bytes.size());
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidGraph) << e.what();
    return e.what();
  }
  return "";
}

/// The error making a session of `bytes` gives, or "" when it is made.
std::string session_error(const std::string& bytes, ErrorCode* code = nullptr) {
  try {
    Session::builder().commit_from_memory(bytes.data(), bytes.size());
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

#define EXPECT_HAS(s, part) EXPECT_TRUE(has(s, part)) << "'" << (s) << "' lacks '" << (part) << "'"

}  // namespace

// ---- arity ----

TEST(Validation, ReluWithTwoInputsIsRefusedAtLoad) {
  const std::string e = load_error(encode_model(one_node({"Relu", {"x", "x2"}, {"y"}, {}, "relu1"}), 14));
  EXPECT_HAS(e, "Relu 'relu1'");
  EXPECT_HAS(e, "2 inputs given");
  EXPECT_HAS(e, "Relu-14 takes exactly 1");
}

TEST(Validation, AddWithThreeInputsIsRefusedAtLoad) {
  const std::string e = load_error(encode_model(one_node({"Add", {"a", "b", "c"}, {"y"}, {}, "add1"})));
  EXPECT_HAS(e, "Add 'add1'");
  EXPECT_HAS(e, "3 inputs given");
  EXPECT_HAS(e, "Add-14 takes exactly 2");
}

TEST(Validation, FewerInputsThanTheMinimumAreRefusedAtLoad) {
  std::string e = load_error(encode_model(one_node({"Add", {"a"}, {"y"}, {}, "add1"})));
  EXPECT_HAS(e, "1 input given; Add-14 takes exactly 2");
  // Variadic: Sum takes at least one.
  e = load_error(encode_model(one_node({"Sum", {}, {"y"}, {}, "sum0"})));
  EXPECT_HAS(e, "Sum 'sum0': 0 inputs given; Sum-13 takes at least 1");
  // Gemm's C is optional (from 11), A and B are not.
  e = load_error(encode_model(one_node({"Gemm", {"a"}, {"y"}, {}, "gemm"})));
  EXPECT_HAS(e, "Gemm-13 takes 2 to 3");
}

TEST(Validation, ExtraTrailingEmptyInputsStillCount) {
  // ORT counts "" like any other name: Relu(x, "") has two inputs.
  const std::string e = load_error(encode_model(one_node({"Relu", {"x", ""}, {"y"}, {}, "r"})));
  EXPECT_HAS(e, "2 inputs given (1 of them empty names, which count)");
}

TEST(Validation, OutputCountsAreChecked) {
  std::string e = load_error(encode_model(one_node({"Relu", {"x"}, {"y", "z"}, {}, "r"})));
  EXPECT_HAS(e, "2 outputs given; Relu-14 takes exactly 1");
  // Dropout-13 has an optional mask, nothing more.
  e = load_error(encode_model(one_node({"Dropout", {"x"}, {"y", "m", "z"}, {}, "d"})));
  EXPECT_HAS(e, "3 outputs given; Dropout-13 takes 1 to 2");
}

TEST(Validation, RequiredInputOrOutputGivenAsEmptyNameIsRefused) {
  std::string e = load_error(encode_model(one_node({"Gemm", {"", "b", "c"}, {"y"}, {}, "gemm"})));
  EXPECT_HAS(e, "input 0 ('A') is given as an empty name, but Gemm-13 requires it");
  GraphSpec g = one_node({"Relu", {"x"}, {""}, {}, "r"});
  g.nodes.push_back({"Identity", {"x"}, {"y"}});
  g.outputs.push_back(any_out("y"));
  e = load_error(encode_model(g));
  EXPECT_HAS(e, "output 0 ('Y') is given as an empty name");
}

// What exporters write and ORT accepts stays accepted (these pass before and after).
TEST(Validation, OmittedOptionalInputsAndOutputsAreAccepted) {
  // Clip(x, "", max): min omitted in the middle; Clip(x, "", ""): both trailing ones.
  GraphSpec clip = one_node({"Clip", {"x", "", "hi"}, {"y"}, {}, "clip"});
  clip.inputs[1].dims = {};
  EXPECT_EQ(session_error(encode_model(clip, 13)), "");
  EXPECT_EQ(session_error(encode_model(one_node({"Clip", {"x", "", ""}, {"y"}, {}, "clip"}), 13)), "");
  // Dropout's mask output given as "".
  EXPECT_EQ(session_error(encode_model(one_node({"Dropout", {"x"}, {"y", ""}, {}, "d"}), 13)), "");
  // Variadic inputs: any number from the minimum.
  EXPECT_EQ(session_error(encode_model(one_node({"Sum", {"a", "b", "c", "d", "e"}, {"y"}}))), "");
}

TEST(Validation, ArityFollowsTheOpsetVersion) {
  // Clip-6 takes min and max as attributes (one input); Clip-11 as inputs.
  GraphSpec g = one_node({"Clip", {"x", "lo", "hi"}, {"y"}, {}, "clip"});
  g.inputs[1].dims = {};
  g.inputs[2].dims = {};
  EXPECT_HAS(load_error(encode_model(g, 6)), "3 inputs given; Clip-6 takes exactly 1");
  EXPECT_EQ(load_error(encode_model(g, 11)), "");
  // Dropout-7 to -11 had no ratio input; from 12 it has ratio and training_mode.
  GraphSpec d = one_node({"Dropout", {"x", "r"}, {"y"}, {}, "d"});
  d.inputs[1].dims = {};
  EXPECT_HAS(load_error(encode_model(d, 11)), "Dropout-10 takes exactly 1");
  EXPECT_EQ(load_error(encode_model(d, 12)), "");
}

TEST(Validation, UnnamedNodesAreNamedByPosition) {
  GraphSpec g = one_node({"Relu", {"x"}, {"h"}});
  g.nodes.push_back({"Relu", {"h", "x"}, {"y"}});
  g.outputs = {any_out("y")};
  EXPECT_HAS(load_error(encode_model(g)), "node Relu (node 1, unnamed): 2 inputs given");
}

// ---- attributes ----

TEST(Validation, IntsAttributeGivenAsFloatIsRefusedAtLoad) {
  GraphSpec g = one_node({"Transpose", {"x"}, {"y"}, {attr_float("perm", 1.0f)}, "t"});
  const std::string e = load_error(encode_model(g));
  EXPECT_HAS(e, "Transpose 't': attribute 'perm' is given as FLOAT, but Transpose-13 declares it INTS");
}

TEST(Validation, AttributeTypesAreChecked) {
  // axis as FLOAT and as STRING.
  std::string e = load_error(encode_model(one_node({"Softmax", {"x"}, {"y"}, {attr_float("axis", 1.0f)}, "s"})));
  EXPECT_HAS(e, "attribute 'axis' is given as FLOAT, but Softmax-13 declares it INT");
  e = load_error(encode_model(one_node({"Softmax", {"x"}, {"y"}, {attr_string("axis", "1")}, "s"})));
  EXPECT_HAS(e, "attribute 'axis' is given as STRING, but Softmax-13 declares it INT");
  // kernel_shape as INT instead of INTS (onyx read it as a one-element list before).
  GraphSpec conv = one_node({"Conv", {"x", "w"}, {"y"}, {attr_int("kernel_shape", 3)}, "c"}, {1, 1, 5, 5});
  conv.inputs[1].dims = {1, 1, 3, 3};
  e = load_error(encode_model(conv));
  EXPECT_HAS(e, "attribute 'kernel_shape' is given as INT, but Conv-11 declares it INTS");
}

TEST(Validation, UnknownAttributesAreRefusedUnlessTheSchemaAllowsThem) {
  std::string e = load_error(encode_model(one_node({"Relu", {"x"}, {"y"}, {attr_int("foo", 1)}, "r"})));
  EXPECT_HAS(e, "attribute 'foo' is not an attribute of Relu-14 (it has none)");
  e = load_error(encode_model(one_node({"LeakyRelu", {"x"}, {"y"}, {attr_float("alpah", 0.1f)}, "r"})));
  EXPECT_HAS(e, "(it has alpha)");
  // "__" attributes are implementation details, never checked (ORT too).
  EXPECT_EQ(load_error(encode_model(one_node({"Relu", {"x"}, {"y"}, {attr_int("__trace", 1)}, "r"}))), "");
  // LayerNormalization-17's schema accepts attributes it does not declare.
  GraphSpec ln = one_node({"LayerNormalization", {"x", "s"}, {"y"}, {attr_int("extra", 1)}, "ln"});
  ln.inputs[1].dims = {3};
  EXPECT_EQ(load_error(encode_model(ln)), "");
}

TEST(Validation, RequiredAttributeMissingIsRefusedAtLoad) {
  const std::string e = load_error(encode_model(one_node({"Concat", {"a", "b"}, {"y"}, {}, "cat"})));
  EXPECT_HAS(e, "Concat 'cat': attribute 'axis' is required by Concat-13 (an INT) but missing");
}

// ---- subgraphs, functions, domains ----

namespace {

/// y = If(c) with then = `inner` (output "t", reading x and whatever else it names from the outer
/// scope) and else = Identity(x); inputs c (bool) and x (float[2]).
GraphSpec if_graph(const NodeSpec& inner) {
  auto branch = [](const char* attr, const char* name, const NodeSpec& n, const std::string& out) {
    GraphSpec b;
    b.name = name;
    b.nodes.push_back(n);
    b.outputs.push_back(any_out(out));
    AttrSpec a;
    a.name = attr;
    a.kind = AttrSpec::kGraph;
    a.s = b.encode();
    return a;
  };
  GraphSpec g;
  g.nodes.push_back({"If", {"c"}, {"y"}, {branch("then_branch", "then", inner, "t"),
                                          branch("else_branch", "else", {"Identity", {"x"}, {"e"}}, "e")}, "if"});
  g.inputs.push_back({"c", DType::kBool, {}});
  g.inputs.push_back({"x", DType::kFloat, {2}});
  g.outputs.push_back(any_out("y"));
  return g;
}

}  // namespace

TEST(Validation, SubgraphNodesAreChecked) {
  GraphSpec g = if_graph({"Relu", {"x", "x"}, {"t"}, {}, "inner"});
  const std::string e = load_error(encode_model(g));
  EXPECT_HAS(e, "graph 'then': node Relu 'inner': 2 inputs given");
}

TEST(Validation, FunctionBodiesAreChecked) {
  // custom::Bad(A) = Relu(A, A), a model-local function: its body is inlined, then checked.
  ProtoWriter f;
  f.bytes(1, "Bad");
  f.bytes(4, "A");
  f.bytes(5, "B");
  f.bytes(7, GraphSpec::encode_node({"Relu", {"A", "A"}, {"B"}, {}, "body"}));
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, 17);
  f.bytes(9, os.str());
  f.bytes(10, "custom");
  GraphSpec g = one_node({"Bad", {"x"}, {"y"}, {}, "call", "custom"});
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(7, g.encode());
  for (const auto& [d, v] : std::vector<std::pair<std::string, int64_t>>{{"", 17}, {"custom", 1}}) {
    ProtoWriter o;
    o.bytes(1, d);
    o.varint(2, static_cast<uint64_t>(v));
    w.bytes(8, o.str());
  }
  w.bytes(25, f.str());
  EXPECT_HAS(load_error(w.str()), "Relu 'call/body': 2 inputs given");
}

TEST(Validation, ComMicrosoftOpsAreChecked) {
  // QLinearSigmoid(X, X_scale, X_zero_point, Y_scale, Y_zero_point): 4 or 5 inputs.
  GraphSpec g = one_node({"QLinearSigmoid", {"x", "s"}, {"y"}, {}, "qs", "com.microsoft"});
  const std::string e = load_error(encode_model(g, 17, 8, {{"com.microsoft", 1}}));
  EXPECT_HAS(e, "com.microsoft::QLinearSigmoid 'qs': 2 inputs given; com.microsoft::QLinearSigmoid-1 takes 4 to 5");
}

TEST(Validation, OpsWithoutSignaturesAreLeftToTheSession) {
  // An op the standard lacks, in ai.onnx and in a custom domain: the loader lets them through,
  // the session says it does not know them.
  EXPECT_EQ(load_error(encode_model(one_node({"NoSuchOp", {"x", "x", "x"}, {"y"}, {}, "n"}))), "");
  EXPECT_EQ(load_error(encode_model(one_node({"Thing", {"x"}, {"y"}, {attr_int("k", 1)}, "n", "custom"}), 17, 8,
                                    {{"custom", 1}})),
            "");
  ErrorCode code = ErrorCode::kRuntime;
  session_error(encode_model(one_node({"NoSuchOp", {"x", "x", "x"}, {"y"}, {}, "n"})), &code);
  EXPECT_EQ(code, ErrorCode::kNotImplemented);
}

// ---- input element types against the schemas' type constraints (session/infer.cpp) ----

namespace {
/// A graph of one node whose inputs are given with the element types `types`.
GraphSpec typed_node(NodeSpec n, std::vector<std::pair<DType, std::vector<int64_t>>> types) {
  GraphSpec g;
  for (size_t i = 0; i < n.inputs.size() && i < types.size(); ++i)
    if (!n.inputs[i].empty()) g.inputs.push_back({n.inputs[i], types[i].first, types[i].second});
  for (const auto& out : n.outputs) g.outputs.push_back(any_out(out));
  g.nodes.push_back(std::move(n));
  return g;
}

/// The error making a session of `g` gives, expected to be kInvalidGraph, or "" when it is made.
std::string type_error(const GraphSpec& g, int64_t opset = 17) {
  ErrorCode code = ErrorCode::kRuntime;
  const std::string e = session_error(encode_model(g, opset), &code);
  if (!e.empty()) {
    EXPECT_EQ(code, ErrorCode::kInvalidGraph) << e;
  }
  return e;
}
}  // namespace

TEST(Validation, LayerNormalizationWithBoolBiasIsRefused) {
  // The fuzz find (tests/fuzz/regressions/layernorm_bias_type_mismatch.onnx): the CPU kernel read
  // a bool B as float, past its end. ORT: "Type 'tensor(bool)' of input parameter (B) ... is invalid".
  const std::string e = type_error(typed_node({"LayerNormalization", {"X", "Scale", "B"}, {"Y"}, {}, "ln"},
                                              {{DType::kFloat, {3, 4, 5}}, {DType::kFloat, {5}}, {DType::kBool, {3, 4, 5}}}));
  EXPECT_HAS(e, "node LayerNormalization 'ln': input 2 ('B') is bool, but LayerNormalization-17 binds it to type T, "
                "which allows only float, float16, double, bfloat16");
}

TEST(Validation, InputsBoundToOneTypeVariableMustAgree) {
  // Add(float, double): ORT "Type parameter (T) of Optype (Add) bound to different types".
  std::string e = type_error(typed_node({"Add", {"a", "b"}, {"c"}, {}, "add"}, {{DType::kFloat, {2}}, {DType::kDouble, {2}}}));
  EXPECT_HAS(e, "node Add 'add': input 1 ('B') is double, but Add-14 binds it to type T with input 0 ('A'), which is float");
  // LayerNormalization with a double Scale: both allowed, but not together.
  e = type_error(typed_node({"LayerNormalization", {"X", "Scale"}, {"Y"}, {}, "ln"},
                            {{DType::kFloat, {3, 4, 5}}, {DType::kDouble, {5}}}));
  EXPECT_HAS(e, "input 1 ('Scale') is double, but LayerNormalization-17 binds it to type T with input 0 ('X'), which is float");
  // Variadic homogeneous inputs too (Concat), and a value inferred from an earlier node (Shape's int64).
  e = type_error(typed_node({"Concat", {"a", "b", "c"}, {"y"}, {attr_int("axis", 0)}, "cat"},
                            {{DType::kFloat, {2}}, {DType::kFloat, {2}}, {DType::kInt64, {2}}}));
  EXPECT_HAS(e, "node Concat 'cat': input 2 ('inputs') is int64, but Concat-13 binds it to type T with input 0 ('inputs'), which is float");
  GraphSpec g;
  g.inputs = {{"x", DType::kFloat, {2}}, {"b", DType::kFloat, {1}}};
  g.nodes.push_back({"Shape", {"x"}, {"s"}, {}, "shape"});
  g.nodes.push_back({"Add", {"s", "b"}, {"y"}, {}, "add"});
  g.outputs.push_back(any_out("y"));
  EXPECT_HAS(type_error(g), "node Add 'add': input 1 ('B') is float, but Add-14 binds it to type T with input 0 ('A'), which is int64");
}

TEST(Validation, ElementTypesOutsideTheAllowedSetAreRefused) {
  // Relu on int8: not in T at opset 13 (ORT refuses), in it from opset 14.
  const GraphSpec relu = typed_node({"Relu", {"x"}, {"y"}, {}, "r"}, {{DType::kInt8, {4}}});
  EXPECT_HAS(type_error(relu, 13), "node Relu 'r': input 0 ('X') is int8, but Relu-13 binds it to type T, which allows only float, ");
  EXPECT_EQ(type_error(relu, 14), "");
  // Gather's indices: Tind is int32 or int64.
  EXPECT_HAS(type_error(typed_node({"Gather", {"d", "i"}, {"y"}, {}, "g"}, {{DType::kFloat, {4}}, {DType::kInt8, {2}}})),
             "input 1 ('indices') is int8, but Gather-13 binds it to type Tind, which allows only int32, int64");
  // Where's condition is bool; QuantizeLinear-13's scale float and zero point 8-bit.
  EXPECT_HAS(type_error(typed_node({"Where", {"c", "a", "b"}, {"y"}, {}, "w"},
                                   {{DType::kFloat, {2}}, {DType::kFloat, {2}}, {DType::kFloat, {2}}})),
             "input 0 ('condition') is float, but Where-16 binds it to type B, which allows only bool");
  EXPECT_HAS(type_error(typed_node({"QuantizeLinear", {"x", "s", "z"}, {"y"}, {}, "q"},
                                   {{DType::kFloat, {4}}, {DType::kFloat, {}}, {DType::kInt32, {}}}),
                        13),
             "input 2 ('y_zero_point') is int32, but QuantizeLinear-13 binds it to type T2, which allows only uint8, int8");
  // A fixed type: Reshape's shape is tensor(int64).
  EXPECT_HAS(type_error(typed_node({"Reshape", {"x", "s"}, {"y"}, {}, "rs"}, {{DType::kFloat, {4}}, {DType::kInt32, {1}}})),
             "node Reshape 'rs': input 1 ('shape') is int32, but Reshape-14 takes it as tensor(int64)");
}

TEST(Validation, InputTypesInSubgraphsAreChecked) {
  GraphSpec g = if_graph({"Add", {"x", "d"}, {"t"}, {}, "inner"});
  g.inputs.push_back({"d", DType::kDouble, {2}});
  EXPECT_HAS(type_error(g), "node Add 'inner': input 1 ('B') is double, but Add-14 binds it to type T with input 0 ('A'), which is float");
}

TEST(Validation, ValidMixedTypeNodesAreAccepted) {
  // Type variables that differ by design (Cast's T1/T2, Where's B/T, Gather's T/Tind,
  // DequantizeLinear's T/scale), control flow's heterogeneous variadics, 8-bit QDQ.
  GraphSpec cast = typed_node({"Cast", {"x"}, {"y"}, {attr_int("to", 7)}, "cast"}, {{DType::kFloat, {2}}});
  EXPECT_EQ(type_error(cast), "");
  EXPECT_EQ(type_error(typed_node({"Where", {"c", "a", "b"}, {"y"}, {}, "w"},
                                  {{DType::kBool, {2}}, {DType::kFloat, {2}}, {DType::kFloat, {2}}})),
            "");
  EXPECT_EQ(type_error(typed_node({"Gather", {"d", "i"}, {"y"}, {}, "g"}, {{DType::kFloat, {4}}, {DType::kInt32, {2}}})), "");
  EXPECT_EQ(type_error(typed_node({"Gather", {"d", "i"}, {"y"}, {}, "g"}, {{DType::kInt8, {4}}, {DType::kInt64, {2}}})), "");
  EXPECT_EQ(type_error(typed_node({"DequantizeLinear", {"x", "s", "z"}, {"y"}, {}, "dq"},
                                  {{DType::kUInt8, {4}}, {DType::kFloat, {}}, {DType::kUInt8, {}}}),
                       13),
            "");
  EXPECT_EQ(type_error(typed_node({"QuantizeLinear", {"x", "s", "z"}, {"y"}, {}, "q"},
                                  {{DType::kFloat, {4}}, {DType::kFloat, {}}, {DType::kInt8, {}}}),
                       13),
            "");
}

// ---- window attributes (Conv, ConvTranspose, pools) ----

namespace {
GraphSpec conv_with(const char* op, std::vector<AttrSpec> attrs) {
  GraphSpec g = one_node({op, {"x", "w"}, {"y"}, std::move(attrs), "c"}, {1, 1, 5, 5});
  g.inputs[1].dims = {1, 1, 3, 3};
  return g;
}
}  // namespace

TEST(Validation, EmptyKernelShapeIsRefused) {
  std::string e = session_error(encode_model(conv_with("Conv", {attr_ints("kernel_shape", {})})));
  EXPECT_HAS(e, "Conv 'c': attribute 'kernel_shape' has 0 values; with 2 spatial dims it needs 2");
  // X of unknown rank: the empty kernel_shape is still refused.
  GraphSpec pool = one_node({"MaxPool", {"x"}, {"y"}, {attr_ints("kernel_shape", {})}, "p"});
  pool.inputs[0].no_shape = true;
  e = session_error(encode_model(pool));
  EXPECT_HAS(e, "MaxPool 'p': attribute 'kernel_shape' is empty");
}

TEST(Validation, EmptyPadsStridesDilationsAreRefused) {
  for (const char* a : {"pads", "strides", "dilations"}) {
    SCOPED_TRACE(a);
    const std::string e = session_error(encode_model(conv_with("Conv", {attr_ints(a, {})})));
    EXPECT_HAS(e, str("Conv 'c': attribute '", a, "' has 0 values"));
  }
  const std::string e = session_error(encode_model(conv_with("ConvTranspose", {attr_ints("output_padding", {})})));
  EXPECT_HAS(e, "ConvTranspose 'c': attribute 'output_padding' has 0 values; with 2 spatial dims it needs 2");
}

TEST(Validation, ConvPadsOfTheWrongLengthSayWhatTheRankNeeds) {
  std::string e = session_error(encode_model(conv_with("Conv", {attr_ints("pads", {1, 1})})));
  EXPECT_HAS(e, "attribute 'pads' has 2 values; with 2 spatial dims it needs 4 (the begins, then the ends)");
  e = session_error(encode_model(conv_with("Conv", {attr_ints("strides", {1, 1, 1})})));
  EXPECT_HAS(e, "attribute 'strides' has 3 values; with 2 spatial dims it needs 2 (one per spatial dim)");
  // Rank from W when X is unranked.
  GraphSpec g = conv_with("Conv", {attr_ints("dilations", {1})});
  g.inputs[0].no_shape = true;
  e = session_error(encode_model(g));
  EXPECT_HAS(e, "attribute 'dilations' has 1 value; with 2 spatial dims it needs 2");
  // Pools: strides against X's rank.
  GraphSpec pool = one_node({"AveragePool", {"x"}, {"y"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {0, 0})}, "p"},
                            {1, 1, 5, 5});
  e = session_error(encode_model(pool));
  EXPECT_HAS(e, "AveragePool 'p': attribute 'pads' has 2 values; with 2 spatial dims it needs 4");
  // The valid forms load.
  EXPECT_EQ(session_error(encode_model(conv_with("Conv", {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {1, 1})}))), "");
}

// ---- sizes checked before allocation ----

namespace {

/// Loads model bytes `m` in a child capped 64 MiB above what it has mapped; 0 when loading fails
/// with an onyx::Error containing `want` (see in_capped_child for the other statuses).
[[maybe_unused]] int capped_load_fails_with(const std::string& m, const std::string& want) {
  return in_capped_child(64, [&] {
    try {
      load_model_memory(m.data(), m.size());
    } catch (const Error& e) {
      return has(e.what(), want);
    }
    return false;
  });
}

/// A model whose initializer "w" is the TensorProto `t` (fields written by the caller).
std::string model_with_initializer(const ProtoWriter& t, bool sparse = false) {
  ProtoWriter gw;
  gw.bytes(1, GraphSpec::encode_node({"Identity", {"w"}, {"y"}}));
  gw.bytes(2, "g");
  gw.bytes(sparse ? 15 : 5, t.str());
  gw.bytes(12, GraphSpec::encode_value_info(any_out("y")));
  ProtoWriter mw;
  mw.varint(1, 8);
  mw.bytes(7, gw.str());
  ProtoWriter os;
  os.varint(2, 17);
  mw.bytes(8, os.str());
  return mw.take();
}


}  // namespace

TEST(Validation, HugeStaticDimIsRefusedBeforeAllocating) {
  // dims [2^28] floats (1 GiB) with one value in float_data: the count mismatch must be found
  // before the tensor is allocated. Checked directly (the message) and under an address space
  // capped 64 MiB above what the process has: an allocation first would fail differently.
  ProtoWriter t;
  t.packed_int64(1, {int64_t(1) << 28});
  t.varint(2, 1);  // float
  t.bytes(4, std::string("\0\0\x80\x3f", 4));  // float_data: 1.0f (packed)
  t.bytes(8, "w");
  const std::string m = model_with_initializer(t);
  const std::string want = "has 1 values in float_data, expected 268435456";
  try {
    load_model_memory(m.data(), m.size());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_HAS(std::string(e.what()), want);
  }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const int rc = capped_load_fails_with(m, want);
  ASSERT_NE(rc, 3) << "could not cap the address space";
  EXPECT_EQ(rc, 0) << "loading allocated before checking (or failed otherwise)";
#endif
}

TEST(Validation, HugeStaticDimOverflowAndRawDataAreRefusedBeforeAllocating) {
  // The element count overflows int64.
  ProtoWriter a;
  a.packed_int64(1, {int64_t(1) << 40, int64_t(1) << 40});
  a.varint(2, 1);
  a.bytes(8, "w");
  a.bytes(9, std::string(4, '\0'));
  std::string m = model_with_initializer(a);
  EXPECT_THROW(load_model_memory(m.data(), m.size()), Error);
  // 2^40 floats claimed, 4 bytes of raw_data.
  ProtoWriter b;
  b.packed_int64(1, {int64_t(1) << 40});
  b.varint(2, 1);
  b.bytes(8, "w");
  b.bytes(9, std::string(4, '\0'));
  m = model_with_initializer(b);
  try {
    load_model_memory(m.data(), m.size());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "needs 4398046511104 bytes of data but has 4");
  }
}

TEST(Validation, HugeSparseInitializerIsRefusedBeforeDensifying) {
  // A sparse initializer of dims [2^30] floats (4 GiB dense) with one value: ORT refuses dense
  // forms over 2 GiB, and so does onyx, before allocating them.
  ProtoWriter values;
  values.packed_int64(1, {1});
  values.varint(2, 1);
  values.bytes(8, "w");
  values.bytes(9, std::string("\0\0\x80\x3f", 4));
  ProtoWriter indices;
  indices.packed_int64(1, {1});
  indices.varint(2, 7);  // int64
  indices.bytes(9, std::string(8, '\0'));
  ProtoWriter sp;
  sp.bytes(1, values.str());
  sp.bytes(2, indices.str());
  sp.packed_int64(3, {int64_t(1) << 30});
  const std::string m = model_with_initializer(sp, true);
  const std::string want = "takes more than 2147483648 bytes dense";
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const int rc = capped_load_fails_with(m, want);
  ASSERT_NE(rc, 3) << "could not cap the address space";
  EXPECT_EQ(rc, 0) << "loading allocated the dense form (or failed otherwise)";
#else
  try {
    load_model_memory(m.data(), m.size());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), want);
  }
#endif
}

// ---- the table ----

TEST(Validation, SignatureTableIsSortedAndConsistent) {
  const auto sigs = op_signatures();
  ASSERT_GT(sigs.size(), 600u);
  for (size_t i = 1; i < sigs.size(); ++i) {
    const auto a = std::make_tuple(std::string_view(sigs[i - 1].domain), std::string_view(sigs[i - 1].name), sigs[i - 1].since);
    const auto b = std::make_tuple(std::string_view(sigs[i].domain), std::string_view(sigs[i].name), sigs[i].since);
    EXPECT_LT(a, b) << sigs[i].name;
  }
  for (const OpSignature& s : sigs) {
    EXPECT_LE(s.min_inputs, s.max_inputs) << s.name;
    EXPECT_LE(s.min_outputs, s.max_outputs) << s.name;
    // Every formal but the last is single or optional; a variadic one is last.
    for (size_t k = 0; k + 1 < s.inputs().size(); ++k) EXPECT_NE(s.inputs()[k].option, 'V') << s.name;
    if (s.max_inputs == OpSignature::kUnbounded) {
      EXPECT_EQ(s.inputs().back().option, 'V') << s.name;
    }
  }
  const OpSignature* relu = find_op_signature("", "Relu", 17);
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->since, 14);
  EXPECT_EQ(find_op_signature("", "Relu", 13)->since, 13);
  EXPECT_EQ(find_op_signature("", "Gelu", 19), nullptr);  // Gelu is from opset 20
  const OpSignature* conv = find_op_signature("", "Conv", 11);
  ASSERT_NE(conv, nullptr);
  ASSERT_NE(conv->attr("pads"), nullptr);
  EXPECT_EQ(conv->attr("pads")->type, AttrType::kInts);
}

// Every op the runtime registers in a domain the table covers has a signature at each version it
// registers (the com.microsoft list of scripts/gen_op_arity.py included), so no op escapes the
// checks by accident.
TEST(Validation, EveryRegisteredStandardOpHasASignature) {
  for (const OpSchema& op : OpRegistry::global().all()) {
    if (!op_signature_domain(op.domain)) continue;
    for (int v : op.versions) {
      const OpSignature* s = find_op_signature(op.domain, op.name, v);
      EXPECT_NE(s, nullptr) << (op.domain.empty() ? "" : op.domain + "::") << op.name << " version " << v;
    }
  }
}
