// A stand-in for the NVIDIA driver library (soname libcuda.so.1) that reports CUDA 12.4, for the
// CUDA EP's "driver too old" test on machines without a GPU (found through LD_LIBRARY_PATH by `onyx providers`).
extern "C" __attribute__((visibility("default"))) int cuDriverGetVersion(int* version) {
  *version = 12040;
  return 0;
}
