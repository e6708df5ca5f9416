// rnn family: RNN, GRU, LSTM (directions, sequence_lens, initial states, peepholes, layout).
#include "ops/rnn.hpp"

#include "ops/schema.hpp"

namespace onyx {

RnnKind rnn_kind(const Node& node) {
  if (node.op_type == "GRU") return RnnKind::kGru;
  if (node.op_type == "LSTM") return RnnKind::kLstm;
  return RnnKind::kRnn;
}

RnnDirection rnn_direction(const Node& node) {
  const std::string d = node.attr_string("direction", "forward");
  if (d == "forward") return RnnDirection::kForward;
  if (d == "reverse") return RnnDirection::kReverse;
  if (d == "bidirectional") return RnnDirection::kBidirectional;
  fail(ErrorCode::kInvalidGraph, node.label(), ": unknown direction '", d, "' (expected forward, reverse or bidirectional)");
}

bool rnn_activation_known(std::string_view name) {
  static const char* const kKnown[] = {"relu",       "tanh",        "sigmoid", "affine",   "leakyrelu", "thresholdedrelu",
                                       "scaledtanh", "hardsigmoid", "elu",     "softsign", "softplus"};
  std::string low;
  for (char c : name) low.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  for (const char* k : kKnown)
    if (low == k) return true;
  return false;
}

bool rnn_batch_major(const Node& node) {
  if (node.opset < 14) return false;
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) fail(ErrorCode::kInvalidGraph, node.label(), ": layout must be 0 or 1, got ", layout);
  return layout == 1;
}

namespace {

const char* gate_expr(RnnKind k) { return k == RnnKind::kRnn ? "hidden_size" : k == RnnKind::kGru ? "3*hidden_size" : "4*hidden_size"; }

/// Throws unless `s` has rank `rank`.
void check_rank(const Node& node, const char* name, int idx, const Shape& s, size_t rank, const char* layout) {
  if (s.size() != rank)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must have rank ", rank, " ", layout,
         ", got shape ", s.to_string());
}

/// Throws when dim k of `s` is known, `want` is known, and they differ.
void check_dim(const Node& node, const char* name, int idx, const Shape& s, size_t k, int64_t want, const char* what) {
  if (s[k] >= 0 && want >= 0 && s[k] != want)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") has shape ", s.to_string(), "; dim ", k,
         " must be ", what, " = ", want);
}

}  // namespace

RnnDims rnn_check_shapes(const Node& node, RnnKind kind, int64_t dirs, bool batch_major, int64_t hidden_attr,
                         const Shape& x, const Shape& w, const Shape& r, const Shape* b, const Shape* seq_lens,
                         const Shape* initial_h, const Shape* initial_c, const Shape* p) {
  const int64_t G = rnn_gates(kind);
  RnnDims d;
  d.dirs = dirs;
  check_rank(node, "X", 0, x, 3, batch_major ? "[batch_size, seq_length, input_size]" : "[seq_length, batch_size, input_size]");
  d.seq = batch_major ? x[1] : x[0];
  d.batch = batch_major ? x[0] : x[1];
  d.input = x[2];
  check_rank(node, "W", 1, w, 3, "[num_directions, gates*hidden_size, input_size]");
  check_rank(node, "R", 2, r, 3, "[num_directions, gates*hidden_size, hidden_size]");
  // Without the attribute, R's last dim (possibly a symbol) is the hidden size.
  d.hidden = hidden_attr > 0 ? hidden_attr : r[2];
  const int64_t gh = d.hidden >= 0 ? G * d.hidden : -1;
  check_dim(node, "W", 1, w, 0, dirs, "num_directions");
  check_dim(node, "W", 1, w, 1, gh, gate_expr(kind));
  check_dim(node, "W", 1, w, 2, d.input, "input_size (X's last dim)");
  check_dim(node, "R", 2, r, 0, dirs, "num_directions");
  check_dim(node, "R", 2, r, 1, gh, gate_expr(kind));
  check_dim(node, "R", 2, r, 2, d.hidden, "hidden_size");
  if (b) {
    check_rank(node, "B", 3, *b, 2, "[num_directions, 2*gates*hidden_size]");
    check_dim(node, "B", 3, *b, 0, dirs, "num_directions");
    check_dim(node, "B", 3, *b, 1, gh >= 0 ? 2 * gh : -1,
              kind == RnnKind::kRnn ? "2*hidden_size" : kind == RnnKind::kGru ? "6*hidden_size" : "8*hidden_size");
  }
  if (seq_lens) {
    check_rank(node, "sequence_lens", 4, *seq_lens, 1, "[batch_size]");
    check_dim(node, "sequence_lens", 4, *seq_lens, 0, d.batch, "batch_size");
  }
  const char* state_layout = batch_major ? "[batch_size, num_directions, hidden_size]" : "[num_directions, batch_size, hidden_size]";
  const Shape* states[2] = {initial_h, initial_c};
  const char* names[2] = {"initial_h", "initial_c"};
  for (int k = 0; k < 2; ++k) {
    if (!states[k]) continue;
    const int idx = 5 + k;
    check_rank(node, names[k], idx, *states[k], 3, state_layout);
    check_dim(node, names[k], idx, *states[k], batch_major ? 1 : 0, dirs, "num_directions");
    check_dim(node, names[k], idx, *states[k], batch_major ? 0 : 1, d.batch, "batch_size");
    check_dim(node, names[k], idx, *states[k], 2, d.hidden, "hidden_size");
  }
  if (p) {
    check_rank(node, "P", 7, *p, 2, "[num_directions, 3*hidden_size]");
    check_dim(node, "P", 7, *p, 0, dirs, "num_directions");
    check_dim(node, "P", 7, *p, 1, d.hidden >= 0 ? 3 * d.hidden : -1, "3*hidden_size");
  }
  return d;
}

namespace {

void infer_rnn(InferContext& ctx) {
  const Node& n = ctx.node();
  const RnnKind kind = rnn_kind(n);
  const DType dt = ctx.input_dtype(0);
  ctx.require_dtype(0, {DType::kFloat, DType::kFloat16, DType::kDouble});
  for (size_t i : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(6), size_t(7)})
    if (ctx.has_input(i) && ctx.input_dtype(i) != dt)
      ctx.fail_node("input ", i, " has type ", dtype_name(ctx.input_dtype(i)), " but X has type ", dtype_name(dt));
  if (ctx.has_input(4)) ctx.require_dtype(4, {DType::kInt32});
  const RnnDirection dir = rnn_direction(n);
  const int64_t dirs = rnn_num_directions(dir);
  const bool bm = rnn_batch_major(n);
  const int64_t hidden_attr = n.has_attr("hidden_size") ? n.attr_int("hidden_size", 0) : -1;
  if (n.has_attr("hidden_size") && (hidden_attr <= 0 || hidden_attr > (int64_t(1) << 40)))
    ctx.fail_node("hidden_size must be positive and at most 2^40, got ", hidden_attr);
  if (kind != RnnKind::kLstm && ctx.has_input(6)) ctx.fail_node("has too many inputs");
  // Activation names are checked here so a bad model fails at load.
  for (const std::string& a : n.attr_strings("activations"))
    if (!rnn_activation_known(a)) ctx.fail_node("unsupported activation '", a, "'");
  const bool shapes = ctx.input_has_shape(0) && ctx.input_has_shape(1) && ctx.input_has_shape(2);
  RnnDims d;
  d.dirs = dirs;
  if (shapes) {
    auto opt = [&](size_t i) -> const Shape* { return ctx.input_has_shape(i) ? &ctx.input_shape(i) : nullptr; };
    d = rnn_check_shapes(n, kind, dirs, bm, hidden_attr, ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2), opt(3),
                         opt(4), opt(5), kind == RnnKind::kLstm ? opt(6) : nullptr, kind == RnnKind::kLstm ? opt(7) : nullptr);
    // Known sequence lengths must fit the sequence.
    std::vector<int64_t> lens;
    if (ctx.has_input(4) && d.seq >= 0 && ctx.input_ints(4, lens))
      for (int64_t v : lens)
        if (v < 0 || v > d.seq)
          fail(ErrorCode::kInvalidArgument, n.label(), ": sequence_lens (input 4) has value ", v, " outside [0, ", d.seq,
               "] (seq_length)");
  } else {
    if (ctx.input_has_shape(0)) {
      const Shape& x = ctx.input_shape(0);
      if (x.size() != 3) ctx.fail_node("X (input 0) must have rank 3, got shape ", x.to_string());
      d.seq = bm ? x[1] : x[0];
      d.batch = bm ? x[0] : x[1];
    }
    if (hidden_attr > 0) d.hidden = hidden_attr;
    else if (ctx.input_has_shape(2) && ctx.input_shape(2).size() == 3) d.hidden = ctx.input_shape(2)[2];
  }
  auto dim = [&](int64_t v) { return v == kNoDim ? ctx.fresh() : v; };
  const int64_t seq = dim(d.seq), batch = dim(d.batch), hidden = dim(d.hidden);
  ctx.set_output(0, dt, bm ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden});
  const Shape state = bm ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  ctx.set_output(1, dt, state);
  if (kind == RnnKind::kLstm) ctx.set_output(2, dt, state);
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  r.add("", "RNN", {1, 7, 14, 22}, infer_rnn);
  r.add("", "GRU", {1, 3, 7, 14, 22}, infer_rnn);
  r.add("", "LSTM", {1, 7, 14, 22}, infer_rnn);
}

}  // namespace onyx
