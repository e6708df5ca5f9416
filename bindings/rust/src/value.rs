//! Tensors in host memory: inputs made from a shape and a `Vec` (used in place, no copy), and the
//! outputs of runs.

use std::any::Any;
use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

use crate::error::{check, string_from, Error, Result};
use crate::sys;

/// Element type of a tensor: the C API's `OnyxElementType` (ONNX's `TensorProto.DataType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ElementType {
    Undefined,
    Float32,
    Uint8,
    Int8,
    Uint16,
    Int16,
    Int32,
    Int64,
    String,
    Bool,
    Float16,
    Float64,
    Uint32,
    Uint64,
    Complex64,
    Complex128,
    Bfloat16,
    Float8E4M3FN,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Uint4,
    Int4,
    Float4E2M1,
    Float8E8M0,
    Uint2,
    Int2,
    /// A value this crate does not know (from a newer library).
    Other(i32),
}

const TYPES: [(ElementType, sys::OnyxElementType); 27] = [
    (ElementType::Undefined, sys::ONYX_TYPE_UNDEFINED),
    (ElementType::Float32, sys::ONYX_TYPE_FLOAT),
    (ElementType::Uint8, sys::ONYX_TYPE_UINT8),
    (ElementType::Int8, sys::ONYX_TYPE_INT8),
    (ElementType::Uint16, sys::ONYX_TYPE_UINT16),
    (ElementType::Int16, sys::ONYX_TYPE_INT16),
    (ElementType::Int32, sys::ONYX_TYPE_INT32),
    (ElementType::Int64, sys::ONYX_TYPE_INT64),
    (ElementType::String, sys::ONYX_TYPE_STRING),
    (ElementType::Bool, sys::ONYX_TYPE_BOOL),
    (ElementType::Float16, sys::ONYX_TYPE_FLOAT16),
    (ElementType::Float64, sys::ONYX_TYPE_DOUBLE),
    (ElementType::Uint32, sys::ONYX_TYPE_UINT32),
    (ElementType::Uint64, sys::ONYX_TYPE_UINT64),
    (ElementType::Complex64, sys::ONYX_TYPE_COMPLEX64),
    (ElementType::Complex128, sys::ONYX_TYPE_COMPLEX128),
    (ElementType::Bfloat16, sys::ONYX_TYPE_BFLOAT16),
    (ElementType::Float8E4M3FN, sys::ONYX_TYPE_FLOAT8E4M3FN),
    (ElementType::Float8E4M3FNUZ, sys::ONYX_TYPE_FLOAT8E4M3FNUZ),
    (ElementType::Float8E5M2, sys::ONYX_TYPE_FLOAT8E5M2),
    (ElementType::Float8E5M2FNUZ, sys::ONYX_TYPE_FLOAT8E5M2FNUZ),
    (ElementType::Uint4, sys::ONYX_TYPE_UINT4),
    (ElementType::Int4, sys::ONYX_TYPE_INT4),
    (ElementType::Float4E2M1, sys::ONYX_TYPE_FLOAT4E2M1),
    (ElementType::Float8E8M0, sys::ONYX_TYPE_FLOAT8E8M0),
    (ElementType::Uint2, sys::ONYX_TYPE_UINT2),
    (ElementType::Int2, sys::ONYX_TYPE_INT2),
];

impl ElementType {
    /// The type of a C API value.
    pub fn from_raw(raw: sys::OnyxElementType) -> ElementType {
        TYPES.iter().find(|(_, r)| *r == raw).map(|(t, _)| *t).unwrap_or(ElementType::Other(raw))
    }

    /// The C API's value of this type.
    pub fn raw(self) -> sys::OnyxElementType {
        match self {
            ElementType::Other(v) => v,
            t => TYPES.iter().find(|(k, _)| *k == t).map(|(_, r)| *r).unwrap_or(sys::ONYX_TYPE_UNDEFINED),
        }
    }

    /// ONNX's name of the type: "float", "int64", "float16", ... ("" for no type).
    pub fn name(self) -> String {
        // SAFETY: accepts any value; returns a static NUL-terminated string.
        unsafe { string_from(sys::onyx_element_type_name(self.raw())) }
    }

    /// Bytes per element (0 for strings and undefined).
    pub fn size(self) -> usize {
        // SAFETY: accepts any value.
        unsafe { sys::onyx_element_type_size(self.raw()) }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose values are a tensor's elements, bit for bit.
pub trait TensorElement: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The element type of tensors of this Rust type.
    const ELEMENT_TYPE: ElementType;
}

macro_rules! tensor_elements {
    ($($t:ty => $e:ident),*) => {
        $(
            impl sealed::Sealed for $t {}
            impl TensorElement for $t {
                const ELEMENT_TYPE: ElementType = ElementType::$e;
            }
        )*
    };
}

tensor_elements!(f32 => Float32, f64 => Float64, i8 => Int8, u8 => Uint8, i16 => Int16, u16 => Uint16,
                 i32 => Int32, u32 => Uint32, i64 => Int64, u64 => Uint64);

/// An n-dimensional array in host memory, C order. Made from a shape and a `Vec` (which the tensor
/// keeps and onyx reads in place), zero-filled by onyx, or returned by a run.
pub struct Tensor {
    raw: NonNull<sys::OnyxTensor>,
    // The caller's elements when the tensor wraps them; freed after the handle (see Drop).
    _buffer: Option<Box<dyn Any + Send + Sync>>,
}

// SAFETY: a tensor handle may move between threads, and several threads may read it at once (the
// C API: a tensor may be an input of concurrent runs); writes need `&mut self`.
unsafe impl Send for Tensor {}
unsafe impl Sync for Tensor {}

impl Tensor {
    /// A tensor of `shape` over `data` (C order), used in place: no copy is made. The number of
    /// elements must match the shape.
    pub fn from_array<T: TensorElement, S: AsRef<[i64]>>((shape, data): (S, Vec<T>)) -> Result<Tensor> {
        let shape = shape.as_ref();
        let mut data = data.into_boxed_slice();
        let bytes = std::mem::size_of_val(&*data);
        let ptr = data.as_mut_ptr() as *mut c_void;
        let mut raw: *mut sys::OnyxTensor = ptr::null_mut();
        // SAFETY: `ptr` addresses `bytes` bytes aligned for T, owned by the boxed slice, which the
        // tensor keeps (never reallocated) until after the handle is released.
        check(unsafe {
            sys::onyx_tensor_create_over_buffer(
                T::ELEMENT_TYPE.raw(),
                shape.as_ptr(),
                shape.len(),
                ptr,
                bytes,
                &mut raw,
            )
        })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::invalid_argument("onyx_tensor_create_over_buffer gave no tensor"))?;
        Ok(Tensor { raw, _buffer: Some(Box::new(data)) })
    }

    /// A zero-filled tensor of `shape` with elements of type `T`, allocated by onyx.
    pub fn zeros<T: TensorElement>(shape: &[i64]) -> Result<Tensor> {
        let mut raw: *mut sys::OnyxTensor = ptr::null_mut();
        // SAFETY: valid shape array and output pointer.
        check(unsafe { sys::onyx_tensor_create(T::ELEMENT_TYPE.raw(), shape.as_ptr(), shape.len(), &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::invalid_argument("onyx_tensor_create gave no tensor"))?;
        Ok(Tensor { raw, _buffer: None })
    }

    /// Takes ownership of a tensor handle made by onyx (a run's output).
    pub(crate) fn from_raw(raw: NonNull<sys::OnyxTensor>) -> Tensor {
        Tensor { raw, _buffer: None }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::OnyxTensor {
        self.raw.as_ptr()
    }

    /// The type of its elements.
    pub fn element_type(&self) -> ElementType {
        let mut t: sys::OnyxElementType = sys::ONYX_TYPE_UNDEFINED;
        // SAFETY: live handle, valid output. This call fails only on NULL arguments.
        match check(unsafe { sys::onyx_tensor_element_type(self.raw.as_ptr(), &mut t) }) {
            Ok(()) => ElementType::from_raw(t),
            Err(_) => ElementType::Undefined,
        }
    }

    /// Its shape (empty for a scalar).
    pub fn shape(&self) -> &[i64] {
        let mut dims: *const i64 = ptr::null();
        let mut rank: usize = 0;
        // SAFETY: live handle, valid outputs. This call fails only on NULL arguments.
        if check(unsafe { sys::onyx_tensor_shape(self.raw.as_ptr(), &mut dims, &mut rank) }).is_err()
            || dims.is_null()
            || rank == 0
        {
            return &[];
        }
        // SAFETY: `rank` dims at `dims`, borrowed from the tensor, valid while `self` is (the shape
        // of a tensor never changes).
        unsafe { std::slice::from_raw_parts(dims, rank) }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        let mut n: i64 = 0;
        // SAFETY: live handle, valid output.
        match check(unsafe { sys::onyx_tensor_element_count(self.raw.as_ptr(), &mut n) }) {
            Ok(()) => usize::try_from(n).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn data_ptr<T: TensorElement>(&self) -> Result<(*mut T, usize)> {
        let actual = self.element_type();
        if actual != T::ELEMENT_TYPE {
            return Err(Error::invalid_argument(format!(
                "the tensor holds {} elements, not {}",
                actual.name(),
                T::ELEMENT_TYPE.name()
            )));
        }
        let len = self.len();
        let mut data: *mut c_void = ptr::null_mut();
        // SAFETY: live handle, valid output.
        check(unsafe { sys::onyx_tensor_data(self.raw.as_ptr(), &mut data) })?;
        if len == 0 {
            return Ok((NonNull::<T>::dangling().as_ptr(), 0));
        }
        if data.is_null() || !(data as *const T).is_aligned() {
            return Err(Error::invalid_argument("the tensor's elements are not addressable as this type"));
        }
        Ok((data as *mut T, len))
    }

    /// Its shape and elements, when they are of type `T` (an error names both types otherwise).
    pub fn try_extract_tensor<T: TensorElement>(&self) -> Result<(&[i64], &[T])> {
        let (data, len) = self.data_ptr::<T>()?;
        // SAFETY: `len` initialised elements of type T (checked above), owned by the tensor and
        // not written while `self` is borrowed.
        Ok((self.shape(), unsafe { std::slice::from_raw_parts(data, len) }))
    }

    /// Its shape, and its elements to write into, when they are of type `T`.
    pub fn try_extract_tensor_mut<T: TensorElement>(&mut self) -> Result<(&[i64], &mut [T])> {
        let (data, len) = self.data_ptr::<T>()?;
        // SAFETY: as above, and `&mut self` makes this the only access; the element storage and
        // the shape's storage are distinct.
        Ok((self.shape(), unsafe { std::slice::from_raw_parts_mut(data, len) }))
    }

    /// A copy of its elements, when they are of type `T`.
    pub fn to_vec<T: TensorElement>(&self) -> Result<Vec<T>> {
        Ok(self.try_extract_tensor::<T>()?.1.to_vec())
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and released exactly once; the caller's buffer (if any) is
        // a later field, dropped after this.
        unsafe { sys::onyx_tensor_release(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("element_type", &self.element_type())
            .field("shape", &self.shape())
            .finish()
    }
}
