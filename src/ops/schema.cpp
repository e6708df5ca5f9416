#include "ops/schema.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "ops/families.hpp"

namespace onyx {

bool InferContext::input_ints(size_t i, std::vector<int64_t>& out) const {
  const Tensor* t = input_tensor(i);
  if (!t) return false;
  out.clear();
  const int64_t n = t->numel();
  out.reserve(static_cast<size_t>(n));
  if (t->dtype() == DType::kInt64) {
    const int64_t* d = t->data<int64_t>();
    out.assign(d, d + n);
  } else if (t->dtype() == DType::kInt32) {
    const int32_t* d = t->data<int32_t>();
    out.assign(d, d + n);
  } else {
    fail_node("input ", i, " must be int32 or int64, got ", dtype_name(t->dtype()));
  }
  return true;
}

void InferContext::require_dtype(size_t i, std::initializer_list<DType> allowed) const {
  const DType dt = input_dtype(i);
  for (DType a : allowed)
    if (a == dt) return;
  std::vector<std::string_view> names;
  for (DType a : allowed) names.push_back(dtype_name(a));
  fail_node("input ", i, " has type ", dtype_name(dt), "; expected one of ", join(names, ", "));
}

void OpRegistry::add(std::string domain, std::string name, std::vector<int> versions, InferFn infer) {
  std::sort(versions.begin(), versions.end());
  schemas_.push_back(OpSchema{std::move(domain), std::move(name), std::move(versions), infer});
}

const OpSchema* OpRegistry::find(std::string_view domain, std::string_view name) const {
  for (const auto& s : schemas_)
    if (s.name == name && s.domain == domain) return &s;
  return nullptr;
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_op_families(r);
    return r;
  }();
  return registry;
}

namespace shape_util {

Shape broadcast(InferContext& ctx, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out = Shape::filled(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    int64_t d;
    if (da == db) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da >= 0 && db >= 0) {
      ctx.fail_node("shapes ", a.to_string(), " and ", b.to_string(), " cannot be broadcast together (dim ", k, ": ",
                    da, " vs ", db, ")");
    } else if (da >= 0) {
      d = da;  // a symbolic dim broadcast against a concrete one must equal it (or be 1)
    } else if (db >= 0) {
      d = db;
    } else {
      d = ctx.fresh();
    }
    out[k] = d;
  }
  return out;
}

bool broadcast_inputs(InferContext& ctx, size_t first, size_t last, Shape& out) {
  bool init = false;
  for (size_t i = first; i < last && i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!ctx.input_has_shape(i)) return false;
    out = init ? broadcast(ctx, out, ctx.input_shape(i)) : ctx.input_shape(i);
    init = true;
  }
  return init;
}

int64_t dim_or_fresh(InferContext& ctx, bool known, int64_t value) { return known ? value : ctx.fresh(); }

}  // namespace shape_util
}  // namespace onyx
