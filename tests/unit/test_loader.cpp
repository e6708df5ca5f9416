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
  EXPECT_EQ(code_of(encode_model(relu_graph(), 17, 11)), ErrorCode::kNotImplemented);  // IR 11
  EXPECT_EQ(code_of(encode_model(relu_graph(), 17, 2)), ErrorCode::kNotImplemented);   // IR 2
  EXPECT_EQ(code_of(encode_model(relu_graph(), 23, 8)), ErrorCode::kNotImplemented);   // opset 23
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
