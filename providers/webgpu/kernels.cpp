// The WebGPU EP's kernels (float32): unary maps, broadcasting binary arithmetic, MatMul / Gemm on
// a 64x64-tiled register-blocked kernel (a row kernel for few rows), Softmax / LogSoftmax over the
// last axis, convolution (an implicit GEMM, direct when depthwise) and ConvTranspose, pooling,
// reductions, LayerNormalization, BatchNormalization (inference), Transpose, Pad, Resize, views,
// and Gather / Slice / Concat / Expand / Where / Cast (their integer and bool operands read on the
// host). Each kernel is WGSL source held here as a raw string; its pipeline is created once per
// device, and every shape-dependent value travels in the kernel's uniform parameter block
// (binding 0: 32 words, see Params).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include "ops/image.hpp"
#include "ops/nn.hpp"
#include "webgpu_ep.hpp"

namespace onyx::webgpu {

// ---------------------------------------------------------------------------------------------
// WGSL sources

namespace {

// Shared prelude: the parameter block and its word / float readers; word 31 of a 1-D dispatch
// holds the invocations per row of work groups (Stream::dispatch_1d).
const char* const kPrelude = R"(struct Params { w: array<vec4<u32>, 8> }
@group(0) @binding(0) var<uniform> prm: Params;
fn pu(i: u32) -> u32 { return prm.w[i / 4u][i % 4u]; }
fn pf(i: u32) -> f32 { return bitcast<f32>(pu(i)); }
fn flat_id(gid: vec3<u32>) -> u32 { return gid.x + gid.y * pu(31u); }
)";

// Words: 0 n, 1 op code, 2 alpha, 3 beta.
const char* const kUnaryBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn erf_approx(v: f32) -> f32 {
  // Rational approximation with |error| < 1.5e-7 (Abramowitz and Stegun 7.1.26).
  let a = abs(v);
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  let r = 1.0 - p * exp(-a * a);
  return select(r, -r, v < 0.0);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let v = x[i];
  let alpha = pf(2u);
  let beta = pf(3u);
  var r = v;
  switch pu(1u) {
    case 0u: { r = select(0.0, v, v > 0.0); }
    case 1u: {
      if (v >= 0.0) { r = 1.0 / (1.0 + exp(-v)); } else { let e = exp(v); r = e / (1.0 + e); }
    }
    case 2u: { r = tanh(clamp(v, -15.0, 15.0)); }
    case 3u: { r = exp(v); }
    case 4u: { r = abs(v); }
    case 5u: { r = -v; }
    case 6u: { r = sqrt(v); }
    case 7u: { r = erf_approx(v); }
    case 8u: { r = min(max(v, alpha), beta); }
    case 9u: { r = select(alpha * v, v, v >= 0.0); }
    case 10u: { r = clamp(alpha * v + beta, 0.0, 1.0); }
    case 11u: { r = log(v); }
    case 12u: { r = 1.0 / v; }
    case 13u: { r = floor(v); }
    case 14u: { r = ceil(v); }
    case 15u: { r = max(v, 0.0) + log(1.0 + exp(-abs(v))); }
    case 16u: { r = select(alpha * (exp(v) - 1.0), v, v > 0.0); }
    default: { }
  }
  y[i] = r;
}
)";

// Words: 0 n, 1 op code, 2 rank, 3..8 output dims, 9..14 a's strides, 15..20 b's strides.
const char* const kBinaryBody = R"(
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  var rem = i;
  var ia = 0u;
  var ib = 0u;
  for (var d = i32(pu(2u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let c = rem % pu(3u + k);
    rem = rem / pu(3u + k);
    ia += c * pu(9u + k);
    ib += c * pu(15u + k);
  }
  let u = a[ia];
  let v = b[ib];
  var r = 0.0;
  switch pu(1u) {
    case 0u: { r = u + v; }
    case 1u: { r = u - v; }
    case 2u: { r = u * v; }
    case 3u: { r = u / v; }
    case 4u: { r = max(u, v); }
    case 5u: { r = min(u, v); }
    default: { }
  }
  y[i] = r;
}
)";

// The 64 x 64 output tile of the matrix kernels (kMatMulBody, kConvGemmBody), 256 invocations: a
// step of 32 of the tile's rows (ta) and columns (tb) in workgroup memory, step k at [k * 16 + r]
// holding the 4 rows (or columns) r, r + 16, r + 32, r + 48 as a vec4; each invocation's 4 x 4
// outputs (rows lid.y + 16 i, columns lid.x + 16 j) in acc.
const char* const kTileCore = R"(
var<workgroup> ta: array<vec4<f32>, 512>;
var<workgroup> tb: array<vec4<f32>, 512>;
var<private> acc: array<vec4<f32>, 4>;

// acc += the products of the step the work group has just loaded, between the barriers that
// complete its loads and keep the next step's from overwriting it.
fn tile_step(lid: vec3<u32>) {
  workgroupBarrier();
  for (var s = 0u; s < 32u; s++) {
    let a = ta[s * 16u + lid.y];
    let b = tb[s * 16u + lid.x];
    acc[0] += a.x * b;
    acc[1] += a.y * b;
    acc[2] += a.z * b;
    acc[3] += a.w * b;
  }
  workgroupBarrier();
}
)";

// Y[b] = alpha * A[b] B[b] + beta * C over 64 x 64 output tiles (kTileCore; one work group each, z = batch).
// Words: 0 M, 1 N, 2 K, 3 batch rank, 4..7 batch dims, 8..11 A's batch strides, 12..15 B's,
// 16 A's row stride, 17 A's depth stride, 18 B's depth stride, 19 B's column stride, 20 alpha,
// 21 beta, 22 has C, 23 C's row stride, 24 C's column stride.
const char* const kMatMulBody = R"(
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read> C: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = pu(0u);
  let N = pu(1u);
  let K = pu(2u);
  let batch = wid.z;
  var rem = batch;
  var oa = 0u;
  var ob = 0u;
  for (var d = i32(pu(3u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let c = rem % pu(4u + k);
    rem = rem / pu(4u + k);
    oa += c * pu(8u + k);
    ob += c * pu(12u + k);
  }
  let sam = pu(16u);
  let sak = pu(17u);
  let sbk = pu(18u);
  let sbn = pu(19u);
  let m0 = wid.y * 64u;
  let n0 = wid.x * 64u;
  // Loads per step of 32: A's k0 + li % 32 of rows li / 32 + 8 l; B's k0 + 8 (li / 64) + l of
  // column li % 64.
  let lk = li % 32u;
  let lm = li / 32u;
  let ln = li % 64u;
  let lq = (li / 64u) * 8u;
  let col = n0 + ln;
  for (var i = 0u; i < 4u; i++) { acc[i] = vec4<f32>(0.0); }
  for (var k0 = 0u; k0 < K; k0 += 32u) {
    for (var l = 0u; l < 8u; l++) {
      let m = lm + 8u * l;
      let k = k0 + lk;
      var v = 0.0;
      if (m0 + m < M && k < K) { v = A[oa + (m0 + m) * sam + k * sak]; }
      ta[lk * 16u + m % 16u][m / 16u] = v;
    }
    for (var l = 0u; l < 8u; l++) {
      let k = k0 + lq + l;
      var v = 0.0;
      if (col < N && k < K) { v = B[ob + k * sbk + col * sbn]; }
      tb[(lq + l) * 16u + ln % 16u][ln / 16u] = v;
    }
    tile_step(lid);
  }
  for (var i = 0u; i < 4u; i++) {
    let row = m0 + lid.y + 16u * i;
    if (row >= M) { continue; }
    for (var j = 0u; j < 4u; j++) {
      let c = n0 + lid.x + 16u * j;
      if (c >= N) { continue; }
      var v = pf(20u) * acc[i][j];
      if (pu(22u) != 0u) { v += pf(21u) * C[row * pu(23u) + c * pu(24u)]; }
      Y[(batch * M + row) * N + c] = v;
    }
  }
}
)";

// MatMul / Gemm with few rows (M <= 8, a matrix-vector product per row): no workgroup memory,
// each invocation computes 4 adjacent columns of one row straight from the operands. Words as
// kMatMulBody's; 25 the column groups per row (ceil(N / 4)).
const char* const kMatRowsBody = R"(
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read> C: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  let M = pu(0u);
  let N = pu(1u);
  let K = pu(2u);
  let groups = pu(25u);
  let q = i % groups;
  let row = (i / groups) % M;
  let batch = i / (groups * M);
  if (batch >= pu(26u)) { return; }
  var rem = batch;
  var oa = 0u;
  var ob = 0u;
  for (var d = i32(pu(3u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let c = rem % pu(4u + k);
    rem = rem / pu(4u + k);
    oa += c * pu(8u + k);
    ob += c * pu(12u + k);
  }
  let sak = pu(17u);
  let sbk = pu(18u);
  let sbn = pu(19u);
  let c0 = q * 4u;
  // Columns past N read column c0 again (in range) and are not stored.
  let c1 = select(c0, c0 + 1u, c0 + 1u < N);
  let c2 = select(c0, c0 + 2u, c0 + 2u < N);
  let c3 = select(c0, c0 + 3u, c0 + 3u < N);
  let pb = vec4<u32>(c0, c1, c2, c3) * sbn + vec4<u32>(ob);
  var pa = oa + row * pu(16u);
  var acc = vec4<f32>(0.0);
  for (var k = 0u; k < K; k++) {
    let kb = k * sbk;
    acc += A[pa] * vec4<f32>(B[pb.x + kb], B[pb.y + kb], B[pb.z + kb], B[pb.w + kb]);
    pa += sak;
  }
  for (var j = 0u; j < 4u; j++) {
    let c = c0 + j;
    if (c >= N) { break; }
    var v = pf(20u) * acc[j];
    if (pu(22u) != 0u) { v += pf(21u) * C[row * pu(23u) + c * pu(24u)]; }
    Y[(batch * M + row) * N + c] = v;
  }
}
)";

// One invocation per row of the last axis. Words: 0 rows, 1 row length, 2 log (LogSoftmax).
const char* const kSoftmaxBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = flat_id(gid);
  if (r >= pu(0u)) { return; }
  let n = pu(1u);
  let base = r * n;
  var m = -3.402823e38;
  for (var j = 0u; j < n; j++) { m = max(m, x[base + j]); }
  var s = 0.0;
  for (var j = 0u; j < n; j++) { s += exp(x[base + j] - m); }
  if (pu(2u) != 0u) {
    let ls = log(s);
    for (var j = 0u; j < n; j++) { y[base + j] = x[base + j] - m - ls; }
  } else {
    for (var j = 0u; j < n; j++) { y[base + j] = exp(x[base + j] - m) / s; }
  }
}
)";

// y[i] = x[sum_d c_d * stride_d] over the output's index (c_d). Words: 0 n, 1 rank, 2..7 output
// dims, 8..13 the input's element stride of each output dim.
const char* const kTransposeBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  var rem = i;
  var src = 0u;
  for (var d = i32(pu(1u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let c = rem % pu(2u + k);
    rem = rem / pu(2u + k);
    src += c * pu(8u + k);
  }
  y[i] = x[src];
}
)";

// Direct 2-d convolution, one output element per invocation (NCHW, OIHW weights, groups).
// Words: 0 n, 1 C, 2 H, 3 W, 4 M, 5 OH, 6 OW, 7 KH, 8 KW, 9 stride h, 10 stride w, 11 dilation h,
// 12 dilation w, 13 pad top, 14 pad left, 15 has bias, 16 C per group, 17 M per group.
const char* const kConvBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let C = pu(1u);
  let H = i32(pu(2u));
  let W = i32(pu(3u));
  let M = pu(4u);
  let OH = pu(5u);
  let OW = pu(6u);
  let KH = pu(7u);
  let KW = pu(8u);
  let cg = pu(16u);
  let ow = i % OW;
  let oh = (i / OW) % OH;
  let m = (i / (OW * OH)) % M;
  let n = i / (OW * OH * M);
  let g = m / pu(17u);
  let h0 = i32(oh * pu(9u)) - i32(pu(13u));
  let w0 = i32(ow * pu(10u)) - i32(pu(14u));
  var acc = 0.0;
  if (pu(15u) != 0u) { acc = bias[m]; }
  for (var c = 0u; c < cg; c++) {
    let xc = (n * C + g * cg + c) * u32(H * W);
    let wc = (m * cg + c) * KH * KW;
    for (var kh = 0u; kh < KH; kh++) {
      let ih = h0 + i32(kh * pu(11u));
      if (ih < 0 || ih >= H) { continue; }
      for (var kw = 0u; kw < KW; kw++) {
        let iw = w0 + i32(kw * pu(12u));
        if (iw < 0 || iw >= W) { continue; }
        acc += x[xc + u32(ih * W + iw)] * w[wc + kh * KW + kw];
      }
    }
  }
  switch pu(18u) {
    case 1u: { acc = max(acc, 0.0); }
    case 2u: { acc = min(max(acc, pf(19u)), pf(20u)); }
    default: { }
  }
  y[i] = acc;
}
)";

// Mean over each (n, c) plane. Words: 0 planes, 1 plane size.
const char* const kGlobalPoolBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let p = flat_id(gid);
  if (p >= pu(0u)) { return; }
  let n = pu(1u);
  var s = 0.0;
  for (var j = 0u; j < n; j++) { s += x[p * n + j]; }
  y[p] = s / f32(n);
}
)";

// 2-d max / average pooling, one output element per invocation (NCHW). Words: 0 n, 1 H, 2 W,
// 3 OH, 4 OW, 5 KH, 6 KW, 7 stride h, 8 stride w, 9 dilation h, 10 dilation w, 11 pad top,
// 12 pad left, 13 max (else average), 14 count_include_pad, 15 planes (N * C).
const char* const kPoolBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let H = i32(pu(1u));
  let W = i32(pu(2u));
  let OH = pu(3u);
  let OW = pu(4u);
  let ow = i % OW;
  let oh = (i / OW) % OH;
  let plane = i / (OW * OH);
  let h0 = i32(oh * pu(7u)) - i32(pu(11u));
  let w0 = i32(ow * pu(8u)) - i32(pu(12u));
  let is_max = pu(13u) != 0u;
  var acc = 0.0;
  if (is_max) { acc = -3.402823e38; }
  var count = 0u;
  let base = plane * u32(H * W);
  for (var kh = 0u; kh < pu(5u); kh++) {
    let ih = h0 + i32(kh * pu(9u));
    if (ih < 0 || ih >= H) { continue; }
    for (var kw = 0u; kw < pu(6u); kw++) {
      let iw = w0 + i32(kw * pu(10u));
      if (iw < 0 || iw >= W) { continue; }
      let v = x[base + u32(ih * W + iw)];
      if (is_max) { acc = max(acc, v); } else { acc += v; }
      count++;
    }
  }
  if (!is_max) {
    if (pu(14u) != 0u) { count = pu(5u) * pu(6u); }
    acc = acc / f32(max(count, 1u));
  }
  y[i] = acc;
}
)";

// Reduction over a set of axes, one output element per invocation. Words: 0 outputs, 1 rank,
// 2 op, 3 reduced elements per output, 4..9 the output's dims (reduced dims 1), 10..15 the
// input's strides, 16..21 the reduced dims (1 on kept axes).
const char* const kReduceBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let rank = i32(pu(1u));
  let op = pu(2u);
  var rem = i;
  var base = 0u;
  for (var d = rank - 1; d >= 0; d--) {
    let k = u32(d);
    let c = rem % pu(4u + k);
    rem = rem / pu(4u + k);
    base += c * pu(10u + k);
  }
  let inf = bitcast<f32>(0x7f800000u);
  // Max of the inputs first, for a stable LogSumExp.
  var m = -inf;
  if (op == 8u) {
    for (var j = 0u; j < pu(3u); j++) {
      var r = j;
      var off = base;
      for (var d = rank - 1; d >= 0; d--) {
        let k = u32(d);
        off += (r % pu(16u + k)) * pu(10u + k);
        r = r / pu(16u + k);
      }
      m = max(m, x[off]);
    }
  }
  var acc = 0.0;
  if (op == 2u) { acc = -inf; }
  if (op == 3u) { acc = inf; }
  if (op == 4u) { acc = 1.0; }
  for (var j = 0u; j < pu(3u); j++) {
    var r = j;
    var off = base;
    for (var d = rank - 1; d >= 0; d--) {
      let k = u32(d);
      off += (r % pu(16u + k)) * pu(10u + k);
      r = r / pu(16u + k);
    }
    let v = x[off];
    switch op {
      case 2u: { acc = max(acc, v); }
      case 3u: { acc = min(acc, v); }
      case 4u: { acc = acc * v; }
      case 5u: { acc += v * v; }
      case 6u: { acc += abs(v); }
      case 7u: { acc += v * v; }
      case 8u: { acc += exp(v - m); }
      default: { acc += v; }
    }
  }
  switch op {
    case 1u: { acc = acc / f32(pu(3u)); }
    case 7u: { acc = sqrt(acc); }
    case 8u: { acc = m + log(acc); }
    case 9u: { acc = log(acc); }
    default: { }
  }
  y[i] = acc;
}
)";

// LayerNormalization over the trailing `n` elements of each row. Words: 0 rows, 1 n,
// 2 epsilon, 3 scale stride (0: one value), 4 has bias, 5 bias stride, 6 writes Mean (binding 5),
// 7 writes InvStdDev (binding 6).
const char* const kLayerNormBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> scale: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> inv_out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x + gid.y * pu(31u);
  if (r >= pu(0u)) { return; }
  let n = pu(1u);
  let base = r * n;
  var mean = 0.0;
  for (var j = 0u; j < n; j++) { mean += x[base + j]; }
  mean = mean / f32(n);
  var variance = 0.0;
  for (var j = 0u; j < n; j++) { let d = x[base + j] - mean; variance += d * d; }
  variance = variance / f32(n);
  let inv = 1.0 / sqrt(variance + pf(2u));
  if (pu(6u) != 0u) { mean_out[r] = mean; }
  if (pu(7u) != 0u) { inv_out[r] = inv; }
  let ss = pu(3u);
  let bs = pu(5u);
  let has_bias = pu(4u) != 0u;
  for (var j = 0u; j < n; j++) {
    var v = (x[base + j] - mean) * inv * scale[j * ss];
    if (has_bias) { v += bias[j * bs]; }
    y[base + j] = v;
  }
}
)";

// Gather: y[o, j, r] = x[o, idx[j], r]; the indices are normalised on the host (u32).
// Words: 0 n, 1 inner (elements after the axis), 2 index count, 3 axis dim.
const char* const kGatherBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let inner = pu(1u);
  let r = i % inner;
  let t = i / inner;
  let j = t % pu(2u);
  let o = t / pu(2u);
  y[i] = x[(o * pu(3u) + idx[j]) * inner + r];
}
)";

// Slice: a strided read with signed steps. Words: 0 n, 1 rank, 2..7 output dims, 8 base offset,
// 9..14 signed element deltas per output dim (step * stride).
const char* const kSliceBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  var rem = i;
  var src = i32(pu(8u));
  for (var d = i32(pu(1u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let c = rem % pu(2u + k);
    rem = rem / pu(2u + k);
    src += i32(c) * bitcast<i32>(pu(9u + k));
  }
  y[i] = x[u32(src)];
}
)";

// Concat: one dispatch per input, writing its block rows into the output.
// Words: 0 n (input elements), 1 input row (axis dim * inner), 2 output row, 3 offset in a row.
const char* const kConcatBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let row = pu(1u);
  y[(i / row) * pu(2u) + pu(3u) + i % row] = x[i];
}
)";

// Where with numpy broadcasting of three operands; the condition comes as one u32 per element.
// Words: 0 n, 1 rank, 2..7 output dims, 8..13 condition strides, 14..19 X's, 20..25 Y's.
const char* const kWhereBody = R"(
@group(0) @binding(1) var<storage, read> c: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  var rem = i;
  var ic = 0u;
  var ia = 0u;
  var ib = 0u;
  for (var d = i32(pu(1u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let q = rem % pu(2u + k);
    rem = rem / pu(2u + k);
    ic += q * pu(8u + k);
    ia += q * pu(14u + k);
    ib += q * pu(20u + k);
  }
  y[i] = select(b[ib], a[ia], c[ic] != 0u);
}
)";

// BatchNormalization (inference): y = x * ab[c] + ab[channels + c] with c = (i / inner) % channels
// (per-channel scale and shift folded from scale, B, mean and var when the kernel is prepared).
// Words: 0 n, 1 inner (elements per channel of one image), 2 channels.
const char* const kBatchNormBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> ab: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let c = (i / pu(1u)) % pu(2u);
  y[i] = x[i] * ab[c] + ab[pu(2u) + c];
}
)";

// Pad: each output element reads its source element, or the constant where it falls outside
// (constant mode), or the nearest edge element (edge), or the mirrored one (reflect).
// Words: 0 n, 1 rank, 2..7 output dims, 8..13 input dims, 14..19 begin pads (i32), 20 mode
// (0 constant, 1 edge, 2 reflect), 21 the constant (f32).
const char* const kPadBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let mode = pu(20u);
  var rem = i;
  var src = 0u;
  var stride = 1u;
  var outside = false;
  for (var d = i32(pu(1u)) - 1; d >= 0; d--) {
    let k = u32(d);
    let od = pu(2u + k);
    let n = i32(pu(8u + k));
    let o = i32(rem % od);
    rem = rem / od;
    var c = o - bitcast<i32>(pu(14u + k));
    if (c < 0 || c >= n) {
      if (mode == 0u) {
        outside = true;
        c = 0;
      } else if (mode == 1u) {
        c = clamp(c, 0, n - 1);
      } else {
        let period = 2 * (n - 1);
        var r = c % period;
        if (r < 0) { r += period; }
        c = select(r, period - r, r >= n);
      }
    }
    src += u32(c) * stride;
    stride *= u32(n);
  }
  if (outside) {
    y[i] = pf(21u);
  } else {
    y[i] = x[src];
  }
}
)";

// Resize: each output element combines the taps of every resized axis (the product of their
// weights), from per-axis tables built on the host (ops/image's plans). Table words, per axis k
// of the rank: 4k taps (0: the axis is not resized, the output index is the input index),
// 4k+1 the offset of its out x taps input indices, 4k+2 of its weights (f32 bits; absent for
// nearest), 4k+3 of its out extrapolation flags.
// Words: 0 n, 1 rank, 2..7 output dims, 8..13 input strides, 14 weighted (0 nearest),
// 15 extrapolation value.
const char* const kResizeBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> tb: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let r = pu(1u);
  var oc: array<u32, 6>;
  var rem = i;
  for (var d = i32(r) - 1; d >= 0; d--) {
    let k = u32(d);
    let od = pu(2u + k);
    oc[k] = rem % od;
    rem = rem / od;
  }
  var base = 0u;
  var total = 1u;
  for (var k = 0u; k < r; k++) {
    let taps = tb[4u * k];
    if (taps == 0u) {
      base += oc[k] * pu(8u + k);
    } else {
      if (tb[tb[4u * k + 3u] + oc[k]] != 0u) {
        y[i] = pf(15u);
        return;
      }
      total *= taps;
    }
  }
  let weighted = pu(14u) != 0u;
  var acc = 0.0;
  for (var t = 0u; t < total; t++) {
    var q = t;
    var off = base;
    var w = 1.0;
    for (var k = 0u; k < r; k++) {
      let taps = tb[4u * k];
      if (taps == 0u) { continue; }
      let e = oc[k] * taps + q % taps;
      q = q / taps;
      off += tb[tb[4u * k + 1u] + e] * pu(8u + k);
      if (weighted) { w *= bitcast<f32>(tb[tb[4u * k + 2u] + e]); }
    }
    acc += w * x[off];
  }
  y[i] = acc;
}
)";

// ConvTranspose (1-d as 2-d with height 1), one output element per invocation: the sum over the
// input positions and taps that land on it (oy = iy * sh - ph + ky * dh). Weights
// [cin, cout / group, kh, kw]. Words: 0 n, 1 cout, 2 cout_g, 3 cin, 4 h, 5 w, 6 cin_g, 7 oh, 8 ow,
// 9 kh, 10 kw, 11 sh, 12 sw, 13 ph, 14 pw (i32 bits), 15 dh, 16 dw, 17 has_bias.
const char* const kConvTransposeBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat_id(gid);
  if (i >= pu(0u)) { return; }
  let OW = pu(8u);
  let OH = pu(7u);
  let M = pu(1u);
  let ox = i32(i % OW);
  let oy = i32((i / OW) % OH);
  let co = (i / (OW * OH)) % M;
  let b = i / (OW * OH * M);
  let cout_g = pu(2u);
  let cin_g = pu(6u);
  let g = co / cout_g;
  let m = co % cout_g;
  let H = i32(pu(4u));
  let W = i32(pu(5u));
  let KH = pu(9u);
  let KW = pu(10u);
  let sh = i32(pu(11u));
  let sw = i32(pu(12u));
  let ph = bitcast<i32>(pu(13u));
  let pw = bitcast<i32>(pu(14u));
  let dh = i32(pu(15u));
  let dw = i32(pu(16u));
  let plane = u32(H * W);
  let wstep = cout_g * KH * KW;
  var acc = 0.0;
  if (pu(17u) != 0u) { acc = bias[co]; }
  for (var ky = 0u; ky < KH; ky++) {
    let ty = oy + ph - i32(ky) * dh;
    if (ty < 0 || ty % sh != 0) { continue; }
    let iy = ty / sh;
    if (iy >= H) { continue; }
    for (var kx = 0u; kx < KW; kx++) {
      let tx = ox + pw - i32(kx) * dw;
      if (tx < 0 || tx % sw != 0) { continue; }
      let ix = tx / sw;
      if (ix >= W) { continue; }
      var xi = (b * pu(3u) + g * cin_g) * plane + u32(iy * W + ix);
      var wi = ((g * cin_g) * cout_g + m) * KH * KW + ky * KW + kx;
      for (var ci = 0u; ci < cin_g; ci++) {
        acc += x[xi] * w[wi];
        xi += plane;
        wi += wstep;
      }
    }
  }
  y[i] = acc;
}
)";

// Conv as an implicit GEMM per image and group: Y[m, p] = sum_k W[m, k] * X[k, p] over the
// group's output channels m, output pixels p and K = cin_g * kh * kw (X gathered from the input
// as it is loaded: zero outside the padded input). A 256-invocation work group computes a tile of
// 64 channels x 64 pixels, each invocation 4 x 4 of them (rows ty + 16 i, columns tx + 16 j),
// over K in steps of 32 staged in workgroup memory as vec4s (one read gives an invocation's four
// rows or columns); bias and the activation in the epilogue.
// Words: 0 cout_g, 1 P = oh * ow, 2 K, 3 group, 4 cin, 5 h, 6 w, 7 cin_g, 8 oh, 9 ow, 10 kh,
// 11 kw, 12 sh, 13 sw, 14 ph, 15 pw, 16 dh, 17 dw, 18 has_bias, 19 activation (0 none, 1 Relu,
// 2 Clip), 20 lo, 21 hi.
const char* const kConvGemmBody = R"(
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn act(v: f32) -> f32 {
  switch pu(19u) {
    case 1u: { return max(v, 0.0); }
    case 2u: { return min(max(v, pf(20u)), pf(21u)); }
    default: { return v; }
  }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = pu(0u);
  let P = pu(1u);
  let K = pu(2u);
  let G = pu(3u);
  let H = i32(pu(5u));
  let W = i32(pu(6u));
  let OW = pu(9u);
  let KH = pu(10u);
  let KW = pu(11u);
  let dh = i32(pu(16u));
  let dw = i32(pu(17u));
  let n = wid.z / G;
  let g = wid.z % G;
  let m0 = wid.y * 64u;
  let p0 = wid.x * 64u;
  let plane = u32(H * W);
  let xbase = (n * pu(4u) + g * pu(7u)) * plane;
  let wbase = g * M * K;
  // Loads per step of 32: weights k0 + li % 32 of rows li / 32 + 8 l; inputs k0 + 8 (li / 64) + l
  // of pixel li % 64 (walking channel / tap without divisions).
  let lk = li % 32u;
  let lm = li / 32u;
  let lp = li % 64u;
  let lq = (li / 64u) * 8u;
  let p = p0 + lp;
  let pin = p < P;
  let iy0 = i32(p / OW) * i32(pu(12u)) - i32(pu(14u));
  let ix0 = i32(p % OW) * i32(pu(13u)) - i32(pu(15u));
  let tslot = lp % 16u;
  let tcomp = lp / 16u;
  for (var i = 0u; i < 4u; i++) { acc[i] = vec4<f32>(0.0); }
  for (var k0 = 0u; k0 < K; k0 += 32u) {
    for (var l = 0u; l < 8u; l++) {
      let m = lm + 8u * l;
      let k = k0 + lk;
      var v = 0.0;
      if (m0 + m < M && k < K) { v = w[wbase + (m0 + m) * K + k]; }
      ta[lk * 16u + m % 16u][m / 16u] = v;
    }
    var k = k0 + lq;
    var c = k / (KH * KW);
    let r = k % (KH * KW);
    var ky = r / KW;
    var kx = r % KW;
    for (var l = 0u; l < 8u; l++) {
      var v = 0.0;
      if (pin && k < K) {
        let iy = iy0 + i32(ky) * dh;
        let ix = ix0 + i32(kx) * dw;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W) { v = x[xbase + c * plane + u32(iy * W + ix)]; }
      }
      tb[(lq + l) * 16u + tslot][tcomp] = v;
      k += 1u;
      kx += 1u;
      if (kx == KW) {
        kx = 0u;
        ky += 1u;
        if (ky == KH) {
          ky = 0u;
          c += 1u;
        }
      }
    }
    tile_step(lid);
  }
  let ybase = (n * G + g) * M * P;
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + lid.y + 16u * i;
    if (m >= M) { continue; }
    var bv = 0.0;
    if (pu(18u) != 0u) { bv = bias[g * M + m]; }
    for (var j = 0u; j < 4u; j++) {
      let q = p0 + lid.x + 16u * j;
      if (q < P) { y[ybase + m * P + q] = act(acc[i][j] + bv); }
    }
  }
}
)";

/// A kernel's full source: the prelude, then its body (built once).
#define WG_SOURCE(fn, body)                                        \
  const char* fn() {                                               \
    static const std::string src = std::string(kPrelude) + (body); \
    return src.c_str();                                            \
  }
WG_SOURCE(unary_wgsl, kUnaryBody)
WG_SOURCE(binary_wgsl, kBinaryBody)
WG_SOURCE(matmul_wgsl, std::string(kTileCore) + kMatMulBody)
WG_SOURCE(mat_rows_wgsl, kMatRowsBody)
WG_SOURCE(softmax_wgsl, kSoftmaxBody)
WG_SOURCE(transpose_wgsl, kTransposeBody)
WG_SOURCE(conv_wgsl, kConvBody)
WG_SOURCE(conv_gemm_wgsl, std::string(kTileCore) + kConvGemmBody)
WG_SOURCE(global_pool_wgsl, kGlobalPoolBody)
WG_SOURCE(pool_wgsl, kPoolBody)
WG_SOURCE(reduce_wgsl, kReduceBody)
WG_SOURCE(layer_norm_wgsl, kLayerNormBody)
WG_SOURCE(gather_wgsl, kGatherBody)
WG_SOURCE(slice_wgsl, kSliceBody)
WG_SOURCE(concat_wgsl, kConcatBody)
WG_SOURCE(where_wgsl, kWhereBody)
WG_SOURCE(batch_norm_wgsl, kBatchNormBody)
WG_SOURCE(pad_wgsl, kPadBody)
WG_SOURCE(resize_wgsl, kResizeBody)
WG_SOURCE(conv_transpose_wgsl, kConvTransposeBody)
#undef WG_SOURCE

}  // namespace

// ---------------------------------------------------------------------------------------------
// Helpers

void check_size(const std::string& where, int64_t numel) {
  if (numel > int64_t(0xffffffff) / 2)
    fail(ErrorCode::kRuntime, "webgpu: ", where, ": ", numel, " elements exceed the kernels' 32-bit indexing");
}

/// Uploads `words` into a fresh pooled buffer of the run (kept alive by the stream; defined below).
BufRef upload_words(Device& dev, Stream& s, const std::vector<uint32_t>& words);

namespace {

/// numpy broadcast of two shapes (throws naming the node when they do not broadcast).
Shape broadcast_shape(const std::string& where, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + a.size() >= r ? a[k + a.size() - r] : 1;
    const int64_t db = k + b.size() >= r ? b[k + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", where, ": shapes ", a.to_string(), " and ", b.to_string(),
           " do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return Shape(out);
}

uint32_t u32_of(int64_t v) { return static_cast<uint32_t>(v); }

// ---------------------------------------------------------------------------------------------
// Unary maps

struct UnaryOp {
  const char* name;
  int code;
  int since;
};
constexpr UnaryOp kUnary[] = {
    {"Relu", 0, 6},         {"Sigmoid", 1, 6}, {"Tanh", 2, 6},        {"Exp", 3, 6},    {"Abs", 4, 6},
    {"Neg", 5, 6},          {"Sqrt", 6, 6},    {"Erf", 7, 9},         {"Clip", 8, 6},   {"LeakyRelu", 9, 6},
    {"HardSigmoid", 10, 6}, {"Log", 11, 6},    {"Reciprocal", 12, 6}, {"Floor", 13, 6}, {"Ceil", 14, 6},
    {"Softplus", 15, 1},    {"Elu", 16, 6},
};

int unary_code(const std::string& op) {
  for (const auto& u : kUnary)
    if (op == u.name) return u.code;
  return -1;
}

/// Clip's bounds from its constant inputs (opset 11+) or attributes; false when not constant.
bool clip_bounds(const Graph& g, const Node& n, float* lo, float* hi, std::string* why) {
  *lo = -std::numeric_limits<float>::infinity();
  *hi = std::numeric_limits<float>::infinity();
  if (n.opset < 11) {
    *lo = n.attr_float("min", -std::numeric_limits<float>::max());
    *hi = n.attr_float("max", std::numeric_limits<float>::max());
    return true;
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!n.has_input(i)) continue;
    const Tensor* t = is_constant(g, n, i) ? &g.values[n.inputs[i]].initializer : nullptr;
    if (!t || t->numel() != 1 || t->dtype() != DType::kFloat) {
      if (why) *why = str("Clip bound input ", i, " is not a constant float32 scalar");
      return false;
    }
    (i == 1 ? *lo : *hi) = t->data<float>()[0];
  }
  return true;
}

class UnaryKernel final : public WgKernel {
 public:
  UnaryKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d, int code, float alpha, float beta)
      : WgKernel(info, std::move(d), 0b110), code_(code), alpha_(alpha), beta_(beta) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = out(ctx, 0, x.shape());
    check_size(label(), x.numel());
    Params p;
    p.u(x.numel()).u(code_).f(alpha_).f(beta_);
    s.dispatch_1d("unary", unary_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(x.numel()));
  }

 private:
  int code_;
  float alpha_, beta_;
};

bool check_unary(const ClaimInfo& c, Decline* why) {
  if (c.node.op_type == "Clip") {
    float lo, hi;
    std::string reason;
    if (!clip_bounds(c.graph, c.node, &lo, &hi, &reason))
      return decline(why, DeclineCode::kUnsupportedAttribute, reason);
  }
  return true;
}

std::unique_ptr<Kernel> create_unary(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  const Node& n = info.node;
  float alpha = 0, beta = 0;
  if (n.op_type == "Clip") {
    std::string why;
    if (!clip_bounds(info.graph, n, &alpha, &beta, &why)) fail(ErrorCode::kNotImplemented, "webgpu: ", why);
  } else if (n.op_type == "LeakyRelu") {
    alpha = n.attr_float("alpha", 0.01f);
  } else if (n.op_type == "HardSigmoid") {
    alpha = n.attr_float("alpha", 0.2f);
    beta = n.attr_float("beta", 0.5f);
  } else if (n.op_type == "Elu") {
    alpha = n.attr_float("alpha", 1.0f);
  }
  return std::make_unique<UnaryKernel>(info, d, unary_code(n.op_type), alpha, beta);
}

// ---------------------------------------------------------------------------------------------
// Binary arithmetic with numpy broadcasting

int binary_code(const std::string& op) {
  if (op == "Add") return 0;
  if (op == "Sub") return 1;
  if (op == "Mul") return 2;
  if (op == "Div") return 3;
  if (op == "Max") return 4;
  if (op == "Min") return 5;
  return -1;
}

class BinaryKernel final : public WgKernel {
 public:
  BinaryKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d, int code)
      : WgKernel(info, std::move(d), 0), code_(code) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Shape ys = broadcast_shape(label(), a.shape(), b.shape());
    if (ys.size() > static_cast<size_t>(kMaxRank))
      fail(ErrorCode::kNotImplemented, "webgpu: ", label(), ": rank ", ys.size(), " is above the kernels' limit of ",
           kMaxRank);
    Tensor& y = out(ctx, 0, ys);
    check_size(label(), y.numel());
    const auto sa = broadcast_strides(a.shape(), ys), sb = broadcast_strides(b.shape(), ys);
    Params p;
    p.u(y.numel()).u(code_).u(static_cast<int64_t>(ys.size()));
    for (size_t k = 0; k < 6; ++k) p.u(k < ys.size() ? ys[k] : 1);
    for (size_t k = 0; k < 6; ++k) p.u(k < sa.size() ? sa[k] : 0);
    for (size_t k = 0; k < 6; ++k) p.u(k < sb.size() ? sb[k] : 0);
    s.dispatch_1d("binary", binary_wgsl(), p, {in(ctx, 0), in(ctx, 1), device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  int code_;
};

bool check_binary(const ClaimInfo& c, Decline* why) {
  if (c.node.num_inputs() != 2)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("webgpu runs ", c.node.op_type, " of two inputs, this node has ", c.node.num_inputs()));
  return true;
}

std::unique_ptr<Kernel> create_binary(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<BinaryKernel>(info, d, binary_code(info.node.op_type));
}

// ---------------------------------------------------------------------------------------------
// MatMul and Gemm

struct MatDesc {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> batch, sa_batch, sb_batch;  // batch dims and A's / B's element strides over them
  int64_t sam = 0, sak = 0, sbk = 0, sbn = 0;
  float alpha = 1, beta = 0;
  bool has_c = false;
  int64_t scm = 0, scn = 0;
};

void record_matmul(Stream& s, const std::string& label, const MatDesc& given, const BufRef& A, const BufRef& B,
                   const BufRef& C, const BufRef& Y) {
  MatDesc m = given;
  int64_t items = 1;
  for (int64_t d : m.batch) items *= d;
  check_size(label, items * m.M * m.N);
  // B the same matrix for every batch and A's batches consecutive row-major matrices: one product
  // of items * M rows (the encoder's [32, 1, 768] x [768, 2304] becomes [32, 768] x [768, 2304]).
  bool stacked = !m.batch.empty() && !m.has_c && m.sam == m.K && m.sak == 1;
  int64_t step = m.M * m.K;
  for (size_t k = m.batch.size(); stacked && k-- > 0;) {
    stacked = m.sb_batch[k] == 0 && (m.batch[k] == 1 || m.sa_batch[k] == step);
    step *= m.batch[k];
  }
  if (stacked) {
    m.M *= items;
    items = 1;
    m.batch.clear();
    m.sa_batch.clear();
    m.sb_batch.clear();
  }
  if (m.batch.size() > 4) fail(ErrorCode::kNotImplemented, "webgpu: ", label, ": more than 4 batch dimensions");
  Params p;
  p.u(m.M).u(m.N).u(m.K).u(static_cast<int64_t>(m.batch.size()));
  for (size_t k = 0; k < 4; ++k) p.u(k < m.batch.size() ? m.batch[k] : 1);
  for (size_t k = 0; k < 4; ++k) p.u(k < m.sa_batch.size() ? m.sa_batch[k] : 0);
  for (size_t k = 0; k < 4; ++k) p.u(k < m.sb_batch.size() ? m.sb_batch[k] : 0);
  p.u(m.sam).u(m.sak).u(m.sbk).u(m.sbn).f(m.alpha).f(m.beta).u(m.has_c ? 1 : 0).u(m.scm).u(m.scn);
  if (items == 0 || m.M == 0 || m.N == 0) return;
  if (m.M <= 8) {
    // Few rows: 4 columns of one row per invocation, no shared tiles.
    const int64_t groups = (m.N + 3) / 4;
    p.u(groups).u(items);
    s.dispatch_1d("mat_rows", mat_rows_wgsl(), p, {A, B, C, Y}, static_cast<uint64_t>(items * m.M * groups));
    return;
  }
  if (items > 65535)
    fail(ErrorCode::kNotImplemented, "webgpu: ", label, ": ", items, " products exceed 65535 work groups");
  s.dispatch("matmul", matmul_wgsl(), p, {A, B, C, Y}, u32_of((m.N + 63) / 64), u32_of((m.M + 63) / 64), u32_of(items));
}

class MatMulKernel final : public WgKernel {
 public:
  MatMulKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : WgKernel(info, std::move(d), 0) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape a = ctx.input(0).shape(), b = ctx.input(1).shape();
    if (a.size() == 0 || b.size() == 0) fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": MatMul of a scalar");
    // 1-D operands become matrices ([K] -> [1, K] for A, [K, 1] for B); their dim is dropped after.
    const bool a1 = a.size() == 1, b1 = b.size() == 1;
    std::vector<int64_t> av, bv;
    if (a1) av.push_back(1);
    for (size_t k = 0; k < a.size(); ++k) av.push_back(a[k]);
    for (size_t k = 0; k < b.size(); ++k) bv.push_back(b[k]);
    if (b1) bv.push_back(1);
    MatDesc m;
    m.M = av[av.size() - 2];
    m.K = av.back();
    m.N = bv.back();
    if (bv[bv.size() - 2] != m.K)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": inner dimensions differ (", a.to_string(), " x ",
           b.to_string(), ")");
    const Shape ab(std::vector<int64_t>(av.begin(), av.end() - 2)), bb(std::vector<int64_t>(bv.begin(), bv.end() - 2));
    const Shape batch = broadcast_shape(label(), ab, bb);
    m.batch = batch.to_vector();
    // Strides of A's and B's batch dims in elements of the whole tensors.
    const auto sa = broadcast_strides(ab, batch), sb = broadcast_strides(bb, batch);
    for (size_t k = 0; k < batch.size(); ++k) {
      m.sa_batch.push_back(sa[k] * m.M * m.K);
      m.sb_batch.push_back(sb[k] * m.K * m.N);
    }
    m.sam = m.K;
    m.sak = 1;
    m.sbk = m.N;
    m.sbn = 1;
    std::vector<int64_t> ys = m.batch;
    if (!a1) ys.push_back(m.M);
    if (!b1) ys.push_back(m.N);
    Tensor& y = out(ctx, 0, Shape(ys));
    const BufRef A = in(ctx, 0);
    record_matmul(s, label(), m, A, in(ctx, 1), A, device_ref(y, "output"));
  }
};

class GemmKernel final : public WgKernel {
 public:
  GemmKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0),
        alpha_(info.node.attr_float("alpha", 1.0f)),
        beta_(info.node.attr_float("beta", 1.0f)),
        ta_(info.node.attr_int("transA", 0) != 0),
        tb_(info.node.attr_int("transB", 0) != 0) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape a = ctx.input(0).shape(), b = ctx.input(1).shape();
    if (a.size() != 2 || b.size() != 2)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": Gemm takes 2-d A and B, got ", a.to_string(), " and ",
           b.to_string());
    MatDesc m;
    m.M = ta_ ? a[1] : a[0];
    m.K = ta_ ? a[0] : a[1];
    m.N = tb_ ? b[0] : b[1];
    if ((tb_ ? b[1] : b[0]) != m.K)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": inner dimensions differ (", a.to_string(), " x ",
           b.to_string(), ")");
    m.sam = ta_ ? 1 : a[1];
    m.sak = ta_ ? a[1] : 1;
    m.sbk = tb_ ? 1 : b[1];
    m.sbn = tb_ ? b[1] : 1;
    m.alpha = alpha_;
    m.beta = beta_;
    const BufRef A = in(ctx, 0);
    BufRef C = A;
    if (ctx.has_input(2) && beta_ != 0.0f) {
      const Shape c = ctx.input(2).shape();
      const auto bad = [&] {
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": C of shape ", c.to_string(),
             " does not broadcast to [", m.M, ",", m.N, "]");
      };
      if (c.size() > 2) bad();
      const int64_t cm = c.size() == 2 ? c[0] : 1, cn = c.size() >= 1 ? c[c.size() - 1] : 1;
      if ((cm != 1 && cm != m.M) || (cn != 1 && cn != m.N)) bad();
      m.has_c = true;
      m.scm = cm == 1 ? 0 : cn;
      m.scn = cn == 1 ? 0 : 1;
      C = in(ctx, 2);
    }
    Tensor& y = out(ctx, 0, Shape{m.M, m.N});
    record_matmul(s, label(), m, A, in(ctx, 1), C, device_ref(y, "output"));
  }

 private:
  float alpha_, beta_;
  bool ta_, tb_;
};

bool check_matmul(const ClaimInfo& c, Decline* why) {
  for (size_t i = 0; i < 2; ++i)
    if (in_rank(c, i) == 0) return decline(why, DeclineCode::kUnsupportedAttribute, "MatMul of a scalar");
  return true;
}

bool check_gemm(const ClaimInfo& c, Decline* why) {
  for (size_t i = 0; i < 2; ++i)
    if (in_rank(c, i) != 2)
      return decline(why, DeclineCode::kUnsupportedAttribute, str("Gemm input ", i, " is not 2-d"));
  if (c.node.has_input(2) && in_rank(c, 2) > 2)
    return decline(why, DeclineCode::kUnsupportedAttribute, "Gemm's C has rank above 2");
  return true;
}

std::unique_ptr<Kernel> create_matmul(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<MatMulKernel>(info, d);
}
std::unique_ptr<Kernel> create_gemm(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<GemmKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Softmax / LogSoftmax over the last axis

int64_t softmax_axis(const Node& n, int rank) {
  int64_t axis = n.attr_int("axis", n.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  return axis;
}

class SoftmaxKernel final : public WgKernel {
 public:
  SoftmaxKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0), log_(info.node.op_type == "LogSoftmax") {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = out(ctx, 0, x.shape());
    check_size(label(), x.numel());
    const int64_t n = x.shape().size() ? x.shape()[x.shape().size() - 1] : 1;
    const int64_t rows = n ? x.numel() / n : 0;
    Params p;
    p.u(rows).u(n).u(log_ ? 1 : 0);
    s.dispatch_1d("softmax", softmax_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(rows));
  }

 private:
  bool log_;
};

bool check_softmax(const ClaimInfo& c, Decline* why) {
  const int rank = in_rank(c, 0);
  if (rank < 1) return decline(why, DeclineCode::kDynamicShape, "the input's rank is unknown or 0");
  const int64_t axis = softmax_axis(c.node, rank);
  if (axis != rank - 1)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("webgpu runs ", c.node.op_type, " over the last axis only; axis is ", axis, " of rank ", rank));
  return true;
}

std::unique_ptr<Kernel> create_softmax(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<SoftmaxKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity): the output is input 0's buffer with the
// output's planned shape; no work is recorded.

class ViewKernel final : public WgKernel {
 public:
  // Every input but the data is a shape operand read on the host.
  ViewKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : WgKernel(info, std::move(d), ~1u) {}
  int alias_input(size_t out) const override { return out == 0 ? 0 : -1; }
  void run(KernelContext& ctx, Stream&) const override {
    const Tensor& x = ctx.input(0);
    if (!ctx.output_ready(0)) fail(ErrorCode::kRuntime, "webgpu: ", label(), ": the output's shape is unknown");
    const Shape shape = ctx.output(0).shape();
    if (shape.numel() != x.numel())
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": cannot view ", x.shape().to_string(), " as ",
           shape.to_string());
    const BufRef b = in(ctx, 0);
    ctx.set_output(0, Tensor::device_tensor(x.dtype(), shape, const_cast<Buffer*>(b.buf), b.keep, dev_->memory_id()));
  }
};

bool check_view(const ClaimInfo& c, Decline* why) {
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> create_view(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ViewKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Transpose

class TransposeKernel final : public WgKernel {
 public:
  TransposeKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0), perm_(info.node.attr_ints("perm")) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    const size_t r = xs.size();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
    if (perm.size() != r)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": perm has ", perm.size(), " entries for rank ", r);
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      if (p < 0) p += static_cast<int64_t>(r);
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[p])
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": perm is not a permutation of the axes");
      seen[p] = true;
    }
    std::vector<int64_t> ys(r);
    for (size_t k = 0; k < r; ++k) ys[k] = xs[perm[k]];
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), y.numel());
    const auto xst = strides_of(xs);
    Params p;
    p.u(y.numel()).u(static_cast<int64_t>(r));
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? ys[k] : 1);
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? xst[perm[k]] : 0);
    s.dispatch_1d("transpose", transpose_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  std::vector<int64_t> perm_;
};

std::unique_ptr<Kernel> create_transpose(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<TransposeKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Conv (1-d and 2-d: implicit GEMM, or direct when depthwise) and GlobalAveragePool

class ConvKernel final : public WgKernel {
 public:
  ConvKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0),
        group_(info.node.attr_int("group", 1)),
        attrs_(WindowAttrs::of(info.node, false)),
        kshape_(info.node.attr_ints("kernel_shape")) {
    // FusedConv (the optimizer's Conv + Relu / Clip): the activation in the epilogue.
    const std::string a = info.node.attr_string("activation", "");
    act_ = a == "Relu" ? 1 : a == "Clip" ? 2 : 0;
    if (act_ == 2) {
      const std::vector<float> prm = info.node.attr_floats("activation_params");
      lo_ = prm.size() > 0 ? prm[0] : -std::numeric_limits<float>::max();
      hi_ = prm.size() > 1 ? prm[1] : std::numeric_limits<float>::max();
    }
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape xs = ctx.input(0).shape(), ws = ctx.input(1).shape();
    const auto bad = [&](const std::string& what) {
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": ", what, " (x ", xs.to_string(), ", w ", ws.to_string(),
           ")");
    };
    if ((xs.size() != 3 && xs.size() != 4) || ws.size() != xs.size())
      bad("1-d or 2-d convolution takes 3-d or 4-d x and w of one rank");
    if (group_ < 1 || xs[1] % group_ || ws[0] % group_ || ws[1] * group_ != xs[1])
      bad(str("channels do not match group ", group_));
    // A 1-d convolution is a 2-d one of height 1.
    const bool one_d = xs.size() == 3;
    const Shape in_sp = one_d ? Shape{xs[2]} : Shape{xs[2], xs[3]};
    const Shape k_sp = one_d ? Shape{ws[2]} : Shape{ws[2], ws[3]};
    if (!kshape_.empty() && Shape(kshape_) != k_sp) bad("kernel_shape differs from w");
    const WindowGeometry g = window_geometry(attrs_, ctx.node(), in_sp, k_sp);
    const size_t a = one_d ? 0 : 1;  // the width's index in the geometry
    const int64_t h = one_d ? 1 : xs[2], wd = xs.back(), kh = one_d ? 1 : ws[2], kw = ws.back();
    const int64_t oh = one_d ? 1 : g.out[0], ow = g.out[a];
    const int64_t sh = one_d ? 1 : g.stride[0], sw = g.stride[a], dh = one_d ? 1 : g.dilation[0], dw = g.dilation[a];
    const int64_t ph = one_d ? 0 : g.pad_begin[0], pw = g.pad_begin[a];
    if (oh < 1 || ow < 1) bad("the window is larger than the input");
    if (ph < 0 || pw < 0 || sh < 1 || sw < 1 || dh < 1 || dw < 1) bad("negative pads, strides or dilations");
    std::vector<int64_t> ys{xs[0], ws[0]};
    for (int64_t v : g.out) ys.push_back(v);
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), y.numel());
    check_size(label(), ctx.input(0).numel());
    const bool bias = ctx.has_input(2);
    if (bias && ctx.input(2).numel() != ws[0]) bad("the bias has the wrong length");
    if (y.numel() == 0) return;
    const BufRef w = in(ctx, 1);
    const int64_t cin_g = ws[1], cout_g = ws[0] / group_;
    if (cin_g > 1) {
      // Implicit GEMM: 64 x 64 tiles of output channels x pixels per work group, per image and group.
      const int64_t k = cin_g * kh * kw;
      const int64_t tiles_z = xs[0] * group_;
      if (tiles_z > 65535 || (cout_g + 63) / 64 > 65535 || (oh * ow + 63) / 64 > 65535)
        bad("the tiled kernel's grid exceeds 65535 work groups along an axis");
      check_size(label(), ctx.input(1).numel());
      Params p;
      p.u(cout_g).u(oh * ow).u(k).u(group_).u(xs[1]).u(h).u(wd).u(cin_g).u(oh).u(ow).u(kh).u(kw);
      p.u(sh).u(sw).u(ph).u(pw).u(dh).u(dw).u(bias ? 1 : 0).u(act_);
      p.f(lo_).f(hi_);
      s.dispatch("conv_gemm", conv_gemm_wgsl(), p, {in(ctx, 0), w, bias ? in(ctx, 2) : w, device_ref(y, "output")},
                 u32_of((oh * ow + 63) / 64), u32_of((cout_g + 63) / 64), u32_of(tiles_z));
      return;
    }
    // Depthwise (one input channel per group): direct, one output element per invocation.
    Params p;
    p.u(y.numel()).u(xs[1]).u(h).u(wd).u(ws[0]).u(oh).u(ow).u(kh).u(kw);
    p.u(sh).u(sw).u(dh).u(dw).u(ph).u(pw).u(bias ? 1 : 0);
    p.u(ws[1]).u(cout_g).u(act_).f(lo_).f(hi_);
    s.dispatch_1d("conv", conv_wgsl(), p, {in(ctx, 0), w, bias ? in(ctx, 2) : w, device_ref(y, "output")},
                  u32_of(y.numel()));
  }

 private:
  int64_t group_;
  WindowAttrs attrs_;  // read once
  std::vector<int64_t> kshape_;
  uint32_t act_ = 0;
  float lo_ = 0, hi_ = 0;
};

bool check_conv(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  const int r = in_rank(c, 0);
  if ((r != 3 && r != 4) || in_rank(c, 1) != r)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("webgpu runs 1-d and 2-d convolutions only (3-d or 4-d x and w); x has rank ", r));
  const std::string pad = n.attr_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "SAME_UPPER" && pad != "SAME_LOWER" && pad != "VALID")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad ", pad));
  const size_t sp = static_cast<size_t>(r - 2);
  const auto size_is = [&](const char* a, size_t k) { return !n.has_attr(a) || n.attr_ints(a).size() == k; };
  if (!size_is("strides", sp) || !size_is("dilations", sp) || !size_is("pads", 2 * sp) || !size_is("kernel_shape", sp))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "strides, dilations, pads or kernel_shape of the wrong length");
  for (const char* a : {"strides", "dilations"})
    for (int64_t v : n.attr_ints(a))
      if (v < 1) return decline(why, DeclineCode::kUnsupportedAttribute, str(a, " must be positive"));
  for (int64_t v : n.attr_ints("pads"))
    if (v < 0) return decline(why, DeclineCode::kUnsupportedAttribute, "negative pads");
  const std::string act = n.attr_string("activation", "");
  if (!act.empty() && act != "Relu" && act != "Clip")
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("fused activation '", act, "' (webgpu fuses Relu and Clip)"));
  return true;
}

std::unique_ptr<Kernel> create_conv(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ConvKernel>(info, d);
}

class GlobalPoolKernel final : public WgKernel {
 public:
  GlobalPoolKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : WgKernel(info, std::move(d), 0) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    if (xs.size() < 3) fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": the input has rank below 3");
    std::vector<int64_t> ys{xs[0], xs[1]};
    int64_t plane = 1;
    for (size_t k = 2; k < xs.size(); ++k) {
      plane *= xs[k];
      ys.push_back(1);
    }
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), x.numel());
    Params p;
    p.u(xs[0] * xs[1]).u(plane);
    s.dispatch_1d("global_pool", global_pool_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(xs[0] * xs[1]));
  }
};

bool check_global_pool(const ClaimInfo& c, Decline* why) {
  if (in_rank(c, 0) < 3) return decline(why, DeclineCode::kUnsupportedAttribute, "the input has rank below 3");
  return true;
}

std::unique_ptr<Kernel> create_global_pool(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<GlobalPoolKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// MaxPool / AveragePool (2-d)

class PoolKernel final : public WgKernel {
 public:
  PoolKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0),
        max_(info.node.op_type == "MaxPool"),
        include_pad_(info.node.attr_int("count_include_pad", 0) != 0),
        kshape_(info.node.attr_ints("kernel_shape")),
        attrs_(WindowAttrs::of(info.node, true)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    if ((xs.size() != 3 && xs.size() != 4) || kshape_.size() + 2 != xs.size())
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": 1-d or 2-d pooling takes a 3-d or 4-d input");
    // The output's shape as inference planned it (ceil_mode included).
    if (!ctx.output_ready(0)) fail(ErrorCode::kRuntime, "webgpu: ", label(), ": the output's shape is unknown");
    const Shape ys = ctx.output(0).shape();
    if (ys.size() != xs.size() || ys[0] != xs[0] || ys[1] != xs[1])
      fail(ErrorCode::kRuntime, "webgpu: ", label(), ": unexpected output shape ", ys.to_string());
    // A 1-d window is a 2-d one of height 1; pads (auto_pad included) from the shared geometry.
    const bool one_d = xs.size() == 3;
    const Shape in_sp = one_d ? Shape{xs[2]} : Shape{xs[2], xs[3]};
    const WindowGeometry g = window_geometry(attrs_, ctx.node(), in_sp, Shape(kshape_));
    const size_t a = one_d ? 0 : 1;
    const int64_t h = one_d ? 1 : xs[2], oh = one_d ? 1 : ys[2], kh = one_d ? 1 : kshape_[0];
    const int64_t sh = one_d ? 1 : g.stride[0], dh = one_d ? 1 : g.dilation[0], ph = one_d ? 0 : g.pad_begin[0];
    if (g.pad_begin[a] < 0 || ph < 0) fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": negative pads");
    Tensor& y = out(ctx, 0, ys);
    check_size(label(), x.numel());
    check_size(label(), y.numel());
    if (y.numel() == 0) return;
    Params p;
    p.u(y.numel()).u(h).u(xs.back()).u(oh).u(ys.back()).u(kh).u(kshape_.back()).u(sh).u(g.stride[a]);
    p.u(dh).u(g.dilation[a]).u(ph).u(g.pad_begin[a]).u(max_ ? 1 : 0).u(include_pad_ ? 1 : 0).u(xs[0] * xs[1]);
    s.dispatch_1d("pool", pool_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  bool max_, include_pad_;
  std::vector<int64_t> kshape_;
  WindowAttrs attrs_;  // read once
};

bool check_pool(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  const int r = in_rank(c, 0);
  if (r != 3 && r != 4)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("webgpu runs 1-d and 2-d pooling only (3-d or 4-d input); the input has rank ", r));
  if (n.has_output(1))
    return decline(why, DeclineCode::kUnsupportedAttribute, "MaxPool's Indices output is not supported");
  const std::string pad = n.attr_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "SAME_UPPER" && pad != "SAME_LOWER" && pad != "VALID")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad ", pad));
  if (n.attr_int("storage_order", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "storage_order 1 is not supported");
  if (n.op_type == "AveragePool" && n.attr_int("ceil_mode", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "AveragePool with ceil_mode is not supported");
  const auto size_is = [&](const char* a, size_t k) { return !n.has_attr(a) || n.attr_ints(a).size() == k; };
  const size_t sp = static_cast<size_t>(r - 2);
  if (n.attr_ints("kernel_shape").size() != sp || !size_is("strides", sp) || !size_is("dilations", sp) ||
      !size_is("pads", 2 * sp))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "kernel_shape, strides, dilations or pads of the wrong length");
  for (const char* a : {"kernel_shape", "strides", "dilations"})
    for (int64_t v : n.attr_ints(a))
      if (v < 1) return decline(why, DeclineCode::kUnsupportedAttribute, str(a, " must be positive"));
  for (int64_t v : n.attr_ints("pads"))
    if (v < 0) return decline(why, DeclineCode::kUnsupportedAttribute, "negative pads");
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> create_pool(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<PoolKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Reductions

struct ReduceOp {
  const char* name;
  int code;
  int axes_input_since;  // opset from which the axes are input 1 rather than an attribute
};
constexpr ReduceOp kReduce[] = {
    {"ReduceSum", 0, 13},       {"ReduceMean", 1, 18},      {"ReduceMax", 2, 18}, {"ReduceMin", 3, 18},
    {"ReduceProd", 4, 18},      {"ReduceSumSquare", 5, 18}, {"ReduceL1", 6, 18},  {"ReduceL2", 7, 18},
    {"ReduceLogSumExp", 8, 18}, {"ReduceLogSum", 9, 18},
};

const ReduceOp& reduce_op(const std::string& op) {
  for (const auto& r : kReduce)
    if (op == r.name) return r;
  fail(ErrorCode::kNotImplemented, "webgpu: no reduction ", op);
}

/// The node's axes (normalised, sorted, unique) for an input of `rank`; `all` when empty means
/// every axis. False when the axes are not known when the kernel is made.
bool reduce_axes(const Graph& g, const Node& n, int rank, std::vector<int64_t>* axes, bool* noop, std::string* why) {
  const ReduceOp& r = reduce_op(n.op_type);
  std::vector<int64_t> a;
  if (n.opset >= r.axes_input_since) {
    if (n.has_input(1)) {
      if (!is_constant(g, n, 1)) {
        *why = "the axes are not a constant";
        return false;
      }
      const Tensor& t = g.values[n.inputs[1]].initializer;
      for (int64_t k = 0; k < t.numel(); ++k) a.push_back(static_cast<int64_t>(t.element_as_double(k)));
    }
    *noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    a = n.attr_ints("axes");
    *noop = false;
  }
  for (int64_t& v : a) {
    if (v < -rank || v >= rank) {
      *why = str("axis ", v, " is out of range for rank ", rank);
      return false;
    }
    if (v < 0) v += rank;
  }
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  *axes = a;
  return true;
}

class ReduceKernel final : public WgKernel {
 public:
  ReduceKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0b10),
        code_(reduce_op(info.node.op_type).code),
        keepdims_(info.node.attr_int("keepdims", 1) != 0),
        node_(&info.node),
        graph_(&info.graph) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    const int rank = static_cast<int>(xs.size());
    std::vector<int64_t> axes;
    bool noop = false;
    std::string why;
    if (!reduce_axes(*graph_, *node_, rank, &axes, &noop, &why))
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": ", why);
    std::vector<bool> reduced(rank, axes.empty() && !noop);
    for (int64_t a : axes) reduced[a] = true;
    std::vector<int64_t> kept_dims(rank), red_dims(rank), ys;
    int64_t count = 1;
    for (int k = 0; k < rank; ++k) {
      kept_dims[k] = reduced[k] ? 1 : xs[k];
      red_dims[k] = reduced[k] ? xs[k] : 1;
      if (reduced[k]) count *= xs[k];
      if (!reduced[k] || keepdims_) ys.push_back(kept_dims[k]);
    }
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), x.numel());
    const auto st = strides_of(xs);
    Params p;
    p.u(y.numel()).u(rank).u(code_).u(count);
    for (int k = 0; k < 6; ++k) p.u(k < rank ? kept_dims[k] : 1);
    for (int k = 0; k < 6; ++k) p.u(k < rank ? st[k] : 0);
    for (int k = 0; k < 6; ++k) p.u(k < rank ? red_dims[k] : 1);
    s.dispatch_1d("reduce", reduce_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  int code_;
  bool keepdims_;
  const Node* node_;
  const Graph* graph_;
};

bool check_reduce(const ClaimInfo& c, Decline* why) {
  const int rank = in_rank(c, 0);
  if (rank < 0) return decline(why, DeclineCode::kDynamicShape, "the input's rank is unknown");
  std::vector<int64_t> axes;
  bool noop = false;
  std::string reason;
  if (!reduce_axes(c.graph, c.node, rank, &axes, &noop, &reason))
    return decline(why, DeclineCode::kUnsupportedAttribute, reason);
  return true;
}

std::unique_ptr<Kernel> create_reduce(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ReduceKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// LayerNormalization

class LayerNormKernel final : public WgKernel {
 public:
  LayerNormKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0),
        axis_(info.node.attr_int("axis", -1)),
        eps_(info.node.attr_float("epsilon", 1e-5f)),
        scratch_(dev_->buffer(4)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    const int64_t rank = static_cast<int64_t>(xs.size());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": axis ", axis_, " is out of range for rank ", rank);
    int64_t n = 1;
    for (int64_t k = axis; k < rank; ++k) n *= xs[k];
    const int64_t rows = n ? x.numel() / n : 0;
    const auto stride_of = [&](size_t i) -> int64_t {
      const int64_t m = ctx.input(i).numel();
      if (m == n) return 1;
      if (m == 1) return 0;
      fail(ErrorCode::kNotImplemented, "webgpu: ", label(), ": input ", i, " of shape ",
           ctx.input(i).shape().to_string(), " is neither the normalised shape nor one value");
    };
    const int64_t ss = stride_of(1);
    const bool bias = ctx.has_input(2);
    const int64_t bs = bias ? stride_of(2) : 0;
    Tensor& y = out(ctx, 0, xs);
    check_size(label(), x.numel());
    // Mean and InvStdDev (optional): one value per row, shaped as x with the normalised dims 1.
    std::vector<int64_t> stat_dims;
    for (int64_t k = 0; k < rank; ++k) stat_dims.push_back(k < axis ? xs[k] : 1);
    BufRef stats[2];
    for (size_t o = 1; o <= 2; ++o) {
      if (ctx.has_output(o)) {
        stats[o - 1] = device_ref(out(ctx, o, Shape(stat_dims)), "output");
      } else {
        stats[o - 1] = {scratch_.get(), scratch_};
      }
    }
    Params p;
    p.u(rows).u(n).f(eps_).u(ss).u(bias ? 1 : 0).u(bs).u(ctx.has_output(1) ? 1 : 0).u(ctx.has_output(2) ? 1 : 0);
    const BufRef sc = in(ctx, 1);
    const uint64_t groups = (static_cast<uint64_t>(rows) + 63) / 64;
    const uint64_t gx = std::min<uint64_t>(groups, s.device().max_groups());
    p.w[31] = static_cast<uint32_t>(gx * 64);
    if (rows)
      s.dispatch("layer_norm", layer_norm_wgsl(), p,
                 {in(ctx, 0), sc, bias ? in(ctx, 2) : sc, device_ref(y, "output"), stats[0], stats[1]},
                 static_cast<uint32_t>(gx), static_cast<uint32_t>((groups + gx - 1) / gx));
  }

 private:
  int64_t axis_;
  float eps_;
  // Written in place of the Mean / InvStdDev outputs the node does not have (never read).
  std::shared_ptr<Buffer> scratch_;
};

bool check_layer_norm(const ClaimInfo& c, Decline* why) {
  if (c.node.attr_int("stash_type", 1) != 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, "stash_type other than float32");
  return true;
}

std::unique_ptr<Kernel> create_layer_norm(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<LayerNormKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization (inference)

/// scale / sqrt(var + eps) and B - mean * that, per channel: the kernel's `ab` (a, then b).
std::vector<float> fold_batch_norm(const Tensor* k[4], float eps, const std::string& where) {
  for (size_t i = 0; i < 4; ++i)
    if (!k[i]->on_host() || k[i]->dtype() != DType::kFloat)
      fail(ErrorCode::kRuntime, "webgpu: internal error: ", where, ": input ", i + 1, " is not a host float32 tensor");
  const int64_t channels = k[0]->numel();
  for (size_t i = 1; i < 4; ++i)
    if (k[i]->numel() != channels)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", where, ": input ", i + 1, " has ", k[i]->numel(), " values, scale has ", channels);
  std::vector<float> ab(static_cast<size_t>(2 * channels));
  const float *scale = k[0]->data<float>(), *bias = k[1]->data<float>(), *mean = k[2]->data<float>(), *var = k[3]->data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    const float a = scale[c] / std::sqrt(var[c] + eps);
    ab[static_cast<size_t>(c)] = a;
    ab[static_cast<size_t>(channels + c)] = bias[c] - mean[c] * a;
  }
  return ab;
}

class BatchNormKernel final : public WgKernel {
 public:
  // scale, B, mean and var (inputs 1 to 4) are read on the host: when all are constants they are
  // folded into one scale and one shift per channel and uploaded once, else (initialised graph
  // inputs of an old model, which a caller may override) at each run.
  BatchNormKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0b11110), eps_(info.node.attr_float("epsilon", 1e-5f)) {
    const Tensor* k[4];
    for (size_t i = 0; i < 4; ++i)
      if (!(k[i] = info.constant(i + 1))) return;
    const std::vector<float> ab = fold_batch_norm(k, eps_, label());
    channels_ = static_cast<int64_t>(ab.size() / 2);
    ab_ = dev_->buffer(std::max<uint64_t>(ab.size() * 4, 4));
    dev_->write_now(*ab_, ab.data(), ab.size() * 4);
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    BufRef ab{ab_.get(), ab_};
    int64_t channels = channels_;
    if (!ab_) {
      const Tensor* k[4] = {&ctx.input(1), &ctx.input(2), &ctx.input(3), &ctx.input(4)};
      const std::vector<float> v = fold_batch_norm(k, eps_, label());
      std::vector<uint32_t> words(v.size());
      std::memcpy(words.data(), v.data(), v.size() * 4);
      ab = upload_words(*dev_, s, words);
      channels = static_cast<int64_t>(v.size() / 2);
    }
    if (xs.size() < 2 || xs[1] != channels)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": input of shape ", xs.to_string(), " for ", channels,
           " channels");
    int64_t inner = 1;
    for (size_t k = 2; k < xs.size(); ++k) inner *= xs[k];
    Tensor& y = out(ctx, 0, xs);
    check_size(label(), x.numel());
    if (x.numel() == 0) return;
    Params p;
    p.u(x.numel()).u(inner).u(channels);
    s.dispatch_1d("batch_norm", batch_norm_wgsl(), p, {in(ctx, 0), ab, device_ref(y, "output")}, u32_of(x.numel()));
  }

 private:
  float eps_;
  int64_t channels_ = 0;
  std::shared_ptr<Buffer> ab_;  // folded constants (null: folded at each run)
};

bool check_batch_norm(const ClaimInfo& c, Decline* why) {
  if (c.node.opset < 9 && c.node.attr_int("spatial", 1) != 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, "spatial=0 (statistics per element rather than per channel)");
  if (c.node.attr_int("training_mode", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "training_mode (webgpu runs inference only)");
  for (size_t o = 1; o < c.node.outputs.size(); ++o)
    if (c.node.has_output(o))
      return decline(why, DeclineCode::kUnsupportedAttribute, "the running mean and variance outputs (training)");
  const int r = in_rank(c, 0);
  if (r >= 0 && r < 2) return decline(why, DeclineCode::kUnsupportedAttribute, str("an input of rank ", r));
  for (size_t i = 1; i <= 4; ++i) {
    // Read on the host: a constant, or a graph input (in host memory); not a node's result.
    if (!c.node.has_input(i) || c.graph.values[c.node.inputs[i]].producer >= 0)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("input ", i, " is computed by a node (scale, B, mean and var are read on the host)"));
    const TypeInfo* t = in_type(c, i);
    if (!t || t->elem_dtype() != DType::kFloat)
      return decline(why, DeclineCode::kUnsupportedType, str("input ", i, " is not float32"));
  }
  return true;
}

std::unique_ptr<Kernel> create_batch_norm(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<BatchNormKernel>(info, d);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Data movement and selection: Gather, Slice, Concat, Expand, Where, Cast.
//
// The EP's device tensors are float32. Integer and bool operands (Gather's indices, Slice's
// starts / ends / axes / steps, Expand's shape, Where's condition, Cast's input) are read on the
// host (reads_host_input): constants, graph inputs and values computed by CPU nodes arrive there
// without a copy; the kernel checks them, converts them and uploads what the shader needs (u32
// indices, u32 flags, float values) into the run's command stream.

/// The values of an int32 / int64 tensor in host memory.
std::vector<int64_t> host_ints(const Tensor& t, const std::string& where, const char* what) {
  if (!t.on_host()) fail(ErrorCode::kRuntime, "webgpu: internal error: ", where, ": ", what, " is not in host memory");
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kInt64) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int64_t>()[i];
  } else if (t.dtype() == DType::kInt32) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int32_t>()[i];
  } else {
    fail(ErrorCode::kInvalidArgument, "webgpu: ", where, ": ", what, " must be int32 or int64, got ",
         dtype_name(t.dtype()));
  }
  return v;
}

bool is_int_tensor(const TypeInfo* t) {
  return t && t->is_tensor() && (t->dtype == DType::kInt64 || t->dtype == DType::kInt32);
}

BufRef upload_words(Device& dev, Stream& s, const std::vector<uint32_t>& words) {
  auto b = dev.buffer(std::max<uint64_t>(words.size() * 4, 4));
  BufRef r{b.get(), b};
  s.upload(words.data(), r, words.size() * 4);
  return r;
}

void check_rank(const std::string& where, size_t rank) {
  if (rank > static_cast<size_t>(kMaxRank))
    fail(ErrorCode::kNotImplemented, "webgpu: ", where, ": rank ", rank, " is above the kernels' limit of ", kMaxRank);
}

class GatherKernel final : public WgKernel {
 public:
  GatherKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0b10), axis_(info.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const std::vector<int64_t> xs = x.shape().to_vector();
    const int64_t r = static_cast<int64_t>(xs.size());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": axis ", axis_, " is out of range for rank ", r);
    const std::vector<int64_t> iv = host_ints(ind, label(), "indices");
    const int64_t dim = xs[axis];
    std::vector<uint32_t> u(iv.size());
    for (size_t j = 0; j < iv.size(); ++j) {
      const int64_t k = iv[j] < 0 ? iv[j] + dim : iv[j];
      if (k < 0 || k >= dim)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": index ", iv[j], " is out of range for axis ", axis,
             " of size ", dim);
      u[j] = static_cast<uint32_t>(k);
    }
    const Shape& is = ind.shape();
    std::vector<int64_t> ys(static_cast<size_t>(r - 1) + is.size());
    for (size_t k = 0; k < ys.size(); ++k) {
      const int64_t q = static_cast<int64_t>(k);
      ys[k] = q < axis ? xs[k] : q < axis + static_cast<int64_t>(is.size()) ? is[k - axis] : xs[k + 1 - is.size()];
    }
    check_rank(label(), ys.size());
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), x.numel());
    check_size(label(), y.numel());
    if (y.numel() == 0) return;
    int64_t inner = 1;
    for (int64_t k = axis + 1; k < r; ++k) inner *= xs[k];
    const BufRef ib = upload_words(*dev_, s, u);
    Params p;
    p.u(y.numel()).u(inner).u(static_cast<int64_t>(u.size())).u(dim);
    s.dispatch_1d("gather", gather_wgsl(), p, {in(ctx, 0), ib, device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  int64_t axis_;
};

bool check_gather(const ClaimInfo& c, Decline* why) {
  if (!is_int_tensor(in_type(c, 1)))
    return decline(why, DeclineCode::kUnsupportedType, "Gather's indices must be an int32 or int64 tensor");
  return true;
}

std::unique_ptr<Kernel> create_gather(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<GatherKernel>(info, d);
}

class SliceKernel final : public WgKernel {
 public:
  SliceKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), ~1u), opset_(info.node.opset) {
    if (opset_ < 10) {
      starts_ = info.node.attr_ints("starts");
      ends_ = info.node.attr_ints("ends");
      axes_ = info.node.attr_ints("axes");
    }
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> xs = x.shape().to_vector();
    const size_t r = xs.size();
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (opset_ >= 10) {
      starts = host_ints(ctx.input(1), label(), "starts");
      ends = host_ints(ctx.input(2), label(), "ends");
      if (ctx.has_input(3)) axes = host_ints(ctx.input(3), label(), "axes");
      if (ctx.has_input(4)) steps = host_ints(ctx.input(4), label(), "steps");
    }
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": starts, ends, axes and steps differ in length");
    check_rank(label(), r);
    check_size(label(), x.numel());
    const auto xst = strides_of(x.shape());
    std::vector<int64_t> ys = xs, begin(r, 0), step(r, 1);
    std::vector<bool> seen(r, false);
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = axes[i];
      if (a < 0) a += static_cast<int64_t>(r);
      if (a < 0 || a >= static_cast<int64_t>(r) || seen[a])
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": axis ", axes[i], " is out of range or repeated");
      seen[a] = true;
      const int64_t d = xs[a], sp = steps[i];
      if (sp == 0) fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": a step is 0");
      int64_t st = starts[i], en = ends[i], n = 0;
      if (st < 0) st += d;
      if (en < 0) en += d;
      if (d == 0) {
        n = 0;  // nothing to take (and no valid start for a negative step)
      } else if (sp > 0) {
        st = std::clamp<int64_t>(st, 0, d);
        en = std::clamp<int64_t>(en, 0, d);
        if (en > st) n = (en - st - 1) / sp + 1;
      } else {
        st = std::clamp<int64_t>(st, 0, d - 1);
        en = std::clamp<int64_t>(en, -1, d - 1);
        const int64_t ns = sp == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -sp;
        if (st > en) n = (st - en - 1) / ns + 1;
      }
      ys[a] = n;
      begin[a] = n > 0 ? st : 0;
      step[a] = n > 1 ? sp : 1;
    }
    Tensor& y = out(ctx, 0, Shape(ys));
    if (y.numel() == 0) return;
    int64_t base = 0;
    for (size_t k = 0; k < r; ++k) base += begin[k] * xst[k];
    Params p;
    p.u(y.numel()).u(static_cast<int64_t>(r));
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? ys[k] : 1);
    p.u(base);
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? step[k] * xst[k] : 0);
    s.dispatch_1d("slice", slice_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  int opset_;
  std::vector<int64_t> starts_, ends_, axes_;
};

bool check_slice(const ClaimInfo& c, Decline* why) {
  if (c.node.opset >= 10)
    for (size_t i = 1; i < c.node.inputs.size(); ++i)
      if (c.node.has_input(i) && !is_int_tensor(in_type(c, i)))
        return decline(why, DeclineCode::kUnsupportedType,
                       str("Slice's input ", i, " (starts, ends, axes, steps) must be int32 or int64"));
  return true;
}

std::unique_ptr<Kernel> create_slice(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<SliceKernel>(info, d);
}

class ConcatKernel final : public WgKernel {
 public:
  ConcatKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0), axis_(info.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const size_t n = ctx.num_inputs();
    const std::vector<int64_t> first = ctx.input(0).shape().to_vector();
    const int64_t r = static_cast<int64_t>(first.size());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r)
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": axis ", axis_, " is out of range for rank ", r);
    std::vector<int64_t> ys = first;
    ys[axis] = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::vector<int64_t> xs = ctx.input(i).shape().to_vector();
      bool ok = xs.size() == first.size();
      for (int64_t k = 0; ok && k < r; ++k) ok = k == axis || xs[k] == first[k];
      if (!ok)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": input ", i, "'s shape ",
             ctx.input(i).shape().to_string(), " does not match ", ctx.input(0).shape().to_string());
      ys[axis] += xs[axis];
    }
    check_rank(label(), ys.size());
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), y.numel());
    int64_t inner = 1;
    for (int64_t k = axis + 1; k < r; ++k) inner *= ys[k];
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = ctx.input(i);
      const int64_t rows = x.shape()[axis] * inner;
      if (x.numel() > 0) {
        Params p;
        p.u(x.numel()).u(rows).u(ys[axis] * inner).u(offset);
        s.dispatch_1d("concat", concat_wgsl(), p, {in(ctx, i), device_ref(y, "output")}, u32_of(x.numel()));
      }
      offset += rows;
    }
  }

 private:
  int64_t axis_;
};

std::unique_ptr<Kernel> create_concat(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ConcatKernel>(info, d);
}

class ExpandKernel final : public WgKernel {
 public:
  ExpandKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : WgKernel(info, std::move(d), 0b10) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape want(host_ints(ctx.input(1), label(), "shape"));
    for (int64_t v : want.to_vector())
      if (v < 0)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": shape ", want.to_string(), " has a negative dim");
    const Shape ys = broadcast_shape(label(), x.shape(), want);
    check_rank(label(), ys.size());
    Tensor& y = out(ctx, 0, ys);
    check_size(label(), y.numel());
    if (y.numel() == 0) return;
    const auto sx = broadcast_strides(x.shape(), ys);
    const size_t r = ys.size();
    Params p;
    p.u(y.numel()).u(static_cast<int64_t>(r));
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? ys[k] : 1);
    for (size_t k = 0; k < 6; ++k) p.u(k < sx.size() ? sx[k] : 0);
    s.dispatch_1d("transpose", transpose_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(y.numel()));
  }
};

bool check_expand(const ClaimInfo& c, Decline* why) {
  const TypeInfo* t = in_type(c, 1);
  if (!t || !t->is_tensor() || t->dtype != DType::kInt64)
    return decline(why, DeclineCode::kUnsupportedType, "Expand's shape must be an int64 tensor");
  return true;
}

std::unique_ptr<Kernel> create_expand(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ExpandKernel>(info, d);
}

/// Pad (constant, edge and reflect modes). The pads (an attribute to opset 10, else input 1), the
/// constant (attribute `value`, or input 2) and the axes (input 3, from opset 18) are read on the
/// host.
class PadKernel final : public WgKernel {
 public:
  PadKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0b1110), opset_(info.node.opset), pads_attr_(info.node.attr_ints("pads")),
        value_attr_(info.node.attr_float("value", 0.0f)) {
    const std::string mode = info.node.attr_string("mode", "constant");
    mode_ = mode == "edge" ? 1u : mode == "reflect" ? 2u : 0u;
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    const size_t r = xs.size();
    check_rank(label(), r);
    std::vector<int64_t> pads = opset_ < 11 ? pads_attr_ : host_ints(ctx.input(1), label(), "pads");
    float value = value_attr_;
    if (opset_ >= 11) {
      value = 0.0f;
      if (const Tensor* v = ctx.optional_input(2); v && v->numel() > 0) {
        if (!v->on_host() || v->dtype() != DType::kFloat || v->numel() != 1)
          fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": constant_value must be one float32 value");
        value = v->data<float>()[0];
      }
    }
    // The pads of every axis: begins then ends.
    std::vector<int64_t> begin(r, 0), end(r, 0);
    std::vector<int64_t> axes;
    if (const Tensor* a = opset_ >= 18 ? ctx.optional_input(3) : nullptr) axes = host_ints(*a, label(), "axes");
    else
      for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
    if (pads.size() != 2 * axes.size())
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": ", pads.size(), " pads for ", axes.size(), " axes");
    for (size_t j = 0; j < axes.size(); ++j) {
      const int64_t a = axes[j] < 0 ? axes[j] + static_cast<int64_t>(r) : axes[j];
      if (a < 0 || a >= static_cast<int64_t>(r))
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": axis ", axes[j], " is out of range for rank ", r);
      begin[static_cast<size_t>(a)] = pads[j];
      end[static_cast<size_t>(a)] = pads[j + axes.size()];
    }
    std::vector<int64_t> yd(r);
    for (size_t k = 0; k < r; ++k) {
      yd[k] = xs[k] + begin[k] + end[k];
      if (yd[k] < 0)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": pads ", begin[k], " and ", end[k], " leave axis ", k,
             " of size ", xs[k], " negative");
      if (mode_ != 0 && yd[k] > 0 && xs[k] == 0)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": ", mode_ == 1 ? "edge" : "reflect", " padding of the empty axis ", k);
      if (mode_ == 2 && (begin[k] >= xs[k] || end[k] >= xs[k]) && (begin[k] > 0 || end[k] > 0) && xs[k] > 0)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": reflect pads of axis ", k, " (", begin[k], ", ", end[k],
             ") must be below its size ", xs[k]);
      if (std::abs(begin[k]) > int64_t(0x7fffffff)) fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": pad ", begin[k]);
    }
    Tensor& y = out(ctx, 0, Shape(yd));
    check_size(label(), y.numel());
    check_size(label(), x.numel());
    if (y.numel() == 0) return;
    Params p;
    p.u(y.numel()).u(static_cast<int64_t>(r));
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? yd[k] : 1);
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? xs[k] : 1);
    for (size_t k = 0; k < 6; ++k) {
      const int32_t b = k < r ? static_cast<int32_t>(begin[k]) : 0;
      uint32_t w;
      std::memcpy(&w, &b, 4);
      p.u(w);
    }
    p.u(mode_).f(value);
    s.dispatch_1d("pad", pad_wgsl(), p, {in(ctx, 0), device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  int opset_;
  std::vector<int64_t> pads_attr_;
  float value_attr_;
  uint32_t mode_ = 0;
};

bool check_pad(const ClaimInfo& c, Decline* why) {
  const std::string mode = c.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("mode '", mode, "' (webgpu pads constant, edge and reflect)"));
  if (c.node.opset >= 11) {
    const TypeInfo* t = in_type(c, 1);
    if (!t || !t->is_tensor() || t->dtype != DType::kInt64)
      return decline(why, DeclineCode::kUnsupportedType, "Pad's pads must be an int64 tensor");
  }
  return true;
}

std::unique_ptr<Kernel> create_pad(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<PadKernel>(info, d);
}

class WhereKernel final : public WgKernel {
 public:
  WhereKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : WgKernel(info, std::move(d), 0b1) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& a = ctx.input(1);
    const Tensor& b = ctx.input(2);
    if (!c.on_host() || c.dtype() != DType::kBool)
      fail(ErrorCode::kRuntime, "webgpu: internal error: ", label(), ": the condition is not a host bool tensor");
    const Shape ys = broadcast_shape(label(), broadcast_shape(label(), c.shape(), a.shape()), b.shape());
    check_rank(label(), ys.size());
    Tensor& y = out(ctx, 0, ys);
    check_size(label(), y.numel());
    check_size(label(), c.numel());
    if (y.numel() == 0) return;
    std::vector<uint32_t> flags(static_cast<size_t>(c.numel()));
    const bool* cv = c.data<bool>();
    for (size_t i = 0; i < flags.size(); ++i) flags[i] = cv[i] ? 1u : 0u;
    const BufRef cb = upload_words(*dev_, s, flags);
    const auto sc = broadcast_strides(c.shape(), ys), sa = broadcast_strides(a.shape(), ys),
               sb = broadcast_strides(b.shape(), ys);
    const size_t r = ys.size();
    Params p;
    p.u(y.numel()).u(static_cast<int64_t>(r));
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? ys[k] : 1);
    for (const auto* st : {&sc, &sa, &sb})
      for (size_t k = 0; k < 6; ++k) p.u(k < st->size() ? (*st)[k] : 0);
    s.dispatch_1d("where", where_wgsl(), p, {cb, in(ctx, 1), in(ctx, 2), device_ref(y, "output")}, u32_of(y.numel()));
  }
};

bool check_where(const ClaimInfo& c, Decline* why) {
  const TypeInfo* t = in_type(c, 0);
  if (!t || !t->is_tensor() || t->dtype != DType::kBool)
    return decline(why, DeclineCode::kUnsupportedType, "Where's condition must be a bool tensor");
  return true;
}

std::unique_ptr<Kernel> create_where(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<WhereKernel>(info, d);
}

/// Cast of a host bool / int32 / int64 tensor to float32: converted on the host (as the CPU EP
/// converts) and uploaded into the output's device buffer.
class CastKernel final : public WgKernel {
 public:
  CastKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : WgKernel(info, std::move(d), 0b1) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    if (!x.on_host())
      fail(ErrorCode::kRuntime, "webgpu: internal error: ", label(), ": the input is not in host memory");
    Tensor& y = out(ctx, 0, x.shape());
    check_size(label(), x.numel());
    std::vector<float> v(static_cast<size_t>(x.numel()));
    switch (x.dtype()) {
      case DType::kBool:
        for (size_t i = 0; i < v.size(); ++i) v[i] = x.data<bool>()[i] ? 1.0f : 0.0f;
        break;
      case DType::kInt32:
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(x.data<int32_t>()[i]);
        break;
      case DType::kInt64:
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(x.data<int64_t>()[i]);
        break;
      default:
        fail(ErrorCode::kNotImplemented, "webgpu: ", label(), ": Cast from ", dtype_name(x.dtype()),
             " is not supported");
    }
    s.upload(v.data(), device_ref(y, "output"), v.size() * 4);
  }
};

bool check_cast(const ClaimInfo& c, Decline* why) {
  const TypeInfo* t = in_type(c, 0);
  if (!t || !t->is_tensor() || (t->dtype != DType::kBool && t->dtype != DType::kInt32 && t->dtype != DType::kInt64))
    return decline(why, DeclineCode::kUnsupportedType,
                   str("webgpu casts bool, int32 and int64 (read on the host) to float32 only; the input is ",
                       t && t->is_tensor() ? dtype_name(t->dtype) : "not a tensor"));
  return true;
}

std::unique_ptr<Kernel> create_cast(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<CastKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Resize / Upsample

/// Input i of the node when given, in host memory (a host input), else null.
const Tensor* host_input(const KernelContext& ctx, int i, const std::string& where, const char* what) {
  if (i < 0) return nullptr;
  const Tensor* t = ctx.optional_input(static_cast<size_t>(i));
  if (t && !t->on_host())
    fail(ErrorCode::kRuntime, "webgpu: internal error: ", where, ": ", what, " is not in host memory");
  return t;
}

/// Resize (opset 10 to 21) and Upsample (7, 9) of a float32 tensor: scales, sizes and roi are
/// read on the host; the per-axis plans of ops/image (input taps and weights of each output
/// index, extrapolation flags) go into one table buffer, built once per input shape and operand
/// values and cached; one dispatch combines the taps of the resized axes per output element.
class ResizeKernel final : public WgKernel {
 public:
  ResizeKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), ~1u), a_(parse_resize_attrs(info.node)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const size_t r = x.rank();
    check_rank(label(), r);
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    std::vector<double> roi;
    if (a_.upsample && a_.scales_input < 0) {
      scales = a_.attr_scales;
    } else {
      if (const Tensor* t = host_input(ctx, a_.scales_input, label(), "scales"); t && t->numel() > 0) {
        if (t->dtype() != DType::kFloat)
          fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": 'scales' must be float32, got ",
               dtype_name(t->dtype()));
        scales.assign(t->data<float>(), t->data<float>() + t->numel());
      }
      if (const Tensor* t = host_input(ctx, a_.sizes_input, label(), "sizes"); t && t->numel() > 0)
        sizes = host_ints(*t, label(), "sizes");
    }
    if (a_.coord == ResizeCoord::kTfCropAndResize)
      if (const Tensor* t = host_input(ctx, a_.roi_input, label(), "roi"))
        for (int64_t k = 0; k < t->numel(); ++k) roi.push_back(t->element_as_double(k));
    // The cache key: the input shape and the operands' values.
    std::vector<double> key;
    for (size_t k = 0; k < r; ++k) key.push_back(static_cast<double>(x.shape()[k]));
    key.push_back(-1);
    for (float v : scales) key.push_back(v);
    key.push_back(-2);
    for (int64_t v : sizes) key.push_back(static_cast<double>(v));
    key.push_back(-3);
    for (double v : roi) key.push_back(v);
    Shape out_shape;
    std::shared_ptr<Buffer> table;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) {
        out_shape = it->second.shape;
        table = it->second.table;
      }
    }
    if (!table) {
      std::vector<uint32_t> words = tables(ctx.node(), x.shape(), scales, sizes, roi, out_shape);
      table = dev_->buffer(words.size() * 4);
      dev_->write_now(*table, words.data(), words.size() * 4);
      std::lock_guard<std::mutex> lock(mu_);
      if (cache_.size() >= 16) cache_.clear();
      cache_[key] = {out_shape, table};
    }
    Tensor& y = out(ctx, 0, out_shape);
    check_size(label(), y.numel());
    check_size(label(), x.numel());
    if (y.numel() == 0) return;
    const std::vector<int64_t> xstr = strides_of(x.shape());
    Params p;
    p.u(y.numel()).u(static_cast<int64_t>(r));
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? out_shape[k] : 1);
    for (size_t k = 0; k < 6; ++k) p.u(k < r ? xstr[k] : 0);
    p.u(a_.mode == ResizeMode::kNearest ? 0 : 1).f(a_.extrapolation);
    s.dispatch_1d("resize", resize_wgsl(), p, {in(ctx, 0), BufRef{table.get(), table}, device_ref(y, "output")},
                  u32_of(y.numel()));
  }

 private:
  struct Entry {
    Shape shape;
    std::shared_ptr<Buffer> table;
  };

  /// The output shape and the table words (see kResizeBody) for input shape `xs`.
  std::vector<uint32_t> tables(const Node& node, const Shape& xs, const std::vector<float>& scales,
                               const std::vector<int64_t>& sizes, const std::vector<double>& roi,
                               Shape& out_shape) const {
    const size_t r = xs.size();
    std::vector<double> axis_scale;
    resize_geometry(node, a_, xs, scales.empty() ? nullptr : scales.data(), static_cast<int64_t>(scales.size()),
                    sizes.empty() ? nullptr : sizes.data(), static_cast<int64_t>(sizes.size()), out_shape, axis_scale);
    std::vector<double> roi_s(r, 0.0), roi_e(r, 1.0);
    if (a_.coord == ResizeCoord::kTfCropAndResize) resize_roi(node, a_, r, roi, roi_s, roi_e);
    for (size_t k = 0; k < r; ++k)
      if (xs[k] == 0 && out_shape[k] > 0)
        fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": axis ", k, " of the input is empty");
    std::vector<uint32_t> w(4 * r, 0);
    double combined = 1;
    for (size_t k = 0; k < r; ++k) {
      if (out_shape[k] == 0) continue;
      ResizeAxisPlan<float> p;
      build_resize_axis(a_, p, xs[k], out_shape[k], axis_scale[k], roi_s[k], roi_e[k], label().c_str());
      if (p.identity) continue;
      combined *= p.taps;
      w[4 * k] = static_cast<uint32_t>(p.taps);
      w[4 * k + 1] = static_cast<uint32_t>(w.size());
      for (int64_t v : p.idx) w.push_back(static_cast<uint32_t>(v));
      w[4 * k + 2] = static_cast<uint32_t>(w.size());
      for (float v : p.w) {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        w.push_back(b);
      }
      w[4 * k + 3] = static_cast<uint32_t>(w.size());
      for (uint8_t e : p.extrap) w.push_back(e);
    }
    if (combined > 65536)
      fail(ErrorCode::kNotImplemented, "webgpu: ", label(), ": the resized axes combine ", combined,
           " taps per output element, above the kernel's limit of 65536 (an antialiased downscale by too much)");
    if (w.size() > (uint64_t(1) << 31))
      fail(ErrorCode::kRuntime, "webgpu: ", label(), ": the resize tables exceed the kernel's 32-bit indexing");
    if (w.empty()) w.push_back(0);
    return w;
  }

  ResizeAttrs a_;
  mutable std::mutex mu_;
  mutable std::map<std::vector<double>, Entry> cache_;  // per input shape and operand values
};

bool check_resize(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  ResizeAttrs a;
  try {
    a = parse_resize_attrs(n);
  } catch (const std::exception& e) {
    return decline(why, DeclineCode::kUnsupportedAttribute, e.what());
  }
  auto type_is = [&](int i, std::initializer_list<DType> ok, const char* what) {
    if (i < 0 || !n.has_input(static_cast<size_t>(i))) return true;
    const TypeInfo* t = in_type(c, static_cast<size_t>(i));
    if (t && t->is_tensor())
      for (DType d : ok)
        if (t->dtype == d) return true;
    return decline(why, DeclineCode::kUnsupportedType,
                   str(what, " is ", t && t->is_tensor() ? dtype_name(t->dtype) : "not a tensor",
                       " (webgpu reads it on the host as ", dtype_name(*ok.begin()), ")"));
  };
  return type_is(a.scales_input, {DType::kFloat}, "scales") && type_is(a.sizes_input, {DType::kInt64}, "sizes") &&
         type_is(a.roi_input, {DType::kFloat, DType::kFloat16, DType::kDouble}, "roi");
}

std::unique_ptr<Kernel> create_resize(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ResizeKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose (1-d and 2-d)

/// 1-d and 2-d ConvTranspose (group, strides, dilations, pads or auto_pad, output_padding or
/// output_shape, through ops/nn's conv_transpose_geometry), one output element per invocation.
class ConvTransposeKernel final : public WgKernel {
 public:
  ConvTransposeKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : WgKernel(info, std::move(d), 0), group_(info.node.attr_int("group", 1)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape xs = ctx.input(0).shape(), ws = ctx.input(1).shape();
    const auto bad = [&](const std::string& what) {
      fail(ErrorCode::kInvalidArgument, "webgpu: ", label(), ": ", what, " (x ", xs.to_string(), ", w ", ws.to_string(),
           ")");
    };
    if ((xs.size() != 3 && xs.size() != 4) || ws.size() != xs.size())
      bad("1-d or 2-d transposed convolution takes 3-d or 4-d x and w of one rank");
    if (group_ < 1 || xs[1] % group_ || ws[0] != xs[1]) bad(str("channels do not match group ", group_));
    const bool one_d = xs.size() == 3;
    const Shape in_sp = one_d ? Shape{xs[2]} : Shape{xs[2], xs[3]};
    const Shape k_sp = one_d ? Shape{ws[2]} : Shape{ws[2], ws[3]};
    const WindowGeometry g = conv_transpose_geometry(ctx.node(), in_sp, k_sp);
    const int64_t cin = xs[1], cin_g = cin / group_, cout_g = ws[1], cout = cout_g * group_;
    std::vector<int64_t> ys{xs[0], cout};
    for (int64_t v : g.out) {
      if (v < 0) bad("the output size is negative");
      ys.push_back(v);
    }
    Tensor& y = out(ctx, 0, Shape(ys));
    check_size(label(), y.numel());
    check_size(label(), ctx.input(0).numel());
    check_size(label(), ctx.input(1).numel());
    const bool bias = ctx.has_input(2);
    if (bias && ctx.input(2).numel() != cout) bad("the bias has the wrong length");
    if (y.numel() == 0) return;
    const size_t a = one_d ? 0 : 1;  // the width's index in the geometry
    const int64_t h = one_d ? 1 : xs[2], wd = xs.back(), oh = one_d ? 1 : g.out[0], ow = g.out[a];
    const int64_t kh = one_d ? 1 : ws[2], kw = ws.back();
    const int64_t sh = one_d ? 1 : g.stride[0], sw = g.stride[a];
    const int64_t ph = one_d ? 0 : g.pad_begin[0], pw = g.pad_begin[a];
    const int64_t dh = one_d ? 1 : g.dilation[0], dw = g.dilation[a];
    for (int64_t v : {ph, pw})
      if (std::abs(v) > int64_t(0x3fffffff)) bad(str("pad ", v, " is out of range"));
    if (sh < 1 || sw < 1 || dh < 1 || dw < 1) bad("strides and dilations must be positive");
    Params p;
    p.u(y.numel()).u(cout).u(cout_g).u(cin).u(h).u(wd).u(cin_g).u(oh).u(ow);
    p.u(kh).u(kw).u(sh).u(sw).u(static_cast<uint32_t>(static_cast<int32_t>(ph)));
    p.u(static_cast<uint32_t>(static_cast<int32_t>(pw))).u(dh).u(dw).u(bias ? 1 : 0);
    const BufRef w = in(ctx, 1);
    s.dispatch_1d("conv_transpose", conv_transpose_wgsl(), p,
                  {in(ctx, 0), w, bias ? in(ctx, 2) : w, device_ref(y, "output")}, u32_of(y.numel()));
  }

 private:
  int64_t group_;
};

bool check_conv_transpose(const ClaimInfo& c, Decline* why) {
  const int r = in_rank(c, 0);
  if ((r != 3 && r != 4) || in_rank(c, 1) != r)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("webgpu runs 1-d and 2-d transposed convolutions only (3-d or 4-d x and w); x has rank ", r));
  const std::string pad = c.node.attr_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "SAME_UPPER" && pad != "SAME_LOWER" && pad != "VALID")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad ", pad));
  return true;
}

std::unique_ptr<Kernel> create_conv_transpose(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ConvTransposeKernel>(info, d);
}

// ---------------------------------------------------------------------------------------------
// Manifest

const std::vector<OpDef>& manifest() {
  static const std::vector<OpDef> defs = [] {
    std::vector<OpDef> d;
    for (const auto& u : kUnary)
      d.push_back(
          {u.name, u.since, kMaxOpset, std::string(u.name) == "Clip" ? 0b110u : 0u, &check_unary, &create_unary});
    for (const char* op : {"Add", "Sub", "Mul", "Div"})
      d.push_back({op, 7, kMaxOpset, 0, &check_binary, &create_binary});
    for (const char* op : {"Max", "Min"}) d.push_back({op, 8, kMaxOpset, 0, &check_binary, &create_binary});
    d.push_back({"MatMul", 1, kMaxOpset, 0, &check_matmul, &create_matmul});
    d.push_back({"Gemm", 7, kMaxOpset, 0, &check_gemm, &create_gemm});
    d.push_back({"Softmax", 1, kMaxOpset, 0, &check_softmax, &create_softmax});
    d.push_back({"LogSoftmax", 1, kMaxOpset, 0, &check_softmax, &create_softmax});
    d.push_back({"Transpose", 1, kMaxOpset, 0, nullptr, &create_transpose});
    d.push_back({"Conv", 1, kMaxOpset, 0, &check_conv, &create_conv});
    d.push_back({"ConvTranspose", 1, kMaxOpset, 0, &check_conv_transpose, &create_conv_transpose});
    // The optimizer's Conv + Relu / Clip, taken so that the activation runs in the epilogue.
    d.push_back({"FusedConv", 1, 1, 0, &check_conv, &create_conv, "onyx"});
    d.push_back({"GlobalAveragePool", 1, kMaxOpset, 0, &check_global_pool, &create_global_pool});
    // From opset 1: the attributes later versions added (dilations, ceil_mode, storage_order,
    // count_include_pad) read as their defaults, which are the earlier versions' behaviour.
    d.push_back({"MaxPool", 1, kMaxOpset, 0, &check_pool, &create_pool});
    d.push_back({"AveragePool", 1, kMaxOpset, 0, &check_pool, &create_pool});
    for (const auto& r : kReduce) d.push_back({r.name, 1, kMaxOpset, 0b10, &check_reduce, &create_reduce});
    d.push_back({"LayerNormalization", 17, kMaxOpset, 0, &check_layer_norm, &create_layer_norm});
    // From opset 6 (opsets 6 and 7 have the attribute spatial, taken when 1, its default).
    d.push_back({"BatchNormalization", 6, kMaxOpset, 0b11110, &check_batch_norm, &create_batch_norm});
    // Views: the shape operands (Reshape's shape, Squeeze / Unsqueeze axes from opset 13) are
    // read on the host.
    d.push_back({"Reshape", 5, kMaxOpset, 0b10, &check_view, &create_view});
    d.push_back({"Flatten", 1, kMaxOpset, 0, &check_view, &create_view});
    d.push_back({"Squeeze", 1, kMaxOpset, 0b10, &check_view, &create_view});
    d.push_back({"Unsqueeze", 1, kMaxOpset, 0b10, &check_view, &create_view});
    d.push_back({"Identity", 1, kMaxOpset, 0, &check_view, &create_view});
    // Data movement and selection: integer / bool operands are read on the host (see above).
    d.push_back({"Gather", 1, kMaxOpset, 0b10, &check_gather, &create_gather});
    d.push_back({"Slice", 1, kMaxOpset, ~1u, &check_slice, &create_slice});
    d.push_back({"Concat", 4, kMaxOpset, 0, nullptr, &create_concat});
    d.push_back({"Expand", 8, kMaxOpset, 0b10, &check_expand, &create_expand});
    d.push_back({"Pad", 2, kMaxOpset, 0b1110, &check_pad, &create_pad});
    d.push_back({"Where", 9, kMaxOpset, 0b1, &check_where, &create_where});
    d.push_back({"Cast", 6, kMaxOpset, 0b1, &check_cast, &create_cast});
    // scales, sizes and roi are read on the host.
    d.push_back({"Resize", 10, kMaxOpset, ~1u, &check_resize, &create_resize});
    d.push_back({"Upsample", 7, 9, ~1u, &check_resize, &create_resize});
    return d;
  }();
  return defs;
}

}  // namespace onyx::webgpu
