// Signal family: DFT (17, 20), STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
#include "ops/signal.hpp"

#include "ops/schema.hpp"

namespace onyx {

namespace {

/// The transform length when dft_length is not given: the input length, except for the inverse
/// one-sided transform, whose input holds n / 2 + 1 bins of an even-length signal.
int64_t default_dft_length(bool irfft, int64_t in_len) { return irfft ? 2 * (in_len - 1) : in_len; }

/// Output length along the axis for a transform of length n.
int64_t dft_out_len(bool inverse, bool onesided, int64_t n) { return onesided && !inverse ? n / 2 + 1 : n; }

void check_dft_last_dim(const Node& node, int64_t last, bool inverse, bool onesided) {
  if (last < 0) return;
  if (last != 1 && last != 2)
    fail(ErrorCode::kInvalidArgument, node.label(), ": the last dim of the input must be 1 (real) or 2 (complex), got ",
         last);
  if (onesided && !inverse && last != 1)
    fail(ErrorCode::kInvalidArgument, node.label(),
         ": a one-sided forward DFT needs a real input (last dim 1), got a complex one");
  if (onesided && inverse && last != 2)
    fail(ErrorCode::kInvalidArgument, node.label(),
         ": a one-sided inverse DFT needs a complex input (last dim 2), got a real one");
}

}  // namespace

int64_t dft_axis(const Node& node, int64_t rank, int64_t axis) {
  if (rank < 2)
    fail(ErrorCode::kInvalidArgument, node.label(), ": the input must have rank >= 2 (signal dims and a last dim for the real ",
         "and imaginary parts), got rank ", rank);
  if (axis < -rank || axis == -1 || axis >= rank - 1)
    fail(ErrorCode::kInvalidArgument, node.label(), ": axis ", axis, " is out of range for an input of rank ", rank,
         " (valid: [", -rank, ", -2] or [0, ", rank - 2, "]; the last dim holds the real and imaginary parts)");
  return axis < 0 ? axis + rank : axis;
}

DftPlan dft_plan(const Node& node, const Shape& in, int64_t axis, int64_t dft_length) {
  DftPlan p;
  const int64_t r = static_cast<int64_t>(in.size());
  p.axis = dft_axis(node, r, axis);
  p.inverse = node.attr_int("inverse", 0) != 0;
  p.onesided = node.attr_int("onesided", 0) != 0;
  check_dft_last_dim(node, in[r - 1], p.inverse, p.onesided);
  p.in_comp = in[r - 1];
  p.out_comp = p.irfft() ? 1 : 2;
  p.in_len = in[p.axis];
  if (dft_length >= 0) {
    p.n = dft_length;
  } else {
    p.n = default_dft_length(p.irfft(), p.in_len);
  }
  if (p.n <= 0) {
    if (dft_length >= 0)
      fail(ErrorCode::kInvalidArgument, node.label(), ": dft_length must be positive, got ", dft_length);
    fail(ErrorCode::kInvalidArgument, node.label(), ": the transform length along axis ", p.axis, " would be ", p.n,
         " (input dim ", p.in_len, "); give a positive dft_length");
  }
  p.out_len = dft_out_len(p.inverse, p.onesided, p.n);
  return p;
}

Shape dft_output_shape(const Shape& in, const DftPlan& p) {
  Shape out = in;
  out[p.axis] = p.out_len;
  out[in.size() - 1] = p.out_comp;
  return out;
}

StftPlan stft_plan(const Node& node, const Shape& s, int64_t step, int64_t window_length, int64_t frame_length) {
  if (s.size() != 3)
    fail(ErrorCode::kInvalidArgument, node.label(), ": the signal must have shape [batch, length, 1 or 2], got ",
         s.to_string());
  StftPlan p;
  p.batch = s[0];
  p.length = s[1];
  p.comp = s[2];
  if (p.comp != 1 && p.comp != 2)
    fail(ErrorCode::kInvalidArgument, node.label(), ": the last dim of the signal must be 1 (real) or 2 (complex), got ",
         p.comp);
  p.onesided = node.attr_int("onesided", 1) != 0;
  if (p.onesided && p.comp == 2)
    fail(ErrorCode::kInvalidArgument, node.label(), ": onesided = 1 needs a real signal (last dim 1), got a complex one");
  if (step <= 0) fail(ErrorCode::kInvalidArgument, node.label(), ": frame_step must be positive, got ", step);
  if (window_length >= 0 && frame_length >= 0 && window_length != frame_length)
    fail(ErrorCode::kInvalidArgument, node.label(), ": the window has ", window_length,
         " elements but frame_length is ", frame_length);
  p.frame_length = frame_length >= 0 ? frame_length : window_length >= 0 ? window_length : p.length;
  if (p.frame_length <= 0)
    fail(ErrorCode::kInvalidArgument, node.label(), ": frame_length must be positive, got ", p.frame_length);
  if (p.length < p.frame_length)
    fail(ErrorCode::kInvalidArgument, node.label(), ": the signal (length ", p.length, ") is shorter than one frame (",
         p.frame_length, ")");
  p.step = step;
  p.frames = (p.length - p.frame_length) / step + 1;
  p.bins = p.onesided ? p.frame_length / 2 + 1 : p.frame_length;
  return p;
}

DType signal_output_dtype(const Node& node) {
  const int64_t dt = node.attr_int("output_datatype", static_cast<int64_t>(DType::kFloat));
  const DType d = static_cast<DType>(dt);
  if (dt <= 0 || !dtype_valid(static_cast<int32_t>(dt)) ||
      !(dtype_is_float(d) || dtype_is_int(d)) || d == DType::kBool)
    fail(ErrorCode::kInvalidGraph, node.label(), ": output_datatype ", dt, " is not a numeric tensor type");
  return d;
}

void mel_check(const Node& node, int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate) {
  if (num_mel_bins <= 0)
    fail(ErrorCode::kInvalidArgument, node.label(), ": num_mel_bins must be positive, got ", num_mel_bins);
  if (dft_length <= 0) fail(ErrorCode::kInvalidArgument, node.label(), ": dft_length must be positive, got ", dft_length);
  if (sample_rate <= 0)
    fail(ErrorCode::kInvalidArgument, node.label(), ": sample_rate must be positive, got ", sample_rate);
}

namespace {

/// A scalar (one-element) integer input's value when known.
bool scalar_input(InferContext& ctx, size_t i, const char* what, int64_t& v) {
  std::vector<int64_t> vals;
  if (!ctx.has_input(i) || !ctx.input_ints(i, vals)) return false;
  if (vals.size() != 1) ctx.fail_node(what, " (input ", i, ") must be a scalar, got ", vals.size(), " values");
  v = vals[0];
  return true;
}

void infer_dft(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = t.elem_dtype();
  if (!t.has_shape) return ctx.set_output_unranked(0, dt);
  const Shape& in = t.shape;
  const int64_t r = static_cast<int64_t>(in.size());
  const bool inverse = n.attr_int("inverse", 0) != 0;
  const bool onesided = n.attr_int("onesided", 0) != 0;
  if (r < 2) (void)dft_axis(n, r, -2);  // throws
  check_dft_last_dim(n, in[r - 1], inverse, onesided);
  const int64_t out_comp = inverse && onesided ? 1 : 2;
  const bool has_len = ctx.has_input(1);

  int64_t axis = -2;
  bool axis_known = true;
  if (ctx.opset() < 20) {
    axis = n.attr_int("axis", 1);
  } else if (ctx.has_input(2)) {
    axis_known = scalar_input(ctx, 2, "axis", axis);
  }
  if (!axis_known) {
    // Which dim changes is unknown: only the rank and the last dim are.
    Shape out = (onesided || has_len) ? ctx.fresh_shape(static_cast<size_t>(r)) : in;
    out[r - 1] = out_comp;
    return ctx.set_output(0, dt, out);
  }
  const int64_t a = dft_axis(n, r, axis);
  Shape out = in;
  out[r - 1] = out_comp;
  int64_t len = -1;
  if (has_len) {
    if (scalar_input(ctx, 1, "dft_length", len)) {
      if (len <= 0) ctx.fail_node("dft_length must be positive, got ", len);
      out[a] = dft_out_len(inverse, onesided, len);
    } else {
      out[a] = ctx.fresh();
    }
  } else if (onesided) {
    if (in[a] >= 0) {
      const int64_t nlen = default_dft_length(inverse, in[a]);
      if (nlen <= 0)
        ctx.fail_node("the transform length along axis ", a, " would be ", nlen, " (input dim ", in[a],
                      "); give a positive dft_length");
      out[a] = dft_out_len(inverse, onesided, nlen);
    } else {
      out[a] = ctx.fresh();
    }
  }
  ctx.set_output(0, dt, out);
}

void infer_stft(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = t.elem_dtype();
  if (!t.has_shape) return ctx.set_output_unranked(0, dt);
  const Shape& s = t.shape;
  if (s.size() != 3) ctx.fail_node("the signal must have shape [batch, length, 1 or 2], got rank ", s.size());
  int64_t step = -1, flen = -1, wlen = -1;
  const bool step_known = scalar_input(ctx, 1, "frame_step", step);
  bool flen_known = true;
  if (ctx.has_input(3)) flen_known = scalar_input(ctx, 3, "frame_length", flen);
  bool wlen_known = true;
  if (ctx.has_input(2)) {
    wlen_known = ctx.input_has_shape(2);
    if (wlen_known) {
      const Shape& w = ctx.input_shape(2);
      if (w.size() != 1) ctx.fail_node("the window must have rank 1, got rank ", w.size());
      wlen = w[0];
      wlen_known = wlen >= 0;
    }
  }
  if (step_known && flen_known && wlen_known && s.is_concrete()) {
    const StftPlan p = stft_plan(n, s, step, wlen, flen);
    return ctx.set_output(0, dt, Shape{p.batch, p.frames, p.bins, 2});
  }
  if (step_known && step <= 0) ctx.fail_node("frame_step must be positive, got ", step);
  const bool onesided = n.attr_int("onesided", 1) != 0;
  int64_t fl = -1;
  if (flen_known && flen >= 0) fl = flen;
  else if (flen_known && !ctx.has_input(3) && wlen_known && wlen >= 0) fl = wlen;
  const int64_t bins = fl > 0 ? (onesided ? fl / 2 + 1 : fl) : ctx.fresh();
  ctx.set_output(0, dt, Shape{s[0], ctx.fresh(), bins, 2});
}

void infer_window(InferContext& ctx) {
  const DType dt = signal_output_dtype(ctx.node());
  int64_t size = -1;
  if (scalar_input(ctx, 0, "size", size)) {
    if (size <= 0) ctx.fail_node("size must be positive, got ", size);
    return ctx.set_output(0, dt, Shape{size});
  }
  ctx.set_output(0, dt, Shape{ctx.fresh()});
}

void infer_mel(InferContext& ctx) {
  const DType dt = signal_output_dtype(ctx.node());
  int64_t mel = -1, len = -1, rate = -1;
  const bool mel_known = scalar_input(ctx, 0, "num_mel_bins", mel);
  const bool len_known = scalar_input(ctx, 1, "dft_length", len);
  const bool rate_known = scalar_input(ctx, 2, "sample_rate", rate);
  if (mel_known && mel <= 0) ctx.fail_node("num_mel_bins must be positive, got ", mel);
  if (len_known && len <= 0) ctx.fail_node("dft_length must be positive, got ", len);
  if (rate_known && rate <= 0) ctx.fail_node("sample_rate must be positive, got ", rate);
  ctx.set_output(0, dt, Shape{len_known ? len / 2 + 1 : ctx.fresh(), mel_known ? mel : ctx.fresh()});
}

}  // namespace

void register_signal_ops(OpRegistry& r) {
  r.add("", "DFT", {17, 20}, infer_dft);
  r.add("", "STFT", {17}, infer_stft);
  r.add("", "HannWindow", {17}, infer_window);
  r.add("", "HammingWindow", {17}, infer_window);
  r.add("", "BlackmanWindow", {17}, infer_window);
  r.add("", "MelWeightMatrix", {17}, infer_mel);
}

}  // namespace onyx
