// Which nodes the oneDNN EP takes, with a precise reason for every refusal.
#include <algorithm>
#include <set>

#include "onednn_ep.hpp"
#include "ops/nn.hpp"
#include "ops/reduce.hpp"

namespace onyx::onednn {
namespace {

const std::set<std::string>& eltwise_ops() {
  static const std::set<std::string> s = {"Relu", "LeakyRelu", "Elu",      "Tanh",      "Sigmoid",  "Abs",  "Sqrt",
                                          "Exp",  "Log",       "Neg",      "Reciprocal", "Round",   "Mish", "HardSwish",
                                          "Softplus", "Selu",  "Celu",     "HardSigmoid", "Gelu",   "Clip", "Pow",
                                          "Softsign"};
  return s;
}

const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> s = {"ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",    "ReduceProd",
                                          "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  return s;
}

const std::set<std::string>& layout_ops() {
  static const std::set<std::string> s = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout"};
  return s;
}

class Claim {
 public:
  Claim(const ClaimInfo& info, Decline* why) : info_(info), n_(info.node), g_(info.graph), why_(why) {}

  bool decline(DeclineCode c, std::string m) {
    *why_ = {c, std::move(m)};
    return false;
  }

  const TypeInfo* in(size_t i) const { return i < info_.input_types.size() ? info_.input_types[i] : nullptr; }
  const TypeInfo* out(size_t i) const { return i < info_.output_types.size() ? info_.output_types[i] : nullptr; }
  std::string in_name(size_t i) const { return g_.values[n_.inputs[i]].name; }
  /// Rank of input i, or -1 when unknown.
  int rank(size_t i) const {
    const TypeInfo* t = in(i);
    return t && t->is_tensor() && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
  }

  /// Inputs in `data` (all given inputs when empty) and output 0 must be float tensors.
  bool float_io(std::initializer_list<size_t> data = {}) {
    std::vector<size_t> idx(data);
    if (data.size() == 0)
      for (size_t i = 0; i < n_.inputs.size(); ++i) idx.push_back(i);
    data_ = idx;
    for (size_t i : idx) {
      if (!n_.has_input(i)) continue;
      const TypeInfo* t = in(i);
      if (!t || !t->is_tensor())
        return decline(DeclineCode::kUnsupportedType, str("float tensors only; input ", i, " ('", in_name(i), "') is not a tensor"));
      if (t->dtype != DType::kFloat)
        return decline(DeclineCode::kUnsupportedType,
                       str("float only; input ", i, " ('", in_name(i), "') is ", dtype_name(t->dtype)));
    }
    for (size_t o = 0; o < n_.outputs.size(); ++o) {
      if (!n_.has_output(o)) continue;
      const TypeInfo* t = out(o);
      if (t && t->is_tensor() && t->dtype != DType::kFloat && t->dtype != DType::kUndefined)
        return decline(DeclineCode::kUnsupportedType, str("float only; output ", o, " is ", dtype_name(t->dtype)));
    }
    return true;
  }

  /// No tensor with a known zero dim (oneDNN does not run empty tensors).
  bool not_empty() {
    auto empty = [](const TypeInfo* t) {
      if (!t || !t->is_tensor() || !t->has_shape) return false;
      for (int64_t d : t->shape)
        if (d == 0) return true;
      return false;
    };
    for (size_t i : data_)
      if (n_.has_input(i) && empty(in(i)))
        return decline(DeclineCode::kDynamicShape, str("input ", i, " ('", in_name(i), "') is an empty tensor"));
    for (size_t o = 0; o < n_.outputs.size(); ++o)
      if (n_.has_output(o) && empty(out(o))) return decline(DeclineCode::kDynamicShape, str("output ", o, " is an empty tensor"));
    return true;
  }

  bool max_rank(int limit) {
    for (size_t i = 0; i < n_.inputs.size(); ++i)
      if (n_.has_input(i) && rank(i) > limit)
        return decline(DeclineCode::kUnsupportedAttribute, str("rank ", rank(i), " (oneDNN takes at most ", limit, " dims)"));
    return true;
  }

  /// Input 0 has 1 to 3 spatial dims (rank 3 to 5).
  bool spatial_rank(const char* what) {
    const int r = rank(0);
    if (r < 0) return decline(DeclineCode::kDynamicShape, str("the rank of ", what, " is unknown"));
    if (r < 3 || r > 5) return decline(DeclineCode::kUnsupportedAttribute, str("input rank ", r, " (oneDNN takes 1 to 3 spatial dims)"));
    return true;
  }

  bool only_output0(const char* what) {
    for (size_t o = 1; o < n_.outputs.size(); ++o)
      if (n_.has_output(o)) return decline(DeclineCode::kUnsupportedAttribute, str("output ", o, " (", what, ") is not produced"));
    return true;
  }

  bool run() {
    const std::string& op = n_.op_type;
    if (n_.domain == "onyx") {
      if (op != "FusedConv") return decline(DeclineCode::kUnsupportedOp, str("no oneDNN kernel for onyx::", op));
      std::vector<Elt> e;
      std::string why;
      if (!fused_conv_activation(n_, &e, &why)) return decline(DeclineCode::kUnsupportedAttribute, why);
      return conv();
    }
    if (!n_.domain.empty()) return decline(DeclineCode::kUnsupportedOp, str("no oneDNN kernel for ", n_.domain, "::", op));
    if (op == "Conv") return conv();
    if (op == "ConvTranspose") return conv_transpose();
    if (op == "MatMul") return float_io() && not_empty() && max_rank(12);
    if (op == "Gemm") return float_io() && not_empty();
    if (op == "MaxPool") {
      if (n_.has_output(1)) return decline(DeclineCode::kUnsupportedAttribute, "the Indices output is not produced");
      return float_io({0}) && not_empty() && spatial_rank("X");
    }
    if (op == "AveragePool") return float_io({0}) && not_empty() && spatial_rank("X");
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return float_io({0}) && not_empty() && spatial_rank("X");
    if (op == "BatchNormalization") return batch_norm();
    if (op == "LRN") {
      if (n_.attr_int("size", 1) % 2 == 0)
        return decline(DeclineCode::kUnsupportedAttribute, "even size (oneDNN's window is centred one channel lower than ONNX's)");
      return float_io({0}) && not_empty() && spatial_rank("X");
    }
    if (op == "Softmax" || op == "LogSoftmax") return float_io({0}) && not_empty() && max_rank(12);
    if (op == "LayerNormalization") return float_io({0, 1, 2}) && not_empty() && max_rank(12);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min" || op == "Sum" || op == "Mean")
      return float_io() && not_empty() && max_rank(12);
    if (op == "PRelu") return float_io() && not_empty() && max_rank(12);
    if (reduce_ops().count(op)) return reduce();
    if (op == "Concat") return float_io() && not_empty() && max_rank(12);
    if (layout_ops().count(op)) return layout();
    if (eltwise_ops().count(op)) return eltwise();
    return decline(DeclineCode::kUnsupportedOp, str("no oneDNN kernel for ", op));
  }

 private:
  bool weights_known() {
    const TypeInfo* w = in(1);
    if (!w || !w->has_shape) return decline(DeclineCode::kDynamicShape, "the weight's rank is unknown");
    return true;
  }

  bool conv() {
    if (!float_io({0, 1, 2}) || !not_empty() || !spatial_rank("X") || !weights_known()) return false;
    return true;
  }

  bool conv_transpose() {
    if (!float_io({0, 1, 2}) || !not_empty() || !spatial_rank("X") || !weights_known()) return false;
    // output_shape smaller than the full result is padding; larger would be negative padding.
    const TypeInfo* x = in(0);
    const TypeInfo* w = in(1);
    if (x->shape.is_concrete() && w->shape.is_concrete() && w->shape.size() == x->shape.size()) {
      const Shape sx(std::span<const int64_t>(x->shape.data() + 2, x->shape.size() - 2));
      const Shape sw(std::span<const int64_t>(w->shape.data() + 2, w->shape.size() - 2));
      try {
        const WindowGeometry geo = conv_transpose_geometry(n_, sx, sw);
        for (size_t k = 0; k < sx.size(); ++k)
          if (geo.pad_begin[k] < 0 || geo.pad_end[k] <= -geo.stride[k])
            return decline(DeclineCode::kUnsupportedAttribute, "output_shape needs negative leading padding");
      } catch (const Error& e) {
        return decline(DeclineCode::kOther, e.what());
      }
    }
    return true;
  }

  bool batch_norm() {
    if (!float_io({0, 1, 2, 3, 4}) || !not_empty()) return false;
    if (n_.attr_int("training_mode", 0) != 0) return decline(DeclineCode::kUnsupportedAttribute, "training_mode=1 (inference only)");
    if (n_.opset < 9 && n_.attr_int("spatial", 1) == 0) return decline(DeclineCode::kUnsupportedAttribute, "spatial=0");
    if (!only_output0("training statistics")) return false;
    const int r = rank(0);
    if (r >= 0 && (r < 2 || r > 5)) return decline(DeclineCode::kUnsupportedAttribute, str("input rank ", r, " (oneDNN takes 2 to 5)"));
    return true;
  }

  bool reduce() {
    if (!float_io({0}) || !not_empty() || !max_rank(12)) return false;
    if (reduce_axes_from_input(n_) && n_.has_input(1) && !graph_constant(g_, n_, 1)) {
      // Run-time axes: their values become part of the compiled signature.
      const TypeInfo* t = in(1);
      if (!t || !t->is_tensor() || (t->dtype != DType::kInt64 && t->dtype != DType::kInt32))
        return decline(DeclineCode::kUnsupportedType, "axes must be an int64 tensor");
    }
    return true;
  }

  bool layout() {
    const std::string& op = n_.op_type;
    if (op == "Dropout" && n_.has_output(1)) return decline(DeclineCode::kUnsupportedAttribute, "the mask output is not produced");
    if (!float_io({0}) || !not_empty() || !max_rank(12)) return false;
    if (op == "Dropout") {
      if (n_.opset < 7 && n_.attr_int("is_test", 0) == 0) return decline(DeclineCode::kUnsupportedAttribute, "is_test=0 (training)");
      if (n_.has_input(2)) {
        const Tensor* t = graph_constant(g_, n_, 2);
        if (!t || t->numel() != 1 || t->element_as_double(0) != 0)
          return decline(DeclineCode::kUnsupportedAttribute, "training_mode is not a constant false");
      }
    }
    return true;
  }

  bool eltwise() {
    const std::string& op = n_.op_type;
    const bool types_ok = op == "Pow" ? float_io({0}) : float_io();
    if (!types_ok || !not_empty()) return false;
    std::vector<Elt> chain;
    std::string why;
    if (op == "Log")
      return decline(DeclineCode::kUnsupportedAttribute, "oneDNN's log is approximate (absolute error ~1.4e-6: log(1) != 0)");
    if (eltwise_chain(g_, n_, &chain, &why)) return true;
    if (op == "Clip") return true;      // bounds known at run time: binary max / min
    if (op == "Softsign") return true;  // x / (1 + |x|): eltwise and binary
    return decline(DeclineCode::kUnsupportedAttribute, why);
  }

  std::vector<size_t> data_;  // the data inputs float_io checked
  const ClaimInfo& info_;
  const Node& n_;
  const Graph& g_;
  Decline* why_;
};

}  // namespace

bool claim_node(const ClaimInfo& info, Decline* why) {
  try {
    return Claim(info, why).run();
  } catch (const std::exception& e) {
    *why = {DeclineCode::kOther, e.what()};
    return false;
  }
}

}  // namespace onyx::onednn
