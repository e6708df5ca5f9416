// Loading: valid models, and every kind of broken or hostile file gives a clear onyx::Error.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "model/loader.hpp"
#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

GraphSpec relu_graph() {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"y"}});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  return g;
}

std::string error_of(const std::string& bytes) {
  try {
    Session::builder().commit_from_memory(bytes.data(), bytes.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ErrorCode code_of(const std::string& bytes) {
  try {
    Session::builder().commit_from_memory(bytes.data(), bytes.size());
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kRuntime;
}

}  // namespace

TEST(Loader, LoadsAValidModel) {
  const std::string m = encode_model(relu_graph());
  auto model = load_model_memory(m.data(), m.size());
  ASSERT_TRUE(model->graph);
  EXPECT_EQ(model->graph->nodes.size(), 1u);
  EXPECT_EQ(model->opset(""), 17);
  EXPECT_EQ(model->ir_version, 8);
}

TEST(Loader, TruncatedFilesFailCleanly) {
  const std::string m = encode_model(relu_graph());
  for (size_t cut = 1; cut < m.size(); ++cut) {
    const std::string t = m.substr(0, cut);
    try {
      Session::builder().commit_from_memory(t.data(), t.size());
    } catch (const Error&) {
      continue;  // any clear error is fine; what matters is no crash
    }
  }
  EXPECT_NE(error_of(m.substr(0, m.size() / 2)), "");
}

TEST(Loader, CorruptBytesFailCleanly) {
  std::string m = encode_model(relu_graph());
  uint32_t x = 12345;
  for (int round = 0; round < 300; ++round) {
    std::string c = m;
    for (int k = 0; k < 4; ++k) {
      x = x * 1103515245u + 12345u;
      c[x % c.size()] = static_cast<char>(x >> 16);
    }
    try {
      Session s = Session::builder().commit_from_memory(c.data(), c.size());
    } catch (const Error&) {
    }
  }
  EXPECT_EQ(code_of(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11)), ErrorCode::kInvalidModel);
  EXPECT_NE(error_of("this is not an onnx file at all").find("malformed ModelProto"), std::string::npos);
}

TEST(Loader, LengthPastTheEnd) {
  ProtoWriter w;
  w.varint(1, 8);
  w.tag(7, WireType::kBytes);
  w.varint_raw(1000000);  // graph length far past the end
  const std::string m = w.take() + "abc";
  const std::string e = error_of(m);
  EXPECT_NE(e.find("runs past the end"), std::string::npos) << e;
  EXPECT_NE(e.find("byte offset"), std::string::npos) << e;
}

TEST(Loader, HostileDimensionInInitializer) {
  GraphSpec g = relu_graph();
  // An initializer claiming 2^62 elements but carrying 4 bytes.
  ProtoWriter t;
  t.packed_int64(1, {int64_t(1) << 62});
  t.varint(2, 1);
  t.bytes(8, "w");
  t.bytes(9, std::string(4, '\0'));
  ProtoWriter gw;
  gw.bytes(1, GraphSpec::encode_node({"Relu", {"x"}, {"y"}}));
  gw.bytes(5, t.str());
  gw.bytes(11, GraphSpec::encode_value_info({"x", DType::kFloat, {2, 3}}));
  gw.bytes(12, GraphSpec::encode_value_info({"y", DType::kFloat, {2, 3}}));
  ProtoWriter mw;
  mw.varint(1, 8);
  mw.bytes(7, gw.str());
  ProtoWriter os;
  os.varint(2, 17);
  mw.bytes(8, os.str());
  const std::string e = error_of(mw.str());
  EXPECT_NE(e.find("tensor 'w'"), std::string::npos) << e;
}

TEST(Loader, HostileDimensionOnInputIsCaughtAtRun) {
  GraphSpec g = relu_graph();
  g.inputs[0].dims = {int64_t(1) << 62};
  g.outputs[0].dims = {int64_t(1) << 62};
  const std::string m = encode_model(g);
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  EXPECT_THROW(Tensor(DType::kFloat, Shape{int64_t(1) << 62}), Error);
}

// paddle2onnx and some other exporters write dim_value -1 for an unknown dim; ORT reads it as
// unknown, and so does onyx (it refused the model before).
TEST(Loader, MinusOneDimValueIsAnUnknownDim) {
  GraphSpec g = relu_graph();
  g.inputs[0].dims = {-1, 3};
  g.inputs[0].write_minus_one = true;
  g.outputs[0].dims = {-1, 3};
  g.outputs[0].write_minus_one = true;
  const std::string m = encode_model(g);
  EXPECT_NE(m.find(std::string(9, '\xff')), std::string::npos);  // (the varint of -1 is in the bytes)
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  EXPECT_EQ(s.inputs()[0].type_string, "float[?,3]");
  for (int64_t batch : {1, 4}) {
    const Tensor x = Tensor::from_vector<float>(Shape{batch, 3}, std::vector<float>(3 * batch, -1.0f));
    const Tensor y = s.run({{"x", x}})[0].tensor();
    EXPECT_EQ(y.shape(), (Shape{batch, 3}));
    EXPECT_EQ(y.data<float>()[0], 0.0f);
  }
}

TEST(Loader, CycleIsAnError) {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"b"}, {"a"}, {}, "n1"});
  g.nodes.push_back({"Relu", {"a"}, {"b"}, {}, "n2"});
  g.inputs.push_back({"x", DType::kFloat, {1}});
  g.outputs.push_back({"a", DType::kFloat, {1}});
  const std::string e = error_of(encode_model(g));
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
}

TEST(Loader, UndefinedValueIsAnError) {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"nope"}, {"y"}, {}, "r"});
  g.inputs.push_back({"x", DType::kFloat, {1}});
  g.outputs.push_back({"y", DType::kFloat, {1}});
  const std::string e = error_of(encode_model(g));
  EXPECT_NE(e.find("'nope'"), std::string::npos) << e;
  EXPECT_EQ(code_of(encode_model(g)), ErrorCode::kInvalidGraph);
}

TEST(Loader, DuplicateDefinitionIsAnError) {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"y"}});
  g.nodes.push_back({"Relu", {"x"}, {"y"}});
  g.inputs.push_back({"x", DType::kFloat, {1}});
  g.outputs.push_back({"y", DType::kFloat, {1}});
  EXPECT_NE(error_of(encode_model(g)).find("more than once"), std::string::npos);
}

TEST(Loader, VersionsAndDomains) {
  EXPECT_EQ(code_of(encode_model(relu_graph(), 17, 15)), ErrorCode::kNotImplemented);  // IR 15
  const std::string ir14 = encode_model(relu_graph(), 17, 14);  // what onnx 1.23 writes by default
  EXPECT_NO_THROW(Session::builder().commit_from_memory(ir14.data(), ir14.size()));
  EXPECT_EQ(code_of(encode_model(relu_graph(), 17, 2)), ErrorCode::kNotImplemented);   // IR 2
  EXPECT_EQ(code_of(encode_model(relu_graph(), 29, 8)), ErrorCode::kNotImplemented);   // opset 29
  const std::string opset28 = encode_model(relu_graph(), 28, 11);                         // onnx 1.23's newest
  EXPECT_NO_THROW(Session::builder().commit_from_memory(opset28.data(), opset28.size()));
  GraphSpec g = relu_graph();
  g.nodes[0].domain = "com.example";
  EXPECT_NE(error_of(encode_model(g)).find("does not import"), std::string::npos);
  GraphSpec u = relu_graph();
  u.nodes[0].op = "NoSuchOp";
  EXPECT_NE(error_of(encode_model(u)).find("NoSuchOp"), std::string::npos);
  // An op used before it existed.
  GraphSpec gelu = relu_graph();
  gelu.nodes[0].op = "Gelu";
  EXPECT_NE(error_of(encode_model(gelu, 17)).find("introduced in opset 20"), std::string::npos);
}

TEST(Loader, UnknownDomainToleratedWhenUnused) {
  GraphSpec g = relu_graph();
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(7, g.encode());
  ProtoWriter a, b;
  a.varint(2, 17);
  b.bytes(1, "com.unused.domain");
  b.varint(2, 3);
  w.bytes(8, a.str());
  w.bytes(8, b.str());
  const std::string m = w.take();
  EXPECT_NO_THROW(Session::builder().commit_from_memory(m.data(), m.size()));
}

TEST(Loader, MissingFileIsAnIoError) {
  try {
    Session::builder().commit_from_file("/nonexistent/dir/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.onnx"), std::string::npos);
  }
}

// ---- model-local functions (ModelProto.functions) ----

namespace {

/// FunctionProto bytes: domain::name(inputs) -> outputs, with attribute defaults and opsets.
std::string function_proto(const std::string& domain, const std::string& name, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, const std::vector<NodeSpec>& body,
                           const std::vector<AttrSpec>& defaults, const std::vector<std::pair<std::string, int64_t>>& opsets) {
  ProtoWriter f;
  f.bytes(1, name);
  for (const auto& i : inputs) f.bytes(4, i);
  for (const auto& o : outputs) f.bytes(5, o);
  for (const auto& n : body) f.bytes(7, GraphSpec::encode_node(n));
  for (const auto& [d, v] : opsets) {
    ProtoWriter o;
    o.bytes(1, d);
    o.varint(2, static_cast<uint64_t>(v));
    f.bytes(9, o.str());
  }
  f.bytes(10, domain);
  // Attribute defaults (AttributeProto; float ones are all these tests need).
  for (const auto& d : defaults) {
    ProtoWriter aw;
    aw.bytes(1, d.name);
    uint32_t u;
    std::memcpy(&u, &d.f, 4);
    aw.fixed32(2, u);
    aw.varint(20, 1);
    f.bytes(11, aw.str());
  }
  return f.take();
}

/// ModelProto with ai.onnx 18, domain "custom" 1 and the given functions.
std::string model_with_functions(const GraphSpec& g, const std::vector<std::string>& functions) {
  ProtoWriter w;
  w.varint(1, 9);
  w.bytes(2, "onyx-tests");
  w.bytes(7, g.encode());
  for (const auto& [d, v] : std::vector<std::pair<std::string, int64_t>>{{"", 18}, {"custom", 1}}) {
    ProtoWriter o;
    o.bytes(1, d);
    o.varint(2, static_cast<uint64_t>(v));
    w.bytes(8, o.str());
  }
  for (const auto& f : functions) w.bytes(25, f);
  return w.take();
}

/// custom::AddScaled(X, Y; alpha = 0.5) = X + Y * alpha.
std::string add_scaled() {
  AttrSpec c = attr_float("value_float", 0.0f);
  c.ref = "alpha";
  return function_proto("custom", "AddScaled", {"X", "Y"}, {"Z"},
                        {{"Constant", {}, {"c"}, {c}}, {"Mul", {"Y", "c"}, {"t"}}, {"Add", {"X", "t"}, {"Z"}}},
                        {attr_float("alpha", 0.5f)}, {{"", 18}});
}

}  // namespace

TEST(Loader, LocalFunctionsAreInlined) {
  // custom::Twice(A) = Relu(AddScaled(A, A, alpha=3)): a function calling a function.
  const std::string twice = function_proto(
      "custom", "Twice", {"A"}, {"B"},
      {{"AddScaled", {"A", "A"}, {"u"}, {attr_float("alpha", 3.0f)}, "", "custom"}, {"Relu", {"u"}, {"B"}}}, {},
      {{"", 18}, {"custom", 1}});
  GraphSpec g;
  g.nodes.push_back({"AddScaled", {"x", "y"}, {"p"}, {attr_float("alpha", 2.0f)}, "call1", "custom"});
  g.nodes.push_back({"AddScaled", {"x", "y"}, {"q"}, {}, "call2", "custom"});  // default alpha 0.5
  g.nodes.push_back({"Twice", {"p"}, {"r"}, {}, "call3", "custom"});
  g.nodes.push_back({"Add", {"q", "r"}, {"out"}});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.inputs.push_back({"y", DType::kFloat, {2, 3}});
  g.outputs.push_back({"out", DType::kFloat, {2, 3}});
  const std::string m = model_with_functions(g, {add_scaled(), twice});
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  auto out = s.run({{"x", Tensor::from_vector<float>(Shape{2, 3}, {-2, -1, 0, 1, 2, 3})},
                    {"y", Tensor::from_vector<float>(Shape{2, 3}, {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f})}});
  // p = x + y*2, q = x + y*0.5, r = relu(p + p*3) = relu(4p), out = q + r (checked with ONNX Runtime).
  EXPECT_EQ(values_of(out[0].tensor()), (std::vector<double>{-1.75, -0.75, 4.25, 9.25, 14.25, 19.25}));
  // Every body node is placed under its caller's name.
  bool saw = false;
  for (const auto& n : s.placement().nodes) saw |= n.name == "call3/Relu";
  EXPECT_TRUE(saw);
}

TEST(Loader, LocalFunctionErrors) {
  GraphSpec g;
  g.nodes.push_back({"Loop1", {"x"}, {"y"}, {}, "n", "custom"});
  g.inputs.push_back({"x", DType::kFloat, {2}});
  g.outputs.push_back({"y", DType::kFloat, {2}});
  // A function that calls itself.
  const std::string self = function_proto("custom", "Loop1", {"A"}, {"B"}, {{"Loop1", {"A"}, {"B"}, {}, "", "custom"}}, {},
                                          {{"custom", 1}});
  EXPECT_NE(error_of(model_with_functions(g, {self})).find("more than 32 deep"), std::string::npos)
      << error_of(model_with_functions(g, {self}));
  // Too many inputs for the function.
  GraphSpec g2 = g;
  g2.nodes[0] = {"AddScaled", {"x", "x", "x"}, {"y"}, {}, "n", "custom"};
  EXPECT_NE(error_of(model_with_functions(g2, {add_scaled()})).find("3 inputs and 1 outputs given, the function has 2 and 1"),
            std::string::npos);
  // Defined twice.
  EXPECT_NE(error_of(model_with_functions(g2, {add_scaled(), add_scaled()})).find("defined more than once"),
            std::string::npos);
  // Exponential fan-out is bounded: F0 calls F1 twice, F1 calls F2 twice, ... F24.
  std::vector<std::string> fs;
  for (int k = 0; k < 24; ++k)
    fs.push_back(function_proto("custom", str("F", k), {"A"}, {"B"},
                                {{str("F", k + 1), {"A"}, {"t"}, {}, "", "custom"}, {str("F", k + 1), {"t"}, {"B"}, {}, "", "custom"}},
                                {}, {{"custom", 1}}));
  fs.push_back(function_proto("custom", "F24", {"A"}, {"B"}, {{"Relu", {"A"}, {"B"}}}, {}, {{"", 18}}));
  GraphSpec g3 = g;
  g3.nodes[0] = {"F0", {"x"}, {"y"}, {}, "n", "custom"};
  EXPECT_NE(error_of(model_with_functions(g3, fs)).find("more than 1000000 nodes"), std::string::npos)
      << error_of(model_with_functions(g3, fs));
}
