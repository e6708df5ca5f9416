#include "model/tensor_proto.hpp"

#include "core/narrow.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace onyx {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "onyx reads little-endian tensor data in place");

namespace {

constexpr int kMaxTypeDepth = 32;
/// Largest dense form of a sparse tensor (2 GiB, ONNX Runtime's limit too).
constexpr uint64_t kMaxSparseDenseBytes = uint64_t(1) << 31;

struct RawTensor {
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  std::string name;
  std::span<const uint8_t> raw;
  bool has_raw = false;
  std::vector<float> floats;
  std::vector<int64_t> int32s;  // int32_data widened (varints)
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
  std::vector<std::string> strings;
  std::vector<std::pair<std::string, std::string>> external;
  int64_t data_location = 0;
};

/// Why an element type number is refused: onnx 1.23's float6 types are known but not supported.
std::string bad_elem_type(int64_t v) {
  if (v == 27) return "element type float6e2m3 (27) is not supported";
  if (v == 28) return "element type float6e3m2 (28) is not supported";
  return str("invalid elem_type ", v);
}

/// Value i of packed `bits`-bit values (low bits first), sign-extended for int4 / int2.
uint8_t unpack(DType dt, int bits, uint8_t byte, int64_t i) {
  const int per = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  const uint8_t v = (byte >> ((i % per) * bits)) & mask;
  const bool sign = (dt == DType::kInt4 || dt == DType::kInt2) && (v >> (bits - 1));
  return sign ? static_cast<uint8_t>(v | ~mask) : v;
}

/// How many values the typed field that holds `dt` has, how many `n` elements need, and its name.
struct TypedCount {
  uint64_t have, want;
  const char* field;
};
TypedCount typed_count(const RawTensor& rt, DType dt, uint64_t n) {
  switch (dt) {
    case DType::kFloat: return {rt.floats.size(), n, "float_data"};
    case DType::kComplex64: return {rt.floats.size(), 2 * n, "float_data"};
    case DType::kDouble: return {rt.doubles.size(), n, "double_data"};
    case DType::kComplex128: return {rt.doubles.size(), 2 * n, "double_data"};
    case DType::kInt64: return {rt.int64s.size(), n, "int64_data"};
    case DType::kUInt64:
    case DType::kUInt32: return {rt.uint64s.size(), n, "uint64_data"};
    case DType::kString: return {rt.strings.size(), n, "string_data"};
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kFloat4E2M1:
    case DType::kInt2:
    case DType::kUInt2: {
      const uint64_t per = 8 / packed_bits(dt);
      return {rt.int32s.size(), (n + per - 1) / per, "int32_data"};
    }
    default: return {rt.int32s.size(), n, "int32_data"};  // one int32_data entry per element
  }
}

Tensor from_typed(const RawTensor& rt, DType dt, const Shape& shape, ProtoReader& r) {
  const int64_t n = checked_numel(shape, "tensor");
  // The field must hold exactly the values the shape needs, checked before anything is
  // allocated: a shape claiming more than the file holds is an error, not an allocation.
  const TypedCount c = typed_count(rt, dt, static_cast<uint64_t>(n));
  if (c.have != c.want)
    r.error(str("tensor '", rt.name, "' of shape ", shape.to_string(), " has ", c.have, " values in ", c.field,
                ", expected ", c.want));
  Tensor t(dt, shape);
  if (n == 0) return t;  // (the empty fields' data() may be null, which memcpy must not get)
  void* d = t.raw_data();
  switch (dt) {
    case DType::kFloat: std::memcpy(d, rt.floats.data(), n * 4); break;
    case DType::kComplex64: std::memcpy(d, rt.floats.data(), n * 8); break;
    case DType::kDouble: std::memcpy(d, rt.doubles.data(), n * 8); break;
    case DType::kComplex128: std::memcpy(d, rt.doubles.data(), n * 16); break;
    case DType::kInt64: std::memcpy(d, rt.int64s.data(), n * 8); break;
    case DType::kUInt64: std::memcpy(d, rt.uint64s.data(), n * 8); break;
    case DType::kUInt32: {
      auto* o = static_cast<uint32_t*>(d);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<uint32_t>(rt.uint64s[i]);
      break;
    }
    case DType::kString: {
      auto* o = static_cast<std::string*>(d);
      for (int64_t i = 0; i < n; ++i) o[i] = rt.strings[i];
      break;
    }
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kFloat4E2M1:
    case DType::kInt2:
    case DType::kUInt2: {
      const int bits = packed_bits(dt), per = 8 / bits;
      auto* o = static_cast<uint8_t*>(d);
      for (int64_t i = 0; i < n; ++i) o[i] = unpack(dt, bits, static_cast<uint8_t>(rt.int32s[i / per]), i);
      break;
    }
    default: {
      // int32, int16, int8, uint16, uint8, bool, float16, bfloat16, float8: one int32_data entry each.
      const size_t es = dtype_size(dt);
      auto* o = static_cast<uint8_t*>(d);
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = static_cast<int32_t>(rt.int32s[i]);
        std::memcpy(o + i * es, &v, es);
      }
      break;
    }
  }
  return t;
}

/// Whether `path` is `dir` or lies under it (both canonical: absolute, no symlinks, no dots).
bool lies_within(const std::filesystem::path& path, const std::filesystem::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // (a trailing separator)
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

const std::shared_ptr<MappedFile>& external_file(const TensorSource& src, const std::string& location, ProtoReader& r) {
  if (src.base_dir.empty())
    r.error(str("tensor uses external data '", location,
                "' but the model was loaded from memory without a directory for external data"));
  if (location.empty() || location[0] == '/')
    r.error(str("external data location '", location, "' must be a relative path inside the model's directory"));
  auto& cache = *src.external;
  auto it = cache.find(location);
  if (it == cache.end()) {
    // The file as resolved (every symlink followed, in the location or in a folder on its way)
    // must stay inside the model's folder: a model must not read other files of the machine.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::canonical(src.base_dir, ec);
    if (ec) r.error(str("external data directory '", src.base_dir, "': ", ec.message()));
    const fs::path file = fs::canonical(dir / location, ec);
    if (ec) r.error(str("external data '", location, "' in '", src.base_dir, "': ", ec.message()));
    if (!lies_within(file, dir))
      r.error(str("external data location '", location, "' resolves to '", file.string(),
                  "', which escapes the model's directory '", dir.string(), "'"));
    it = cache.emplace(location, MappedFile::open(file.string())).first;
  }
  return it->second;
}

}  // namespace

Tensor parse_tensor_proto(ProtoReader r, const TensorSource& src, std::string* name) {
  RawTensor rt;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.repeated_int64(rt.dims); break;
      case 2: r.expect(WireType::kVarint); rt.data_type = static_cast<int32_t>(r.int64()); break;
      case 3: r.error("segmented tensors (TensorProto.segment) are not supported");
      case 4: r.repeated_float(rt.floats); break;
      case 5: r.repeated_int64(rt.int32s); break;
      case 6: r.expect(WireType::kBytes); rt.strings.push_back(r.string()); break;
      case 7: r.repeated_int64(rt.int64s); break;
      case 8: r.expect(WireType::kBytes); rt.name = r.string(); break;
      case 9: r.expect(WireType::kBytes); rt.raw = r.bytes(); rt.has_raw = true; break;
      case 10: r.repeated_double(rt.doubles); break;
      case 11: r.repeated_uint64(rt.uint64s); break;
      case 13: {
        r.expect(WireType::kBytes);
        ProtoReader kv = r.message("StringStringEntryProto");
        std::string k, v;
        while (kv.next()) {
          if (kv.field() == 1) k = kv.string();
          else if (kv.field() == 2) v = kv.string();
          else kv.skip();
        }
        rt.external.emplace_back(k, v);
        break;
      }
      case 14: r.expect(WireType::kVarint); rt.data_location = r.int64(); break;
      default: r.skip();
    }
  }
  if (name) *name = rt.name;
  if (!dtype_valid(rt.data_type) || rt.data_type == 0) r.error(str("tensor '", rt.name, "': ", bad_elem_type(rt.data_type)));
  const DType dt = static_cast<DType>(rt.data_type);
  for (int64_t d : rt.dims)
    if (d < 0) r.error(str("tensor '", rt.name, "' has negative dimension ", d));
  Shape shape(rt.dims);
  int64_t n;
  try {
    n = checked_numel(shape, "tensor");
  } catch (const Error&) {
    r.error(str("tensor '", rt.name, "' has shape ", shape.to_string(), " whose element count overflows"));
  }
  const uint64_t es = dtype_size(dt);
  const int bits = packed_bits(dt);
  uint64_t want_bytes = bits ? static_cast<uint64_t>((n + 8 / bits - 1) / (8 / bits)) : 0;
  if (!bits && __builtin_mul_overflow(static_cast<uint64_t>(n), es, &want_bytes))
    r.error(str("tensor '", rt.name, "' is too large"));

  std::span<const uint8_t> bytes;
  std::shared_ptr<void> keep;
  if (rt.data_location == 1) {
    std::string location;
    int64_t offset = 0, length = -1;
    bool has_length = false;
    for (auto& [k, v] : rt.external) {
      try {
        if (k == "location") location = v;
        else if (k == "offset") offset = std::stoll(v);
        else if (k == "length") length = std::stoll(v), has_length = true;
      } catch (const std::exception&) {
        r.error(str("tensor '", rt.name, "' has a non-numeric external data ", k, " '", v, "'"));
      }
    }
    if (offset < 0 || (has_length && length < 0))
      r.error(str("tensor '", rt.name, "' has a negative external data ", offset < 0 ? "offset " : "length ",
                  offset < 0 ? offset : length));
    const auto& f = external_file(src, location, r);
    if (!has_length) length = static_cast<int64_t>(f->size()) - offset;
    if (offset < 0 || length < 0 || static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > f->size())
      r.error(str("tensor '", rt.name, "': external data range [", offset, ", ", offset + length, ") lies outside '",
                  location, "' (", f->size(), " bytes)"));
    bytes = std::span<const uint8_t>(f->data() + offset, static_cast<size_t>(length));
    keep = f;
  } else if (rt.has_raw) {
    bytes = rt.raw;
    keep = src.file;
  } else {
    if (dt == DType::kString || n == 0 || !rt.floats.empty() || !rt.int32s.empty() || !rt.int64s.empty() ||
        !rt.doubles.empty() || !rt.uint64s.empty() || !rt.strings.empty())
      return from_typed(rt, dt, shape, r);
    r.error(str("tensor '", rt.name, "' of shape ", shape.to_string(), " has no data"));
  }
  if (dt == DType::kString) r.error(str("string tensor '", rt.name, "' cannot use raw or external data"));
  if (bytes.size() != want_bytes)
    r.error(str("tensor '", rt.name, "' of type ", dtype_name(dt), " and shape ", shape.to_string(), " needs ",
                want_bytes, " bytes of data but has ", bytes.size()));
  if (bits) {
    Tensor t(dt, shape);
    auto* o = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) o[i] = unpack(dt, bits, bytes[i / (8 / bits)], i);
    return t;
  }
  // Zero-copy when the bytes are aligned for the element type; otherwise copy to aligned memory.
  if (reinterpret_cast<uintptr_t>(bytes.data()) % es == 0 && keep)
    return Tensor::view(dt, shape, bytes.data(), keep);
  Tensor t(dt, shape);
  if (want_bytes) std::memcpy(t.raw_data(), bytes.data(), want_bytes);
  return t;
}

Tensor parse_sparse_tensor_proto(ProtoReader r, const TensorSource& src, std::string* name) {
  Tensor values, indices;
  std::vector<int64_t> dims;
  std::string vname;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.expect(WireType::kBytes); values = parse_tensor_proto(r.message("SparseTensorProto.values"), src, &vname); break;
      case 2: r.expect(WireType::kBytes); indices = parse_tensor_proto(r.message("SparseTensorProto.indices"), src, nullptr); break;
      case 3: r.repeated_int64(dims); break;
      default: r.skip();
    }
  }
  if (name) *name = vname;
  if (!values.defined() || !indices.defined()) r.error("sparse tensor needs values and indices");
  Shape shape(dims);
  const int64_t total = checked_numel(shape, "sparse tensor");
  if (values.rank() != 1) r.error(str("sparse tensor '", vname, "' values must be 1-D"));
  const int64_t nnz = values.dim(0);
  if (indices.dtype() != DType::kInt64) r.error(str("sparse tensor '", vname, "' indices must be int64"));
  // The dense form is allocated here, so its size is bounded before: nothing in the file limits
  // it (a few bytes of dims can claim terabytes). ONNX Runtime refuses the same sizes.
  uint64_t dense_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(total), dtype_size(values.dtype()), &dense_bytes) ||
      dense_bytes > kMaxSparseDenseBytes)
    r.error(str("sparse tensor '", vname, "' of shape ", shape.to_string(), " takes more than ", kMaxSparseDenseBytes,
                " bytes dense (sparse tensors are densified at load, up to that size)"));
  Tensor dense(values.dtype(), shape);
  const int64_t* idx = indices.data<int64_t>();
  const bool linear = indices.rank() == 1;
  if (linear ? indices.dim(0) != nnz : (indices.rank() != 2 || indices.dim(0) != nnz || indices.dim(1) != (int64_t)shape.size()))
    r.error(str("sparse tensor '", vname, "' indices have shape ", indices.shape().to_string(), " for ", nnz,
                " values of a rank-", shape.size(), " tensor"));
  const size_t es = dtype_size(values.dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t off = 0;
    if (linear) {
      off = idx[k];
    } else {
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t i = idx[k * shape.size() + d];
        if (i < 0 || i >= shape[d]) r.error(str("sparse tensor '", vname, "' index ", i, " out of range in dim ", d));
        off = off * shape[d] + i;
      }
    }
    if (off < 0 || off >= total) r.error(str("sparse tensor '", vname, "' index ", off, " out of range [0, ", total, ")"));
    if (values.dtype() == DType::kString)
      static_cast<std::string*>(dense.raw_data())[off] = static_cast<const std::string*>(values.raw_data())[k];
    else
      std::memcpy(static_cast<uint8_t*>(dense.raw_data()) + off * es, static_cast<const uint8_t*>(values.raw_data()) + k * es, es);
  }
  return dense;
}

TypeInfo parse_type_proto(ProtoReader r, SymbolTable& symbols, int depth) {
  if (depth > kMaxTypeDepth) r.error("types nested too deeply");
  TypeInfo t;
  while (r.next()) {
    switch (r.field()) {
      case 1:
      case 8: {  // tensor_type, sparse_tensor_type
        r.expect(WireType::kBytes);
        t.kind = r.field() == 1 ? TypeInfo::Kind::kTensor : TypeInfo::Kind::kSparseTensor;
        ProtoReader tr = r.message("TypeProto.Tensor");
        while (tr.next()) {
          if (tr.field() == 1) {
            const int64_t et = tr.int64();
            if (et != 0 && !dtype_valid(static_cast<int32_t>(et))) tr.error(bad_elem_type(static_cast<int64_t>(et)));
            t.dtype = static_cast<DType>(et);
          } else if (tr.field() == 2) {
            tr.expect(WireType::kBytes);
            ProtoReader sr = tr.message("TensorShapeProto");
            t.has_shape = true;
            while (sr.next()) {
              if (sr.field() != 1) {
                sr.skip();
                continue;
              }
              sr.expect(WireType::kBytes);
              ProtoReader dr = sr.message("TensorShapeProto.Dimension");
              int64_t value = -1;
              std::string param;
              while (dr.next()) {
                if (dr.field() == 1) {
                  dr.expect(WireType::kVarint);
                  value = dr.int64();
                  // Some exporters (paddle2onnx among them) write -1 for an unknown dim; ORT
                  // reads any negative value as unknown, and so does onyx.
                  if (value < 0) value = -1;
                } else if (dr.field() == 2) {
                  dr.expect(WireType::kBytes);
                  param = dr.string();
                } else {
                  dr.skip();
                }
              }
              if (value < 0) value = param.empty() ? symbols.fresh() : symbols.intern(param);
              t.shape.push_back(value);
            }
          } else {
            tr.skip();
          }
        }
        break;
      }
      case 4:
      case 9: {  // sequence_type, optional_type
        r.expect(WireType::kBytes);
        const bool seq = r.field() == 4;
        ProtoReader sr = r.message(seq ? "TypeProto.Sequence" : "TypeProto.Optional");
        TypeInfo elem;
        while (sr.next()) {
          if (sr.field() == 1) {
            sr.expect(WireType::kBytes);
            elem = parse_type_proto(sr.message("TypeProto"), symbols, depth + 1);
          } else {
            sr.skip();
          }
        }
        t = seq ? TypeInfo::sequence_of(std::move(elem)) : TypeInfo::optional_of(std::move(elem));
        break;
      }
      case 5: {  // map_type: key_type (a TensorProto data type), value_type
        r.expect(WireType::kBytes);
        ProtoReader mr = r.message("TypeProto.Map");
        DType key = DType::kUndefined;
        TypeInfo value;
        while (mr.next()) {
          if (mr.field() == 1) {
            mr.expect(WireType::kVarint);
            const int64_t et = mr.int64();
            if (!dtype_valid(static_cast<int32_t>(et))) mr.error(bad_elem_type(et));
            key = static_cast<DType>(et);
          } else if (mr.field() == 2) {
            mr.expect(WireType::kBytes);
            value = parse_type_proto(mr.message("TypeProto"), symbols, depth + 1);
          } else {
            mr.skip();
          }
        }
        t = TypeInfo::map_of(key, std::move(value));
        break;
      }
      default: r.skip();
    }
  }
  return t;
}

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, "cannot open '", path, "'");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

Value parse_value(ProtoReader r, const TensorSource& src, const TypeInfo* type, std::string* name, int depth);

Value parse_map(ProtoReader r, const TensorSource& src, const TypeInfo* type, std::string* name, int depth);

Value parse_sequence(ProtoReader r, const TensorSource& src, const TypeInfo* type, std::string* name, int depth) {
  if (depth > kMaxTypeDepth) r.error("values nested too deeply");
  std::vector<Tensor> items;
  std::vector<Value> maps;
  const TypeInfo* elem_type = type ? type->elem.get() : nullptr;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.expect(WireType::kBytes); if (name) *name = r.string(); else r.skip(); break;
      case 3: r.expect(WireType::kBytes); items.push_back(parse_tensor_proto(r.message("SequenceProto.tensor_values"), src, nullptr)); break;
      case 6:
        r.expect(WireType::kBytes);
        maps.push_back(parse_map(r.message("SequenceProto.map_values"), src, elem_type, nullptr, depth + 1));
        break;
      case 4: case 5: case 7: r.error("sequences of sparse tensors, sequences or optionals are not supported");
      default: r.skip();
    }
  }
  if (!maps.empty() || (elem_type && elem_type->kind == TypeInfo::Kind::kMap)) {
    if (!items.empty()) r.error("a sequence holds both tensors and maps");
    DType key = elem_type ? elem_type->dtype : DType::kUndefined, value = elem_type ? elem_type->elem_dtype() : DType::kUndefined;
    if (!maps.empty()) key = maps[0].map_key_dtype(), value = maps[0].elem_dtype();
    try {
      return Value::sequence_of_maps(std::move(maps), key, value);
    } catch (const Error& e) {
      r.error(e.what());
    }
  }
  DType elem = elem_type ? elem_type->elem_dtype() : DType::kUndefined;
  if (elem == DType::kUndefined && !items.empty()) elem = items[0].dtype();
  return Value::sequence(std::move(items), elem);
}

/// A MapProto: keys (int64 `keys` or `string_keys`) and values, a SequenceProto of one scalar
/// tensor per key (as onnx.numpy_helper.from_dict writes it) or of one 1-D tensor of them all.
Value parse_map(ProtoReader r, const TensorSource& src, const TypeInfo* type, std::string* name, int depth) {
  if (depth > kMaxTypeDepth) r.error("values nested too deeply");
  int64_t key_type = 0;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> values;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.expect(WireType::kBytes); if (name) *name = r.string(); else r.skip(); break;
      case 2: r.expect(WireType::kVarint); key_type = r.int64(); break;
      case 3: r.repeated_int64(ints); break;
      case 4: r.expect(WireType::kBytes); strings.push_back(r.string()); break;
      case 5: {
        r.expect(WireType::kBytes);
        const Value seq = parse_sequence(r.message("MapProto.values"), src, nullptr, nullptr, depth + 1);
        if (seq.sequence_of_maps()) r.error("map values that are maps are not supported");
        values = seq.items();
        break;
      }
      default: r.skip();
    }
  }
  const bool str_keys = key_type == static_cast<int64_t>(DType::kString);
  if (!str_keys && key_type != static_cast<int64_t>(DType::kInt64))
    r.error(str("map keys of type ", key_type, " are not supported (int64 or string)"));
  if (type && type->kind == TypeInfo::Kind::kMap && type->dtype != DType::kUndefined &&
      static_cast<int64_t>(type->dtype) != key_type)
    r.error(str("the map's keys are ", dtype_name(static_cast<DType>(key_type)), ", the model expects ", dtype_name(type->dtype)));
  const int64_t n = static_cast<int64_t>(str_keys ? strings.size() : ints.size());
  Tensor keys = str_keys ? Tensor::from_vector<std::string>(Shape{n}, strings) : Tensor::from_vector<int64_t>(Shape{n}, ints);
  Tensor vals;
  if (values.size() == 1 && values[0].rank() == 1 && values[0].numel() == n && n != 1) {
    vals = values[0].clone();
  } else {
    if (static_cast<int64_t>(values.size()) != n) r.error(str("the map has ", n, " keys and ", values.size(), " values"));
    const DType dt = values.empty() ? (type && type->elem ? type->elem->elem_dtype() : DType::kFloat) : values[0].dtype();
    vals = Tensor(dt, Shape{n});
    for (int64_t i = 0; i < n; ++i) {
      if (values[i].numel() != 1 || values[i].dtype() != dt) r.error(str("map value ", i, " is not one ", dtype_name(dt)));
      if (dt == DType::kString)
        vals.data<std::string>()[i] = values[i].data<std::string>()[0];
      else
        std::memcpy(static_cast<uint8_t*>(vals.raw_data()) + i * dtype_size(dt), values[i].raw_data(), dtype_size(dt));
    }
  }
  try {
    return Value::map(std::move(keys), std::move(vals));
  } catch (const Error& e) {
    r.error(e.what());
  }
}

Value parse_optional(ProtoReader r, const TensorSource& src, const TypeInfo* type, std::string* name, int depth) {
  if (depth > kMaxTypeDepth) r.error("values nested too deeply");
  const TypeInfo* elem_type = type ? type->elem.get() : nullptr;
  Value inner;
  bool has = false;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.expect(WireType::kBytes); if (name) *name = r.string(); else r.skip(); break;
      case 3: r.expect(WireType::kBytes); inner = Value(parse_tensor_proto(r.message("OptionalProto.tensor_value"), src, nullptr)); has = true; break;
      case 5: r.expect(WireType::kBytes); inner = parse_sequence(r.message("OptionalProto.sequence_value"), src, elem_type, nullptr, depth + 1); has = true; break;
      case 4: case 6: case 7: r.error("optionals of sparse tensors, maps or optionals are not supported");
      default: r.skip();
    }
  }
  if (has) return Value::optional_of(std::move(inner));
  const bool is_seq = elem_type && elem_type->kind == TypeInfo::Kind::kSequence;
  return Value::optional_none(elem_type ? elem_type->elem_dtype() : DType::kUndefined, is_seq);
}

Value parse_value(ProtoReader r, const TensorSource& src, const TypeInfo* type, std::string* name, int depth) {
  if (type && type->kind == TypeInfo::Kind::kSequence) return parse_sequence(r, src, type, name, depth);
  if (type && type->kind == TypeInfo::Kind::kOptional) return parse_optional(r, src, type, name, depth);
  if (type && type->kind == TypeInfo::Kind::kMap) return parse_map(r, src, type, name, depth);
  return Value(parse_tensor_proto(r, src, name));
}

void put_tensor_fields(ProtoWriter& w, const Tensor& t, const std::string& name) {
  ProtoWriter dims;
  for (int64_t d : t.shape()) dims.varint_raw(static_cast<uint64_t>(d));
  if (t.rank()) w.bytes(1, dims.str());
  w.varint(2, static_cast<uint64_t>(t.dtype()));
  if (!name.empty()) w.bytes(8, name);
  if (t.dtype() == DType::kString) {
    const auto* s = static_cast<const std::string*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) w.bytes(6, s[i]);
  } else if (const int bits = packed_bits(t.dtype())) {
    const int per = 8 / bits, mask = (1 << bits) - 1;
    std::string packed((t.numel() + per - 1) / per, '\0');
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i)
      packed[i / per] = static_cast<char>(packed[i / per] | ((p[i] & mask) << ((i % per) * bits)));
    w.bytes(9, packed);
  } else {
    w.bytes(9, t.raw_data(), t.nbytes());
  }
}

}  // namespace

Value read_value_file(const std::string& path, const TypeInfo* type, std::string* name) {
  std::vector<uint8_t> buf = read_file(path);
  auto file = MappedFile::copy_of(buf.data(), buf.size());
  TensorSource src;
  src.file = file;
  ProtoReader r(file->data(), file->data() + file->size(), file->data(), path,
                type && type->kind == TypeInfo::Kind::kSequence   ? "SequenceProto"
                : type && type->kind == TypeInfo::Kind::kOptional ? "OptionalProto"
                : type && type->kind == TypeInfo::Kind::kMap      ? "MapProto"
                                                                  : "TensorProto");
  Value v = parse_value(r, src, type, name, 0);
  // Detach from the temporary buffer: copy tensors that view it.
  auto own = [](Tensor& t) {
    if (t.defined() && t.storage() && t.dtype() != DType::kString) t = t.clone();
  };
  if (v.is_tensor()) own(v.tensor());
  for (auto& t : v.items()) own(t);
  return v;
}

std::string encode_tensor_proto(const Tensor& t, const std::string& name) {
  ProtoWriter w;
  put_tensor_fields(w, t, name);
  return w.take();
}

std::string encode_value_proto(const Value& v, const std::string& name) {
  ProtoWriter w;
  if (v.is_tensor()) {
    put_tensor_fields(w, v.tensor(), name);
  } else if (v.is_sequence() && v.sequence_of_maps()) {
    if (!name.empty()) w.bytes(1, name);
    w.varint(2, 4);  // MAP
    for (const Value& m : v.maps()) w.bytes(6, encode_value_proto(m, ""));
  } else if (v.is_sequence()) {
    if (!name.empty()) w.bytes(1, name);
    w.varint(2, 1);  // TENSOR
    for (const Tensor& t : v.items()) w.bytes(3, encode_tensor_proto(t, ""));
  } else if (v.is_map()) {
    // MapProto: the keys, then the values as a sequence of one scalar tensor per key (what
    // onnx.numpy_helper.to_dict reads).
    if (!name.empty()) w.bytes(1, name);
    const Tensor& k = v.map_keys();
    const Tensor& x = v.map_values();
    w.varint(2, static_cast<uint64_t>(k.dtype()));
    for (int64_t i = 0; i < k.numel(); ++i) {
      if (k.dtype() == DType::kString)
        w.bytes(4, k.data<std::string>()[i]);
      else
        w.varint(3, static_cast<uint64_t>(k.data<int64_t>()[i]));
    }
    ProtoWriter seq;
    seq.varint(2, 1);  // TENSOR
    for (int64_t i = 0; i < x.numel(); ++i) {
      Tensor one(x.dtype(), Shape{});
      if (x.dtype() == DType::kString)
        one.data<std::string>()[0] = x.data<std::string>()[i];
      else
        std::memcpy(one.raw_data(), static_cast<const uint8_t*>(x.raw_data()) + i * dtype_size(x.dtype()), dtype_size(x.dtype()));
      seq.bytes(3, encode_tensor_proto(one, ""));
    }
    w.bytes(5, seq.str());
  } else if (v.is_optional()) {
    if (!name.empty()) w.bytes(1, name);
    if (v.has_element()) {
      const Value& e = v.element();
      if (e.is_sequence()) {
        w.varint(2, 3);
        w.bytes(5, encode_value_proto(e, ""));
      } else {
        w.varint(2, 1);
        w.bytes(3, encode_tensor_proto(e.tensor(), ""));
      }
    } else {
      w.varint(2, v.optional_of_sequence() ? 3 : 1);
    }
  } else {
    fail(ErrorCode::kInvalidArgument, "cannot encode an empty value '", name, "'");
  }
  return w.take();
}

void write_value_file(const std::string& path, const Value& v, const std::string& name) {
  const std::string bytes = encode_value_proto(v, name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(ErrorCode::kIo, "cannot write '", path, "'");
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) fail(ErrorCode::kIo, "error writing '", path, "'");
}

}  // namespace onyx

#include "onyx/tensor_io.hpp"

namespace onyx {

Tensor load_tensor_pb(const std::string& path, std::string* name) { return read_value_file(path, nullptr, name).tensor(); }

void save_tensor_pb(const std::string& path, const Tensor& t, const std::string& name) {
  write_value_file(path, Value(t), name);
}

}  // namespace onyx
