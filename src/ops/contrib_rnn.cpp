// com.microsoft DynamicQuantizeLSTM (version 1): an LSTM with 8-bit weights, as ONNX Runtime's
// dynamic quantizer writes it. Inputs: X [seq, batch, input] float; W [num_directions, input,
// 4*hidden] and R [num_directions, hidden, 4*hidden] int8 or uint8 (the transposes of ai.onnx
// LSTM's W and R); B, sequence_lens, initial_h, initial_c and P as in LSTM; W_scale,
// W_zero_point, R_scale, R_zero_point, each [num_directions] (per tensor) or
// [num_directions, 4*hidden] (per column). Outputs as LSTM's with layout 0: Y [seq,
// num_directions, batch, hidden], Y_h and Y_c [num_directions, batch, hidden].
#include "ops/families.hpp"
#include "ops/rnn.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

const char* const kInputNames[12] = {"X",         "W",           "R", "B",       "sequence_lens",
                                     "initial_h", "initial_c",   "P", "W_scale", "W_zero_point",
                                     "R_scale",   "R_zero_point"};

/// Throws unless `s` has rank `rank` (the expected layout named).
void dq_check_rank(const Node& node, int idx, const Shape& s, size_t rank, const char* layout) {
  if (s.size() != rank)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", kInputNames[idx], " (input ", idx, ") must have rank ", rank,
         " ", layout, ", got shape ", s.to_string());
}

/// Throws when dim k of `s` and `want` are both known and differ.
void dq_check_dim(const Node& node, int idx, const Shape& s, size_t k, int64_t want, const char* what) {
  if (s[k] >= 0 && want >= 0 && s[k] != want)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", kInputNames[idx], " (input ", idx, ") has shape ",
         s.to_string(), "; dim ", k, " must be ", what, " = ", want);
}

/// A scale or zero point: [num_directions] (per tensor) or [num_directions, 4*hidden_size].
void dq_check_param(const Node& node, int idx, const Shape& s, int64_t dirs, int64_t gh) {
  if (s.size() != 1 && s.size() != 2)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", kInputNames[idx], " (input ", idx,
         ") must have shape [num_directions] (per tensor) or [num_directions, 4*hidden_size] (per column), got shape ",
         s.to_string());
  dq_check_dim(node, idx, s, 0, dirs, "num_directions");
  if (s.size() == 2) dq_check_dim(node, idx, s, 1, gh, "4*hidden_size");
}

}  // namespace

/// Checks the shapes of DynamicQuantizeLSTM's inputs (null = omitted or unknown) against each
/// other and the attributes; unknown (negative) dims are not checked. Returns the dims (seq,
/// batch, input from X; hidden from the attribute). Used by the CPU kernel too.
RnnDims dq_lstm_check_shapes(const Node& node, int64_t dirs, int64_t hidden, const Shape& x, const Shape& w,
                             const Shape& r, const Shape* b, const Shape* seq_lens, const Shape* initial_h,
                             const Shape* initial_c, const Shape* p, const Shape* w_scale, const Shape* w_zp,
                             const Shape* r_scale, const Shape* r_zp) {
  RnnDims d;
  d.dirs = dirs;
  d.hidden = hidden;
  dq_check_rank(node, 0, x, 3, "[seq_length, batch_size, input_size]");
  d.seq = x[0];
  d.batch = x[1];
  d.input = x[2];
  const int64_t gh = hidden >= 0 ? 4 * hidden : -1;
  dq_check_rank(node, 1, w, 3, "[num_directions, input_size, 4*hidden_size]");
  dq_check_dim(node, 1, w, 0, dirs, "num_directions");
  dq_check_dim(node, 1, w, 1, d.input, "input_size (X's last dim)");
  dq_check_dim(node, 1, w, 2, gh, "4*hidden_size");
  dq_check_rank(node, 2, r, 3, "[num_directions, hidden_size, 4*hidden_size]");
  dq_check_dim(node, 2, r, 0, dirs, "num_directions");
  dq_check_dim(node, 2, r, 1, hidden, "hidden_size");
  dq_check_dim(node, 2, r, 2, gh, "4*hidden_size");
  if (b) {
    dq_check_rank(node, 3, *b, 2, "[num_directions, 8*hidden_size]");
    dq_check_dim(node, 3, *b, 0, dirs, "num_directions");
    dq_check_dim(node, 3, *b, 1, hidden >= 0 ? 8 * hidden : -1, "8*hidden_size");
  }
  if (seq_lens) {
    dq_check_rank(node, 4, *seq_lens, 1, "[batch_size]");
    dq_check_dim(node, 4, *seq_lens, 0, d.batch, "batch_size");
  }
  const Shape* states[2] = {initial_h, initial_c};
  for (int k = 0; k < 2; ++k) {
    if (!states[k]) continue;
    dq_check_rank(node, 5 + k, *states[k], 3, "[num_directions, batch_size, hidden_size]");
    dq_check_dim(node, 5 + k, *states[k], 0, dirs, "num_directions");
    dq_check_dim(node, 5 + k, *states[k], 1, d.batch, "batch_size");
    dq_check_dim(node, 5 + k, *states[k], 2, hidden, "hidden_size");
  }
  if (p) {
    dq_check_rank(node, 7, *p, 2, "[num_directions, 3*hidden_size]");
    dq_check_dim(node, 7, *p, 0, dirs, "num_directions");
    dq_check_dim(node, 7, *p, 1, hidden >= 0 ? 3 * hidden : -1, "3*hidden_size");
  }
  const Shape* params[4] = {w_scale, w_zp, r_scale, r_zp};
  for (int k = 0; k < 4; ++k)
    if (params[k]) dq_check_param(node, 8 + k, *params[k], dirs, gh);
  return d;
}

namespace {

void infer_dq_lstm(InferContext& ctx) {
  const Node& n = ctx.node();
  for (size_t i : {size_t(0), size_t(1), size_t(2), size_t(8), size_t(9), size_t(10), size_t(11)})
    if (!ctx.has_input(i)) ctx.fail_node(kInputNames[i], " (input ", i, ") is required");
  if (ctx.num_inputs() > 12) ctx.fail_node("has ", ctx.num_inputs(), " inputs; at most 12");
  // T: float; T1: int32; T2: int8 or uint8, one type for W, R and both zero points.
  for (size_t i : {size_t(0), size_t(3), size_t(5), size_t(6), size_t(7), size_t(8), size_t(10)})
    if (ctx.has_input(i) && ctx.input_dtype(i) != DType::kFloat)
      ctx.fail_node(kInputNames[i], " (input ", i, ") has type ", dtype_name(ctx.input_dtype(i)), "; expected float");
  if (ctx.has_input(4) && ctx.input_dtype(4) != DType::kInt32)
    ctx.fail_node("sequence_lens (input 4) has type ", dtype_name(ctx.input_dtype(4)), "; expected int32");
  const DType wt = ctx.input_dtype(1);
  if (wt != DType::kInt8 && wt != DType::kUInt8)
    ctx.fail_node("W (input 1) has type ", dtype_name(wt), "; expected int8 or uint8");
  for (size_t i : {size_t(2), size_t(9), size_t(11)})
    if (ctx.input_dtype(i) != wt)
      ctx.fail_node(kInputNames[i], " (input ", i, ") has type ", dtype_name(ctx.input_dtype(i)), " but W has type ",
                    dtype_name(wt));

  const int64_t dirs = rnn_num_directions(rnn_direction(n));
  if (!n.has_attr("hidden_size")) ctx.fail_node("the hidden_size attribute is required");
  const int64_t hidden = n.attr_int("hidden_size", 0);
  if (hidden <= 0 || hidden > (int64_t(1) << 40))
    ctx.fail_node("hidden_size must be positive and at most 2^40, got ", hidden);
  if (n.has_attr("clip") && !(n.attr_float("clip", 0.0f) > 0.0f))
    ctx.fail_node("clip must be positive, got ", n.attr_float("clip", 0.0f));
  if (n.attr_int("layout", 0) != 0) ctx.fail_node("layout ", n.attr_int("layout", 0), " is not supported (only 0)");
  const std::vector<std::string> acts = n.attr_strings("activations");
  if (!acts.empty() && acts.size() != static_cast<size_t>(3 * dirs))
    ctx.fail_node("activations has ", acts.size(), " entries; expected ", 3 * dirs, " (3 per direction)");
  for (const std::string& a : acts)
    if (!rnn_activation_known(a)) ctx.fail_node("unsupported activation '", a, "'");

  RnnDims d;
  d.dirs = dirs;
  d.hidden = hidden;
  if (ctx.input_has_shape(0) && ctx.input_has_shape(1) && ctx.input_has_shape(2)) {
    auto opt = [&](size_t i) -> const Shape* { return ctx.input_has_shape(i) ? &ctx.input_shape(i) : nullptr; };
    d = dq_lstm_check_shapes(n, dirs, hidden, ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2), opt(3),
                             opt(4), opt(5), opt(6), opt(7), opt(8), opt(9), opt(10), opt(11));
    std::vector<int64_t> lens;
    if (ctx.has_input(4) && d.seq >= 0 && ctx.input_ints(4, lens))
      for (int64_t v : lens)
        if (v < 0 || v > d.seq)
          fail(ErrorCode::kInvalidArgument, n.label(), ": sequence_lens (input 4) has value ", v, " outside [0, ",
               d.seq, "] (seq_length)");
  } else if (ctx.input_has_shape(0)) {
    const Shape& x = ctx.input_shape(0);
    if (x.size() != 3) ctx.fail_node("X (input 0) must have rank 3, got shape ", x.to_string());
    d.seq = x[0];
    d.batch = x[1];
  }
  auto dim = [&](int64_t v) { return v == kNoDim ? ctx.fresh() : v; };
  const int64_t seq = dim(d.seq), batch = dim(d.batch);
  ctx.set_output(0, DType::kFloat, Shape{seq, dirs, batch, hidden});
  ctx.set_output(1, DType::kFloat, Shape{dirs, batch, hidden});
  ctx.set_output(2, DType::kFloat, Shape{dirs, batch, hidden});
}

}  // namespace

void register_contrib_rnn_ops(OpRegistry& r) { r.add("com.microsoft", "DynamicQuantizeLSTM", {1}, infer_dq_lstm); }

}  // namespace onyx
