//! Helpers of the integration tests: the example models and a reader of the ONNX TensorProto files
//! beside them (the reference inputs and outputs).
#![allow(dead_code)]

use std::path::PathBuf;

/// `examples/models` of the repository.
pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("..").join("examples").join("models")
}

/// The small CNN: input `image` float[batch,3,32,32], output `probabilities` float[batch,10].
pub fn tiny_cnn() -> PathBuf {
    models_dir().join("tiny_cnn.onnx")
}

/// A float tensor read from a TensorProto file.
#[derive(Debug, Default)]
pub struct FloatTensor {
    pub name: String,
    pub dims: Vec<i64>,
    pub data: Vec<f32>,
}

/// The reference input and output of tiny_cnn (`tiny_cnn_test_data`).
pub fn tiny_cnn_reference() -> (FloatTensor, FloatTensor) {
    let dir = models_dir().join("tiny_cnn_test_data");
    (read_float_tensor(&dir.join("input_0.pb")), read_float_tensor(&dir.join("output_0.pb")))
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }
    fn byte(&mut self) -> u8 {
        let b = self.bytes[self.pos];
        self.pos += 1;
        b
    }
    fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte();
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
        }
        panic!("varint longer than 10 bytes");
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        s
    }
}

fn floats_le(bytes: &[u8]) -> Vec<f32> {
    assert_eq!(bytes.len() % 4, 0, "float data of {} bytes", bytes.len());
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Reads a float TensorProto: dims (field 1), data_type (2, must be 1 = float), float_data (4),
/// name (8), raw_data (9). Other fields are skipped.
pub fn read_float_tensor(path: &std::path::Path) -> FloatTensor {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = Reader { bytes: &bytes, pos: 0 };
    let mut t = FloatTensor::default();
    while !r.done() {
        let key = r.varint();
        let (field, wire) = (key >> 3, key & 7);
        match (field, wire) {
            (1, 0) => t.dims.push(r.varint() as i64),
            (1, 2) => {
                let n = r.varint() as usize;
                let end = r.pos + n;
                while r.pos < end {
                    t.dims.push(r.varint() as i64);
                }
            }
            (2, 0) => assert_eq!(r.varint(), 1, "{}: not a float tensor", path.display()),
            (4, 2) => {
                let n = r.varint() as usize;
                t.data.extend(floats_le(r.take(n)));
            }
            (4, 5) => t.data.extend(floats_le(r.take(4))),
            (8, 2) => {
                let n = r.varint() as usize;
                t.name = String::from_utf8(r.take(n).to_vec()).expect("name is UTF-8");
            }
            (9, 2) => {
                let n = r.varint() as usize;
                t.data = floats_le(r.take(n));
            }
            (_, 0) => {
                r.varint();
            }
            (_, 1) => {
                r.take(8);
            }
            (_, 2) => {
                let n = r.varint() as usize;
                r.take(n);
            }
            (_, 5) => {
                r.take(4);
            }
            _ => panic!("{}: unexpected wire type {wire}", path.display()),
        }
    }
    assert_eq!(
        t.data.len() as i64,
        t.dims.iter().product::<i64>(),
        "{}: element count does not match dims",
        path.display()
    );
    t
}

/// Asserts that `got` and `want` agree within `tol` (absolute, plus relative to `want`).
pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w} (tolerance {tol})");
    }
}
