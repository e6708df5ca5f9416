// A small CNN for the channels-last tests (an EP preferring channels-last against the CPU EP):
// convolutions, a residual sum, a constant broadcast, pooling, batch normalisation, a channel
// Concat and Softmax, and a graph output read from the middle of the channels-last chain.
#pragma once

#include "ep_test_util.hpp"
#include "model_builder.hpp"

namespace onyx::test {

// x [1,3,10,10] -> Conv 3x3 (+bias) -> Relu = r1 -> Conv 3x3 -> * k[8,1,1] -> + r1 -> Relu = r2
// r2 -> Sigmoid = side (a graph output)
// r2 -> MaxPool 2x2/2 -> BatchNormalization -> { Conv 1x1, Conv 1x1 } -> Concat(axis 1)
//    -> Softmax(axis 1) -> GlobalAveragePool -> Flatten = y [1,8]
inline GraphSpec channels_last_cnn_graph() {
  GraphSpec g;
  g.nodes.push_back({"Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv1"});
  g.nodes.push_back({"Relu", {"c1"}, {"r1"}, {}, "relu1"});
  g.nodes.push_back({"Conv", {"r1", "w2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv2"});
  g.nodes.push_back({"Mul", {"c2", "k"}, {"m"}, {}, "scale"});
  g.nodes.push_back({"Add", {"m", "r1"}, {"a"}, {}, "residual"});
  g.nodes.push_back({"Relu", {"a"}, {"r2"}, {}, "relu2"});
  g.nodes.push_back({"Sigmoid", {"r2"}, {"side"}, {}, "side"});
  g.nodes.push_back({"MaxPool", {"r2"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, "pool"});
  g.nodes.push_back({"BatchNormalization", {"p", "bn_s", "bn_b", "bn_m", "bn_v"}, {"n"}, {}, "bn"});
  g.nodes.push_back({"Conv", {"n", "w3"}, {"c3"}, {}, "conv3"});
  g.nodes.push_back({"Conv", {"n", "w4"}, {"c4"}, {}, "conv4"});
  g.nodes.push_back({"Concat", {"c3", "c4"}, {"cat"}, {attr_int("axis", 1)}, "cat"});
  g.nodes.push_back({"Softmax", {"cat"}, {"sm"}, {attr_int("axis", 1)}, "softmax"});
  g.nodes.push_back({"GlobalAveragePool", {"sm"}, {"gap"}, {}, "gap"});
  g.nodes.push_back({"Flatten", {"gap"}, {"y"}, {}, "flatten"});
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 10, 10}});
  g.outputs.push_back({"y", DType::kFloat, {1, 8}});
  g.outputs.push_back({"side", DType::kFloat, {1, 8, 10, 10}});
  g.initializers.emplace_back("w1", random_tensor(Shape{8, 3, 3, 3}, 11));
  g.initializers.emplace_back("b1", random_tensor(Shape{8}, 12));
  g.initializers.emplace_back("w2", random_tensor(Shape{8, 8, 3, 3}, 13, -0.3f, 0.3f));
  g.initializers.emplace_back("k", random_tensor(Shape{8, 1, 1}, 14, 0.5f, 1.5f));
  g.initializers.emplace_back("bn_s", random_tensor(Shape{8}, 15, 0.5f, 1.5f));
  g.initializers.emplace_back("bn_b", random_tensor(Shape{8}, 16));
  g.initializers.emplace_back("bn_m", random_tensor(Shape{8}, 17));
  g.initializers.emplace_back("bn_v", random_tensor(Shape{8}, 18, 0.5f, 2.0f));
  g.initializers.emplace_back("w3", random_tensor(Shape{4, 8, 1, 1}, 19));
  g.initializers.emplace_back("w4", random_tensor(Shape{4, 8, 1, 1}, 20));
  return g;
}

}  // namespace onyx::test
