#include "ep/custom_ops.hpp"

#include <deque>
#include <mutex>

#include "core/common.hpp"
#include "ep/factory.hpp"
#include "ep/module.hpp"
#include "ops/custom.hpp"

namespace onyx {

// ---- the contexts of include/onyx/custom_op.hpp ----

size_t CustomOpInferContext::num_inputs() const { return ctx_.num_inputs(); }
bool CustomOpInferContext::has_input(size_t i) const { return ctx_.has_input(i); }
DType CustomOpInferContext::input_dtype(size_t i) const { return ctx_.input_dtype(i); }
bool CustomOpInferContext::input_has_shape(size_t i) const { return ctx_.input_has_shape(i); }
std::vector<int64_t> CustomOpInferContext::input_shape(size_t i) const {
  std::vector<int64_t> d = ctx_.input_shape(i).to_vector();
  for (int64_t& x : d)
    if (x < 0) x = -1;
  return d;
}
const Tensor* CustomOpInferContext::input_value(size_t i) const { return ctx_.input_tensor(i); }
size_t CustomOpInferContext::num_outputs() const { return ctx_.num_outputs(); }
void CustomOpInferContext::set_output(size_t i, DType dtype, const std::vector<int64_t>& dims) {
  if (i >= ctx_.num_outputs()) ctx_.fail_node("set_output(", i, "): the node has ", ctx_.num_outputs(), " outputs");
  if (dims.size() > InferContext::kMaxInferredRank) ctx_.fail_node("an output of rank ", dims.size());
  Shape s;
  for (int64_t d : dims) s.push_back(d >= 0 ? d : ctx_.fresh());
  ctx_.set_output(i, dtype, std::move(s));
}
void CustomOpInferContext::set_output_unranked(size_t i, DType dtype) {
  if (i >= ctx_.num_outputs()) ctx_.fail_node("set_output_unranked(", i, "): the node has ", ctx_.num_outputs(), " outputs");
  ctx_.set_output_unranked(i, dtype);
}
int64_t CustomOpInferContext::attr_int(const std::string& n, int64_t d) const { return ctx_.node().attr_int(n, d); }
float CustomOpInferContext::attr_float(const std::string& n, float d) const { return ctx_.node().attr_float(n, d); }
std::string CustomOpInferContext::attr_string(const std::string& n, const std::string& d) const {
  return ctx_.node().attr_string(n, d);
}
std::vector<int64_t> CustomOpInferContext::attr_ints(const std::string& n) const { return ctx_.node().attr_ints(n); }

size_t CustomOpKernelContext::num_inputs() const { return ctx_.num_inputs(); }
bool CustomOpKernelContext::has_input(size_t i) const { return ctx_.has_input(i); }
const Tensor& CustomOpKernelContext::input(size_t i) const { return ctx_.input(i); }
size_t CustomOpKernelContext::num_outputs() const { return ctx_.num_outputs(); }
Tensor& CustomOpKernelContext::output(size_t i, DType dtype, const std::vector<int64_t>& dims) {
  if (i >= ctx_.num_outputs() || !ctx_.has_output(i))
    fail(ErrorCode::kInvalidArgument, ctx_.node().label(), ": the node has no output ", i);
  for (int64_t d : dims)
    if (d < 0) fail(ErrorCode::kInvalidArgument, ctx_.node().label(), ": output ", i, " with a negative dim");
  return ctx_.allocate_output(i, dtype, Shape(dims));
}
int64_t CustomOpKernelContext::attr_int(const std::string& n, int64_t d) const { return ctx_.node().attr_int(n, d); }
float CustomOpKernelContext::attr_float(const std::string& n, float d) const { return ctx_.node().attr_float(n, d); }
std::string CustomOpKernelContext::attr_string(const std::string& n, const std::string& d) const {
  return ctx_.node().attr_string(n, d);
}
std::vector<int64_t> CustomOpKernelContext::attr_ints(const std::string& n) const { return ctx_.node().attr_ints(n); }
std::string CustomOpKernelContext::node_name() const { return ctx_.node().label(); }

namespace {

std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::deque<CustomOp>& ops() {  // registered ops; never removed, never moved
  static std::deque<CustomOp> o;
  return o;
}

const CustomOp* find_op(std::string_view domain, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu());
  for (const CustomOp& op : ops())
    if (op.domain == domain && op.name == name) return &op;
  return nullptr;
}

class CustomKernel final : public Kernel {
 public:
  explicit CustomKernel(const CustomOp* op) : op_(op) {}
  void compute(KernelContext& ctx) const override {
    CustomOpKernelContext c(ctx);
    op_->compute(c);
    for (size_t i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.has_output(i) && !ctx.output_ready(i))
        fail(ErrorCode::kRuntime, ctx.node().label(), ": the custom op ", op_->domain, "::", op_->name, " did not set output ", i);
  }

 private:
  const CustomOp* op_;
};

}  // namespace

void register_custom_op(CustomOp op) {
  if (!op.compute)
    fail(ErrorCode::kInvalidArgument, "register_custom_op: ", op.domain, "::", op.name, " has no compute function");
  auto infer = op.infer;
  std::lock_guard<std::mutex> lock(mu());
  add_custom_schema(op.domain, op.name, op.since_version,
                    infer ? std::function<void(InferContext&)>([infer](InferContext& ctx) {
                      CustomOpInferContext c(ctx);
                      infer(c);
                    })
                          : std::function<void(InferContext&)>(),
                    "onyx::register_custom_op");
  ops().push_back(std::move(op));
}

std::unique_ptr<Kernel> create_custom_cpu_kernel(const Node& node) {
  const CustomOp* op = find_op(node.domain, node.op_type);
  return op ? std::make_unique<CustomKernel>(op) : nullptr;
}

bool has_custom_cpu_kernel(std::string_view domain, std::string_view name) { return find_op(domain, name) != nullptr; }

std::string unknown_op_hint(const std::string& domain, const std::string& op) {
  if (is_builtin_domain(domain)) return "";
  // An EP plugin on the search path that implements it? (Loading one registers its custom ops.)
  for (const std::string& name : third_party_module_names()) {
    ep::Availability a;
    if (!resolve_factory(name, "", &a)) continue;
    if (!custom_op_provider(domain, op).empty())
      return str(" (a custom op, implemented by the EP plugin '", name, "' (", a.module,
                 "), which this session did not register: add it to the session's EPs, e.g. --ep ", name, ")");
  }
  return str(" (a custom op of domain '", domain, "': register the EP plugin that implements it, e.g. with the option"
             " module_path, or a kernel with onyx::register_custom_op; docs/custom-ops.md)");
}

}  // namespace onyx
