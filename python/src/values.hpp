// onyx for Python: conversions between Python objects (numpy arrays, lists, dicts, None) and
// onyx values, and the exception translation.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "onyx/onyx.hpp"

namespace onyx::py {

namespace nb = nanobind;

/// The numpy dtype of an onyx element type (ml_dtypes' for bfloat16 and the float8 types when it is
/// installed). Throws onyx::Error kNotImplemented for a type numpy cannot hold.
nb::object numpy_dtype(DType t, const std::string& what);
/// The onyx element type of a numpy dtype (or anything np.dtype() accepts: np.float32, "float32").
DType dtype_from_numpy(nb::handle dtype);

/// Whether `obj` is a numpy array (or of a subclass).
bool is_ndarray(nb::handle obj);

/// A tensor from a Python object for input `name`. numpy arrays of `want`'s type in C order are
/// used in place (zero copy; the tensor keeps the array alive); other arrays are made C-contiguous;
/// lists and scalars are converted to `want`. An array of another type is an error naming the
/// input (as ORT's). `want` kUndefined: any type.
Tensor tensor_from_python(nb::handle obj, DType want, const std::string& name);
/// A value (tensor, sequence, optional or map) for an input described by `info` (null: a tensor
/// of any type).
Value value_from_python(nb::handle obj, const IoInfo* info, const std::string& name);

/// A numpy array over the tensor's storage (no copy: the array keeps the storage alive); strings
/// become an object array of str.
nb::object tensor_to_numpy(const Tensor& t, const std::string& name);
/// A value as Python: an array, a list (sequence), a dict (map), or None (empty optional).
nb::object value_to_python(const Value& v, const std::string& name);

/// ONNX's (ORT's) type string of a value: "tensor(float)", "seq(tensor(int64))", "map(string,tensor(float))".
std::string onnx_type_of(const Value& v);

/// Installs the translation of onyx::Error into the Python exception classes registered by
/// onyx/_errors.py (one per ErrorCode).
void register_error_classes(nb::dict by_code);
void install_error_translator();
/// Raises onyx.MissingInput (an InvalidArgument and a ValueError) with `message`.
[[noreturn]] void raise_missing_input(const std::string& message);

}  // namespace onyx::py
