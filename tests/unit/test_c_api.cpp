// The C API (include/onyx/c_api.h): runs against hand-computed numbers and the C++ API, metadata,
// tensors, reports, and every kind of bad input giving a status with onyx's message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "model_builder.hpp"
#include "onyx/c_api.h"

using namespace onyx;
using namespace onyx::test;

namespace {

/// The status's code and message, released; "" for success.
struct Result {
  OnyxErrorCode code = ONYX_OK;
  std::string message;
};
Result take(OnyxStatus* s) {
  Result r{onyx_status_code(s), onyx_status_message(s)};
  onyx_status_release(s);
  return r;
}

#define C_OK(call)                                    \
  do {                                                \
    Result r_ = take(call);                           \
    ASSERT_EQ(r_.code, ONYX_OK) << r_.message;        \
  } while (0)

/// Expects `call` to fail with `code` and a message containing `text`.
#define C_FAILS(call, want_code, text)                                            \
  do {                                                                            \
    Result r_ = take(call);                                                       \
    EXPECT_EQ(r_.code, want_code) << onyx_error_code_name(r_.code) << ": " << r_.message; \
    EXPECT_NE(r_.message.find(text), std::string::npos) << r_.message;            \
  } while (0)

// y = Relu(x) + b, with x: float[batch, 3] and b = {10, 20, 30}.
std::string add_relu_model() {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"Add", {"r", "b"}, {"y"}, {}, "add"});
  g.inputs.push_back({"x", DType::kFloat, {-1, 3}, {"batch", ""}});
  g.outputs.push_back({"y", DType::kFloat, {-1, 3}, {"batch", ""}});
  g.initializers.emplace_back("b", Tensor::from_vector<float>(Shape{3}, {10, 20, 30}));
  return encode_model(g);
}

// out = Identity(in), for `dtype`.
std::string identity_model(DType dtype) {
  GraphSpec g;
  g.nodes.push_back({"Identity", {"in"}, {"out"}});
  g.inputs.push_back({"in", dtype, {2}});
  g.outputs.push_back({"out", dtype, {2}});
  return encode_model(g);
}

/// A session of `model` (bytes) with one intra-op thread; the builder's extra EP when `ep` is set.
OnyxSession* session_of(const std::string& model, const char* ep = nullptr, int error_on_failure = 0) {
  OnyxSessionBuilder* b = nullptr;
  EXPECT_EQ(take(onyx_session_builder_create(&b)).code, ONYX_OK);
  EXPECT_EQ(take(onyx_session_builder_set_intra_threads(b, 1)).code, ONYX_OK);
  if (ep) {
    EXPECT_EQ(take(onyx_session_builder_add_execution_provider(b, ep, nullptr, nullptr, 0, error_on_failure)).code, ONYX_OK);
  }
  OnyxSession* s = nullptr;
  Result r = take(onyx_session_create_from_memory(b, model.data(), model.size(), &s));
  EXPECT_EQ(r.code, ONYX_OK) << r.message;
  onyx_session_builder_release(b);
  return s;
}

std::string temp_file(const std::string& bytes) {
  std::string path = (std::filesystem::temp_directory_path() / "onyx-c-api-XXXXXX").string();
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  FILE* f = fdopen(fd, "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  return path;
}

/// Runs `session` on x (float[rows, 3]) and returns y's values (and its shape through `shape`).
Result run_xy(OnyxSession* s, std::vector<float>& x, int64_t rows, std::vector<float>* y, std::vector<int64_t>* shape) {
  const int64_t dims[2] = {rows, 3};
  OnyxTensor* in = nullptr;
  Result r = take(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, dims, 2, x.data(), x.size() * sizeof(float), &in));
  if (r.code != ONYX_OK) return r;
  const char* in_name = "x";
  const char* out_name = "y";
  const OnyxTensor* inputs[1] = {in};
  OnyxTensor* out = nullptr;
  r = take(onyx_session_run(s, nullptr, &in_name, inputs, 1, &out_name, 1, &out));
  onyx_tensor_release(in);
  if (r.code != ONYX_OK) return r;
  const int64_t* od = nullptr;
  size_t rank = 0;
  void* data = nullptr;
  int64_t n = 0;
  EXPECT_EQ(take(onyx_tensor_shape(out, &od, &rank)).code, ONYX_OK);
  EXPECT_EQ(take(onyx_tensor_data(out, &data)).code, ONYX_OK);
  EXPECT_EQ(take(onyx_tensor_element_count(out, &n)).code, ONYX_OK);
  if (shape) shape->assign(od, od + rank);
  const float* f = static_cast<const float*>(data);
  if (y) y->assign(f, f + n);
  onyx_tensor_release(out);
  return r;
}

}  // namespace

TEST(CApi, Versions) {
  EXPECT_EQ(onyx_api_version(), static_cast<uint32_t>(ONYX_C_API_VERSION));
  EXPECT_STREQ(onyx_version_string(), onyx::version());
  EXPECT_STREQ(onyx_error_code_name(ONYX_ERROR_INVALID_ARGUMENT), "InvalidArgument");
  EXPECT_STREQ(onyx_error_code_name(ONYX_ERROR_INTERNAL), "Internal");
  EXPECT_STREQ(onyx_error_code_name(static_cast<OnyxErrorCode>(99)), "Unknown");
  EXPECT_STREQ(onyx_element_type_name(ONYX_TYPE_FLOAT), "float");
  EXPECT_STREQ(onyx_element_type_name(static_cast<OnyxElementType>(99)), "");
  EXPECT_EQ(onyx_element_type_size(ONYX_TYPE_DOUBLE), 8u);
  EXPECT_EQ(onyx_element_type_size(ONYX_TYPE_STRING), 0u);
  // The element types are ONNX's numbers, as onyx::DType's.
  EXPECT_EQ(static_cast<int>(ONYX_TYPE_BFLOAT16), static_cast<int>(DType::kBFloat16));
  EXPECT_EQ(static_cast<int>(ONYX_TYPE_INT2), static_cast<int>(DType::kInt2));
  EXPECT_EQ(onyx_status_code(nullptr), ONYX_OK);
  EXPECT_STREQ(onyx_status_message(nullptr), "");
}

TEST(CApi, RunsFromMemoryWithCorrectNumbers) {
  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  std::vector<float> x = {-1, 2, -3, 4, -5, 6};
  std::vector<float> y;
  std::vector<int64_t> shape;
  Result r = run_xy(s, x, 2, &y, &shape);
  ASSERT_EQ(r.code, ONYX_OK) << r.message;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y, (std::vector<float>{10, 22, 30, 14, 20, 36}));
  // The input buffer is the caller's and unchanged.
  EXPECT_EQ(x, (std::vector<float>{-1, 2, -3, 4, -5, 6}));

  // Every output, in the model's order, when output_names is NULL.
  const int64_t dims[2] = {1, 3};
  OnyxTensor* in = nullptr;
  C_OK(onyx_tensor_create(ONYX_TYPE_FLOAT, dims, 2, &in));
  void* p = nullptr;
  C_OK(onyx_tensor_data(in, &p));
  static_cast<float*>(p)[1] = 1.5f;
  const char* name = "x";
  OnyxTensor* out = nullptr;
  C_OK(onyx_session_run(s, nullptr, &name, &in, 1, nullptr, 1, &out));
  C_OK(onyx_tensor_data(out, &p));
  EXPECT_EQ(static_cast<float*>(p)[0], 10.f);
  EXPECT_EQ(static_cast<float*>(p)[1], 21.5f);
  OnyxElementType t = ONYX_TYPE_UNDEFINED;
  C_OK(onyx_tensor_element_type(out, &t));
  EXPECT_EQ(t, ONYX_TYPE_FLOAT);
  size_t bytes = 0;
  C_OK(onyx_tensor_size_in_bytes(out, &bytes));
  EXPECT_EQ(bytes, 3 * sizeof(float));
  onyx_tensor_release(out);
  OnyxTensor* two_outs[2] = {nullptr, nullptr};
  C_FAILS(onyx_session_run(s, nullptr, &name, &in, 1, nullptr, 2, two_outs), ONYX_ERROR_INVALID_ARGUMENT,
          "num_outputs must be the model's output count, 1, not 2");
  onyx_tensor_release(in);
  onyx_session_release(s);
}

TEST(CApi, MatchesTheCppApiOnTinyCnnFromFile) {
  const std::string path = std::string(ONYX_EXAMPLE_MODELS) + "/tiny_cnn.onnx";
  OnyxSessionBuilder* b = nullptr;
  C_OK(onyx_session_builder_create(&b));
  C_OK(onyx_session_builder_set_intra_threads(b, 1));
  C_OK(onyx_session_builder_add_execution_provider(b, "cpu", nullptr, nullptr, 0, 1));
  OnyxSession* s = nullptr;
  C_OK(onyx_session_create_from_file(b, path.c_str(), &s));
  onyx_session_builder_release(b);

  const OnyxIoInfo* info = nullptr;
  C_OK(onyx_session_input_info(s, 0, &info));
  const char* in_name = nullptr;
  C_OK(onyx_io_info_name(info, &in_name));
  C_OK(onyx_session_output_info(s, 0, &info));
  const char* out_name = nullptr;
  C_OK(onyx_io_info_name(info, &out_name));

  std::vector<float> x(2 * 3 * 32 * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 101.f - 0.5f;
  const int64_t dims[4] = {2, 3, 32, 32};
  OnyxTensor* in = nullptr;
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, dims, 4, x.data(), x.size() * sizeof(float), &in));
  OnyxTensor* out = nullptr;
  C_OK(onyx_session_run(s, nullptr, &in_name, &in, 1, &out_name, 1, &out));

  Session cpp = Session::builder().with_intra_threads(1).commit_from_file(path);
  const std::vector<Value> want = cpp.run({{in_name, Tensor::view(DType::kFloat, Shape{2, 3, 32, 32}, x.data())}});
  const Tensor& w = want[0].tensor();
  const int64_t* od = nullptr;
  size_t rank = 0;
  C_OK(onyx_tensor_shape(out, &od, &rank));
  ASSERT_EQ(std::vector<int64_t>(od, od + rank), w.shape().to_vector());
  void* data = nullptr;
  C_OK(onyx_tensor_data(out, &data));
  for (int64_t i = 0; i < w.numel(); ++i) EXPECT_EQ(static_cast<float*>(data)[i], w.data<float>()[i]) << i;
  onyx_tensor_release(out);
  onyx_tensor_release(in);
  onyx_session_release(s);
}

TEST(CApi, LoadsFromFileAndReportsIoErrors) {
  const std::string path = temp_file(add_relu_model());
  OnyxSessionBuilder* b = nullptr;
  C_OK(onyx_session_builder_create(&b));
  OnyxSession* s = nullptr;
  C_OK(onyx_session_create_from_file(b, path.c_str(), &s));
  onyx_session_release(s);
  std::remove(path.c_str());
  s = reinterpret_cast<OnyxSession*>(&b);  // must be reset to NULL on failure
  C_FAILS(onyx_session_create_from_file(b, path.c_str(), &s), ONYX_ERROR_IO, path);
  EXPECT_EQ(s, nullptr);
  const std::string junk = "definitely not a model";
  C_FAILS(onyx_session_create_from_memory(b, junk.data(), junk.size(), &s), ONYX_ERROR_INVALID_MODEL, "");
  EXPECT_EQ(s, nullptr);
  onyx_session_builder_release(b);
}

TEST(CApi, OneSessionRunsFromManyThreads) {
  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::vector<float> x = {float(t), float(-i), float(i)};
        std::vector<float> y;
        if (run_xy(s, x, 1, &y, nullptr).code != ONYX_OK || y != std::vector<float>{t + 10.f, 20.f, i + 30.f}) ++bad[t];
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
  onyx_session_release(s);
}

TEST(CApi, Metadata) {
  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  size_t n = 0;
  C_OK(onyx_session_input_count(s, &n));
  EXPECT_EQ(n, 1u);
  C_OK(onyx_session_output_count(s, &n));
  EXPECT_EQ(n, 1u);

  const OnyxIoInfo* in = nullptr;
  C_OK(onyx_session_input_info(s, 0, &in));
  const char* str = nullptr;
  C_OK(onyx_io_info_name(in, &str));
  EXPECT_STREQ(str, "x");
  OnyxValueKind kind = ONYX_VALUE_MAP;
  C_OK(onyx_io_info_kind(in, &kind));
  EXPECT_EQ(kind, ONYX_VALUE_TENSOR);
  OnyxElementType t = ONYX_TYPE_UNDEFINED;
  C_OK(onyx_io_info_element_type(in, &t));
  EXPECT_EQ(t, ONYX_TYPE_FLOAT);
  const int64_t* dims = nullptr;
  int64_t rank = 0;
  C_OK(onyx_io_info_shape(in, &dims, &rank));
  ASSERT_EQ(rank, 2);
  EXPECT_EQ(dims[0], -1);
  EXPECT_EQ(dims[1], 3);
  C_OK(onyx_io_info_dim_name(in, 0, &str));
  EXPECT_STREQ(str, "batch");
  C_OK(onyx_io_info_dim_name(in, 1, &str));
  EXPECT_STREQ(str, "");
  C_FAILS(onyx_io_info_dim_name(in, 2, &str), ONYX_ERROR_INVALID_ARGUMENT, "has rank 2, so it has no dim 2");
  int has_default = 1;
  C_OK(onyx_io_info_has_default(in, &has_default));
  EXPECT_EQ(has_default, 0);
  C_OK(onyx_io_info_type_string(in, &str));
  EXPECT_STREQ(str, "float[batch,3]");

  const OnyxIoInfo* out = nullptr;
  C_OK(onyx_session_output_info(s, 0, &out));
  C_OK(onyx_io_info_name(out, &str));
  EXPECT_STREQ(str, "y");
  C_FAILS(onyx_session_input_info(s, 1, &in), ONYX_ERROR_INVALID_ARGUMENT, "input index 1 is out of range: the model has 1 inputs");
  C_FAILS(onyx_session_output_info(s, 5, &out), ONYX_ERROR_INVALID_ARGUMENT, "output index 5 is out of range");
  onyx_session_release(s);
}

TEST(CApi, BadInputsGiveOnyxsMessages) {
  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  const char* out_name = "y";
  OnyxTensor* out = reinterpret_cast<OnyxTensor*>(s);  // reset to NULL on failure

  std::vector<float> x(8, 1.f);
  const int64_t good[2] = {2, 3}, bad[2] = {2, 4};
  OnyxTensor* t = nullptr;
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, good, 2, x.data(), 6 * sizeof(float), &t));
  const char* wrong = "nope";
  C_FAILS(onyx_session_run(s, nullptr, &wrong, &t, 1, &out_name, 1, &out), ONYX_ERROR_INVALID_ARGUMENT,
          "the model has no input named 'nope' (inputs: 'x')");
  EXPECT_EQ(out, nullptr);
  const char* in_name = "x";
  const char* wrong_out = "z";
  C_FAILS(onyx_session_run(s, nullptr, &in_name, &t, 1, &wrong_out, 1, &out), ONYX_ERROR_INVALID_ARGUMENT,
          "the model has no output named 'z' (outputs: 'y')");
  onyx_tensor_release(t);

  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, bad, 2, x.data(), 8 * sizeof(float), &t));
  C_FAILS(onyx_session_run(s, nullptr, &in_name, &t, 1, &out_name, 1, &out), ONYX_ERROR_INVALID_ARGUMENT,
          "input 'x' has shape [2,4] but the model expects [batch,3]");
  onyx_tensor_release(t);

  std::vector<int32_t> xi(6, 1);
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_INT32, good, 2, xi.data(), 6 * sizeof(int32_t), &t));
  C_FAILS(onyx_session_run(s, nullptr, &in_name, &t, 1, &out_name, 1, &out), ONYX_ERROR_INVALID_ARGUMENT,
          "input 'x' has type int32 but the model expects float");
  onyx_tensor_release(t);

  // A NULL input tensor passes no value: x has no default, so it is missing.
  const OnyxTensor* none = nullptr;
  C_FAILS(onyx_session_run(s, nullptr, &in_name, &none, 1, &out_name, 1, &out), ONYX_ERROR_INVALID_ARGUMENT,
          "missing input 'x' (float[batch,3])");
  C_FAILS(onyx_session_run(s, nullptr, nullptr, nullptr, 0, &out_name, 1, &out), ONYX_ERROR_INVALID_ARGUMENT,
          "missing input 'x'");
  EXPECT_EQ(out, nullptr);
  onyx_session_release(s);
}

TEST(CApi, Tensors) {
  const int64_t dims[3] = {2, 0, 3};
  OnyxTensor* t = nullptr;
  C_OK(onyx_tensor_create(ONYX_TYPE_INT64, dims, 3, &t));
  int64_t n = -1;
  C_OK(onyx_tensor_element_count(t, &n));
  EXPECT_EQ(n, 0);
  onyx_tensor_release(t);
  C_OK(onyx_tensor_create(ONYX_TYPE_DOUBLE, nullptr, 0, &t));  // a scalar
  void* p = nullptr;
  C_OK(onyx_tensor_data(t, &p));
  EXPECT_EQ(*static_cast<double*>(p), 0.0);  // zero-initialised
  const int64_t* sd = nullptr;
  size_t rank = 7;
  C_OK(onyx_tensor_shape(t, &sd, &rank));
  EXPECT_EQ(rank, 0u);
  onyx_tensor_release(t);

  // Wrong sizes, shapes, alignment and types.
  std::vector<float> buf(7);
  const int64_t two_three[2] = {2, 3}, negative[2] = {2, -1};
  t = reinterpret_cast<OnyxTensor*>(&buf);
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, two_three, 2, buf.data(), 7 * sizeof(float), &t),
          ONYX_ERROR_INVALID_ARGUMENT, "a float[2,3] tensor needs 24 bytes, but data_size is 28");
  EXPECT_EQ(t, nullptr);
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, two_three, 2, reinterpret_cast<char*>(buf.data()) + 2, 24, &t),
          ONYX_ERROR_INVALID_ARGUMENT, "is not aligned to 4 bytes, as float elements need");
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, negative, 2, buf.data(), 8, &t), ONYX_ERROR_INVALID_ARGUMENT,
          "dim 1 of the shape is -1 (must be >= 0)");
  C_FAILS(onyx_tensor_create(static_cast<OnyxElementType>(42), two_three, 2, &t), ONYX_ERROR_INVALID_ARGUMENT,
          "onyx_tensor_create: 42 is not an element type");
  C_FAILS(onyx_tensor_create(ONYX_TYPE_UNDEFINED, two_three, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "is not an element type");
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_STRING, two_three, 2, buf.data(), 24, &t), ONYX_ERROR_INVALID_ARGUMENT,
          "a string tensor cannot wrap a buffer");
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, two_three, 2, nullptr, 24, &t), ONYX_ERROR_INVALID_ARGUMENT,
          "onyx_tensor_create_over_buffer: data is NULL");
  const int64_t huge[2] = {int64_t(1) << 40, int64_t(1) << 40};
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, huge, 2, buf.data(), 24, &t), ONYX_ERROR_INVALID_ARGUMENT,
          "overflows");
  C_FAILS(onyx_tensor_create(ONYX_TYPE_FLOAT, huge, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "");
  EXPECT_EQ(t, nullptr);
  const int64_t empty[1] = {0};
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, empty, 1, nullptr, 0, &t));  // no elements, no buffer
  onyx_tensor_release(t);

  // Strings: set and read back by flat index.
  const int64_t two[1] = {2};
  C_OK(onyx_tensor_create(ONYX_TYPE_STRING, two, 1, &t));
  C_OK(onyx_tensor_set_string(t, 1, "hello", 5));
  const char* s = nullptr;
  size_t len = 9;
  C_OK(onyx_tensor_string(t, 0, &s, &len));
  EXPECT_EQ(len, 0u);
  EXPECT_STREQ(s, "");
  C_OK(onyx_tensor_string(t, 1, &s, &len));
  EXPECT_EQ(std::string(s, len), "hello");
  C_FAILS(onyx_tensor_string(t, 2, &s, &len), ONYX_ERROR_INVALID_ARGUMENT, "index 2 is out of range: the tensor has 2 elements");
  C_FAILS(onyx_tensor_data(t, &p), ONYX_ERROR_INVALID_ARGUMENT, "onyx_tensor_string");
  size_t bytes = 0;
  C_FAILS(onyx_tensor_size_in_bytes(t, &bytes), ONYX_ERROR_INVALID_ARGUMENT, "string tensor");
  onyx_tensor_release(t);
  C_OK(onyx_tensor_create(ONYX_TYPE_FLOAT, two, 1, &t));
  C_FAILS(onyx_tensor_set_string(t, 0, "x", 1), ONYX_ERROR_INVALID_ARGUMENT, "element type is float, not string");
  onyx_tensor_release(t);
}

TEST(CApi, StringsThroughARun) {
  OnyxSession* s = session_of(identity_model(DType::kString));
  ASSERT_NE(s, nullptr);
  const int64_t two[1] = {2};
  OnyxTensor* in = nullptr;
  C_OK(onyx_tensor_create(ONYX_TYPE_STRING, two, 1, &in));
  C_OK(onyx_tensor_set_string(in, 0, "ab", 2));
  C_OK(onyx_tensor_set_string(in, 1, "c\0d", 3));  // embedded NUL kept
  const char* in_name = "in";
  OnyxTensor* out = nullptr;
  C_OK(onyx_session_run(s, nullptr, &in_name, &in, 1, nullptr, 1, &out));
  const char* str = nullptr;
  size_t len = 0;
  C_OK(onyx_tensor_string(out, 1, &str, &len));
  EXPECT_EQ(std::string(str, len), std::string("c\0d", 3));
  onyx_tensor_release(out);
  onyx_tensor_release(in);
  onyx_session_release(s);
}

TEST(CApi, OutputsDoNotShareTheCallersBuffer) {
  OnyxSession* s = session_of(identity_model(DType::kFloat));
  ASSERT_NE(s, nullptr);
  float x[2] = {1, 2};
  const int64_t two[1] = {2};
  OnyxTensor* in = nullptr;
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, two, 1, x, sizeof x, &in));
  const char* in_name = "in";
  OnyxTensor* out = nullptr;
  C_OK(onyx_session_run(s, nullptr, &in_name, &in, 1, nullptr, 1, &out));
  onyx_tensor_release(in);
  x[0] = 99;
  void* p = nullptr;
  C_OK(onyx_tensor_data(out, &p));
  EXPECT_NE(p, static_cast<void*>(x));
  EXPECT_EQ(static_cast<float*>(p)[0], 1.f);
  onyx_tensor_release(out);
  onyx_session_release(s);
}

TEST(CApi, UnknownEpWithAndWithoutErrorOnFailure) {
  // Skipped, and said so in the registration report.
  OnyxSession* s = session_of(add_relu_model(), "no_such_ep", 0);
  ASSERT_NE(s, nullptr);
  size_t n = 0;
  C_OK(onyx_session_registration_count(s, &n));
  ASSERT_EQ(n, 2u);
  const char* name = nullptr;
  const char* reason = nullptr;
  OnyxEpSource source = ONYX_EP_SOURCE_IMPLICIT;
  OnyxEpOutcome outcome = ONYX_EP_REGISTERED;
  C_OK(onyx_session_registration(s, 0, &name, &source, &outcome, &reason));
  EXPECT_STREQ(name, "no_such_ep");
  EXPECT_EQ(source, ONYX_EP_SOURCE_SESSION);
  EXPECT_EQ(outcome, ONYX_EP_SKIPPED);
  EXPECT_NE(std::string(reason).find("unknown execution provider 'no_such_ep'"), std::string::npos) << reason;
  int32_t priority = 0;
  C_OK(onyx_session_registration_details(s, 0, &priority, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(priority, -1);
  C_OK(onyx_session_registration(s, 1, &name, &source, &outcome, nullptr));
  EXPECT_STREQ(name, "cpu");
  EXPECT_EQ(source, ONYX_EP_SOURCE_IMPLICIT);
  EXPECT_EQ(outcome, ONYX_EP_REGISTERED);
  const char* device = nullptr;
  int eof = 1;
  C_OK(onyx_session_registration_details(s, 1, &priority, nullptr, &device, nullptr, &eof));
  EXPECT_EQ(priority, 0);
  EXPECT_STREQ(device, "cpu:0");
  EXPECT_EQ(eof, 0);
  C_FAILS(onyx_session_registration(s, 2, &name, nullptr, nullptr, nullptr), ONYX_ERROR_INVALID_ARGUMENT,
          "registration index 2 is out of range: the session has 2 EP requests");
  onyx_session_release(s);

  // An error with error_on_failure.
  OnyxSessionBuilder* b = nullptr;
  C_OK(onyx_session_builder_create(&b));
  C_OK(onyx_session_builder_add_execution_provider(b, "no_such_ep", nullptr, nullptr, 0, 1));
  const std::string m = add_relu_model();
  C_FAILS(onyx_session_create_from_memory(b, m.data(), m.size(), &s), ONYX_ERROR_NOT_AVAILABLE,
          "execution provider 'no_such_ep' (requested by the session with error_on_failure) could not be registered");
  EXPECT_EQ(s, nullptr);
  onyx_session_builder_release(b);
}

TEST(CApi, EpOptions) {
  const std::string m = add_relu_model();
  OnyxSessionBuilder* b = nullptr;
  C_OK(onyx_session_builder_create(&b));
  const char* keys[2] = {"prefer_nhwc", "half_in_float"};
  const char* values[2] = {"false", "true"};
  C_OK(onyx_session_builder_add_execution_provider(b, "cpu", keys, values, 2, 1));
  OnyxSession* s = nullptr;
  C_OK(onyx_session_create_from_memory(b, m.data(), m.size(), &s));
  size_t n = 0;
  C_OK(onyx_session_registration_count(s, &n));
  ASSERT_EQ(n, 1u);  // cpu listed: no implicit one
  C_OK(onyx_session_registration_option_count(s, 0, &n));
  bool found = false;
  for (size_t i = 0; i < n; ++i) {
    const char* k = nullptr;
    const char* v = nullptr;
    C_OK(onyx_session_registration_option(s, 0, i, &k, &v));
    if (std::string(k) == "prefer_nhwc") {
      found = true;
      EXPECT_STREQ(v, "false");
    }
  }
  EXPECT_TRUE(found);
  C_FAILS(onyx_session_registration_option(s, 0, n, nullptr, nullptr), ONYX_ERROR_INVALID_ARGUMENT, "is out of range");
  onyx_session_release(s);
  onyx_session_builder_release(b);

  // A malformed option fails creation with or without error_on_failure.
  C_OK(onyx_session_builder_create(&b));
  const char* bad_key[1] = {"no_such_option"};
  const char* bad_value[1] = {"1"};
  C_OK(onyx_session_builder_add_execution_provider(b, "cpu", bad_key, bad_value, 1, 0));
  C_FAILS(onyx_session_create_from_memory(b, m.data(), m.size(), &s), ONYX_ERROR_INVALID_ARGUMENT, "no_such_option");
  onyx_session_builder_release(b);

  // NULL entries in the option arrays.
  C_OK(onyx_session_builder_create(&b));
  const char* null_value[1] = {nullptr};
  C_FAILS(onyx_session_builder_add_execution_provider(b, "cpu", bad_key, null_value, 1, 0), ONYX_ERROR_INVALID_ARGUMENT,
          "option_values[0] (option 'no_such_option' of execution provider 'cpu') is NULL");
  C_FAILS(onyx_session_builder_add_execution_provider(b, "cpu", nullptr, nullptr, 1, 0), ONYX_ERROR_INVALID_ARGUMENT,
          "option_keys is NULL");
  C_FAILS(onyx_session_builder_add_execution_provider(b, "", nullptr, nullptr, 0, 0), ONYX_ERROR_INVALID_ARGUMENT,
          "name is empty");
  onyx_session_builder_release(b);
}

TEST(CApi, BuilderOptions) {
  const std::string m = add_relu_model();
  OnyxSessionBuilder* b = nullptr;
  C_OK(onyx_session_builder_create(&b));
  C_OK(onyx_session_builder_set_optimization_level(b, ONYX_OPTIMIZATION_DISABLED));
  C_OK(onyx_session_builder_set_intra_op_spinning(b, 0));
  C_OK(onyx_session_builder_set_memory_limit(b, 0));
  C_OK(onyx_session_builder_set_dimension_override(b, "batch", 4));
  C_FAILS(onyx_session_builder_set_optimization_level(b, static_cast<OnyxOptimizationLevel>(7)), ONYX_ERROR_INVALID_ARGUMENT,
          "7 is not an optimization level");
  C_FAILS(onyx_session_builder_set_intra_threads(b, -2), ONYX_ERROR_INVALID_ARGUMENT, "thread count must be >= 0");
  C_FAILS(onyx_session_builder_set_dimension_override(b, "batch", -1), ONYX_ERROR_INVALID_ARGUMENT, "must be >= 0");
  OnyxSession* s = nullptr;
  C_OK(onyx_session_create_from_memory(b, m.data(), m.size(), &s));
  const OnyxIoInfo* in = nullptr;
  C_OK(onyx_session_input_info(s, 0, &in));
  const int64_t* dims = nullptr;
  int64_t rank = 0;
  C_OK(onyx_io_info_shape(in, &dims, &rank));
  ASSERT_EQ(rank, 2);
  EXPECT_EQ(dims[0], 4);  // the override applied
  onyx_session_release(s);
  onyx_session_builder_release(b);

  // Strict placement: no CPU fallback, and no EP but the CPU one, so creation fails.
  C_OK(onyx_session_builder_create(&b));
  C_OK(onyx_session_builder_set_cpu_fallback(b, 0));
  C_FAILS(onyx_session_create_from_memory(b, m.data(), m.size(), &s), ONYX_ERROR_EP_FAILURE,
          "CPU fallback is disabled but 2 node(s) would run on the CPU EP");
  EXPECT_EQ(s, nullptr);
  C_OK(onyx_session_builder_set_input_dimension(b, "nope", 0, 1));
  onyx_session_builder_release(b);
}

TEST(CApi, Placement) {
  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  OnyxPlacement* p = nullptr;
  C_OK(onyx_session_placement(s, &p));
  size_t n = 0;
  C_OK(onyx_placement_node_count(p, &n));
  const std::string m = add_relu_model();
  const Placement want = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size()).placement();
  ASSERT_EQ(n, want.nodes.size());
  ASSERT_GE(n, 1u);
  for (size_t i = 0; i < n; ++i) {
    const char *name = nullptr, *op = nullptr, *domain = nullptr, *ep = nullptr, *device = nullptr;
    int32_t region = 7;
    C_OK(onyx_placement_node(p, i, &name, &op, &domain, &ep, &device, &region));
    EXPECT_EQ(name, want.nodes[i].name);
    EXPECT_EQ(op, want.nodes[i].op_type);
    EXPECT_EQ(domain, want.nodes[i].domain);
    EXPECT_STREQ(ep, "cpu");
    EXPECT_EQ(device, want.nodes[i].device);
    EXPECT_EQ(region, -1);
    size_t declines = 9;
    C_OK(onyx_placement_node_decline_count(p, i, &declines));
    EXPECT_EQ(declines, 0u);
    C_FAILS(onyx_placement_node_decline(p, i, 0, nullptr, nullptr, nullptr), ONYX_ERROR_INVALID_ARGUMENT,
            "decline index 0 is out of range");
  }
  C_FAILS(onyx_placement_node(p, n, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), ONYX_ERROR_INVALID_ARGUMENT,
          "node index");
  C_OK(onyx_placement_copy_count(p, &n));
  EXPECT_EQ(n, 0u);
  C_FAILS(onyx_placement_copy(p, 0, nullptr, nullptr, nullptr, nullptr), ONYX_ERROR_INVALID_ARGUMENT, "copy index 0");
  const char* summary = nullptr;
  C_OK(onyx_placement_summary(p, &summary));
  EXPECT_EQ(summary, want.summary);
  onyx_placement_release(p);
  onyx_session_release(s);
}

TEST(CApi, Availability) {
  OnyxEpAvailability* a = nullptr;
  C_OK(onyx_ep_availability("cpu", &a));
  int built = 0, loadable = 0, usable = 0;
  const char* reason = nullptr;
  C_OK(onyx_ep_availability_get(a, &built, &loadable, &usable, &reason, nullptr, nullptr));
  EXPECT_EQ(built + loadable + usable, 3);
  EXPECT_STREQ(reason, "");
  onyx_ep_availability_release(a);

  C_OK(onyx_ep_availability("no_such_ep", &a));
  C_OK(onyx_ep_availability_get(a, &built, &loadable, &usable, &reason, nullptr, nullptr));
  EXPECT_EQ(built + loadable + usable, 0);
  EXPECT_NE(std::string(reason).find("unknown execution provider 'no_such_ep'"), std::string::npos) << reason;
  onyx_ep_availability_release(a);

  // A known EP that no onyx builds: the same reason as the C++ API's.
  C_OK(onyx_ep_availability("tensorrt", &a));
  C_OK(onyx_ep_availability_get(a, nullptr, nullptr, &usable, &reason, nullptr, nullptr));
  EXPECT_EQ(usable, 0);
  EXPECT_EQ(std::string(reason), ep::TensorRT().availability().reason);
  onyx_ep_availability_release(a);
}

TEST(CApi, EnvironmentDefaultEps) {
  OnyxEnv* env = nullptr;
  C_OK(onyx_env_create(&env));
  C_OK(onyx_env_add_execution_provider(env, "no_such_ep", nullptr, nullptr, 0, 0));
  C_OK(onyx_env_commit(env));
  onyx_env_release(env);

  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  const char* name = nullptr;
  OnyxEpSource source = ONYX_EP_SOURCE_SESSION;
  C_OK(onyx_session_registration(s, 0, &name, &source, nullptr, nullptr));
  EXPECT_STREQ(name, "no_such_ep");
  EXPECT_EQ(source, ONYX_EP_SOURCE_ENVIRONMENT);
  onyx_session_release(s);

  // A session may leave the environment's EPs out.
  OnyxSessionBuilder* b = nullptr;
  C_OK(onyx_session_builder_create(&b));
  C_OK(onyx_session_builder_disable_environment_execution_providers(b));
  const std::string m = add_relu_model();
  C_OK(onyx_session_create_from_memory(b, m.data(), m.size(), &s));
  size_t n = 0;
  C_OK(onyx_session_registration_count(s, &n));
  EXPECT_EQ(n, 1u);
  onyx_session_release(s);
  onyx_session_builder_release(b);

  // Back to no defaults for the other tests.
  C_OK(onyx_env_create(&env));
  C_OK(onyx_env_commit(env));
  onyx_env_release(env);
  s = session_of(add_relu_model());
  C_OK(onyx_session_registration_count(s, &n));
  EXPECT_EQ(n, 1u);
  onyx_session_release(s);
}

TEST(CApi, TerminatedRunOptionsCancel) {
  OnyxSession* s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  OnyxRunOptions* o = nullptr;
  C_OK(onyx_run_options_create(&o));
  C_OK(onyx_run_options_terminate(o));
  float x[3] = {1, 2, 3};
  const int64_t dims[2] = {1, 3};
  OnyxTensor* in = nullptr;
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, dims, 2, x, sizeof x, &in));
  const char* name = "x";
  OnyxTensor* out = nullptr;
  C_FAILS(onyx_session_run(s, o, &name, &in, 1, nullptr, 1, &out), ONYX_ERROR_CANCELLED, "");
  EXPECT_EQ(out, nullptr);
  C_OK(onyx_run_options_reset(o));
  C_OK(onyx_session_run(s, o, &name, &in, 1, nullptr, 1, &out));
  onyx_tensor_release(out);
  onyx_tensor_release(in);
  onyx_run_options_release(o);
  onyx_session_release(s);
}

TEST(CApi, NullArgumentsAreInvalidArguments) {
  const auto null_arg = ONYX_ERROR_INVALID_ARGUMENT;
  OnyxSessionBuilder* b = nullptr;
  C_FAILS(onyx_session_builder_create(nullptr), null_arg, "onyx_session_builder_create: out is NULL");
  C_OK(onyx_session_builder_create(&b));
  OnyxSession* s = nullptr;
  C_FAILS(onyx_session_create_from_file(nullptr, "m.onnx", &s), null_arg, "onyx_session_create_from_file: builder is NULL");
  C_FAILS(onyx_session_create_from_file(b, nullptr, &s), null_arg, "onyx_session_create_from_file: path is NULL");
  C_FAILS(onyx_session_create_from_file(b, "m.onnx", nullptr), null_arg, "out is NULL");
  C_FAILS(onyx_session_create_from_memory(b, nullptr, 10, &s), null_arg, "onyx_session_create_from_memory: data is NULL");
  C_FAILS(onyx_session_builder_add_execution_provider(nullptr, "cpu", nullptr, nullptr, 0, 0), null_arg, "builder is NULL");
  C_FAILS(onyx_session_builder_add_execution_provider(b, nullptr, nullptr, nullptr, 0, 0), null_arg, "name is NULL");
  C_FAILS(onyx_session_builder_set_intra_threads(nullptr, 1), null_arg, "builder is NULL");
  C_FAILS(onyx_session_builder_set_dimension_override(b, nullptr, 1), null_arg, "name is NULL");
  C_FAILS(onyx_session_builder_set_external_data_dir(b, nullptr), null_arg, "dir is NULL");
  C_FAILS(onyx_env_create(nullptr), null_arg, "onyx_env_create: out is NULL");
  C_FAILS(onyx_env_commit(nullptr), null_arg, "env is NULL");
  C_FAILS(onyx_env_add_execution_provider(nullptr, "cpu", nullptr, nullptr, 0, 0), null_arg, "env is NULL");
  C_FAILS(onyx_set_log_level(static_cast<OnyxLogLevel>(12)), null_arg, "12 is not a log level");

  s = session_of(add_relu_model());
  ASSERT_NE(s, nullptr);
  size_t n = 0;
  C_FAILS(onyx_session_input_count(nullptr, &n), null_arg, "onyx_session_input_count: session is NULL");
  C_FAILS(onyx_session_output_count(s, nullptr), null_arg, "onyx_session_output_count: out is NULL");
  const OnyxIoInfo* info = nullptr;
  C_FAILS(onyx_session_input_info(s, 0, nullptr), null_arg, "out is NULL");
  const char* str = nullptr;
  C_FAILS(onyx_io_info_name(nullptr, &str), null_arg, "onyx_io_info_name: info is NULL");
  C_OK(onyx_session_input_info(s, 0, &info));
  const int64_t* dims = nullptr;
  C_FAILS(onyx_io_info_shape(info, &dims, nullptr), null_arg, "rank is NULL");

  float x[3] = {1, 2, 3};
  const int64_t shape[2] = {1, 3};
  OnyxTensor* in = nullptr;
  C_FAILS(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, nullptr, 2, x, sizeof x, &in), null_arg, "shape is NULL");
  C_FAILS(onyx_tensor_create(ONYX_TYPE_FLOAT, shape, 2, nullptr), null_arg, "out is NULL");
  C_OK(onyx_tensor_create_over_buffer(ONYX_TYPE_FLOAT, shape, 2, x, sizeof x, &in));
  const char* name = "x";
  OnyxTensor* out = nullptr;
  C_FAILS(onyx_session_run(nullptr, nullptr, &name, &in, 1, nullptr, 1, &out), null_arg, "onyx_session_run: session is NULL");
  C_FAILS(onyx_session_run(s, nullptr, nullptr, &in, 1, nullptr, 1, &out), null_arg, "input_names is NULL");
  C_FAILS(onyx_session_run(s, nullptr, &name, nullptr, 1, nullptr, 1, &out), null_arg, "inputs is NULL");
  C_FAILS(onyx_session_run(s, nullptr, &name, &in, 1, nullptr, 1, nullptr), null_arg, "outputs is NULL");
  const char* null_name = nullptr;
  C_FAILS(onyx_session_run(s, nullptr, &null_name, &in, 1, nullptr, 1, &out), null_arg, "input_names[0] is NULL");
  C_FAILS(onyx_session_run(s, nullptr, &name, &in, 1, &null_name, 1, &out), null_arg, "output_names[0] is NULL");
  C_FAILS(onyx_tensor_data(nullptr, nullptr), null_arg, "onyx_tensor_data: tensor is NULL");
  C_FAILS(onyx_tensor_shape(in, nullptr, &n), null_arg, "dims is NULL");
  C_FAILS(onyx_tensor_element_type(nullptr, nullptr), null_arg, "tensor is NULL");
  C_FAILS(onyx_tensor_string(nullptr, 0, &str, &n), null_arg, "tensor is NULL");
  C_FAILS(onyx_tensor_set_string(in, 0, nullptr, 3), null_arg, "data is NULL");
  onyx_tensor_release(in);

  C_FAILS(onyx_session_placement(nullptr, nullptr), null_arg, "session is NULL");
  C_FAILS(onyx_placement_summary(nullptr, &str), null_arg, "placement is NULL");
  C_FAILS(onyx_placement_node(nullptr, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), null_arg, "placement is NULL");
  C_FAILS(onyx_session_registration(nullptr, 0, nullptr, nullptr, nullptr, nullptr), null_arg, "session is NULL");
  C_FAILS(onyx_session_registration_count(s, nullptr), null_arg, "out is NULL");
  OnyxEpAvailability* a = nullptr;
  C_FAILS(onyx_ep_availability(nullptr, &a), null_arg, "onyx_ep_availability: name is NULL");
  C_FAILS(onyx_ep_availability_get(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), null_arg,
          "availability is NULL");
  C_FAILS(onyx_run_options_create(nullptr), null_arg, "out is NULL");
  C_FAILS(onyx_run_options_terminate(nullptr), null_arg, "options is NULL");

  // Releasing NULL is fine.
  onyx_status_release(nullptr);
  onyx_env_release(nullptr);
  onyx_session_builder_release(nullptr);
  onyx_session_release(nullptr);
  onyx_tensor_release(nullptr);
  onyx_placement_release(nullptr);
  onyx_run_options_release(nullptr);
  onyx_ep_availability_release(nullptr);
  onyx_session_release(s);
  onyx_session_builder_release(b);
}
