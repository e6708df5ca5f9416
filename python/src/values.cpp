// onyx for Python: numpy <-> onyx values, and onyx::Error -> Python exceptions.
#include "values.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstring>
#include <exception>
#include <memory>
#include <string_view>
#include <vector>

namespace onyx::py {

namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

/// str(obj), as Python prints it.
std::string py_str(nb::handle obj) {
  nb::object s = nb::steal(PyObject_Str(obj.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (!p) throw nb::python_error();
  return std::string(p, static_cast<size_t>(n));
}

/// Module objects looked up once and never released (they live as long as the interpreter).
nb::handle numpy() {
  static nb::object* np = new nb::object(nb::module_::import_("numpy"));
  return *np;
}
nb::handle ndarray_type() {
  static nb::object* t = new nb::object(numpy().attr("ndarray"));
  return *t;
}
/// ml_dtypes (bfloat16, float8) when installed, else None.
nb::handle ml_dtypes() {
  static nb::object* m = [] {
    try {
      return new nb::object(nb::module_::import_("ml_dtypes"));
    } catch (const nb::python_error&) {
      return new nb::object(nb::none());
    }
  }();
  return *m;
}

/// numpy's name of a dtype for the types it has natively ("" when it has none).
const char* numpy_name(DType t) {
  switch (t) {
    case DType::kFloat: return "float32";
    case DType::kDouble: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kInt8: case DType::kInt4: case DType::kInt2: return "int8";
    case DType::kUInt8: case DType::kUInt4: case DType::kUInt2: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kInt32: return "int32";
    case DType::kUInt32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    case DType::kString: return "object";
    default: return "";
  }
}

/// ml_dtypes' name of the types numpy lacks ("" when it has none either).
const char* ml_dtypes_name(DType t) {
  switch (t) {
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat8E4M3FN: return "float8_e4m3fn";
    case DType::kFloat8E4M3FNUZ: return "float8_e4m3fnuz";
    case DType::kFloat8E5M2: return "float8_e5m2";
    case DType::kFloat8E5M2FNUZ: return "float8_e5m2fnuz";
    case DType::kFloat8E8M0: return "float8_e8m0fnu";
    case DType::kFloat4E2M1: return "float4_e2m1fn";
    default: return "";
  }
}

std::string type_label(DType t) { return "tensor(" + std::string(dtype_name(t)) + ")"; }

/// Keeps a Python object alive for as long as a tensor uses its memory; the last owner may be
/// released on a thread that does not hold the GIL (a run's worker), so it takes it.
std::shared_ptr<void> keep_alive(nb::object obj) {
  PyObject* p = obj.release().ptr();
  return std::shared_ptr<void>(p, [](void* q) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(q));
  });
}

/// The element type of a buffer's struct-module format and item size (kUndefined: not a number).
DType dtype_of_format(const char* format, Py_ssize_t itemsize, bool* big_endian) {
  std::string_view f = format ? format : "B";
  *big_endian = false;
  while (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<' || f[0] == '>' || f[0] == '!' || f[0] == '|')) {
    if (f[0] == '>' || f[0] == '!') *big_endian = true;
    f.remove_prefix(1);
  }
  if (f == "?") return DType::kBool;
  if (f == "e") return DType::kFloat16;
  if (f == "f") return DType::kFloat;
  if (f == "d") return DType::kDouble;
  if (f == "Zf") return DType::kComplex64;
  if (f == "Zd") return DType::kComplex128;
  if (f.size() == 1) {
    const char c = f[0];
    const bool is_signed = c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q' || c == 'n';
    const bool is_unsigned = c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q' || c == 'N';
    if (is_signed || is_unsigned) {
      switch (itemsize) {
        case 1: return is_signed ? DType::kInt8 : DType::kUInt8;
        case 2: return is_signed ? DType::kInt16 : DType::kUInt16;
        case 4: return is_signed ? DType::kInt32 : DType::kUInt32;
        case 8: return is_signed ? DType::kInt64 : DType::kUInt64;
        default: break;
      }
    }
  }
  return DType::kUndefined;
}

bool is_string_format(const char* format) {
  std::string_view f = format ? format : "";
  return f == "O" || (!f.empty() && (f.back() == 'w' || f.back() == 's'));
}

/// A string tensor from an array of str (or bytes) objects, in C order.
Tensor strings_from_array(nb::handle arr, const std::string& name) {
  nb::object flat = arr.attr("ravel")().attr("tolist")();
  const Shape shape(nb::cast<std::vector<int64_t>>(arr.attr("shape")));
  Tensor t(DType::kString, shape);
  std::string* out = t.data<std::string>();
  size_t i = 0;
  for (nb::handle item : flat) {
    if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(item.ptr(), &n);
      if (!s) throw nb::python_error();
      out[i].assign(s, static_cast<size_t>(n));
    } else if (PyBytes_Check(item.ptr())) {
      out[i].assign(PyBytes_AS_STRING(item.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
    } else {
      fail(ErrorCode::kInvalidArgument,
           "input '" + name + "': a string tensor's elements must be str or bytes, element " + std::to_string(i) +
               " is " + py_str(item.type().attr("__name__")));
    }
    ++i;
  }
  return t;
}

/// Checks that int8/uint8 data fits a narrower integer type stored one per byte.
void check_narrow_range(const Tensor& t, DType want, const std::string& name) {
  int lo = 0, hi = 0;
  switch (want) {
    case DType::kInt4: lo = -8; hi = 7; break;
    case DType::kUInt4: lo = 0; hi = 15; break;
    case DType::kInt2: lo = -2; hi = 1; break;
    case DType::kUInt2: lo = 0; hi = 3; break;
    default: return;
  }
  const int64_t n = t.numel();
  const bool is_signed = t.dtype() == DType::kInt8;
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    const int v = is_signed ? static_cast<int8_t>(p[i]) : p[i];
    if (v < lo || v > hi)
      fail(ErrorCode::kInvalidArgument, "input '" + name + "': element " + std::to_string(i) + " is " + std::to_string(v) +
                                            ", outside " + std::string(dtype_name(want)) + "'s range [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
}

/// Whether an array of `got` may feed an input of `want` as it is: the same type, or a 4- and 2-bit
/// type, which onyx (and numpy, through int8/uint8) store one element per byte.
bool compatible(DType got, DType want) {
  if (got == want) return true;
  if (got == DType::kInt8) return want == DType::kInt4 || want == DType::kInt2;
  if (got == DType::kUInt8) return want == DType::kUInt4 || want == DType::kUInt2;
  return false;
}

}  // namespace

bool is_ndarray(nb::handle obj) {
  return Py_TYPE(obj.ptr()) == reinterpret_cast<PyTypeObject*>(ndarray_type().ptr()) ||
         PyObject_IsInstance(obj.ptr(), ndarray_type().ptr()) == 1;
}

nb::object numpy_dtype(DType t, const std::string& what) {
  const char* n = numpy_name(t);
  if (*n) return numpy().attr("dtype")(n);
  const char* ml = ml_dtypes_name(t);
  if (*ml && !ml_dtypes().is_none() && nb::hasattr(ml_dtypes(), ml)) return numpy().attr("dtype")(ml_dtypes().attr(ml));
  if (*ml)
    fail(ErrorCode::kNotImplemented, what + " is " + type_label(t) + ", which numpy has no type for: install ml_dtypes "
                                         "(pip install ml_dtypes) to exchange it, or Cast it in the model");
  fail(ErrorCode::kNotImplemented, what + " is " + type_label(t) + ", which onyx cannot exchange with numpy");
}

DType dtype_from_numpy(nb::handle dtype) {
  nb::object d = numpy().attr("dtype")(dtype);
  const std::string name = nb::cast<std::string>(d.attr("name"));
  for (int v = 1; v <= kMaxDType; ++v) {
    const auto t = static_cast<DType>(v);
    if (!dtype_valid(v)) continue;
    if (t == DType::kInt4 || t == DType::kUInt4 || t == DType::kInt2 || t == DType::kUInt2) continue;
    const char* n = numpy_name(t);
    if (*n && name == n && t != DType::kString) return t;
    const char* ml = ml_dtypes_name(t);
    if (*ml && name == ml) return t;
  }
  const std::string kind = nb::cast<std::string>(d.attr("kind"));
  if (kind == "O" || kind == "U" || kind == "S") return DType::kString;
  fail(ErrorCode::kInvalidArgument, "numpy dtype " + name + " has no ONNX element type");
}

Tensor tensor_from_python(nb::handle obj, DType want, const std::string& name) {
  nb::object arr;
  if (Py_TYPE(obj.ptr()) == reinterpret_cast<PyTypeObject*>(ndarray_type().ptr()) ||
      PyObject_IsInstance(obj.ptr(), ndarray_type().ptr()) == 1) {
    arr = nb::borrow(obj);
  } else {
    // A list, scalar or other array-like: converted to the input's type, as ORT does.
    if (want != DType::kUndefined && want != DType::kString && (*numpy_name(want) || *ml_dtypes_name(want)))
      arr = numpy().attr("asarray")(obj, numpy_dtype(want, "input '" + name + "'"));
    else if (want == DType::kString)
      arr = numpy().attr("asarray")(obj, nb::str("object"));
    else
      arr = numpy().attr("asarray")(obj);
  }

  Py_buffer view;
  if (PyObject_GetBuffer(arr.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    // Not C-contiguous (a slice, a transpose, Fortran order): a contiguous copy, as ORT makes.
    nb::object contiguous = numpy().attr("ascontiguousarray")(arr);
    if (PyObject_GetBuffer(contiguous.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      // numpy exports no buffer for ml_dtypes' types: view their bits as unsigned integers.
      const std::string dname = nb::cast<std::string>(arr.attr("dtype").attr("name"));
      DType t = DType::kUndefined;
      for (DType c : {DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                      DType::kFloat8E5M2FNUZ, DType::kFloat8E8M0, DType::kFloat4E2M1})
        if (dname == ml_dtypes_name(c)) t = c;
      if (t == DType::kUndefined)
        fail(ErrorCode::kInvalidArgument, "input '" + name + "': a numpy array of " + dname + " has no ONNX element type");
      if (want != DType::kUndefined && want != t)
        fail(ErrorCode::kInvalidArgument, "input '" + name + "': expected " + type_label(want) + ", got a numpy array of " +
                                              dname + " (" + type_label(t) + ")");
      nb::object bits = contiguous.attr("view")(numpy().attr(t == DType::kBFloat16 ? "uint16" : "uint8"));
      if (PyObject_GetBuffer(bits.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) throw nb::python_error();
      const Shape shape(std::vector<int64_t>(view.shape, view.shape + view.ndim));
      void* data = view.buf;
      PyBuffer_Release(&view);
      return Tensor::view(t, shape, data, keep_alive(std::move(bits)));
    }
    arr = std::move(contiguous);
  }
  bool big_endian = false;
  DType got = dtype_of_format(view.format, view.itemsize, &big_endian);
  if (is_string_format(view.format)) {
    PyBuffer_Release(&view);
    if (want != DType::kUndefined && want != DType::kString)
      fail(ErrorCode::kInvalidArgument, "input '" + name + "': expected " + type_label(want) +
                                            ", got a numpy array of strings or objects (tensor(string))");
    return strings_from_array(arr, name);
  }
  if (got == DType::kUndefined || big_endian) {
    PyBuffer_Release(&view);
    const std::string dname = py_str(arr.attr("dtype"));
    if (got != DType::kUndefined) {  // byte-swapped: a native-order copy
      nb::object native = arr.attr("astype")(arr.attr("dtype").attr("newbyteorder")("="));
      return tensor_from_python(native, want, name);
    }
    fail(ErrorCode::kInvalidArgument, "input '" + name + "': a numpy array of " + dname + " has no ONNX element type");
  }
  const Shape shape(std::vector<int64_t>(view.shape, view.shape + view.ndim));
  void* data = view.buf;
  PyBuffer_Release(&view);  // the array stays alive (and its memory with it) through keep_alive
  if (want != DType::kUndefined && !compatible(got, want))
    fail(ErrorCode::kInvalidArgument, "input '" + name + "': expected " + type_label(want) + ", got a numpy array of " +
                                          numpy_name(got) + " (" + type_label(got) + ")");
  Tensor t = Tensor::view(got, shape, data, keep_alive(std::move(arr)));
  if (want != DType::kUndefined && want != got) {
    check_narrow_range(t, want, name);
    t = Tensor::view(want, shape, data, t.storage());
  }
  return t;
}

Value value_from_python(nb::handle obj, const IoInfo* info, const std::string& name) {
  const Value::Kind kind = info ? info->kind : Value::Kind::kTensor;
  const DType want = info ? info->dtype : DType::kUndefined;
  switch (kind) {
    case Value::Kind::kSequence: {
      if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr()))
        fail(ErrorCode::kInvalidArgument, "input '" + name + "' is a sequence: give a list of arrays, not " +
                                              py_str(obj.type().attr("__name__")));
      std::vector<Tensor> items;
      size_t i = 0;
      for (nb::handle item : obj) items.push_back(tensor_from_python(item, want, name + "[" + std::to_string(i++) + "]"));
      return Value::sequence(std::move(items), want);
    }
    case Value::Kind::kOptional:
      if (obj.is_none()) return Value::optional_none(want);
      return Value::optional_of(Value(tensor_from_python(obj, want, name)));
    case Value::Kind::kMap: {
      if (!PyDict_Check(obj.ptr()))
        fail(ErrorCode::kInvalidArgument, "input '" + name + "' is a map: give a dict");
      nb::dict d = nb::borrow<nb::dict>(obj);
      nb::list keys = nb::list(d.keys());
      bool string_keys = nb::len(keys) > 0 && PyUnicode_Check(keys[0].ptr());
      Tensor k = tensor_from_python(keys, string_keys ? DType::kString : DType::kInt64, name + " (keys)");
      Tensor v = tensor_from_python(nb::list(d.values()), want, name + " (values)");
      return Value::map(k, v);
    }
    default:
      if (obj.is_none())
        fail(ErrorCode::kInvalidArgument, "input '" + name + "' is None: give an array (only optional inputs may be None)");
      return Value(tensor_from_python(obj, want, name));
  }
}

nb::object tensor_to_numpy(const Tensor& t, const std::string& name) {
  if (!t.on_host()) fail(ErrorCode::kInvalidArgument, "'" + name + "' is in device memory; copy it to the host first");
  const Shape& s = t.shape();
  if (t.dtype() == DType::kString) {
    const std::string* p = t.data<std::string>();
    nb::list items;
    for (int64_t i = 0; i < t.numel(); ++i) {
      PyObject* u = PyUnicode_DecodeUTF8(p[i].data(), static_cast<Py_ssize_t>(p[i].size()), "surrogateescape");
      if (!u) throw nb::python_error();
      items.append(nb::steal(u));
    }
    nb::object a = numpy().attr("array")(items, nb::str("object"));
    return a.attr("reshape")(nb::cast(s.to_vector()));
  }
  std::array<size_t, 32> small_shape{};
  std::vector<size_t> big_shape;
  size_t* shape = small_shape.data();
  if (s.size() > small_shape.size()) {
    big_shape.resize(s.size());
    shape = big_shape.data();
  }
  for (size_t i = 0; i < s.size(); ++i) shape[i] = static_cast<size_t>(s[i]);
  // The owner: a heap copy of the tensor handle, sharing its storage.
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  static char empty_data[64];
  void* data = t.numel() == 0 || !t.raw_data() ? static_cast<void*>(empty_data) : const_cast<void*>(t.raw_data());
  const char* ml = ml_dtypes_name(t.dtype());
  if (*ml) {
    // numpy lacks the type: the bits as unsigned integers, viewed as ml_dtypes' type.
    nb::object want = numpy_dtype(t.dtype(), "'" + name + "'");
    const nb::dlpack::dtype bits{static_cast<uint8_t>(nb::dlpack::dtype_code::UInt),
                                 static_cast<uint8_t>(t.dtype() == DType::kBFloat16 ? 16 : 8), 1};
    nb::ndarray<nb::numpy> a(data, s.size(), shape, owner, nullptr, bits, nb::device::cpu::value);
    return a.cast().attr("view")(want);
  }
  nb::dlpack::dtype dt{};
  dt.lanes = 1;
  using Code = nb::dlpack::dtype_code;
  auto set = [&](Code c, int bits) {
    dt.code = static_cast<uint8_t>(c);
    dt.bits = static_cast<uint8_t>(bits);
  };
  switch (t.dtype()) {
    case DType::kFloat: set(Code::Float, 32); break;
    case DType::kDouble: set(Code::Float, 64); break;
    case DType::kFloat16: set(Code::Float, 16); break;
    case DType::kInt8: case DType::kInt4: case DType::kInt2: set(Code::Int, 8); break;
    case DType::kUInt8: case DType::kUInt4: case DType::kUInt2: set(Code::UInt, 8); break;
    case DType::kInt16: set(Code::Int, 16); break;
    case DType::kUInt16: set(Code::UInt, 16); break;
    case DType::kInt32: set(Code::Int, 32); break;
    case DType::kUInt32: set(Code::UInt, 32); break;
    case DType::kInt64: set(Code::Int, 64); break;
    case DType::kUInt64: set(Code::UInt, 64); break;
    case DType::kBool: set(Code::Bool, 8); break;
    case DType::kComplex64: set(Code::Complex, 64); break;
    case DType::kComplex128: set(Code::Complex, 128); break;
    default: numpy_dtype(t.dtype(), "'" + name + "'");  // throws, naming the type
  }
  nb::ndarray<nb::numpy> a(data, s.size(), shape, owner, nullptr, dt, nb::device::cpu::value);
  return a.cast();
}

nb::object value_to_python(const Value& v, const std::string& name) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return tensor_to_numpy(v.tensor(), name);
    case Value::Kind::kSequence: {
      nb::list out;
      if (v.sequence_of_maps()) {
        for (const Value& m : v.maps()) out.append(value_to_python(m, name));
      } else {
        for (const Tensor& t : v.items()) out.append(tensor_to_numpy(t, name));
      }
      return out;
    }
    case Value::Kind::kOptional: return v.has_element() ? value_to_python(v.element(), name) : nb::none();
    case Value::Kind::kMap: {
      nb::object keys = tensor_to_numpy(v.map_keys(), name).attr("tolist")();
      nb::object values = tensor_to_numpy(v.map_values(), name).attr("tolist")();
      nb::dict d;
      const size_t n = nb::len(keys);
      for (size_t i = 0; i < n; ++i) d[keys[i]] = values[i];
      return d;
    }
    default: return nb::none();
  }
}

std::string onnx_type_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return type_label(v.tensor().dtype());
    case Value::Kind::kSequence:
      if (v.sequence_of_maps())
        return "seq(map(" + std::string(dtype_name(v.map_key_dtype())) + "," + type_label(v.elem_dtype()) + "))";
      return "seq(" + type_label(v.elem_dtype()) + ")";
    case Value::Kind::kOptional: return "optional(" + (v.has_element() ? onnx_type_of(v.element()) : type_label(v.elem_dtype())) + ")";
    case Value::Kind::kMap: return "map(" + std::string(dtype_name(v.map_key_dtype())) + "," + type_label(v.elem_dtype()) + ")";
    default: return "none";
  }
}

namespace {
std::array<PyObject*, 32>& error_classes() {
  static std::array<PyObject*, 32> classes{};
  return classes;
}
}  // namespace

void register_error_classes(nb::dict by_code) {
  for (auto [k, v] : by_code) {
    const int code = nb::cast<int>(k);
    if (code < 0 || code >= static_cast<int>(error_classes().size())) continue;
    Py_XDECREF(error_classes()[code]);
    error_classes()[code] = v.inc_ref().ptr();
  }
}

void install_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      const int code = static_cast<int>(e.code());
      PyObject* cls = code >= 0 && code < static_cast<int>(error_classes().size()) ? error_classes()[code] : nullptr;
      if (!cls) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return;
      }
      nb::object exc = nb::borrow(cls)(nb::str(e.what()));
      exc.attr("code") = nb::str(std::string(error_code_name(e.code())).c_str());
      PyErr_SetObject(cls, exc.ptr());
    }
  });
}

void raise_missing_input(const std::string& message) {
  PyObject* cls = error_classes()[31];
  if (!cls) throw Error(ErrorCode::kInvalidArgument, message);
  nb::object exc = nb::borrow(cls)(nb::str(message.c_str()));
  exc.attr("code") = nb::str("InvalidArgument");
  PyErr_SetObject(cls, exc.ptr());
  throw nb::python_error();
}

}  // namespace onyx::py
